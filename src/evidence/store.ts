/**
 * The transaction store: each import writes a new segment file under DATA_DIR/transactions, makes
 * it durable, then one op in the journal names it and its count; that op is the commit point. At
 * start, files no op names are deleted. Deleting transactions, a target or a session retires
 * segments (the state stops naming them as live); a later op forgets them and their files go.
 * Knows nothing of HTTP.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fsPromises } from '../lazy-builtins.js';
import { nodeFileSystem, type FileSystem } from '../store/atomic-file.js';
import { DataFileError, type SegmentRow } from '../store/state.js';
import type { Store } from '../store/store.js';
import { findTransaction, liveCount, targetSegments } from '../store/transactions.js';
import { addFooter, createIndex, createInterner, markDead, relocate, reserve, type Interner, type TargetIndex } from './index.js';
import { createReader } from './reader.js';
import { SOURCES, type Exchange } from './record.js';
import {
  CorruptSegmentError, createSegment, FLAG_BINARY, FLAG_RESPONSE, FLAG_SCOPE, FLAG_TRUNCATED, FOOTER_ROW, footerRows, readFooter, rowOf,
  SEGMENT_DIR, segmentNumberOf, segmentPath, SOURCE_SHIFT, type Footer, type SegmentWriter,
} from './segment.js';
import { DAMAGED, damagedNumberOf, filePlaces, wholeRecords } from './salvage.js';
import { isBinary } from './record.js';
import { scopeTest } from './scope.js';

export interface EvidenceOptions {
  dataDir: string;
  store: Store;
  fs?: FileSystem;
  log?: (line: string) => void;
  /** How often retired files are deleted and segments with deleted transactions rewritten (ms). */
  maintenanceEvery?: number;
}

/** A segment being written for a target, not yet its (see `commit`). */
export interface PendingSegment {
  readonly n: number;
  readonly count: number;
  /** Appends one exchange; `scope` as the target's scope rule says. */
  add(exchange: Exchange, scope: boolean): Promise<void>;
  /** Durable (file and directory entry); the op that names it is the caller's. */
  finish(): Promise<void>;
  abort(): Promise<void>;
  /** Its footer, once finished. */
  readonly footer: Footer | undefined;
}

export interface ImportCounts {
  imported: number;
  out_of_scope: number;
  skipped: number;
}

/** An import's counts, and the id its first transaction took (the others follow it, in order). */
export interface ImportResult {
  counts: ImportCounts;
  first?: number;
}

/** A target's transactions loaded in memory, and what the queries need beside them. */
export interface LoadedTarget {
  index: TargetIndex;
  interner: Interner;
}

export type ImportRefusal = 'unknown-target';

export interface Evidence {
  readonly dataDir: string;
  /** Starts a segment of transactions (a bundle import commits several in its own op). */
  newSegment(): Promise<PendingSegment>;
  /**
   * Imports exchanges for a target (`null`: an entry skipped by the source) as one segment and one
   * durable op: all of them or none. With `scopeOnly`, exchanges out of the target's scope are dropped.
   */
  importExchanges(target: number, source: AsyncIterable<Exchange | null>, options?: { scopeOnly?: boolean }): Promise<({ ok: true } & ImportResult) | { ok: false; reason: ImportRefusal }>;
  /** After the op that named committed segments is durable: their targets' indexes learn them. */
  committed(segments: { target: number; pending: PendingSegment }[]): void;
  /** The target's transactions in memory (loaded from the segments' footers on first use). */
  load(target: number): Promise<LoadedTarget>;
  /** Deletes one transaction (one durable op); false when the target has no such transaction. */
  deleteTransaction(target: number, id: number): Promise<boolean>;
  /** Whether the target has this transaction (from the state alone). */
  has(target: number, id: number): boolean;
  /** Reads `length` bytes of a record (fewer at its end): index rows say where. */
  read(segment: number, position: number, length: number): Promise<Buffer>;
  /** Says (once per record) that the record at `position` of `segment` is damaged: `what` names it and how. */
  damagedRecord(segment: number, position: number, what: string): void;
  /** Scope test of a target: its host and port. */
  scopeOf(target: number): (url: string) => boolean;
  /** Runs the maintenance now (tests): forget retired files, rewrite segments with deleted transactions. */
  maintain(): Promise<void>;
  close(): Promise<void>;
}

/** A segment is rewritten without its deleted transactions once a quarter of it is deleted, or at once while it is small. */
const REWRITE_FRACTION = 0.25;
/** A failed rewrite is tried again after this, doubling up to REWRITE_RETRY_MAX_MS. */
const REWRITE_RETRY_MS = 1000;
const REWRITE_RETRY_MAX_MS = 5 * 60 * 1000;
const SMALL_SEGMENT = 16 * 1024 * 1024;

/** The flags of a row, from its exchange and scope. */
export function rowFlags(x: Exchange, scope: boolean): number {
  return (
    (scope ? FLAG_SCOPE : 0) | (isBinary(x.responseBody) ? FLAG_BINARY : 0) | (x.truncated ? FLAG_TRUNCATED : 0) |
    (x.status > 0 ? FLAG_RESPONSE : 0) | (SOURCES.indexOf(x.source) << SOURCE_SHIFT)
  );
}

/** What a salvage (openEvidence's) read back of a segment and what it lost, the ids lost as a range. */
function salvageSummary(row: SegmentRow, kept: number, into: number | undefined, unmatched: boolean): string {
  const gone = new Set(row.gone);
  const live = row.span - row.gone.length;
  let lost = row.span - kept;
  for (const local of row.gone) if (local >= kept) lost--;
  let first = kept;
  while (gone.has(first)) first++;
  let last = row.span - 1;
  while (gone.has(last)) last--;
  const ids = first === last ? `id ${row.base + first}` : `ids ${row.base + first}-${row.base + last}`;
  const count = (n: number) => n.toLocaleString('en');
  const why = unmatched ? ' (it was rewritten, then more of it deleted: its records cannot be matched to their ids)' : '';
  if (lost === 0) return `${count(live)} of its ${count(live)} transactions were read back into ${SEGMENT_DIR}/${into}.seg; none is lost.`;
  if (lost === live) return `none of its ${count(live)} transactions could be read back${why} (${ids} ${lost === 1 ? 'is' : 'are'} lost).`;
  return `${count(live - lost)} of its ${count(live)} transactions were read back into ${SEGMENT_DIR}/${into}.seg; the other ${count(lost)} (${ids}) are lost.`;
}

/**
 * Opens the store's transactions: deletes the files in DATA_DIR/transactions of segments no
 * committed op names (an import cut short, a file already forgotten), and refuses to start when a
 * file a committed op names is missing. The directory is made by the first import.
 */
export async function openEvidence(options: EvidenceOptions): Promise<Evidence> {
  const { dataDir, store } = options;
  const fs = options.fs ?? nodeFileSystem;
  const log = options.log ?? (() => {});
  const dir = join(dataDir, SEGMENT_DIR);
  const state = () => store.state;

  let nextSegment = 1;
  const onDisk = new Set<number>();
  let names: string[] = [];
  try {
    names = readdirSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  /** The directory, made (and its entry durable) before the first segment goes in it. */
  let made: Promise<void> | undefined = names.length > 0 || existsSync(dir) ? Promise.resolve() : undefined;
  const makeDir = () =>
    (made ??= (async () => {
      await fs.mkdir(dir);
      await fs.syncDir(dataDir);
    })().catch((err) => {
      made = undefined;
      throw err;
    }));
  const removed: string[] = [];
  for (const name of names) {
    // a damaged file kept beside the one read back from it (salvage): the tester's to delete
    const damaged = damagedNumberOf(name);
    if (damaged !== undefined) {
      nextSegment = Math.max(nextSegment, damaged + 1);
      continue;
    }
    const n = segmentNumberOf(name);
    const known = n !== undefined && (state().segments.has(n) || state().retiredSegments.has(n));
    if (n !== undefined) nextSegment = Math.max(nextSegment, n + 1);
    if (known) {
      onDisk.add(n);
      continue;
    }
    await fs.remove(join(dir, name));
    removed.push(`${SEGMENT_DIR}/${name}`);
  }
  // one line however many (a killed import of thousands of targets leaves thousands)
  if (removed.length === 1) log(`removed ${removed[0]}: no committed import names it`);
  else if (removed.length > 1) {
    const named = removed.sort((x, y) => x.localeCompare(y, 'en', { numeric: true })).slice(0, 3).join(', ');
    log(`removed ${removed.length.toLocaleString('en')} files no committed import names: ${named}${removed.length > 3 ? ', ...' : ''}`);
  }
  for (const n of [...state().segments.keys(), ...state().retiredSegments]) nextSegment = Math.max(nextSegment, n + 1);
  for (const n of state().segments.keys()) {
    if (!onDisk.has(n)) throw new DataFileError(segmentPath(dataDir, n), 'missing: the journal names this transaction segment');
  }
  if (onDisk.size > 0) await fs.syncDir(dir);

  const reader = createReader(dataDir);
  const interner = createInterner();
  /** Targets' indexes, by target id: `ready` once every segment is in it. */
  const loaded = new Map<number, { index: TargetIndex; ready: Promise<void>; segments: Set<number> }>();
  let maintaining: Promise<void> | undefined;
  let closed = false;

  async function newSegment(): Promise<PendingSegment> {
    await makeDir();
    const n = nextSegment++;
    return pending(n, await createSegment(fs, segmentPath(dataDir, n)));
  }

  function pending(n: number, writer: SegmentWriter): PendingSegment {
    let finished = false;
    return {
      n,
      get count() {
        return writer.rows.length;
      },
      get footer() {
        return writer.footer;
      },
      add: (exchange, scope) => writer.add(exchange, rowFlags(exchange, scope)),
      async finish() {
        await writer.finish();
        // its directory entry is as durable as the op about to name it
        await fs.syncDir(dir);
        finished = true;
      },
      async abort() {
        await writer.abort().catch((err: Error) => log(`could not remove the unfinished ${SEGMENT_DIR}/${n}.seg: ${err.message}`));
        if (finished) await fs.syncDir(dir).catch(() => {});
      },
    };
  }

  function addSegmentRows(entry: { index: TargetIndex; segments: Set<number> }, row: SegmentRow, footer: Footer): void {
    if (entry.segments.has(row.n)) return;
    entry.segments.add(row.n);
    addFooter(entry.index, interner, row.n, row.base, footer, new Set(row.gone));
  }

  function committed(segments: { target: number; pending: PendingSegment }[]): void {
    for (const { target, pending: p } of segments) {
      const entry = loaded.get(target);
      const row = state().segments.get(p.n);
      if (entry && row && p.footer) addSegmentRows(entry, row, p.footer);
    }
  }

  async function load(target: number): Promise<LoadedTarget> {
    let entry = loaded.get(target);
    if (!entry) {
      const fresh = { index: createIndex(), segments: new Set<number>(), ready: Promise.resolve() };
      entry = fresh;
      loaded.set(target, fresh);
      fresh.ready = (async () => {
        // segments committed while it loads are read too: the loop ends once none is left
        for (;;) {
          const todo = targetSegments(state(), target).filter((row) => !fresh.segments.has(row.n));
          if (todo.length === 0) return;
          // every footer first, then the columns sized once for all of them
          const footers = new Map<number, Footer>();
          for (const row of todo) {
            // a damaged file is read back into a new one, read next time round
            const footer = await footerOf(row);
            if (footer) footers.set(row.n, footer);
            await new Promise((resolve) => setImmediate(resolve));
          }
          reserve(fresh.index, todo.reduce((sum, row) => sum + liveCount(row), 0), [...footers.values()].reduce((sum, f) => sum + f.urls.length, 0));
          for (const [n, footer] of footers) {
            // a file rewritten or retired meanwhile is read under its new number (next time round), or not at all
            const current = state().segments.get(n);
            if (current) addSegmentRows(fresh, current, footer);
          }
        }
      })();
      fresh.ready.catch(() => loaded.delete(target));
    }
    await entry.ready;
    return { index: entry.index, interner };
  }

  async function importExchanges(target: number, source: AsyncIterable<Exchange | null>, options: { scopeOnly?: boolean } = {}) {
    if (!state().targets.has(target)) return { ok: false as const, reason: 'unknown-target' as const };
    const inScope = scopeOf(target);
    const counts: ImportCounts = { imported: 0, out_of_scope: 0, skipped: 0 };
    const p = await newSegment();
    let first: number;
    try {
      for await (const exchange of source) {
        if (exchange === null) {
          counts.skipped++;
          continue;
        }
        const scope = inScope(exchange.url);
        if (!scope) counts.out_of_scope++;
        if (!scope && options.scopeOnly) continue;
        await p.add(exchange, scope);
        counts.imported++;
      }
      if (p.count === 0) {
        await p.abort();
        return { ok: true as const, counts };
      }
      await p.finish();
      const result = await store.change({ op: 'addTransactions', target, segment: p.n, count: p.count });
      if (!result.ok) {
        await p.abort();
        return { ok: false as const, reason: 'unknown-target' as const };
      }
      first = result.base;
    } catch (err) {
      await p.abort();
      throw err;
    }
    committed([{ target, pending: p }]);
    return { ok: true as const, counts, first };
  }

  function scopeOf(target: number): (url: string) => boolean {
    const t = state().targets.get(target)?.target;
    return t ? scopeTest(t.host_name, t.port_number) : () => false;
  }

  async function deleteTransaction(target: number, id: number): Promise<boolean> {
    const result = await store.change({ op: 'deleteTransaction', target, id });
    if (!result.ok) return false;
    const entry = loaded.get(target);
    if (entry) markDead(entry.index, id);
    return true;
  }

  /** Rewrites one segment without its deleted transactions: a new file, then one op naming it instead. */
  async function rewrite(row: SegmentRow): Promise<void> {
    const gone = new Set(row.gone);
    const footer = await footerOf(row);
    // damaged: read back without its deleted transactions already
    if (!footer) return;
    const rows = footerRows(footer).filter((r) => !gone.has(r.local));
    const n = nextSegment++;
    const writer = await createSegment(fs, segmentPath(dataDir, n));
    try {
      for (const r of rows) await writer.addRecord(await reader.read(row.n, r.off, r.len), r);
      await writer.finish();
      await fs.syncDir(dir);
      const result = await store.change({ op: 'rewriteSegment', segment: row.n, into: n, purged: gone.size });
      if (!result.ok) throw new Error(`segment ${row.n} is gone`);
    } catch (err) {
      await writer.abort().catch(() => {});
      throw err;
    }
    // an index that has the old file's rows moves them; one still loading reads the new file
    const entry = loaded.get(row.target);
    if (entry?.segments.has(row.n)) {
      entry.segments.add(n);
      relocate(entry.index, n, row.base, writer.footer!);
    }
  }

  /**
   * Segments whose rewrite failed (a full disk), tried again after `wait`, from REWRITE_RETRY_MS
   * doubling to REWRITE_RETRY_MAX_MS, and said once: a rewrite the disk had no room for was tried
   * and logged every second for as long as it stayed full.
   */
  const rewriteFailures = new Map<number, { until: number; wait: number }>();
  /** The last maintenance failed (and said so). */
  let maintenanceFailed = false;

  async function maintain(): Promise<void> {
    if (maintaining) return maintaining;
    maintaining = (async () => {
      for (const target of loaded.keys()) if (!state().targets.has(target)) loaded.delete(target);
      for (const n of rewriteFailures.keys()) if (!state().segments.has(n)) rewriteFailures.delete(n);
      const candidates = [...state().segments.values()].filter((row) => row.gone.length > row.purged);
      for (const row of candidates) {
        if (closed) break;
        // deleted meanwhile, or its target: nothing to rewrite
        if (state().segments.get(row.n) !== row || liveCount(row) === 0) continue;
        const dead = row.gone.length - row.purged;
        const failed = rewriteFailures.get(row.n);
        if (failed && Date.now() < failed.until) continue;
        await (async () => {
          if (!(dead >= row.span * REWRITE_FRACTION || (await segmentSize(row)) <= SMALL_SEGMENT)) return;
          await rewrite(row);
          if (!failed) return;
          rewriteFailures.delete(row.n);
          log(`${SEGMENT_DIR}/${row.n}.seg is rewritten without its deleted transactions now`);
        })().catch((err: Error) => {
          const wait = Math.min(2 * (failed?.wait ?? REWRITE_RETRY_MS / 2), REWRITE_RETRY_MAX_MS);
          rewriteFailures.set(row.n, { until: Date.now() + wait, wait });
          if (!failed) log(`could not rewrite ${SEGMENT_DIR}/${row.n}.seg without its deleted transactions (tried again later, less often): ${err.message}`);
        });
      }
      const retired = [...state().retiredSegments];
      if (retired.length === 0) return;
      // once this op is durable, so is every op that retired them (the journal keeps their order)
      await store.change({ op: 'forgetSegments', segments: retired });
      for (const n of retired) {
        reader.forget(n);
        await fs.remove(segmentPath(dataDir, n)).catch((err: Error) => log(`could not delete ${SEGMENT_DIR}/${n}.seg: ${err.message} (it goes at the next start)`));
      }
      maintenanceFailed = false;
    })()
      .catch((err: Error) => {
        // said once until it succeeds again (a full disk made it a line a second)
        if (!maintenanceFailed) log(`transaction maintenance failed, tried again later: ${err.message}`);
        maintenanceFailed = true;
      })
      .finally(() => (maintaining = undefined));
    return maintaining;
  }

  /** Damaged segments being read back, by number: a load and the maintenance meeting one read it once. */
  const salvaging = new Map<number, Promise<void>>();

  /**
   * A live segment's footer; undefined when its file is damaged (CorruptSegmentError): it has then
   * been read back into a new file that the state names instead, or none when nothing was left.
   */
  async function footerOf(row: SegmentRow): Promise<Footer | undefined> {
    try {
      return readFooter(segmentPath(dataDir, row.n));
    } catch (err) {
      if (!(err instanceof CorruptSegmentError)) throw err;
      let salvaged = salvaging.get(row.n);
      if (!salvaged) {
        salvaged = salvage(row, err.damage).finally(() => salvaging.delete(row.n));
        salvaging.set(row.n, salvaged);
      }
      await salvaged;
      return undefined;
    }
  }

  /**
   * Reads a damaged segment's whole records back into a new file (its deleted transactions left
   * out), keeps the damaged file beside it under DAMAGED, and names the new file in one op: the
   * transactions past the last whole record are lost, which the log says with their ids.
   */
  async function salvage(row: SegmentRow, damage: string): Promise<void> {
    const path = segmentPath(dataDir, row.n);
    const places = filePlaces(row);
    // as it stands now: a delete while the file is read adds to the state's list, not to this one
    const before: SegmentRow = { ...row, gone: [...row.gone] };
    const gone = new Set(before.gone);
    const scope = scopeOf(row.target);
    let writer: { n: number; file: SegmentWriter } | undefined;
    let read = 0;
    try {
      if (places) {
        for await (const { bytes, exchange } of wholeRecords(path, places.length)) {
          const local = places[read++]!;
          if (gone.has(local)) continue;
          if (!writer) {
            await makeDir();
            const n = nextSegment++;
            writer = { n, file: await createSegment(fs, segmentPath(dataDir, n)) };
          }
          await writer.file.addRecord(bytes, rowOf(exchange, local, 0, 0, rowFlags(exchange, scope(exchange.url))));
        }
      }
      const kept = places === undefined ? 0 : read === places.length ? row.span : places[read]!;
      // the new file holds none of the places deleted before the first lost one
      const purged = before.gone.filter((local) => local < kept).length;
      if (writer) {
        await writer.file.finish();
        await fs.syncDir(dir);
      }
      // the damaged bytes stay, under another name, for whoever wants to look at them
      let keptAs = `The damaged file is kept as ${SEGMENT_DIR}/${row.n}.seg${DAMAGED} (delete it when you no longer need it)`;
      await fsPromises().link(path, `${path}${DAMAGED}`).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'EEXIST') keptAs = `The damaged file could not be kept (${err.code ?? err.message}): it is deleted`;
      });
      const result = await store.change({ op: 'salvageSegment', segment: row.n, ...(writer ? { into: writer.n } : {}), kept, purged });
      if (!result.ok) {
        // deleted meanwhile (its target, or its last transaction): nothing to read back, nor to keep
        await writer?.file.abort();
        await fs.remove(`${path}${DAMAGED}`);
        return;
      }
      log(`${SEGMENT_DIR}/${row.n}.seg is damaged (${damage}): ${salvageSummary(before, kept, writer?.n, places === undefined)} ${keptAs}`);
    } catch (err) {
      await writer?.file.abort().catch(() => {});
      throw err;
    }
  }

  /** Damaged records already logged, as `segment:position`. */
  const damagedSeen = new Set<string>();
  const sizes = new Map<number, number>();
  /** A segment's records' bytes (Infinity when it was damaged: it is read back instead, and never rewritten). */
  async function segmentSize(row: SegmentRow): Promise<number> {
    let size = sizes.get(row.n);
    if (size === undefined) {
      const footer = await footerOf(row);
      if (!footer) return Infinity;
      size = 0;
      for (let p = 0; p < footer.fixed.length; p += FOOTER_ROW) size += footer.fixed.readUInt32LE(p + 8);
      sizes.set(row.n, size);
    }
    return size;
  }

  const timer = setInterval(() => {
    const s = state();
    if (s.retiredSegments.size > 0 || [...s.segments.values()].some((row) => row.gone.length > row.purged)) void maintain();
  }, options.maintenanceEvery ?? 1000);
  timer.unref();

  return {
    dataDir,
    newSegment,
    importExchanges,
    committed,
    load,
    deleteTransaction,
    has: (target, id) => findTransaction(state(), target, id) !== undefined,
    read: (segment, position, length) => reader.read(segment, position, length),
    damagedRecord(segment, position, what) {
      const key = `${segment}:${position}`;
      if (damagedSeen.has(key)) return;
      damagedSeen.add(key);
      log(`${SEGMENT_DIR}/${segment}.seg holds a damaged record at byte ${position} (${what}): it is shown from its index row, without its headers and bodies`);
    },
    scopeOf,
    maintain,
    async close() {
      closed = true;
      clearInterval(timer);
      await maintaining;
      reader.closeAll();
    },
  };
}

