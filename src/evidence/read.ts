/** Transactions read back: a record by id (whole, or its start), the views of a page, and a target's URLs. */
import { rowOfId, urlOf, type TargetIndex } from './index.js';
import {
  CorruptRecordError, decodeRecord, encodeRecord, LIST_BODY_CAP, recordHeadLength, responseStatus, SOURCES, transactionView, type RowFacts, type StoredRecord,
} from './record.js';
import { FLAG_BINARY, FLAG_DEAD, FLAG_RESPONSE, FLAG_SCOPE, FLAG_TRUNCATED, SOURCE_SHIFT } from './segment.js';
import type { Evidence, LoadedTarget } from './store.js';
import { arrayPieces, upTo } from '../json-pieces.js';

/** What is read first of a record when only its start is wanted: its head is nearly always within. */
const FIRST_READ = 64 * 1024;

export interface Stored {
  record: StoredRecord;
  facts: RowFacts;
}

/**
 * Reads transaction `id` of a loaded target: the whole record, or with `bodyBytes` its head and
 * that many bytes of its body (one more, to know it is cut), and then with `requestBytes` no more
 * of its request body than that (the rest is not read: a list's rows may be 16 MiB uploads).
 * Undefined when there is no such one.
 */
export async function readStored(ev: Evidence, loaded: LoadedTarget, target: number, id: number, bodyBytes = Infinity, requestBytes = Infinity): Promise<Stored | undefined> {
  const { index } = loaded;
  const row = rowOfId(index, id);
  if (row === -1) return undefined;
  const facts: RowFacts = { id, target, scope: (index.flags[row] & FLAG_SCOPE) !== 0, binary: (index.flags[row] & FLAG_BINARY) !== 0 };
  try {
    return { record: await readRecord(ev, index, row, bodyBytes, requestBytes), facts };
  } catch (err) {
    // a record damaged on disk (a bad sector, an edit) does not take its page down with it
    if (!(err instanceof CorruptRecordError || err instanceof RangeError)) throw err;
    const reason = err instanceof CorruptRecordError ? err.message : 'its lengths lead past its end';
    ev.damagedRecord(index.seg[row], index.off[row], `transaction ${id} of target ${target}: ${reason}`);
    return { record: standIn(loaded, row, reason), facts };
  }
}

/**
 * A damaged record's stand-in: what its index row holds (URL, method, status, times, sizes, types),
 * no headers or bodies, and an `error` saying so.
 */
function standIn({ index, interner }: LoadedTarget, row: number, reason: string): StoredRecord {
  const flags = index.flags[row];
  return decodeRecord(
    encodeRecord({
      url: urlOf(index, row), method: interner.text(index.method[row]), httpVersion: 'HTTP/1.1', requestHeaders: [], requestBody: Buffer.alloc(0),
      status: flags & FLAG_RESPONSE ? index.status[row] : 0, statusText: interner.text(index.reason[row]), responseHttpVersion: 'HTTP/1.1',
      responseHeaders: [], responseBody: Buffer.alloc(0), responseSize: index.size[row], truncated: (flags & FLAG_TRUNCATED) !== 0,
      mimeType: interner.text(index.responseType[row]), startedAt: index.startedAt[row], time: index.time[row],
      source: SOURCES[(flags >> SOURCE_SHIFT) & 3] ?? 'har', error: `the stored record is damaged (${reason}): only its index row is shown`,
    }),
  );
}

/** A record as readStored wants it (whole, or its start); throws CorruptRecordError (or a RangeError) for one damaged. */
async function readRecord(ev: Evidence, index: TargetIndex, row: number, bodyBytes: number, requestBytes: number): Promise<StoredRecord> {
  const segment = index.seg[row];
  const off = index.off[row];
  const len = index.len[row];
  if (bodyBytes === Infinity) return decodeRecord(await ev.read(segment, off, len));
  // the record's start: its fixed head says where its parts are
  const first = await ev.read(segment, off, Math.min(len, FIRST_READ + bodyBytes + 1));
  const headLength = recordHeadLength(first);
  const responseHeadLength = first.readUInt32LE(12);
  const missing = Math.max(0, first.readUInt32LE(8) - requestBytes);
  if (missing > 0) {
    // the request up to the cut, then its response head and body's start: the rest of the request body is not read
    const requestEnd = headLength - responseHeadLength;
    const kept = requestEnd - missing;
    const prefix = first.length >= kept ? first.subarray(0, kept) : await ev.read(segment, off, kept);
    const rest = await ev.read(segment, off + requestEnd, Math.min(len - requestEnd, responseHeadLength + bodyBytes + 1));
    return decodeRecord(Buffer.concat([prefix, rest]), missing);
  }
  const wanted = Math.min(len, headLength + bodyBytes + 1);
  return decodeRecord(wanted > first.length ? await ev.read(segment, off, wanted) : first);
}

/**
 * Characters of JSON one answer's rows may take together: a target's URLs, headers and bodies are
 * its own, and a page was bounded by its count alone (10,000 rows of 63 KB URLs: a 490 MB answer
 * that held the server 9-12 s; 600 raw rows of control characters, six characters of JSON each:
 * past what a string may hold, a 500). The first row is always given. An answer to a request with
 * an extension argument is cut so; an upstream client pages on by its limit, and would pass over
 * the rows left out unsaid, so its page goes on past the budget, each row read and written as the
 * client takes the ones before (`rest`), never held whole.
 */
export const ANSWER_BUDGET = 32 * 1024 * 1024;

/** How a page treats rows past ANSWER_BUDGET: left out (the page says it is cut), or sent as the client reads. */
export type PastBudget = 'cut' | 'stream';

/**
 * A page's rows as JSON, each written once (measured, then joined into the answer): those the
 * budget holds, whether it left some out (`cut`), or, for a page that must come whole, the rest to
 * be written as the client reads them (`rest`: rows deleted meanwhile are left out).
 */
export interface JsonRows {
  json: string[];
  cut: boolean;
  rest?: AsyncIterable<string>;
}

/** JSON text: one string, or pieces written as the client reads them. */
export type JsonText = string | AsyncIterable<string>;

/** Rows' JSON (`texts`) taken while the budget holds them (the first always), and past it left out or left to `rest`. */
async function budgeted(texts: Iterable<string> | AsyncIterable<string>, past: PastBudget): Promise<JsonRows> {
  const { taken, rest } = await upTo(texts, ANSWER_BUDGET);
  if (!rest) return { json: taken, cut: false };
  return past === 'cut' ? { json: taken, cut: true } : { json: taken, cut: false, rest };
}

/**
 * The views of transactions by id (ids deleted meanwhile are left out), as JSON: as many as the
 * budget holds, and past it the rest cut or streamed (`past`).
 */
export function viewsOf(ev: Evidence, loaded: LoadedTarget, target: number, ids: readonly number[], raw: boolean, bodyCap: number, past: PastBudget = 'cut'): Promise<JsonRows> {
  const texts = async function* () {
    for (const id of ids) {
      const stored = await readStored(ev, loaded, target, id, raw ? bodyCap : 0, LIST_BODY_CAP);
      if (stored) yield JSON.stringify(transactionView(stored.facts, stored.record, raw, { bodyCap, requestCap: LIST_BODY_CAP, listed: true }));
    }
  };
  return budgeted(texts(), past);
}

/** As many of `rows` (from the first) as the budget holds, as JSON, and past it the rest cut or streamed (`past`). */
export function withinBudget(rows: readonly unknown[], past: PastBudget = 'cut'): Promise<JsonRows> {
  const texts = function* () {
    for (const row of rows) yield JSON.stringify(row);
  };
  return budgeted(texts(), past);
}

/** `[row,...]`: one string, or, for a page that goes on past the budget, pieces. */
export function jsonArray(page: JsonRows): JsonText {
  return page.rest ? arrayPieces(page.rest, page.json) : `[${page.json.join(',')}]`;
}

/**
 * A search's answer, `{"records_total","records_filtered","data":[rows],...rest}`, its rows as
 * written (the fields in that order, as upstream's).
 */
export function searchJson(total: number, filtered: number, page: JsonRows, rest: Record<string, unknown>): JsonText {
  const more = JSON.stringify(rest);
  const head = `{"records_total":${total},"records_filtered":${filtered},"data":`;
  const tail = more === '{}' ? '}' : `,${more.slice(1)}`;
  const rows = jsonArray(page);
  if (typeof rows === 'string') return `${head}${rows}${tail}`;
  return (async function* () {
    yield head;
    yield* rows;
    yield tail;
  })();
}

/** `GET https://shop.example/login → 302 Found`: a transaction's request line and status, from the index alone. */
export function requestLine(loaded: LoadedTarget, id: number): string | undefined {
  const { index, interner } = loaded;
  const row = rowOfId(index, id);
  if (row === -1) return undefined;
  const status = index.flags[row] & FLAG_RESPONSE ? ` → ${responseStatus(index.status[row]!, interner.text(index.reason[row]))}` : ' → no response';
  return `${interner.text(index.method[row])} ${urlOf(index, row)}${status}`;
}

export const URL_KINDS = ['file', 'image', 'fuzzable', 'error', 'external', 'page'] as const;
export type UrlKind = (typeof URL_KINDS)[number];

/** A URL seen in a target's transactions (upstream's URL row, plus `kind`). */
export interface UrlRow {
  target_id: number;
  url: string;
  visited: boolean;
  scope: boolean;
  kind: UrlKind;
}

// upstream's own lists (owtf/settings.py): files and images by extension, before any query
const FILE_URL = /^[^?]+\.(xml|exe|pdf|cs|log|inc|dat|bak|conf|cnf|old|zip|7z|rar|tar|gz|bz2|txt|xls|xlsx|doc|docx|ppt|pptx)$/i;
const IMAGE_URL = /^[^?]+\.(jpg|jpeg|png|gif|bmp)$/i;
const FORM_TYPES = new Set(['application/x-www-form-urlencoded', 'multipart/form-data']);

/**
 * The kind of a URL: `external` out of scope, `error` when its last answer was 4xx/5xx, then
 * `image` and `file` by extension, `fuzzable` with a query or a form sent to it, else `page`.
 */
export function urlKind(url: string, scope: boolean, status: number, form: boolean): UrlKind {
  if (!scope) return 'external';
  if (status >= 400) return 'error';
  const noFragment = url.split('#', 1)[0];
  if (IMAGE_URL.test(noFragment)) return 'image';
  if (FILE_URL.test(noFragment)) return 'file';
  if (noFragment.includes('?') || form) return 'fuzzable';
  return 'page';
}

const urlCache = new WeakMap<TargetIndex, { version: number; rows: UrlRow[] }>();

/** Every URL of a target's transactions, in the order first seen; worked out once per change. */
export function urlRows(loaded: LoadedTarget, target: number): UrlRow[] {
  const { index, interner } = loaded;
  const cached = urlCache.get(index);
  if (cached && cached.version === index.version) return cached.rows;
  const seen = new Map<string, { scope: boolean; status: number; form: boolean }>();
  for (let i = 0; i < index.n; i++) {
    if (index.flags[i] & FLAG_DEAD) continue;
    const url = urlOf(index, i);
    const prior = seen.get(url);
    const form = FORM_TYPES.has(interner.text(index.requestType[i]));
    const status = index.flags[i] & FLAG_RESPONSE ? index.status[i] : 0;
    seen.set(url, { scope: (index.flags[i] & FLAG_SCOPE) !== 0, status, form: form || (prior?.form ?? false) });
  }
  const rows = [...seen].map(([url, s]) => ({ target_id: target, url, visited: true, scope: s.scope, kind: urlKind(url, s.scope, s.status, s.form) }));
  urlCache.set(index, { version: index.version, rows });
  return rows;
}
