/**
 * The compaction worker's entry (bundled alone as dist/compactor.js): runs one job given as
 * workerData, posts the result or the error's message, and ends. It reads and writes only the
 * data directory.
 */
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { nodeFileSystem } from './atomic-file.js';
import { compactSegments, type CompactionJob } from './compaction.js';

// Background work: on a busy machine the thread answering requests goes first (nice 10: about a
// tenth of a core against a busy one, so it still ends). Only on Linux, where the nice value is
// per thread: elsewhere it is the whole process's, and would slow the server for good.
if (process.platform === 'linux') {
  try {
    setPriority(10);
  } catch {
    // not permitted here: it runs at the server's priority
  }
}

compactSegments(workerData as CompactionJob, nodeFileSystem).then(
  (result) => parentPort!.postMessage({ ok: true, result }),
  (err: Error) => parentPort!.postMessage({ ok: false, message: err.message }),
);
