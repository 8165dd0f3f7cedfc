/**
 * The durable store: state in memory; each committed batch of changes appended to a journal and
 * fsynced (group commit); the journal folded into the JSON snapshots once it outgrows them.
 */
import { mkdirSync, readdirSync, readFileSync, statSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { nodeFileSystem, TEMP_MARKER, type FileSystem } from './atomic-file.js';
import { mergeDefaults, type DefaultItem } from './configuration.js';
import { JOURNAL_FILE, openJournal, parseJournal, type Journal, type JournalRecord } from './journal.js';
import { acquireLock, type Lock } from './lock.js';
import { applyOp, partOf, type Op, type ResultOf } from './ops.js';
import { ensureDefaultSession } from './sessions.js';
import { DataFileError, emptyState, loadPart, PART_FILES, serializePart, type Part, type State } from './state.js';

export interface StoreOptions {
  dir: string;
  defaults: DefaultItem[];
  fs?: FileSystem;
  log?: (line: string) => void;
  /**
   * Journal bytes after which it is folded into the snapshots. Default: once it outgrows both
   * 4 MiB and the snapshots themselves, so that rewriting them costs O(1) per write, amortized.
   */
  compactAfter?: number;
}

export interface StoreStats {
  /** Changes acknowledged as durable. */
  acknowledged: number;
  /** Batches appended to the journal (one fsync each). */
  batches: number;
  fsyncs: number;
  failedBatches: number;
  compactions: number;
}

export interface Store {
  /** Read it, never keep it: a failed write replaces its contents. */
  readonly state: State;
  /** Bumped on every change (and rollback): a key for caches of serialized answers. */
  readonly generation: number;
  readonly stats: StoreStats;
  /**
   * Applies `op` at once; if it succeeds, resolves once it is durable (rejects, with the state
   * rolled back to the last durable one, if it cannot be made durable). A refusal changes nothing.
   */
  change<O extends Op>(op: O): Promise<ResultOf<O>>;
  /** Waits for writes in flight, then releases the data directory. */
  close(): Promise<void>;
}

interface Waiter {
  resolve(): void;
  reject(err: unknown): void;
}

const PARTS = Object.keys(PART_FILES) as Part[];

/** Opens (creating if need be) the data directory: lock, sweep, load, replay, merge defaults. */
export async function openStore(options: StoreOptions): Promise<Store> {
  const { dir } = options;
  const log = options.log ?? (() => {});
  mkdirSync(dir, { recursive: true });
  const lock = await acquireLock(dir, log);
  try {
    sweepTempFiles(dir, log);
    return await createStore(options, log, lock);
  } catch (err) {
    await lock.release();
    throw err;
  }
}

function sweepTempFiles(dir: string, log: (line: string) => void): void {
  for (const name of readdirSync(dir)) {
    if (name.startsWith('.') && name.includes(TEMP_MARKER)) {
      unlinkSync(join(dir, name));
      log(`removed the leftover temp file ${name}`);
    }
  }
}

function readIfExists(file: string): Buffer | undefined {
  try {
    return readFileSync(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

interface Loaded {
  state: State;
  /** A snapshot is missing, or the defaults changed the configuration: write the snapshots. */
  snapshotsStale: boolean;
  lastSeq: number;
  /** Bytes of the journal's whole records, and of the file (a torn last write is the difference). */
  validLength: number;
  fileLength: number;
}

/**
 * Snapshots, then the journal records they do not include yet (up to `maxJournalLength`).
 * Synchronous on purpose: a rollback must not let a change in halfway.
 */
function load(dir: string, defaults: DefaultItem[], maxJournalLength = Infinity): Loaded {
  const state = emptyState();
  let snapshotsStale = false;
  const snapshotSeq = {} as Record<Part, number>;
  for (const part of PARTS) {
    const file = join(dir, PART_FILES[part]);
    const bytes = readIfExists(file);
    if (bytes === undefined) snapshotsStale = true;
    snapshotSeq[part] = bytes === undefined ? 0 : loadPart(state, part, file, bytes.toString('utf8'));
  }
  const journalFile = join(dir, JOURNAL_FILE);
  const journalBytes = readIfExists(journalFile) ?? Buffer.alloc(0);
  const { records, validLength } = parseJournal(journalBytes.subarray(0, Math.min(journalBytes.length, maxJournalLength)), journalFile);
  let lastSeq = Math.max(...Object.values(snapshotSeq));
  for (const record of records) {
    for (const op of record.ops) {
      if (record.seq <= snapshotSeq[partOf(op)]) continue;
      let applied: boolean;
      try {
        applied = applyOp(state, op).ok;
      } catch {
        throw new DataFileError(journalFile, `record ${record.seq}: a malformed ${op.op}`);
      }
      if (!applied) throw new DataFileError(journalFile, `record ${record.seq}: ${op.op} does not apply to the snapshots`);
    }
    lastSeq = Math.max(lastSeq, record.seq);
  }
  ensureDefaultSession(state);
  if (mergeDefaults(state, defaults)) snapshotsStale = true;
  return { state, snapshotsStale, lastSeq, validLength, fileLength: journalBytes.length };
}

async function createStore(options: StoreOptions, log: (line: string) => void, lock: Lock): Promise<Store> {
  const { dir, defaults } = options;
  const fs = options.fs ?? nodeFileSystem;
  const loaded = load(dir, defaults);
  const state = loaded.state;
  let lastSeq = loaded.lastSeq;
  const stats = { acknowledged: 0, batches: 0, failedBatches: 0, compactions: 0 };
  if (loaded.fileLength > loaded.validLength) {
    log(`ignoring ${loaded.fileLength - loaded.validLength} bytes of an unfinished write at the end of ${JOURNAL_FILE}`);
  }

  /** fsyncs of snapshots and of the directory (the journal counts its own). */
  let fileFsyncs = 0;
  async function writeSnapshots(texts: (readonly [Part, string])[]): Promise<number> {
    // every write settles before this returns: none may land after a later compaction's
    const writes = await Promise.allSettled(texts.map(([part, text]) => fs.writeFileAtomic(join(dir, PART_FILES[part]), text)));
    fileFsyncs += writes.filter((w) => w.status === 'fulfilled').length;
    for (const w of writes) if (w.status === 'rejected') throw w.reason;
    await fs.syncDir(dir);
    fileFsyncs++;
    return texts.reduce((sum, [, text]) => sum + Buffer.byteLength(text), 0);
  }

  // A new dir, or changed defaults: the snapshots say so before anything is served.
  let snapshotBytes = 0;
  if (loaded.snapshotsStale) {
    snapshotBytes = await writeSnapshots(PARTS.map((part) => [part, serializePart(state, part, lastSeq)] as const));
  }
  const journalFile = await fs.openAppendable(join(dir, JOURNAL_FILE));
  const journal: Journal = openJournal(journalFile, loaded.validLength, loaded.fileLength);
  // a new journal's directory entry must be as durable as the records about to go in it
  if (journalFile.created) {
    await fs.syncDir(dir);
    fileFsyncs++;
  }
  if (snapshotBytes === 0) {
    for (const part of PARTS) snapshotBytes += statSync(join(dir, PART_FILES[part])).size;
  }

  let generation = 0;
  let pending: Op[] = [];
  let waiting: Waiter[] = [];
  let flushing: Promise<void> | undefined;
  /** Set when the state could not be reloaded after a failed write: it may hold what the disk lacks. */
  let unsure: Error | undefined;

  /** Back to what the disk holds: the snapshots and the journal's durable records. */
  function rollback(): void {
    try {
      Object.assign(state, load(dir, defaults, journal.length).state);
      unsure = undefined;
    } catch (err) {
      unsure = err as Error;
      log(`could not reload the durable state, refusing writes until it can: ${unsure.message}`);
    }
    generation++;
  }

  async function compact(texts: (readonly [Part, string])[]): Promise<void> {
    try {
      snapshotBytes = await writeSnapshots(texts);
      await journal.clear();
      stats.compactions++;
    } catch (err) {
      // nothing is lost: the journal still holds every record; the next batch tries again
      log(`compaction failed, the journal keeps growing: ${(err as Error).message}`);
    }
  }

  async function flushLoop(): Promise<void> {
    while (waiting.length > 0) {
      const batch = waiting;
      const record: JournalRecord = { seq: lastSeq + 1, ops: pending };
      waiting = [];
      pending = [];
      // Snapshot now, synchronously, while the state holds exactly the records up to this one.
      const due = journal.length > (options.compactAfter ?? Math.max(4 * 1024 * 1024, snapshotBytes));
      const snapshots = due ? PARTS.map((part) => [part, serializePart(state, part, record.seq)] as const) : undefined;
      try {
        await journal.append(record);
      } catch (err) {
        stats.failedBatches++;
        log(`write failed, rolling back to the last durable state: ${(err as Error).message}`);
        // cut what the failed write left before anyone is answered, so no restart can see it
        await journal.cut().catch((cutErr: Error) => log(`could not cut the failed write yet: ${cutErr.message}`));
        // From here to the rejections, synchronous: changes queued behind the failed batch were
        // applied on top of it, so they fail with it, and none can slip in before the reload.
        const failed = [...batch, ...waiting];
        waiting = [];
        pending = [];
        rollback();
        for (const w of failed) w.reject(err);
        continue;
      }
      lastSeq = record.seq;
      stats.batches++;
      stats.acknowledged += batch.length;
      for (const w of batch) w.resolve();
      if (snapshots) await compact(snapshots);
    }
    flushing = undefined;
  }

  return {
    state,
    get generation() {
      return generation;
    },
    get stats() {
      return { ...stats, fsyncs: fileFsyncs + journal.fsyncs };
    },

    change<O extends Op>(op: O): Promise<ResultOf<O>> {
      if (unsure) rollback();
      if (unsure) return Promise.reject(unsure);
      const result = applyOp(state, op);
      if (!result.ok) return Promise.resolve(result);
      generation++;
      pending.push(op);
      return new Promise<ResultOf<O>>((resolve, reject) => {
        waiting.push({ resolve: () => resolve(result), reject });
        flushing ??= flushLoop();
      });
    },

    async close() {
      while (flushing) await flushing;
      // a failed write's bytes whose cut failed too: one more try, so that no restart sees them
      await journal.cut().catch((err: Error) => log(`could not cut a failed write: ${err.message}`));
      await journal.close();
      await lock.release();
    },
  };
}
