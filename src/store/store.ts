/**
 * The durable store: state in memory; each committed batch of changes appended to the journal's
 * live segment and fsynced (group commit). Once that segment outgrows the snapshots it is sealed
 * and a new one started, and a worker thread folds the sealed segments into new snapshots, from
 * disk, while writes go on: no write waits on work that grows with the store.
 */
import { readdirSync, statSync, unlinkSync } from 'node:fs';
import { basename, join } from 'node:path';
import { nodeFileSystem, TEMP_MARKER, type FileSystem } from './atomic-file.js';
import { makeDirectories } from './data-file.js';
import type { Compactor } from './compaction.js';
import { workerCompactor } from './compactor.js';
import { mergeDefaults, type DefaultItem } from './configuration.js';
import { listSegments, openJournal, segmentFile, type Journal, type JournalRecord } from './journal.js';
import { acquireLock, type Advertised, type Lock } from './lock.js';
import { applyOp, partOf, type Op, type ResultOf } from './ops.js';
import { readSegments, readSnapshot, replayRecord } from './replay.js';
import { ensureDefaultSession } from './sessions.js';
import { deriveTarget } from './targets.js';
import { DataFileError, emptyState, PART_FILES, serializePartInPieces, type Part, type State } from './state.js';

export interface StoreOptions {
  dir: string;
  /**
   * The configuration's defaults; a function is called once the directory's lock is held (what
   * reading them may write there waits until the directory is this process's).
   */
  defaults: DefaultItem[] | (() => DefaultItem[]);
  fs?: FileSystem;
  log?: (line: string) => void;
  /** An offline command's name, which the directory's lock tells whoever is refused it. */
  command?: string;
  /**
   * Bytes of the live journal segment after which it is sealed and folded into the snapshots.
   * Default: once it outgrows both 4 MiB and the snapshots themselves, so that rewriting them
   * costs O(1) per write, amortized.
   */
  compactAfter?: number;
  /** Where compactions run: a worker thread unless told (tests run them in-process, or fail them). */
  compactor?: Compactor;
}

export interface StoreStats {
  /** Changes acknowledged as durable. */
  acknowledged: number;
  /** Batches appended to the journal (one fsync each). */
  batches: number;
  fsyncs: number;
  failedBatches: number;
  /** Compactions done; failed ones lose nothing (their segments wait for the next). */
  compactions: number;
  failedCompactions: number;
  /** Whether a compaction is running now (from the seal of its segments on). */
  compacting: boolean;
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
   * Once a write has failed for lack of room (ENOSPC, EDQUOT), not at once: the change waits for a
   * probe of the disk and is refused unapplied while the disk has no room, whatever it is (even
   * one the state would refuse); the first change once there is room is applied.
   */
  change<O extends Op>(op: O): Promise<ResultOf<O>>;
  /**
   * Set once the data directory was removed or replaced under the server: nothing can be made
   * durable any more, and the state may hold the failed write, which cannot be rolled back from a
   * directory that is not ours. The server answers every request with a 500 from then on.
   */
  readonly lost?: Error;
  /** Tells whoever is refused the directory where its owner answers (the lock carries it). */
  advertise(info: Advertised): void;
  /** Waits for writes in flight, then releases the data directory. */
  close(): Promise<void>;
}

interface Waiter {
  resolve(): void;
  reject(err: unknown): void;
}

const PARTS = Object.keys(PART_FILES) as Part[];

/** What a write fails with when the disk has no room for it. */
const NO_ROOM = new Set(['ENOSPC', 'EDQUOT']);
/** The disk has room again when this much can be written in the data directory (most batches are smaller). */
const PROBE_BYTES = 64 * 1024;
/** A temp file's name (TEMP_MARKER): one a crash leaves is swept at the next start. */
const PROBE_FILE = `.room-probe${TEMP_MARKER}probe`;

/** Opens (creating if need be) the data directory: lock, sweep, load, replay, merge defaults. */
export async function openStore(options: StoreOptions): Promise<Store> {
  const { dir } = options;
  const log = options.log ?? (() => {});
  // 0700: the store holds an engagement's scope; a directory that exists keeps its own mode
  makeDirectories(dir, 0o700);
  if (!statSync(dir).isDirectory()) throw Object.assign(new Error(`data directory ${dir} is not a directory`), { code: 'ENOTDIR' });
  const lock = await acquireLock(dir, log, options.command === undefined ? {} : { command: options.command });
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

interface Loaded {
  state: State;
  /** A snapshot is missing, or the defaults changed the state: write the snapshots. */
  snapshotsStale: boolean;
  lastSeq: number;
  /** The journal's segments, oldest first: the last is the live one. */
  segments: number[];
  /** Bytes of the live segment's whole records, and of the file (a torn last write is the difference). */
  validLength: number;
  fileLength: number;
  tornBefore: { file: string; bytes: number }[];
  /** What the start says of records whose reading was a choice (legacyAuthority). */
  notes: string[];
}

/**
 * Target URLs of a bulk add whose record leaves its reading open. Builds before the
 * authority-as-written rule took `http:///path` and `http://a\b/` as targets; the builds that had
 * the rule and did not write it into their records (`asWritten`) refused them. Such a record is
 * replayed as the first did (a refused URL never reached the journal of an all-or-nothing create,
 * so only a partial add can be either); the start says which targets that made.
 */
function legacyAuthority(record: JournalRecord, seqOf: (part: Part) => number): string[] {
  const notes: string[] = [];
  for (const op of record.ops) {
    if (op.op !== 'addTargetsPartial' || record.seq <= seqOf(partOf(op)) || !op.oneHost || op.asWritten) continue;
    for (const url of op.urls) {
      if (deriveTarget(0, url) === undefined || deriveTarget(0, url, { asWritten: true }) !== undefined) continue;
      notes.push(
        `journal record ${record.seq}: ${JSON.stringify(url.slice(0, 200))} is a target, as the build that wrote the record may have made it ` +
          '(a later build refused URLs without their authority as written): delete it if it was refused when added',
      );
    }
  }
  return notes;
}

/** What a journal that skips records (`seq` where `expected` was due) says, and what to do. */
function journalGap(seq: number, expected: number, base: number): string {
  const missing = expected === seq - 1 ? `record ${expected} is missing` : `records ${expected}-${seq - 1} are missing`;
  const after = expected - 1 === base ? `the snapshots, which end at record ${base}` : `record ${expected - 1}`;
  return (
    `record ${seq} comes after ${after}: ${missing} (a journal file deleted or cut short, or a snapshot file missing: ` +
    'a copy of the data directory taken while the server wrote to it?). Nothing was changed; start on a complete copy of the directory'
  );
}

/**
 * Snapshots, then the journal records they do not include yet; with `live`, only the segments up
 * to that one, it read up to `length` bytes (what is durable).
 */
function load(dir: string, defaults: DefaultItem[], live?: { segment: number; length: number }): Loaded {
  const state = emptyState();
  let snapshotsStale = false;
  const snapshotSeq = {} as Record<Part, number>;
  const missing: Part[] = [];
  for (const part of PARTS) {
    const seq = readSnapshot(dir, part, state);
    if (seq === undefined) missing.push(part);
    snapshotSeq[part] = seq ?? 0;
  }
  if (missing.length > 0) snapshotsStale = true;
  const segments = listSegments(dir).filter((n) => live === undefined || n <= live.segment);
  const seqOf = (part: Part) => snapshotSeq[part];
  // Every record past the snapshots is in the journal, one after another: a gap is records lost.
  // A compaction writes only the parts its records changed (a part's seq may lag: it had nothing
  // newer); a missing snapshot file needs the journal from its first record.
  const base = snapshotsStale ? 0 : Math.max(...Object.values(snapshotSeq));
  let next = base + 1;
  const notes: string[] = [];
  // A new directory writes its snapshots before its first record: a sessions snapshot missing beside
  // records was lost (deleted, or left out of a copy), and what it held from the start (the default
  // session, the ids given) is in no record. Replayed alone, the records would renumber the sessions
  // for good. (The configuration's holds the defaults, merged again at every start.)
  // After a compaction the journal may hold no record, but a later segment or snapshot says the
  // directory was written to all the same.
  const compacted = segments.some((n) => n > 0) || Object.values(snapshotSeq).some((seq) => seq > 0);
  const sessionsLost = (lastSeq: number, read: 'whole' | 'until it failed') => {
    const records = read === 'whole' ? `1-${lastSeq}` : `record ${lastSeq} among them`;
    const since = lastSeq > 0 ? `the journal holds records written after it (${records})` : 'the directory was written to after it (its journal compacted since)';
    return new DataFileError(
      join(dir, PART_FILES.sessions),
      `missing, while ${since}: what it held is in no record. Nothing was changed; put the file back, or start on a complete copy of the directory`,
    );
  };
  let lastReplayed = 0;
  let read: ReturnType<typeof readSegments>;
  try {
    read = readSegments(
      dir,
      segments,
      (record, file) => {
        if (record.seq > base) {
          if (record.seq !== next) throw new DataFileError(file, journalGap(record.seq, next, base));
          next++;
        }
        notes.push(...legacyAuthority(record, seqOf));
        lastReplayed = record.seq;
        replayRecord(state, seqOf, record, file);
      },
      live?.length,
    );
  } catch (err) {
    // the records replayed without it fail on what it held (the session a record activates): the lost file is the fault to name
    if (err instanceof DataFileError && missing.includes('sessions') && (lastReplayed > 0 || compacted)) throw sessionsLost(lastReplayed, 'until it failed');
    throw err;
  }
  if (missing.includes('sessions') && (read.lastSeq > 0 || compacted)) throw sessionsLost(read.lastSeq, 'whole');
  // an in-memory change no record holds (the default session of an empty store): the snapshots must say it
  const sessions = state.sessions.size;
  ensureDefaultSession(state);
  if (state.sessions.size !== sessions) snapshotsStale = true;
  if (mergeDefaults(state, defaults)) snapshotsStale = true;
  return { ...read, state, snapshotsStale, lastSeq: Math.max(read.lastSeq, ...Object.values(snapshotSeq)), segments, notes };
}

async function createStore(options: StoreOptions, log: (line: string) => void, lock: Lock): Promise<Store> {
  const { dir } = options;
  const defaults = typeof options.defaults === 'function' ? options.defaults() : options.defaults;
  const fs = options.fs ?? nodeFileSystem;
  const compactor = options.compactor ?? workerCompactor;
  const loaded = load(dir, defaults);
  const state = loaded.state;
  let lastSeq = loaded.lastSeq;
  /** The segment appends go to; the ones before it (`sealed`) wait to be folded, or are being folded. */
  let live = loaded.segments.at(-1) ?? 0;
  let sealed = loaded.segments.slice(0, -1);
  const stats = { acknowledged: 0, batches: 0, failedBatches: 0, compactions: 0, failedCompactions: 0 };
  for (const { file, bytes } of loaded.tornBefore) log(`ignoring ${bytes} bytes of an unfinished write at the end of ${basename(file)}`);
  for (const note of loaded.notes) log(note);
  if (loaded.fileLength > loaded.validLength) {
    log(`ignoring ${loaded.fileLength - loaded.validLength} bytes of an unfinished write at the end of ${segmentFile(live)}`);
  }

  /** fsyncs of snapshots, of the directory and of segments no longer live (the live one counts its own). */
  let otherFsyncs = 0;
  // A new dir, or changed defaults: the snapshots say so before anything is served.
  if (loaded.snapshotsStale) {
    // every write settles before going on: none may land after a compaction's
    const writes = await Promise.allSettled(PARTS.map((part) => fs.writeFileAtomic(join(dir, PART_FILES[part]), serializePartInPieces(state, part, lastSeq))));
    otherFsyncs += writes.filter((w) => w.status === 'fulfilled').length;
    for (const w of writes) if (w.status === 'rejected') throw w.reason;
    await fs.syncDir(dir);
    otherFsyncs++;
  }
  const liveFile = await fs.openAppendable(join(dir, segmentFile(live)), { atStart: true });
  let journal: Journal = openJournal(liveFile, loaded.validLength, loaded.fileLength);
  let snapshotBytes: number;
  try {
    // a new segment's directory entry must be as durable as the records about to go in it
    if (liveFile.created) {
      await fs.syncDir(dir);
      otherFsyncs++;
    }
    snapshotBytes = PARTS.reduce((sum, part) => sum + statSync(join(dir, PART_FILES[part])).size, 0);
  } catch (err) {
    // a start that fails leaves no descriptor open (a library user's process goes on)
    await liveFile.close().catch(() => {});
    throw err;
  }

  let generation = 0;
  let pending: Op[] = [];
  let waiting: Waiter[] = [];
  let flushing: Promise<void> | undefined;
  let compacting: Promise<void> | undefined;
  /** A compaction's seal is under way (compacting is set once it is done). */
  let sealing = false;
  /** Set when the state could not be reloaded after a failed write: it may hold what the disk lacks. */
  let unsure: Error | undefined;
  /** Set for good once the directory was removed or replaced under the server (the store's `lost`). */
  let lost: Error | undefined;
  /**
   * Set while the disk has no room (the last write failed with ENOSPC or EDQUOT): a change first
   * waits for a probe of the disk, one shared by all changes then, and is refused unapplied while
   * it fails. A change applied and failed is undone by reloading the store (rollback): with a
   * full disk and the engine trying a run's end again each second, that held the server 0.6-1.9 s
   * at a time at 100,000-200,000 targets, and 8 writers got 3 answers a second.
   */
  let noRoom: Error | undefined;
  let probing: Promise<void> | undefined;
  /**
   * Whether PROBE_BYTES can be written (and synced) in the directory now: clears noRoom if so, or
   * if it fails for another reason than room (the change then tries, and says that reason).
   */
  const probeRoom = (): Promise<void> =>
    (probing ??= fs
      .writeFileAtomic(join(dir, PROBE_FILE), ' '.repeat(PROBE_BYTES))
      .then(() => fs.remove(join(dir, PROBE_FILE)).catch(() => {}))
      .then(
        () => {
          noRoom = undefined;
        },
        (err: NodeJS.ErrnoException) => {
          if (!NO_ROOM.has(err.code ?? '')) noRoom = undefined;
        },
      )
      .finally(() => (probing = undefined)));
  /** Set by close(): a change that waited on a probe then is refused, never applied to a store let go. */
  let closing = false;

  /**
   * Back to what the disk holds: the snapshots and the journal's durable records. Not when the
   * directory was removed or replaced (`cause`): what is at its path is not what this server wrote;
   * the store is then `lost`.
   */
  function rollback(cause?: unknown): void {
    if ((cause as NodeJS.ErrnoException | undefined)?.code === 'ERR_DATA_DIR_REPLACED') {
      lost = cause as Error;
      log(`answering every request 500 from now on: ${lost.message}`);
      generation++;
      return;
    }
    try {
      Object.assign(state, load(dir, defaults, { segment: live, length: journal.length }).state);
      unsure = undefined;
    } catch (err) {
      unsure = err as Error;
      log(`could not reload the durable state, refusing writes until it can: ${unsure.message}`);
    }
    generation++;
  }

  /**
   * Starts a new live segment, sealing the current one: O(1), a new file and the directory fsync
   * its entry needs before records go in. On failure nothing changed: appends stay where they were.
   */
  async function seal(): Promise<void> {
    // a failed write's leftover bytes are never sealed in
    await journal.cut();
    const path = join(dir, segmentFile(live + 1));
    const file = await fs.openAppendable(path);
    try {
      // even for a file already there (left by a failed seal): its entry may not be durable
      await fs.syncDir(dir);
      otherFsyncs++;
    } catch (err) {
      await file.close().catch(() => {});
      // should it stay, it is an empty segment after the live one: harmless
      await fs.remove(path).catch(() => {});
      throw err;
    }
    const previous = journal;
    otherFsyncs += previous.fsyncs;
    journal = openJournal(file, 0, 0);
    sealed.push(live);
    live++;
    // nothing more is written to it: a failed close loses nothing
    await previous.close().catch((err: Error) => log(`could not close ${segmentFile(live - 1)}: ${err.message}`));
  }

  /**
   * Seals the live segment and starts folding every sealed one into the snapshots in the
   * background; once the new snapshots are durable, the folded segments are deleted.
   */
  async function startCompaction(): Promise<void> {
    // a compaction runs from its seal on: a new segment already there is part of it
    sealing = true;
    try {
      await seal();
    } catch (err) {
      stats.failedCompactions++;
      log(`could not start a new journal segment, compaction put off: ${(err as Error).message}`);
      return;
    } finally {
      sealing = false;
    }
    const segments = [...sealed];
    // a compactor that throws at once fails like one that rejects: the write loop never sees it
    compacting = Promise.resolve({ dir, segments }).then(compactor).then(
      async (result) => {
        otherFsyncs += result.fsyncs;
        snapshotBytes = result.snapshotBytes;
        stats.compactions++;
        for (const n of segments) {
          try {
            await fs.remove(join(dir, segmentFile(n)));
            sealed = sealed.filter((s) => s !== n);
          } catch (err) {
            // the snapshots include its records: the next compaction skips them, and deletes it
            log(`could not delete the compacted ${segmentFile(n)}: ${(err as Error).message}`);
          }
        }
      },
      (err: Error) => {
        // nothing is lost: the segments stay, and the next compaction folds them too
        stats.failedCompactions++;
        log(`compaction failed, its journal segments wait for the next one: ${err.message}`);
      },
    );
    void compacting.then(() => (compacting = undefined));
  }

  const compactionDue = () => !compacting && journal.length > (options.compactAfter ?? Math.max(4 * 1024 * 1024, snapshotBytes));

  async function flushLoop(): Promise<void> {
    while (waiting.length > 0) {
      const batch = waiting;
      const record: JournalRecord = { seq: lastSeq + 1, ops: pending };
      waiting = [];
      pending = [];
      try {
        await journal.append(record);
      } catch (err) {
        stats.failedBatches++;
        log(`write failed, rolling back to the last durable state: ${(err as Error).message}`);
        if (NO_ROOM.has((err as NodeJS.ErrnoException).code ?? '')) noRoom = err as Error;
        // cut what the failed write left before anyone is answered, so no restart can see it
        await journal.cut().catch((cutErr: Error) => log(`could not cut the failed write yet: ${cutErr.message}`));
        // From here to the rejections, synchronous: changes queued behind the failed batch were
        // applied on top of it, so they fail with it, and none can slip in before the reload.
        const failed = [...batch, ...waiting];
        waiting = [];
        pending = [];
        rollback(err);
        for (const w of failed) w.reject(err);
        continue;
      }
      lastSeq = record.seq;
      stats.batches++;
      stats.acknowledged += batch.length;
      for (const w of batch) w.resolve();
      if (compactionDue()) await startCompaction();
    }
    flushing = undefined;
  }

  function change<O extends Op>(op: O): Promise<ResultOf<O>> {
    if (lost) return Promise.reject(lost);
    // in call order still: the changes waiting on one probe go on in turn, before any later one
    if (noRoom) return probeRoom().then(() => (closing ? Promise.reject(new Error('the store is closed')) : noRoom ? Promise.reject(noRoom) : change(op)));
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
  }

  return {
    state,
    get generation() {
      return generation;
    },
    get lost() {
      return lost;
    },
    get stats() {
      return { ...stats, compacting: sealing || compacting !== undefined, fsyncs: otherFsyncs + journal.fsyncs };
    },

    change,

    advertise(info) {
      lock.advertise(info);
    },

    async close() {
      // changes waiting on a probe are refused first (their continuations come before this one's)
      closing = true;
      await probing;
      // a running compaction is waited for: its worker writes into the directory
      while (flushing ?? compacting) await (flushing ?? compacting);
      // a failed write's bytes whose cut failed too: one more try, so that no restart sees them
      await journal.cut().catch((err: Error) => log(`could not cut a failed write: ${err.message}`));
      await journal.close();
      await lock.release();
    },
  };
}
