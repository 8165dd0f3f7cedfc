/** The bytes of a body kept for the record while the body itself streams on: at most `cap`, and how many went by. */
import type { Readable } from 'node:stream';

export interface Capture {
  /** The first `cap` bytes. */
  bytes(): Buffer;
  /** Every byte that went by. */
  readonly size: number;
  /** More went by than was kept. */
  readonly truncated: boolean;
}

/**
 * Listens to `stream`'s chunks beside whatever consumes it (a pipe keeps its back-pressure: this
 * only copies what passes, up to `cap`).
 */
export function capture(stream: Readable, cap: number): Capture {
  const chunks: Buffer[] = [];
  let kept = 0;
  let size = 0;
  stream.on('data', (chunk: Buffer) => {
    size += chunk.length;
    if (kept >= cap) return;
    const part = chunk.length <= cap - kept ? chunk : chunk.subarray(0, cap - kept);
    chunks.push(part);
    kept += part.length;
  });
  return {
    bytes: () => (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)),
    get size() {
      return size;
    },
    get truncated() {
      return size > kept;
    },
  };
}
