/**
 * Compaction: sealed journal segments folded into new snapshots, from disk alone. It never looks
 * at the live state, so it can run in a worker thread while writes go on into the next segment;
 * and it rebuilds the state the way a start-up does (snapshots + records, through applyOp), so
 * what it writes is what a restart would load. The alternatives cost the event loop O(store):
 * handing the live state to a worker is a structured clone of it, and serializing it in slices
 * needs it frozen (copy-on-write on every change) until the last slice is out.
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import type { FileSystem } from './atomic-file.js';
import { partOf } from './ops.js';
import { readSegments, readSnapshot, replayRecord } from './replay.js';
import { emptyState, PART_FILES, serializePartInPieces, type Part } from './state.js';

export interface CompactionJob {
  dir: string;
  /** The sealed segments, oldest first: every record of the store not in the snapshots is in them or in the live segment after them. */
  segments: number[];
}

export interface CompactionResult {
  /** The last record the snapshots now include. */
  seq: number;
  /** The parts whose snapshot was rewritten (a part no record touched is left as it is). */
  written: Part[];
  /** fsyncs done, for the store's counters. */
  fsyncs: number;
  /** Both snapshots' size now. */
  snapshotBytes: number;
}

/** Runs a compaction job somewhere (a worker thread, or in-process in tests). */
export type Compactor = (job: CompactionJob) => Promise<CompactionResult>;

/**
 * Folds the job's segments into the snapshots they change: each part is read when the first
 * record touching it comes, then rewritten atomically (temp file, fsync, rename) with the seq of
 * the last record, then the directory fsynced. Until the segments are deleted (by the caller,
 * after this resolves) a crash at any point loads the same state: a snapshot includes either
 * none or all of their records, and records it includes are skipped.
 */
export async function compactSegments(job: CompactionJob, fs: FileSystem): Promise<CompactionResult> {
  const { dir } = job;
  const state = emptyState();
  const seqs = new Map<Part, number>();
  const changed = new Set<Part>();
  const seqOf = (part: Part) => seqs.get(part)!;
  const { lastSeq } = readSegments(dir, job.segments, (record, file) => {
    for (const op of record.ops) {
      const part = partOf(op);
      if (seqs.has(part)) continue;
      const seq = readSnapshot(dir, part, state);
      // the store writes both snapshots before its first record: a missing one is not ours to invent
      if (seq === undefined) throw new Error(`${join(dir, PART_FILES[part])} is missing`);
      seqs.set(part, seq);
    }
    replayRecord(state, seqOf, record, file, changed);
  });
  const written = [...changed];
  let fsyncs = 0;
  for (const part of written) {
    await fs.writeFileAtomic(join(dir, PART_FILES[part]), serializePartInPieces(state, part, lastSeq));
    fsyncs++;
  }
  if (written.length > 0) {
    await fs.syncDir(dir);
    fsyncs++;
  }
  const snapshotBytes = Object.values(PART_FILES).reduce((sum, name) => sum + statSync(join(dir, name)).size, 0);
  return { seq: lastSeq, written, fsyncs, snapshotBytes };
}
