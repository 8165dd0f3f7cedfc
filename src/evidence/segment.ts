/**
 * A segment file: records appended front to back, then a footer holding each record's index row
 * (where it is, and what a list or a filter reads without opening it), then a 12-byte trailer
 * naming where the footer starts. Written once, fsynced, never changed: a rewrite is a new file.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { join } from 'node:path';
import type { FileSystem, NewFile } from '../store/atomic-file.js';
import { encodeRecord, headerValue, type Exchange } from './record.js';

export const SEGMENT_DIR = 'transactions';
export const segmentFileName = (n: number) => `${n}.seg`;
export const segmentPath = (dataDir: string, n: number) => join(dataDir, SEGMENT_DIR, segmentFileName(n));
const SEGMENT_FILE = /^([1-9][0-9]{0,14})\.seg$/;

/** The segment number a file name says, or undefined for another file. */
export function segmentNumberOf(name: string): number | undefined {
  const m = SEGMENT_FILE.exec(name);
  return m ? Number(m[1]) : undefined;
}

export const FLAG_SCOPE = 1;
export const FLAG_BINARY = 2;
export const FLAG_TRUNCATED = 4;
export const FLAG_RESPONSE = 8;
/** Set in memory only, on a deleted row. */
export const FLAG_DEAD = 128;
/** Bits 4-5: the source's index in SOURCES. */
export const SOURCE_SHIFT = 4;

/** A record's index row: what lists, filters and URLs read without opening the record. */
export interface IndexRow {
  /** Its place in the segment as first written: its id is the segment's base plus this. */
  local: number;
  off: number;
  len: number;
  status: number;
  flags: number;
  time: number;
  startedAt: number;
  size: number;
  url: string;
  method: string;
  reason: string;
  requestType: string;
  responseType: string;
}

const MAGIC = 0x31465854; // "TXF1"
const TRAILER = 12;
const ROW = 8 + 4 + 4 + 8 + 8 + 4 + 4 + 2 + 1 + 1 + 2 + 2 + 2 + 2;

/** The footer's bytes: `[u32 strings length][strings JSON][rows][url bytes]`. */
function encodeFooter(rows: readonly IndexRow[]): Buffer {
  const tables = { method: new Map<string, number>(), reason: new Map<string, number>(), type: new Map<string, number>() };
  const intern = (table: Map<string, number>, s: string) => table.get(s) ?? table.set(s, table.size).get(s)!;
  const urls = rows.map((r) => Buffer.from(r.url));
  const fixed = Buffer.alloc(rows.length * ROW);
  rows.forEach((r, i) => {
    let p = i * ROW;
    p = fixed.writeDoubleLE(r.off, p);
    p = fixed.writeUInt32LE(r.len, p);
    p = fixed.writeUInt32LE(r.local, p);
    p = fixed.writeDoubleLE(r.startedAt, p);
    p = fixed.writeDoubleLE(r.size, p);
    p = fixed.writeFloatLE(r.time, p);
    p = fixed.writeUInt32LE(urls[i].length, p);
    p = fixed.writeUInt16LE(r.status, p);
    p = fixed.writeUInt8(r.flags & ~FLAG_DEAD, p);
    p += 1;
    p = fixed.writeUInt16LE(intern(tables.method, r.method), p);
    p = fixed.writeUInt16LE(intern(tables.reason, r.reason), p);
    p = fixed.writeUInt16LE(intern(tables.type, r.requestType), p);
    fixed.writeUInt16LE(intern(tables.type, r.responseType), p);
  });
  const strings = Buffer.from(JSON.stringify({ count: rows.length, method: [...tables.method.keys()], reason: [...tables.reason.keys()], type: [...tables.type.keys()] }));
  const length = Buffer.alloc(4);
  length.writeUInt32LE(strings.length);
  return Buffer.concat([length, strings, fixed, ...urls]);
}

/** A segment's footer read back: fixed-size rows, their strings' tables, and the URLs' bytes one after another. */
export interface Footer {
  count: number;
  method: string[];
  reason: string[];
  type: string[];
  /** `count` rows of ROW bytes (see encodeFooter). */
  fixed: Buffer;
  urls: Buffer;
}

export const FOOTER_ROW = ROW;

export function parseFooter(footer: Buffer): Footer {
  const stringsLength = footer.readUInt32LE(0);
  const tables = JSON.parse(footer.toString('utf8', 4, 4 + stringsLength)) as { count: number; method: string[]; reason: string[]; type: string[] };
  const start = 4 + stringsLength;
  const fixed = footer.subarray(start, start + tables.count * ROW);
  if (fixed.length !== tables.count * ROW) throw new Error('rows cut short');
  return { ...tables, fixed, urls: footer.subarray(start + tables.count * ROW) };
}

/** A footer's rows as objects (a rewrite copies them; the index reads the bytes itself). */
export function footerRows(footer: Footer): IndexRow[] {
  const { fixed, urls } = footer;
  const rows: IndexRow[] = [];
  for (let i = 0, p = 0, u = 0; i < footer.count; i++, p += ROW) {
    const urlLength = fixed.readUInt32LE(p + 36);
    rows.push({
      off: fixed.readDoubleLE(p),
      len: fixed.readUInt32LE(p + 8),
      local: fixed.readUInt32LE(p + 12),
      startedAt: fixed.readDoubleLE(p + 16),
      size: fixed.readDoubleLE(p + 24),
      time: fixed.readFloatLE(p + 32),
      status: fixed.readUInt16LE(p + 40),
      flags: fixed.readUInt8(p + 42),
      method: footer.method[fixed.readUInt16LE(p + 44)],
      reason: footer.reason[fixed.readUInt16LE(p + 46)],
      requestType: footer.type[fixed.readUInt16LE(p + 48)],
      responseType: footer.type[fixed.readUInt16LE(p + 50)],
      url: urls.toString('utf8', u, u + urlLength),
    });
    u += urlLength;
  }
  return rows;
}

/** A segment file being written; nothing of it counts before the op naming it is durable. */
export interface SegmentWriter {
  readonly path: string;
  readonly rows: readonly IndexRow[];
  /** Its footer, once finished: what the index learns the segment from. */
  readonly footer: Footer | undefined;
  /** Appends one exchange as a record, with its index row's flags (scope, source...). */
  add(exchange: Exchange, flags: number): Promise<void>;
  /** Appends a record already encoded (a rewrite copies them), keeping its row. */
  addRecord(bytes: Buffer, row: IndexRow): Promise<void>;
  /** Footer, trailer, fsync, close: the file is durable (its directory entry needs a directory fsync). */
  finish(): Promise<void>;
  /** Closes and deletes the file: an import refused, or failed. */
  abort(): Promise<void>;
}

/** Bytes gathered before each write. */
const WRITE_CHUNK = 1024 * 1024;

/** The index row of an exchange about to be written at `off`. */
export function rowOf(x: Exchange, local: number, off: number, len: number, flags: number): IndexRow {
  return {
    local, off, len, flags,
    status: x.status,
    time: x.time,
    startedAt: x.startedAt,
    size: x.responseSize,
    url: x.url,
    method: x.method,
    reason: x.statusText,
    requestType: headerValue(x.requestHeaders, 'content-type') || (x.requestType ?? ''),
    responseType: x.mimeType || headerValue(x.responseHeaders, 'content-type'),
  };
}

export async function createSegment(fs: FileSystem, path: string): Promise<SegmentWriter> {
  const file: NewFile = await fs.createFile(path);
  const rows: IndexRow[] = [];
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let offset = 0;
  let closed = false;
  let footer: Footer | undefined;
  const flush = async () => {
    if (pendingBytes === 0) return;
    const data = pending.length === 1 ? pending[0] : Buffer.concat(pending, pendingBytes);
    pending = [];
    pendingBytes = 0;
    await file.write(data);
  };
  const append = async (bytes: Buffer) => {
    pending.push(bytes);
    pendingBytes += bytes.length;
    offset += bytes.length;
    if (pendingBytes >= WRITE_CHUNK) await flush();
  };
  const close = async () => {
    if (closed) return;
    closed = true;
    await file.close();
  };
  return {
    path,
    rows,
    get footer() {
      return footer;
    },
    async add(exchange, flags) {
      const bytes = encodeRecord(exchange);
      rows.push(rowOf(exchange, rows.length, offset, bytes.length, flags));
      await append(bytes);
    },
    async addRecord(bytes, row) {
      rows.push({ ...row, off: offset, len: bytes.length });
      await append(bytes);
    },
    async finish() {
      const bytes = encodeFooter(rows);
      const trailer = Buffer.alloc(TRAILER);
      trailer.writeDoubleLE(offset, 0);
      trailer.writeUInt32LE(MAGIC, 8);
      footer = parseFooter(bytes);
      await append(bytes);
      await append(trailer);
      await flush();
      await file.sync();
      await close();
    },
    async abort() {
      await close().catch(() => {});
      await fs.remove(path);
    },
  };
}

/** A segment file whose footer cannot be read; `damage` says how, for a log line (salvage.ts reads such a file back). */
export class CorruptSegmentError extends Error {
  readonly code = 'ERR_DATA_FILE';
  constructor(path: string, readonly damage: string, detail = damage) {
    super(`${path}: ${detail}`);
  }
}

const CUT = 'its end is cut or overwritten';

/** Reads a segment's footer (synchronously: a few reads of one file). */
export function readFooter(path: string): Footer {
  const fd = openSync(path, 'r');
  try {
    const size = fstatSync(fd).size;
    const trailer = Buffer.alloc(TRAILER);
    if (size < TRAILER || readSync(fd, trailer, 0, TRAILER, size - TRAILER) !== TRAILER || trailer.readUInt32LE(8) !== MAGIC) {
      throw new CorruptSegmentError(path, CUT, 'not a transaction segment (no footer)');
    }
    const start = trailer.readDoubleLE(0);
    if (!(Number.isSafeInteger(start) && start >= 0 && start <= size - TRAILER)) throw new CorruptSegmentError(path, CUT, 'its trailer names no footer');
    const footer = Buffer.alloc(size - TRAILER - start);
    for (let read = 0, n; read < footer.length; read += n) {
      n = readSync(fd, footer, read, footer.length - read, start + read);
      if (n === 0) throw new CorruptSegmentError(path, CUT, 'cut short');
    }
    try {
      return parseFooter(footer);
    } catch (err) {
      throw new CorruptSegmentError(path, 'its index does not parse', `its footer does not parse (${(err as Error).message})`);
    }
  } finally {
    closeSync(fd);
  }
}
