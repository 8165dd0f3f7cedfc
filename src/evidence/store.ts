/**
 * The transaction store: each import writes a new segment file under DATA_DIR/transactions, makes
 * it durable, then one op in the journal names it and its count; that op is the commit point. At
 * start, files no op names are deleted. Deleting transactions, a target or a session retires
 * segments (the state stops naming them as live); a later op forgets them and their files go.
 * Knows nothing of HTTP.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { nodeFileSystem, type FileSystem } from '../store/atomic-file.js';
import { DataFileError, type SegmentRow } from '../store/state.js';
import type { Store } from '../store/store.js';
import { findTransaction, liveCount, targetSegments } from '../store/transactions.js';
import { addFooter, createIndex, createInterner, markDead, relocate, reserve, type Interner, type TargetIndex } from './index.js';
import { createReader } from './reader.js';
import { SOURCES, type Exchange } from './record.js';
import {
  createSegment, FLAG_BINARY, FLAG_RESPONSE, FLAG_SCOPE, FLAG_TRUNCATED, FOOTER_ROW, footerRows, readFooter, SEGMENT_DIR, segmentNumberOf,
  segmentPath, SOURCE_SHIFT, type Footer, type SegmentWriter,
} from './segment.js';
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
  /** Scope test of a target: its host and port. */
  scopeOf(target: number): (url: string) => boolean;
  /** Runs the maintenance now (tests): forget retired files, rewrite segments with deleted transactions. */
  maintain(): Promise<void>;
  close(): Promise<void>;
}

/** A segment is rewritten without its deleted transactions once a quarter of it is deleted, or at once while it is small. */
const REWRITE_FRACTION = 0.25;
const SMALL_SEGMENT = 16 * 1024 * 1024;

/** The flags of a row, from its exchange and scope. */
export function rowFlags(x: Exchange, scope: boolean): number {
  return (
    (scope ? FLAG_SCOPE : 0) | (isBinary(x.responseBody) ? FLAG_BINARY : 0) | (x.truncated ? FLAG_TRUNCATED : 0) |
    (x.status > 0 ? FLAG_RESPONSE : 0) | (SOURCES.indexOf(x.source) << SOURCE_SHIFT)
  );
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
            footers.set(row.n, readFooter(segmentPath(dataDir, row.n)));
            await new Promise((resolve) => setImmediate(resolve));
          }
          reserve(fresh.index, todo.reduce((sum, row) => sum + liveCount(row), 0), [...footers.values()].reduce((sum, f) => sum + f.urls.length, 0));
          for (const row of todo) {
            // a file rewritten or retired meanwhile is read under its new number (next time round), or not at all
            const current = state().segments.get(row.n);
            if (current) addSegmentRows(fresh, current, footers.get(row.n)!);
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
    const rows = footerRows(readFooter(segmentPath(dataDir, row.n))).filter((r) => !gone.has(r.local));
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

  async function maintain(): Promise<void> {
    if (maintaining) return maintaining;
    maintaining = (async () => {
      for (const target of loaded.keys()) if (!state().targets.has(target)) loaded.delete(target);
      const candidates = [...state().segments.values()].filter((row) => {
        const dead = row.gone.length - row.purged;
        return dead > 0 && (dead >= row.span * REWRITE_FRACTION || segmentSize(row) <= SMALL_SEGMENT);
      });
      for (const row of candidates) {
        if (closed) break;
        // deleted meanwhile, or its target: nothing to rewrite
        if (state().segments.get(row.n) !== row || liveCount(row) === 0) continue;
        await rewrite(row).catch((err: Error) => log(`could not rewrite ${SEGMENT_DIR}/${row.n}.seg without its deleted transactions: ${err.message}`));
      }
      const retired = [...state().retiredSegments];
      if (retired.length === 0) return;
      // once this op is durable, so is every op that retired them (the journal keeps their order)
      await store.change({ op: 'forgetSegments', segments: retired });
      for (const n of retired) {
        reader.forget(n);
        await fs.remove(segmentPath(dataDir, n)).catch((err: Error) => log(`could not delete ${SEGMENT_DIR}/${n}.seg: ${err.message} (it goes at the next start)`));
      }
    })()
      .catch((err: Error) => log(`transaction maintenance failed, tried again later: ${err.message}`))
      .finally(() => (maintaining = undefined));
    return maintaining;
  }

  const sizes = new Map<number, number>();
  function segmentSize(row: SegmentRow): number {
    let size = sizes.get(row.n);
    if (size === undefined) {
      const footer = readFooter(segmentPath(dataDir, row.n));
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

