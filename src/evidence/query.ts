/**
 * Lists and searches over a target's transactions: the index answers what it can (URL, method,
 * status, type, flags); records are read, a few MiB at a time and in file order, only for rows
 * whose answer depends on their headers or bodies, and a search that needs them stops once its
 * page is full. The scan yields to the event loop every few milliseconds and stops at a deadline.
 */
import { evaluate, isRecordField, needsRecord, regexTests, regionsOf, type Expr, type RecordParts, type Subject } from './filter.js';
import { urlBytesOf, type TargetIndex } from './index.js';
import { SearchTimeout } from './regex.js';
import { RECORD_HEADER, responseStatus } from './record.js';
import { FLAG_BINARY, FLAG_DEAD, FLAG_RESPONSE, FLAG_SCOPE } from './segment.js';
import type { LoadedTarget } from './store.js';

export interface RowQuery {
  filter?: Expr;
  offset: number;
  /** Undefined: every match. */
  limit?: number;
  /** A search that reads records stops once the page is full and one more match is found. */
  stopWhenFull: boolean;
  /** performance.now() past which the scan stops (with what it found). */
  deadline: number;
  /** Only transactions with a greater id (a view asking for what arrived since it last looked). */
  afterId?: number;
  /** Newest first (default: oldest first). */
  newest?: boolean;
}

export interface RowMatches {
  /** Live transactions of the target. */
  total: number;
  /** Matches found: all of them when `exact`. */
  filtered: number;
  exact: boolean;
  timedOut: boolean;
  /** The page's transaction ids, oldest first (newest first when asked). */
  ids: number[];
  /** The target's highest transaction id when the scan began (0: none): a view asks after it next time. */
  lastId: number;
}

/** Reads bytes of a segment: the evidence store's reader. */
export type ReadBytes = (segment: number, position: number, length: number) => Promise<Buffer>;

const SLICE_MS = 8;
/**
 * Longest one test of one transaction may run: a matcher runs without turning the event loop, and
 * a pattern that is slow on a body (a lookahead at each of 4 MiB of positions) would otherwise hold
 * the server until the search's own deadline (10 s; an export's, 60). Past it the search stops, as
 * at its deadline. A 16 MiB body takes ~100 ms with a plain pattern.
 */
const TEST_MS = 500;
const BATCH_BYTES = 4 * 1024 * 1024;
const BATCH_ROWS = 1024;

const slash = 0x2f;

/** The host of a URL's bytes (`scheme://[user@]host[:port]/...`), IPv6 without brackets. */
export function hostOf(url: Uint8Array): Uint8Array {
  let start = 0;
  for (let i = 0; i + 2 < url.length; i++) {
    if (url[i] === 0x3a && url[i + 1] === slash && url[i + 2] === slash) {
      start = i + 3;
      break;
    }
  }
  let end = start;
  while (end < url.length && url[end] !== slash && url[end] !== 0x3f && url[end] !== 0x23) end++;
  let host = url.subarray(start, end);
  const at = host.lastIndexOf(0x40);
  if (at !== -1) host = host.subarray(at + 1);
  if (host[0] === 0x5b) return host.subarray(1, Math.max(1, host.indexOf(0x5d)));
  const colon = host.lastIndexOf(0x3a);
  return colon === -1 ? host : host.subarray(0, colon);
}

/** Where the parts of a record are, within `bytes` from `start` (from its fixed header alone). */
export function recordParts(bytes: Buffer, start: number): RecordParts {
  const metaLength = bytes.readUInt32LE(start);
  const ql = bytes.readUInt32LE(start + 4);
  const qb = bytes.readUInt32LE(start + 8);
  const hl = bytes.readUInt32LE(start + 12);
  const bl = bytes.readUInt32LE(start + 16);
  const request = start + RECORD_HEADER + metaLength;
  const head = request + ql;
  const body = head + hl;
  const lineEnd = bytes.indexOf('\r\n', request);
  const headersEnd = request + ql - qb;
  return {
    bytes,
    rawRequest: [request, head],
    // the header lines, without the request line nor the blank line
    requestHeaders: [Math.min(lineEnd + 2, headersEnd), Math.max(lineEnd + 2, headersEnd - 4)],
    requestBody: [headersEnd, head],
    responseHeaders: [head, body],
    responseBody: [body, body + bl],
  };
}

/** Answers worked out for many rows at once: by test, the rows it holds for (URL tests: all rows; record tests: a batch's). */
type Known = Map<Expr, Set<number>>;

/** A subject for the filter, moved from row to row. */
function subjectOf(loaded: LoadedTarget, known: Known): Subject & { row: number } {
  const { index, interner } = loaded;
  const s = {
    row: 0,
    parts: undefined as RecordParts | undefined,
    known: (expr: Expr) => {
      const rows = known.get(expr);
      if (!rows) return undefined;
      // a record's test is known once its batch was searched
      if (expr.k === 'regex' && isRecordField(expr.field) && !s.parts) return undefined;
      return rows.has(s.row);
    },
    url: () => urlBytesOf(index, s.row),
    domain: () => hostOf(urlBytesOf(index, s.row)),
    method: () => interner.text(index.method[s.row]),
    status: () => index.status[s.row],
    statusLine: () => (index.flags[s.row] & FLAG_RESPONSE ? responseStatus(index.status[s.row]!, interner.text(index.reason[s.row])) : ''),
    scope: () => (index.flags[s.row] & FLAG_SCOPE) !== 0,
    binary: () => (index.flags[s.row] & FLAG_BINARY) !== 0,
    types: () => [interner.text(index.requestType[s.row]), interner.text(index.responseType[s.row])],
    hasResponse: () => (index.flags[s.row] & FLAG_RESPONSE) !== 0,
  };
  return s;
}

/** Records read together: one buffer, and where each row's record is in it. */
export interface Batch {
  bytes: Buffer;
  rows: number[];
  /** Where each row's record starts in `bytes`, and its parts. */
  starts: number[];
  parts: RecordParts[];
}

/** Reads the records of `rows` (in index order), coalescing neighbours in a file into one read. */
export async function readRecords(index: TargetIndex, rows: number[], read: ReadBytes): Promise<Batch[]> {
  const batches: Batch[] = [];
  let i = 0;
  while (i < rows.length) {
    const first = rows[i];
    let j = i + 1;
    let end = index.off[first] + index.len[first];
    while (j < rows.length && index.seg[rows[j]] === index.seg[first] && index.off[rows[j]] === end && end - index.off[first] < BATCH_BYTES) {
      end += index.len[rows[j]];
      j++;
    }
    const bytes = await read(index.seg[first], index.off[first], end - index.off[first]);
    const batch: Batch = { bytes, rows: rows.slice(i, j), starts: [], parts: [] };
    for (let k = i; k < j; k++) {
      batch.starts.push(index.off[rows[k]] - index.off[first]);
      batch.parts.push(recordParts(bytes, batch.starts.at(-1)!));
    }
    batches.push(batch);
    i = j;
  }
  return batches;
}

/**
 * The literal tests of record fields, searched once in each buffer read (one native scan over
 * MiBs instead of one per record), each hit given to the record and part it falls in.
 */
function searchBatches(tests: Extract<Expr, { k: 'regex' }>[], batches: Batch[], known: Known, deadline: () => number): void {
  for (const test of tests) {
    const rows = new Set<number>();
    known.set(test, rows);
    const length = test.matcher.length!;
    for (const batch of batches) {
      let r = 0;
      test.matcher.each!(batch.bytes, 0, batch.bytes.length, (at) => {
        // the record the hit is in: batches hold records in order
        while (r + 1 < batch.starts.length && batch.starts[r + 1] <= at) r++;
        const recordEnd = r + 1 < batch.starts.length ? batch.starts[r + 1] : batch.bytes.length;
        // a record matches once: its other hits are passed over, not visited one by one
        if (rows.has(batch.rows[r])) return recordEnd;
        let from = recordEnd;
        for (const [start, end] of regionsOf(batch.parts[r], test.field)) {
          if (at >= start && at + length <= end) {
            rows.add(batch.rows[r]);
            return recordEnd;
          }
          // a hit outside the field searched: on from the field's next region
          if (start > at && start < from) from = start;
        }
        return from;
      }, deadline());
    }
  }
}

/** URL literal tests, searched once in the index's buffer of URLs. */
function searchUrls(index: TargetIndex, tests: Extract<Expr, { k: 'regex' }>[], known: Known, deadline: number): void {
  // rows hold their URLs in order, but after a merge of segments committed out of order
  for (let i = 1; i < index.n; i++) if (index.urlStart[i] < index.urlStart[i - 1]) return;
  for (const test of tests) {
    const rows = new Set<number>();
    const length = test.matcher.length!;
    let row = 0;
    test.matcher.each!(index.urls, 0, index.urlBytes, (at) => {
      while (row + 1 < index.n && index.urlStart[row + 1] <= at) row++;
      const next = row + 1 < index.n ? index.urlStart[row + 1] : index.urlBytes;
      if (at + length > index.urlStart[row] + index.urlLength[row]) return false;
      rows.add(row);
      // the URL's other hits passed over
      return next;
    }, deadline);
    known.set(test, rows);
  }
}

/** The rows that match a query, paged, oldest first. */
export async function findRows(loaded: LoadedTarget, q: RowQuery, read: ReadBytes): Promise<RowMatches> {
  const { index } = loaded;
  const n = index.n;
  const lastId = n > 0 ? index.ids[n - 1] : 0;
  const filter = q.filter;
  const disk = filter !== undefined && needsRecord(filter);
  const want = q.offset + (q.limit ?? Infinity);
  const known: Known = new Map();
  const literals = filter ? regexTests(filter).filter((t) => t.matcher.each && !t.lines) : [];
  const recordLiterals = literals.filter((t) => isRecordField(t.field));
  const subject = subjectOf(loaded, known);
  const ids: number[] = [];
  let matched = 0;
  let exact = true;
  let timedOut = false;
  let slice = performance.now();
  let batches = 0;
  const take = (row: number) => {
    matched++;
    if (matched > q.offset && matched <= want) ids.push(index.ids[row]);
  };
  // the first row after `afterId`: ids are in row order
  let lo = 0;
  if (q.afterId !== undefined) {
    let hi = n;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (index.ids[mid] <= q.afterId) lo = mid + 1;
      else hi = mid;
    }
  }
  const testDeadline = () => Math.min(q.deadline, performance.now() + TEST_MS);
  const step = q.newest ? -1 : 1;
  const more = (i: number) => (q.newest ? i >= lo : i < n);
  // rows keep their places while the scan waits: deleted ones are not dropped from the columns meanwhile
  index.scans++;
  try {
    // each a test of every row's URL at once, bound as one test is (the URLs of a hostile site took seconds)
    if (n > 0) searchUrls(index, literals.filter((t) => t.field === 'url'), known, testDeadline());
    let i = q.newest ? n - 1 : lo;
    while (more(i)) {
      if (!disk) {
        // one bound for the slice's rows: reading the clock once more per row costs a scan of millions
        const testBy = testDeadline();
        for (; more(i) && performance.now() - slice < SLICE_MS; i += step) {
          if (index.flags[i] & FLAG_DEAD) continue;
          subject.row = i;
          if (!filter || evaluate(filter, subject, testBy)) take(i);
          // an index-only filter checks the time once in a while: it is cheap, but there may be many rows
          if ((i & 0x3fff) === 0 && performance.now() > q.deadline) throw new SearchTimeout('search took too long');
        }
      } else {
        // a batch of rows whose answer is known, or needs their record
        const batch: { row: number; answer: boolean | undefined }[] = [];
        const unknown: number[] = [];
        let bytes = 0;
        // small batches first (a page that fills at once is answered at once), then larger ones
        const rowsNow = Math.min(BATCH_ROWS, 64 << Math.min(batches++, 4));
        for (; more(i) && batch.length < rowsNow && bytes < BATCH_BYTES; i += step) {
          if (index.flags[i] & FLAG_DEAD) continue;
          subject.row = i;
          subject.parts = undefined;
          const answer = evaluate(filter, subject, testDeadline());
          if (answer === false) continue;
          batch.push({ row: i, answer });
          if (answer === undefined) {
            unknown.push(i);
            bytes += index.len[i];
          }
        }
        // read in file order, whatever the order asked
        if (q.newest) unknown.reverse();
        const records = unknown.length > 0 ? await readRecords(index, unknown, read) : [];
        // each test of a batch bound as one test of one transaction is (a batch is at most a few MiB, or one record)
        searchBatches(recordLiterals, records, known, testDeadline);
        const parts = new Map<number, RecordParts>();
        for (const b of records) b.rows.forEach((row, k) => parts.set(row, b.parts[k]));
        for (const item of batch) {
          let answer = item.answer;
          if (answer === undefined) {
            // a batch holds MiBs of bodies: the event loop turns within it too
            if (performance.now() - slice >= SLICE_MS) {
              await new Promise((resolve) => setImmediate(resolve));
              slice = performance.now();
            }
            subject.row = item.row;
            subject.parts = parts.get(item.row);
            answer = evaluate(filter, subject, testDeadline()) === true;
          }
          if (answer) take(item.row);
          if (q.stopWhenFull && matched > want) break;
        }
        subject.parts = undefined;
        if (q.stopWhenFull && matched > want) {
          exact = false;
          break;
        }
      }
      if (performance.now() > q.deadline) throw new SearchTimeout('search took too long');
      if (performance.now() - slice >= SLICE_MS) {
        await new Promise((resolve) => setImmediate(resolve));
        slice = performance.now();
      }
    }
  } catch (err) {
    if (!(err instanceof SearchTimeout)) throw err;
    timedOut = true;
    exact = false;
  } finally {
    index.scans--;
  }
  return { total: index.live, filtered: matched, exact, timedOut, ids, lastId };
}
