/**
 * The CLI keeps V8's young generation at its start size (1 MB semi-spaces): under concurrent load
 * V8 grows it to 16 MB ones, which hold 20-40 MB more RSS for the same write rate and tails
 * (docs/PERFORMANCE.md). Reads are faster with 2 MB ones, but only node's command line can bound it
 * there (`--max-semi-space-size`), and that flag cost the server's start-up a sixth (V8 then
 * refuses the code cache of node's own modules); where a user gives it anyway (NODE_OPTIONS), their
 * bound is left to V8.
 *
 * The setting is V8's process-wide growth factor set to 1, which V8 puts back to 2 whenever it
 * configures a new heap, that is for every worker thread: from the first compaction on
 * (compactions run in a worker) the young generation grew again. A worker's creator therefore
 * calls `afterNewIsolate()` once the worker is online and again once it has ended; a growth step
 * can still slip in while a worker starts.
 */
import { setFlagsFromString } from 'node:v8';
import type { Readable } from 'node:stream';
import { runInNewContext } from 'node:vm';

let kept = false;

/** Whether node's command line (or NODE_OPTIONS) bounds the young generation itself. */
function boundByCommandLine(): boolean {
  return [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)].some((arg) => /^--max[-_]semi[-_]space[-_]size\b/.test(arg));
}

/** Keeps the young generation at its start size from now on (the CLI's choice), unless node's command line bounds it. */
export function keepYoungGenerationSmall(): void {
  if (boundByCommandLine()) return;
  kept = true;
  setFlagsFromString('--semi-space-growth-factor=1');
}

/** Sets the growth factor again after a new isolate (a worker) has reset it; nothing if it was never set. */
export function afterNewIsolate(): void {
  if (kept) setFlagsFromString('--semi-space-growth-factor=1');
}

/**
 * Bytes between two collections of the young generation while large bodies stream through (the
 * proxy). Each socket read is a fresh 64 KiB buffer outside V8's heap, dead as soon as it is
 * written on; V8 paces its collections by its own heap's allocation, which such a stream hardly
 * touches, so the dead buffers piled up: a 1 GiB answer grew the RSS by 39-57 MB. A collection of
 * the young generation every 4 MiB frees them (the growth: ~21 MB; every 2 MiB: ~10 MB, twice the
 * collections), at a fraction of a millisecond each while it is kept small (docs/PERFORMANCE.md).
 */
export const STREAM_COLLECTION_BYTES = 4 * 1024 * 1024;

let streamed = 0;
/** V8's `gc`, from a context made once the flag is set (node's command line does not expose it). */
let collect: ((options: { type: 'minor' }) => void) | null | undefined;

/** Counts `bytes` streamed through; every STREAM_COLLECTION_BYTES, collects the young generation. */
export function streamedThrough(bytes: number): void {
  streamed += bytes;
  if (streamed < STREAM_COLLECTION_BYTES) return;
  streamed = 0;
  if (collect === undefined) {
    try {
      setFlagsFromString('--expose-gc');
      collect = runInNewContext('gc') as typeof collect;
    } catch {
      collect = null;
    } finally {
      // set for as long as it takes: a changed flag makes node compile what it loads next without its
      // code cache, and contexts and workers made later would have a `gc` too
      setFlagsFromString('--no-expose-gc');
    }
  }
  collect?.({ type: 'minor' });
}

/** Counts every byte `stream` reads toward those collections. */
export function collectAsItStreams(stream: Readable): void {
  stream.on('data', (chunk: Buffer) => streamedThrough(chunk.length));
}
