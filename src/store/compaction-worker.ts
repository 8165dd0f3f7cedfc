/**
 * The compaction worker's entry (bundled alone as dist/compactor.js): runs one job given as
 * workerData, posts the result or the error's message, and ends. It reads and writes only the
 * data directory.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { nodeFileSystem } from './atomic-file.js';
import { compactSegments, type CompactionJob } from './compaction.js';

compactSegments(workerData as CompactionJob, nodeFileSystem).then(
  (result) => parentPort!.postMessage({ ok: true, result }),
  (err: Error) => parentPort!.postMessage({ ok: false, message: err.message }),
);
