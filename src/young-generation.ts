/**
 * The CLI keeps V8's young generation at its start size: under concurrent load V8 grows it up to
 * 32 MB, for a few per cent of speed (measured: kept small, 2-4% fewer requests a second and
 * 12-24 MB less RSS, docs/PERFORMANCE.md).
 *
 * The setting is V8's process-wide growth factor, and V8 raises that factor back to at least 2
 * whenever it configures a new heap, that is for every worker thread: after the first compaction
 * (which runs in a worker) the young generation grew again. So a worker's creator calls
 * `afterNewIsolate()` once the worker is online, which sets the factor again where it was set.
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
