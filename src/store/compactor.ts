/**
 * Runs compactions in a worker thread, one thread per job, ended with it: the state it rebuilds
 * (as big as the store) is freed with its heap, instead of lingering in a long-lived thread's.
 */
import { Worker } from 'node:worker_threads';
import { compactionWorker } from '../paths.js';
import type { CompactionJob, CompactionResult, Compactor } from './compaction.js';

type Reply = { ok: true; result: CompactionResult } | { ok: false; message: string };

export const workerCompactor: Compactor = (job: CompactionJob) => {
  const source = compactionWorker();
  const worker = 'file' in source ? new Worker(source.file, { workerData: job }) : new Worker(source.code, { eval: true, workerData: job });
  return new Promise<CompactionResult>((resolve, reject) => {
    worker.once('message', (reply: Reply) => {
      if (reply.ok) resolve(reply.result);
      else reject(new Error(reply.message));
      void worker.terminate();
    });
    worker.once('error', reject);
    // an exit before any reply (the thread died): a no-op once settled
    worker.once('exit', (code) => reject(new Error(`the compaction worker exited with code ${code} before answering`)));
  });
};
