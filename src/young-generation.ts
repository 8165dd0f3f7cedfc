/**
 * The CLI keeps V8's young generation at its start size (1 MB semi-spaces): under concurrent load
 * V8 grows it to 16 MB ones, which hold 20-40 MB more RSS for the same write rate and tails
 * (docs/PERFORMANCE.md). Reads are faster with 2 MB ones, but only node's command line can bound it
 * there (`--max-semi-space-size`), and that flag cost the server's start-up a sixth; where a user
 * gives it anyway (NODE_OPTIONS), their bound is left to V8.
 *
 * The setting is V8's process-wide growth factor set to 1, which V8 puts back to 2 whenever it
 * configures a new heap, that is for every worker thread: from the first compaction on
 * (compactions run in a worker) the young generation grew again. A worker's creator therefore
 * calls `afterNewIsolate()` once the worker is online and again once it has ended; a growth step
 * can still slip in while a worker starts.
 */
import { setFlagsFromString } from 'node:v8';

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
