/** The bytes of a body kept for the record while the body itself streams on: at most `cap`, and how many went by. */
import type { Readable } from 'node:stream';
import { ByteBlocks } from '../byte-blocks.js';

export interface Capture {
  /** The first `cap` bytes (fewer when the budget ran out). */
  bytes(): Buffer;
  /** Every byte that went by. */
  readonly size: number;
  /** More went by than was kept. */
  readonly truncated: boolean;
  /** Gives the kept bytes back to the budget (once the record has taken them, or will not). */
  release(): void;
}

/**
 * Bytes that captures in flight may hold together: each body is kept up to its cap, but many large
 * ones at once would each hold that much (16 clients downloading 17 MiB: 390 MiB). Past it, a body
 * is kept cut where the budget ran out: it is still stored, saying it was cut.
 */
export interface CaptureBudget {
  readonly limit: number;
  used: number;
}

/**
 * Listens to `stream`'s chunks beside whatever consumes it (a pipe keeps its back-pressure: this
 * only copies what passes, up to `cap` and what `budget` has left).
 */
export function capture(stream: Readable, cap: number, budget: CaptureBudget): Capture {
  // copied into blocks of their own: a chunk kept as it came holds its whole socket read
  const blocks = new ByteBlocks(cap);
  let kept = 0;
  let size = 0;
  let full = false;
  let released = false;
  const onData = (chunk: Buffer) => {
    size += chunk.length;
    if (full) return;
    const room = Math.min(cap - kept, budget.limit - budget.used);
    const part = chunk.length <= room ? chunk : chunk.subarray(0, Math.max(0, room));
    if (part.length > 0) blocks.push(part);
    kept += part.length;
    budget.used += part.length;
    // once cut, cut for good: a body with a hole in it is no record
    full = part.length < chunk.length;
  };
  stream.on('data', onData);
  return {
    bytes: () => blocks.bytes(),
    get size() {
      return size;
    },
    get truncated() {
      return size > kept;
    },
    release() {
      if (released) return;
      released = true;
      // a body can go on after its exchange was recorded (a target that answered before reading
      // an upload): what comes then is neither kept nor counted
      stream.off('data', onData);
      budget.used -= kept;
      blocks.clear();
    },
  };
}
