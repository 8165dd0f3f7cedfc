/**
 * A target's transactions in memory as columns (typed arrays, the URLs as one byte buffer): about
 * 80 bytes a transaction plus its URL, ordered by id. What lists, filters and URLs read; records
 * stay on disk and are read on demand.
 */
import { mediaType } from './record.js';
import { FLAG_DEAD, FOOTER_ROW, type Footer } from './segment.js';

/** Short strings many rows share (methods, reasons, media types), each kept once. */
export interface Interner {
  id(s: string): number;
  text(id: number): string;
}

/** Beyond 65,535 distinct values a string is kept as `OVERFLOW` (shown from its record). */
export const OVERFLOW = 0xffff;

export function createInterner(): Interner {
  const strings: string[] = [];
  const ids = new Map<string, number>();
  return {
    id(s) {
      let id = ids.get(s);
      if (id === undefined) {
        if (strings.length >= OVERFLOW) return OVERFLOW;
        id = strings.push(s) - 1;
        ids.set(s, id);
      }
      return id;
    },
    text: (id) => strings[id] ?? '',
  };
}

export interface TargetIndex {
  /** Rows in use, dead ones included (their FLAG_DEAD set). */
  n: number;
  live: number;
  ids: Uint32Array;
  seg: Uint32Array;
  off: Float64Array;
  len: Uint32Array;
  status: Uint16Array;
  flags: Uint8Array;
  method: Uint16Array;
  reason: Uint16Array;
  requestType: Uint16Array;
  responseType: Uint16Array;
  time: Float32Array;
  startedAt: Float64Array;
  size: Float64Array;
  urlStart: Uint32Array;
  urlLength: Uint32Array;
  urls: Buffer;
  urlBytes: number;
  /** Bumped on every change: a key for what is worked out from the rows (the URL list). */
  version: number;
  /** Scans under way: rows keep their places (deleted ones are dropped from the columns once none is). */
  scans: number;
}

const COLUMNS = {
  ids: Uint32Array, seg: Uint32Array, off: Float64Array, len: Uint32Array, status: Uint16Array, flags: Uint8Array, method: Uint16Array,
  reason: Uint16Array, requestType: Uint16Array, responseType: Uint16Array, time: Float32Array, startedAt: Float64Array, size: Float64Array,
  urlStart: Uint32Array, urlLength: Uint32Array,
} as const;
type ColumnName = keyof typeof COLUMNS;

export function createIndex(capacity = 64): TargetIndex {
  const index = { n: 0, live: 0, urls: Buffer.allocUnsafeSlow(capacity * 64), urlBytes: 0, version: 0, scans: 0 } as TargetIndex;
  for (const [name, Type] of Object.entries(COLUMNS)) (index as unknown as Record<string, unknown>)[name] = new Type(capacity);
  return index;
}

/** Room for `rows` more rows and `bytes` more URL bytes: doubling, or (`exact`) just enough. */
function grow(index: TargetIndex, rows: number, bytes: number, exact = false): void {
  const columns = index as unknown as Record<ColumnName, Uint32Array>;
  if (index.n + rows > index.ids.length) {
    const capacity = exact ? index.n + rows : Math.max(index.n + rows, index.ids.length * 2);
    for (const name of Object.keys(COLUMNS) as ColumnName[]) {
      const next = new COLUMNS[name](capacity);
      next.set(columns[name].subarray(0, index.n) as never);
      columns[name] = next as never;
    }
  }
  if (index.urlBytes + bytes > index.urls.length) {
    const next = Buffer.allocUnsafeSlow(exact ? index.urlBytes + bytes : Math.max(index.urlBytes + bytes, index.urls.length * 2));
    index.urls.copy(next, 0, 0, index.urlBytes);
    index.urls = next;
  }
}

/** Makes room for `rows` more rows and `urlBytes` more URL bytes at once (a target loaded whole: one allocation, no spare). */
export function reserve(index: TargetIndex, rows: number, urlBytes: number): void {
  grow(index, rows, urlBytes, true);
}

/**
 * Adds a segment's rows from its footer (`gone`: the places deleted since, skipped), their ids
 * `base + local`, read straight from the footer's bytes. Rows come in id order; a segment committed
 * before an earlier one's rows are added is merged in.
 */
export function addFooter(index: TargetIndex, interner: Interner, segment: number, base: number, footer: Footer, gone: ReadonlySet<number>): void {
  const { fixed, urls, count } = footer;
  // the columns grow to what they hold now: a store loaded whole keeps no spare room
  grow(index, count, urls.length, true);
  const ids = { method: footer.method.map((m) => interner.id(m)), reason: footer.reason.map((r) => interner.id(r)), type: footer.type.map((t) => interner.id(mediaType(t))) };
  const first = index.n;
  let u = 0;
  for (let k = 0, p = 0; k < count; k++, p += FOOTER_ROW) {
    const urlLength = fixed.readUInt32LE(p + 36);
    const local = fixed.readUInt32LE(p + 12);
    if (gone.has(local)) {
      u += urlLength;
      continue;
    }
    const i = index.n++;
    index.ids[i] = base + local;
    index.seg[i] = segment;
    index.off[i] = fixed.readDoubleLE(p);
    index.len[i] = fixed.readUInt32LE(p + 8);
    index.startedAt[i] = fixed.readDoubleLE(p + 16);
    index.size[i] = fixed.readDoubleLE(p + 24);
    index.time[i] = fixed.readFloatLE(p + 32);
    index.status[i] = fixed.readUInt16LE(p + 40);
    index.flags[i] = fixed[p + 42] & ~FLAG_DEAD;
    index.method[i] = ids.method[fixed.readUInt16LE(p + 44)];
    index.reason[i] = ids.reason[fixed.readUInt16LE(p + 46)];
    index.requestType[i] = ids.type[fixed.readUInt16LE(p + 48)];
    index.responseType[i] = ids.type[fixed.readUInt16LE(p + 50)];
    index.urlStart[i] = index.urlBytes;
    index.urlLength[i] = urlLength;
    urls.copy(index.urls, index.urlBytes, u, u + urlLength);
    index.urlBytes += urlLength;
    u += urlLength;
  }
  index.live += index.n - first;
  index.version++;
  if (first > 0 && index.n > first && index.ids[first - 1] > index.ids[first]) sortById(index);
}

function sortById(index: TargetIndex): void {
  const order = Array.from({ length: index.n }, (_, i) => i).sort((a, b) => index.ids[a] - index.ids[b]);
  const columns = index as unknown as Record<ColumnName, Uint32Array>;
  for (const name of Object.keys(COLUMNS) as ColumnName[]) {
    const column = columns[name];
    const copy = column.slice(0, index.n);
    order.forEach((from, to) => (column[to] = copy[from]));
  }
}

/** The row of a transaction id, or -1. */
export function rowOfId(index: TargetIndex, id: number): number {
  let lo = 0;
  let hi = index.n;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (index.ids[mid] < id) lo = mid + 1;
    else hi = mid;
  }
  return lo < index.n && index.ids[lo] === id && !(index.flags[lo] & FLAG_DEAD) ? lo : -1;
}

/** Marks a transaction deleted; the columns shrink once half their rows are. */
export function markDead(index: TargetIndex, id: number): void {
  const row = rowOfId(index, id);
  if (row === -1) return;
  index.flags[row] |= FLAG_DEAD;
  index.live--;
  index.version++;
  if (index.live < index.n / 2 && index.scans === 0) dropDead(index);
}

function dropDead(index: TargetIndex): void {
  const columns = index as unknown as Record<ColumnName, Uint32Array>;
  const urls = Buffer.allocUnsafeSlow(Math.max(64, index.urlBytes));
  let to = 0;
  let bytes = 0;
  for (let from = 0; from < index.n; from++) {
    if (index.flags[from] & FLAG_DEAD) continue;
    for (const name of Object.keys(COLUMNS) as ColumnName[]) columns[name][to] = columns[name][from];
    index.urls.copy(urls, bytes, index.urlStart[from], index.urlStart[from] + index.urlLength[from]);
    index.urlStart[to] = bytes;
    bytes += index.urlLength[from];
    to++;
  }
  index.n = to;
  index.urls = urls;
  index.urlBytes = bytes;
}

/** A rewritten segment's records are now in `into`, at the places its footer says (by id). */
export function relocate(index: TargetIndex, into: number, base: number, footer: Footer): void {
  for (let k = 0, p = 0; k < footer.count; k++, p += FOOTER_ROW) {
    const row = rowOfId(index, base + footer.fixed.readUInt32LE(p + 12));
    if (row === -1) continue;
    index.seg[row] = into;
    index.off[row] = footer.fixed.readDoubleLE(p);
    index.len[row] = footer.fixed.readUInt32LE(p + 8);
  }
}

/** A row's URL bytes (a view: copy before keeping). */
export const urlBytesOf = (index: TargetIndex, row: number) => index.urls.subarray(index.urlStart[row], index.urlStart[row] + index.urlLength[row]);

export const urlOf = (index: TargetIndex, row: number) => index.urls.toString('utf8', index.urlStart[row], index.urlStart[row] + index.urlLength[row]);
