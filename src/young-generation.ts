/**
 * The CLI keeps V8's young generation at its start size: under concurrent load V8 grows it up to
 * 32 MB. Measured (docs/PERFORMANCE.md): kept small, 20-40 MB less RSS under writes, for the same
 * rate and tails.
 *
 * The setting is V8's process-wide growth factor, and a worker thread's new heap undoes it for the
 * whole process (seen: after a worker has run, the young generation grows as if it had never been
 * set; test/main/young-generation.test.ts), so from the first compaction on (compactions run in a
 * worker) it grew again. A worker's creator therefore calls `afterNewIsolate()` once the worker is
 * online and again once it has ended.
 */
import { setFlagsFromString } from 'node:v8';

let kept = false;

/** Keeps the young generation at its start size from now on (the CLI's choice). */
export function keepYoungGenerationSmall(): void {
  kept = true;
  setFlagsFromString('--semi-space-growth-factor=1');
}

/** Sets the growth factor again after a new isolate (a worker) has reset it; nothing if it was never set. */
export function afterNewIsolate(): void {
  if (kept) setFlagsFromString('--semi-space-growth-factor=1');
}
