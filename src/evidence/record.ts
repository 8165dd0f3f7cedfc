/**
 * One transaction as its segment file holds it, and its fields as the API shows them. A record is
 * `[u32 meta length][u32 x4: the parts' lengths][meta JSON][raw request][response headers][response body]`:
 * the raw request and the response's parts are kept as the bytes a search scans and a download
 * sends, and a search finds them from the fixed header alone.
 */
import { isUtf8 } from 'node:buffer';
import { promisify } from 'node:util';
import { runTime } from '../engine/output-text.js';
import { zlib } from '../lazy-builtins.js';
import { incompleteTail } from './utf8.js';

export const SOURCES = ['har', 'check', 'proxy', 'replay'] as const;
export type Source = (typeof SOURCES)[number];

export type Header = [name: string, value: string];

/** An HTTP exchange as a source hands it over, checked (see har.ts). */
export interface Exchange {
  /** Absolute http(s) URL, as the WHATWG parser writes it. */
  url: string;
  method: string;
  /** `HTTP/1.1`, `HTTP/2`... */
  httpVersion: string;
  requestHeaders: Header[];
  requestBody: Buffer;
  /**
   * Set when the request body was stored cut: the bytes sent (more than `requestBody` holds), or
   * -1 when not known (the client was still sending a chunked body when the answer ended).
   */
  requestSize?: number;
  /** 0: no response. */
  status: number;
  statusText: string;
  responseHttpVersion: string;
  responseHeaders: Header[];
  responseBody: Buffer;
  /** Bytes of the body as received, before any cut at the storage cap. */
  responseSize: number;
  /** The body was cut at the storage cap. */
  truncated: boolean;
  /** The response's content type, `''` when none. */
  mimeType: string;
  /** ms since the epoch. */
  startedAt: number;
  /** ms the exchange took. */
  time: number;
  source: Source;
  /** HAR's timings, kept for the export. */
  timings?: Record<string, number>;
  /**
   * The request body's type when no Content-Type header says it (a HAR's `postData.mimeType`, or a
   * form when it lists `params`): the index's request type, so that a form POST makes a URL fuzzable.
   */
  requestType?: string;
  serverIPAddress?: string;
  /** https: what was wrong with the target's certificate, when the box does not trust it (the proxy connects anyway). */
  tlsProblem?: string;
  /** No answer (status 0): what failed (DNS, refused, timeout, TLS). */
  error?: string;
  /**
   * The proxy sent the request this many times more (a kept-alive connection closed under it, an
   * answer read again leniently): the target may have received it each time.
   */
  resent?: number;
}

/** What a record's meta JSON holds: the scalar fields, and the lengths of its parts. */
interface Meta {
  u: string;
  m: string;
  v: string;
  s: number;
  t: string;
  rv: string;
  ct: string;
  st: number;
  tm: number;
  sz: number;
  tr: boolean;
  src: Source;
  /** Bytes of the raw request, of its body (its end), of the response headers, of the response body. */
  ql: number;
  qb: number;
  hl: number;
  bl: number;
  tg?: Record<string, number>;
  ip?: string;
  tp?: string;
  er?: string;
  rs?: number;
  /** The request body's size as sent, when it was stored cut. */
  rz?: number;
}

const CRLF = '\r\n';

/** Bytes of a record's fixed header: the meta's length, then the parts' (raw request, its body, response headers, response body). */
export const RECORD_HEADER = 20;

/** A Content-Type's media type, without its parameters, in lower case. */
export const mediaType = (type: string): string => type.split(';', 1)[0].trim().toLowerCase();

/** An HTTP token (RFC 9110 5.6.2): what a method or a header name must be (one regex, the head reader's). */
export { TOKEN } from '../http/browser-head.js';

/** Whether `text` holds a character a header value or a reason phrase cannot (RFC 9110 5.5, RFC 9112 4: CR, LF, NUL, DEL...). */
export const hasControlCharacter = (text: string): boolean => /[^\t\x20-\x7e\x80-\xff]/.test(text);

/**
 * A header name or value as node hands it over (one character per byte, latin1) as the text its
 * bytes spell: UTF-8 when they are that (`é` sent as C3 A9 is stored as `é`, not `Ã©`), else as
 * they came. `onTheWire` gives the bytes back.
 */
export function headerText(raw: string): string {
  if (!/[\x80-\xff]/.test(raw)) return raw;
  const bytes = Buffer.from(raw, 'latin1');
  return isUtf8(bytes) ? bytes.toString('utf8') : raw;
}

/** The string to give node so that it sends `text` as its UTF-8 bytes (node writes a header string one byte per character). */
export function onTheWire(text: string): string {
  return /[^\x00-\x7f]/.test(text) ? Buffer.from(text, 'utf8').toString('latin1') : text;
}

/** Without the spaces and tabs at either end, HTTP's whitespace. */
export function trimSpacesAndTabs(text: string): string {
  return trimWhere(text, (code) => code === 0x20 || code === 0x09);
}

/** Without the C0 controls and spaces at either end, what a URL parser removes first (WHATWG URL). */
export function trimControlsAndSpaces(text: string): string {
  return trimWhere(text, (code) => code <= 0x20);
}

/** Without the characters `trimmed` takes at either end: a loop, as a regex anchored at the end is tried at every position of a long run (quadratic). */
function trimWhere(text: string, trimmed: (code: number) => boolean): string {
  let start = 0;
  let end = text.length;
  while (start < end && trimmed(text.charCodeAt(start))) start++;
  while (end > start && trimmed(text.charCodeAt(end - 1))) end--;
  return text.slice(start, end);
}

/** A raw header list from node (`rawHeaders`) as pairs of text, in order, repeated ones kept. */
export function headerPairs(raw: readonly string[]): Header[] {
  const headers: Header[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) headers.push([headerText(raw[i]!), headerText(raw[i + 1]!)]);
  return headers;
}

/** The value of the first header named `name` (lower case), any case (`''` when absent). */
export function headerValue(headers: readonly Header[], name: string): string {
  for (const [n, v] of headers) if (n.toLowerCase() === name) return v;
  return '';
}

function makeDecoders() {
  const z = zlib();
  return { gunzip: promisify(z.gunzip), inflate: promisify(z.inflate), inflateRaw: promisify(z.inflateRaw), brotliDecompress: promisify(z.brotliDecompress) };
}

/** The decoders, made with the first compressed answer: node:zlib is not loaded at start. */
let decoders: ReturnType<typeof makeDecoders> | undefined;
const zlibDecoders = () => (decoders ??= makeDecoders());

/**
 * How much larger than received a body is stored decoded, past DECODED_FLOOR: 27 bytes of `br`
 * decode to 16 MiB, and 200 such answers through the proxy wrote 290 MB in 10 s (2,000 gzip ones of
 * 15 KB, 16 GB in 2 minutes) from a few KB the target sent. Pages compress 5 to 20 times.
 */
export const MAX_DECODED_RATIO = 100;
/** What any body may decode to, whatever its ratio: a small answer is stored decoded as a browser shows it. */
export const DECODED_FLOOR = 64 * 1024;

/**
 * A captured body as a HAR keeps it: decoded when its Content-Encoding is one this machine knows
 * (in the thread pool: a large body never holds the event loop), up to `cap` bytes decoded and to
 * MAX_DECODED_RATIO times its size (DECODED_FLOOR at least); as received when not, or when the
 * stream does not decode, or when it decodes past either bound (a bomb).
 */
export async function decodedBody(body: Buffer, contentEncoding: string | undefined, cap: number): Promise<Buffer> {
  const encoding = contentEncoding?.trim().toLowerCase();
  if (!encoding || encoding === 'identity' || body.length === 0) return body;
  const bound = Math.min(cap, Math.max(DECODED_FLOOR, body.length * MAX_DECODED_RATIO));
  return inDecodeSlot(() => decoded(body, encoding, bound));
}

/**
 * Decodes under way at once, the others wait their turn: each may grow to its cap (16 MiB) from a
 * few KB sent, and 200 small gzip bombs through the proxy at once held 6 GiB.
 */
const DECODES_AT_ONCE = 2;
let decoding = 0;
let decodingPeak = 0;
const decodeQueue: (() => void)[] = [];

async function inDecodeSlot<T>(work: () => Promise<T>): Promise<T> {
  // a slot ending hands itself to the next in the queue: never more than DECODES_AT_ONCE
  if (decoding < DECODES_AT_ONCE) decoding++;
  else await new Promise<void>((resolve) => decodeQueue.push(resolve));
  decodingPeak = Math.max(decodingPeak, decoding);
  try {
    return await work();
  } finally {
    const next = decodeQueue.shift();
    if (next) next();
    else decoding--;
  }
}

/** The most decodes seen under way at once (tests). */
export const decodesAtOncePeak = () => decodingPeak;

/** The content codings decodedBody decodes (identity needs none): what a search and the grep plugins read. */
export const DECODED_CODINGS: ReadonlySet<string> = new Set(['gzip', 'x-gzip', 'deflate', 'br']);

async function decoded(body: Buffer, encoding: string, cap: number): Promise<Buffer> {
  // a stream cut at the storage cap gives what it holds
  const options = { maxOutputLength: cap, finishFlush: zlib().constants.Z_SYNC_FLUSH };
  const { gunzip, inflate, inflateRaw, brotliDecompress } = zlibDecoders();
  try {
    if (encoding === 'gzip' || encoding === 'x-gzip') return await gunzip(body, options);
    if (encoding === 'deflate') return await inflate(body, options).catch(() => inflateRaw(body, options));
    if (encoding === 'br') return await brotliDecompress(body, { maxOutputLength: cap });
  } catch {
    // not what it says, or past the cap: kept as received
  }
  return body;
}

/** The media type of the Content-Type among these headers ('' without one). */
export function mediaTypeOf(headers: readonly Header[]): string {
  const type = headerValue(headers, 'content-type');
  return type ? mediaType(type) : '';
}

/** `Name: value` lines joined by CRLF. */
export const headerBlock = (headers: readonly Header[]): string => headers.map(([n, v]) => `${n}: ${v}`).join(CRLF);

/** The lines of a header block back into pairs (a pseudo-header's name keeps its leading colon). */
export function parseHeaderBlock(block: string): Header[] {
  if (block === '') return [];
  return block.split(CRLF).map((line) => {
    const colon = line.indexOf(':', 1);
    return colon === -1 ? [line, ''] : [line.slice(0, colon), line.slice(colon + 2)];
  });
}

/** The request line, header lines, a blank line, the body (upstream lacks the blank line). */
export function rawRequestHead(x: Pick<Exchange, 'method' | 'url' | 'httpVersion' | 'requestHeaders'>): string {
  return `${x.method} ${x.url} ${x.httpVersion}${CRLF}${x.requestHeaders.map(([n, v]) => `${n}: ${v}${CRLF}`).join('')}${CRLF}`;
}

/** Why a request whose body was stored cut cannot be sent again as recorded (replay, code). */
export function cutRequestBody(sent: number, stored: number): string {
  const of = sent < 0 ? `${stored} bytes of a longer body` : `${stored} of the ${sent} bytes sent`;
  return `the request's body was stored cut (${of}): give a body of your own to send`;
}

/** The record's bytes. */
export function encodeRecord(x: Exchange): Buffer {
  const head = Buffer.from(rawRequestHead(x));
  const responseHead = Buffer.from(headerBlock(x.responseHeaders));
  const meta: Meta = {
    u: x.url, m: x.method, v: x.httpVersion, s: x.status, t: x.statusText, rv: x.responseHttpVersion, ct: x.mimeType,
    st: x.startedAt, tm: x.time, sz: x.responseSize, tr: x.truncated, src: x.source,
    ql: head.length + x.requestBody.length, qb: x.requestBody.length, hl: responseHead.length, bl: x.responseBody.length,
    ...(x.timings ? { tg: x.timings } : {}),
    ...(x.serverIPAddress ? { ip: x.serverIPAddress } : {}),
    ...(x.tlsProblem ? { tp: x.tlsProblem } : {}),
    ...(x.error ? { er: x.error } : {}),
    ...(x.requestSize !== undefined ? { rz: x.requestSize } : {}),
    ...(x.resent ? { rs: x.resent } : {}),
  };
  const metaBytes = Buffer.from(JSON.stringify(meta));
  const fixed = Buffer.alloc(RECORD_HEADER);
  fixed.writeUInt32LE(metaBytes.length, 0);
  fixed.writeUInt32LE(meta.ql, 4);
  fixed.writeUInt32LE(meta.qb, 8);
  fixed.writeUInt32LE(meta.hl, 12);
  fixed.writeUInt32LE(meta.bl, 16);
  return Buffer.concat([fixed, metaBytes, head, x.requestBody, responseHead, x.responseBody]);
}

/** A record read back: its fields, and views of its parts in the record's bytes. */
export interface StoredRecord {
  exchange: Exchange;
  rawRequest: Buffer;
  responseHead: Buffer;
  /** Where the parts start within the record (a search reports matches by part). */
  parts: { request: number; responseHead: number; responseBody: number; end: number };
  /** The whole body's length: `exchange.responseBody` is shorter when only the record's start was read. */
  bodyLength: number;
  /** The whole request body's length: `exchange.requestBody` is shorter when its end was not read. */
  requestBodyLength: number;
}

export class CorruptRecordError extends Error {}

/** The bytes of a record before its response body, at most. */
export function recordHeadLength(bytes: Buffer): number {
  return RECORD_HEADER + bytes.readUInt32LE(0) + bytes.readUInt32LE(4) + bytes.readUInt32LE(12);
}

/**
 * Decodes a record, or its first bytes (at least up to its response body, which is then cut);
 * `missing`: that many bytes of the request body's end were left out of `bytes` (not read).
 */
export function decodeRecord(bytes: Buffer, missing = 0): StoredRecord {
  if (bytes.length < RECORD_HEADER) throw new CorruptRecordError('record too short');
  const metaLength = bytes.readUInt32LE(0);
  let meta: Meta;
  try {
    meta = JSON.parse(bytes.toString('utf8', RECORD_HEADER, RECORD_HEADER + metaLength)) as Meta;
  } catch {
    throw new CorruptRecordError('record meta is not JSON');
  }
  const request = RECORD_HEADER + metaLength;
  const responseHead = request + meta.ql - missing;
  const responseBody = responseHead + meta.hl;
  const end = responseBody + meta.bl;
  if (responseBody > bytes.length) throw new CorruptRecordError('record shorter than its parts');
  const rawRequest = bytes.subarray(request, responseHead);
  const headText = rawRequest.toString('utf8', 0, meta.ql - meta.qb);
  const lines = headText.slice(0, -4).split(CRLF);
  const exchange: Exchange = {
    url: meta.u, method: meta.m, httpVersion: meta.v,
    requestHeaders: parseHeaderBlock(lines.slice(1).join(CRLF)),
    requestBody: rawRequest.subarray(meta.ql - meta.qb),
    status: meta.s, statusText: meta.t, responseHttpVersion: meta.rv,
    responseHeaders: parseHeaderBlock(bytes.toString('utf8', responseHead, responseBody)),
    responseBody: bytes.subarray(responseBody, Math.min(end, bytes.length)),
    responseSize: meta.sz, truncated: meta.tr, mimeType: meta.ct, startedAt: meta.st, time: meta.tm, source: meta.src,
    ...(meta.tg ? { timings: meta.tg } : {}),
    ...(meta.ip ? { serverIPAddress: meta.ip } : {}),
    ...(meta.tp ? { tlsProblem: meta.tp } : {}),
    ...(meta.er ? { error: meta.er } : {}),
    ...(meta.rz !== undefined ? { requestSize: meta.rz } : {}),
    ...(meta.rs ? { resent: meta.rs } : {}),
  };
  return { exchange, rawRequest, responseHead: bytes.subarray(responseHead, responseBody), parts: { request, responseHead, responseBody, end }, bodyLength: meta.bl, requestBodyLength: meta.qb };
}

/** Bodies in lists and searches: at most this many bytes (the whole one from GET .../<id> or .../body). */
export const LIST_BODY_CAP = 64 * 1024;

const pad = (n: number) => String(n).padStart(2, '0');

/** `%d-%m %H:%M:%S`, local time, day first, as upstream. */
export function localTimestamp(ms: number): string {
  const d = new Date(ms);
  return `${pad(d.getDate())}-${pad(d.getMonth() + 1)} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/**
 * The cookie attributes a browser reads (RFC 6265bis 5.6), as `session_tokens` names them; any
 * other is ignored, as a browser ignores it (a target's `name=evil` attribute renamed the cookie).
 */
const COOKIE_ATTRIBUTES = new Set(['expires', 'max_age', 'domain', 'path', 'secure', 'httponly', 'samesite', 'partitioned']);

/** A response's cookies, as upstream's `session_tokens`: a JSON array of what each Set-Cookie says. */
export function sessionTokens(headers: readonly Header[]): string {
  return cookiesOf(headers, Infinity).json;
}

/**
 * `session_tokens` at most `cap` characters long: the cookies that fit whole, in order, one that
 * does not passed over (`cut`): a big one must not hide the session cookie after it. A Set-Cookie
 * line longer than the cap is not even split.
 */
function cookiesOf(headers: readonly Header[], cap: number): { json: string; cut: boolean } {
  const cookies: string[] = [];
  let length = 2;
  let cut = false;
  for (const [name, value] of headers) {
    if (name.toLowerCase() !== 'set-cookie') continue;
    if (value.length > cap) {
      cut = true;
      continue;
    }
    const [pair, ...attributes] = value.split(';');
    const eq = pair.indexOf('=');
    const cookie: Record<string, string | boolean> = { name: (eq === -1 ? '' : pair.slice(0, eq)).trim(), value: (eq === -1 ? pair : pair.slice(eq + 1)).trim() };
    for (const attribute of attributes) {
      const at = attribute.indexOf('=');
      const key = (at === -1 ? attribute : attribute.slice(0, at)).trim().toLowerCase().replace('-', '_');
      if (!COOKIE_ATTRIBUTES.has(key)) continue;
      cookie[key] = at === -1 ? true : attribute.slice(at + 1).trim();
    }
    const json = JSON.stringify(cookie);
    if (length + json.length + 1 > cap) {
      cut = true;
      continue;
    }
    cookies.push(json);
    length += json.length + 1;
  }
  return { json: `[${cookies.join(',')}]`, cut };
}

/**
 * In lists and searches: `session_tokens` at most this long (a browser keeps no cookie over 4 KiB;
 * a hostile target's, escaped once for the field and once for the answer, made a list of 2,300
 * rows over V8's longest string: a 500). raw_request's head and response_headers: LIST_BODY_CAP.
 */
export const LIST_TOKENS_CAP = 8 * 1024;

/** The row a list shows: every field but the raw ones. */
export interface TransactionSummary {
  id: number;
  target_id: number;
  url: string;
  method: string;
  data: string;
  response_status: string;
  response_size: number;
  binary_response: boolean;
  time: number;
  time_human: string;
  local_timestamp: string;
  scope: boolean;
  session_tokens: string;
  login: boolean;
  logout: boolean;
  source: Source;
  started_at: string;
  response_body_truncated?: boolean;
  /** Extension: `data` (and the body in `raw_request`) cut at 64 KiB in a list or a search. */
  request_body_truncated?: boolean;
  /** With request_body_truncated: the bytes of the request body as sent. */
  request_size?: number;
  /** Extension: in a list or a search, `session_tokens` (8 KiB), raw_request's head or response_headers (64 KiB) cut. */
  headers_truncated?: boolean;
  /** https through the proxy: what was wrong with the target's certificate. */
  tls_problem?: string;
  /** No answer: what failed. */
  error?: string;
  /** Extension: the proxy sent the request this many times more (the target may have received each). */
  resent?: number;
}

export interface Transaction extends TransactionSummary {
  raw_request: string;
  response_headers: string;
  response_body: string;
}

/** `"200 OK"`: the status and its reason as recorded (an HTTP/2 HAR's empty one was given the standard one at import: har.ts). */
export const responseStatus = (status: number, text: string) => (status === 0 ? '' : `${status} ${text}`.trimEnd());

/** Whether a body is shown as text (else base64, with `binary_response`). */
export const isBinary = (body: Buffer) => !isUtf8(body);

/** What the index knows of a transaction that its record does not say. */
export interface RowFacts {
  id: number;
  target: number;
  scope: boolean;
  binary: boolean;
}

/** The first `cap` bytes of `bytes`, less a character they would cut in two. */
function textCut(bytes: Buffer, cap: number): Buffer {
  const head = bytes.subarray(0, cap);
  return head.subarray(0, head.length - incompleteTail(head));
}

/** What a view cuts: each body at its cap; `listed`, a list's or a search's row (headers bounded too). */
export interface ViewCaps {
  bodyCap?: number;
  requestCap?: number;
  listed?: boolean;
}

/**
 * A transaction's fields; with `raw`, raw_request, response_headers and response_body, the body
 * cut at `bodyCap` bytes (lists and searches: 64 KiB; the record may hold only that much of it).
 */

export function transactionView(facts: RowFacts, record: StoredRecord, raw: boolean, { bodyCap = Infinity, requestCap = Infinity, listed = false }: ViewCaps = {}): Transaction | TransactionSummary {
  const x = record.exchange;
  const { id, target, scope, binary } = facts;
  // one transaction cut by max_body (an extension's answer) gives the size sent too
  const tokens = cookiesOf(x.responseHeaders, listed ? LIST_TOKENS_CAP : Infinity);
  // a list's request bodies are cut as its response bodies are (an upload may be 16 MiB), at a character's end
  const requestCut = record.requestBodyLength > requestCap;
  const requestBody = requestCut ? textCut(x.requestBody, requestCap) : x.requestBody;
  const summary: TransactionSummary = {
    id,
    target_id: target,
    url: x.url,
    method: x.method,
    data: requestBody.toString('utf8'),
    response_status: responseStatus(x.status, x.statusText),
    response_size: x.responseSize,
    binary_response: binary,
    time: x.time / 1000,
    time_human: runTime(x.time),
    local_timestamp: localTimestamp(x.startedAt),
    scope,
    session_tokens: tokens.json,
    login: false,
    logout: false,
    source: x.source,
    started_at: new Date(x.startedAt).toISOString(),
    ...(x.tlsProblem ? { tls_problem: x.tlsProblem } : {}),
    ...(x.error ? { error: x.error } : {}),
    ...(x.resent ? { resent: x.resent } : {}),
  };
  const cut = record.bodyLength > bodyCap;
  if (x.truncated || (raw && cut)) summary.response_body_truncated = true;
  if (requestCut || x.requestSize !== undefined) {
    summary.request_body_truncated = true;
    // -1: the size sent is not known (a HAR's bodySize, an upload still coming when the answer ended)
    const sent = x.requestSize ?? record.requestBodyLength;
    if (!listed && requestCap !== Infinity && sent >= 0) summary.request_size = sent;
  }
  if (tokens.cut) summary.headers_truncated = true;
  if (!raw) return summary;
  const body = cut ? x.responseBody.subarray(0, bodyCap) : x.responseBody;
  let rawRequest = requestCut ? record.rawRequest.subarray(0, record.rawRequest.length - x.requestBody.length + requestBody.length) : record.rawRequest;
  let responseHead = record.responseHead;
  if (listed && record.rawRequest.length - x.requestBody.length > LIST_BODY_CAP) {
    // a head past the cap: cut there, without its body
    rawRequest = textCut(record.rawRequest, LIST_BODY_CAP);
    summary.headers_truncated = true;
  }
  if (listed && responseHead.length > LIST_BODY_CAP) {
    responseHead = textCut(responseHead, LIST_BODY_CAP);
    summary.headers_truncated = true;
  }
  return {
    ...summary,
    raw_request: rawRequest.toString('utf8'),
    response_headers: responseHead.toString('utf8'),
    // a body cut (here, or when stored) may end inside a character: not shown as a U+FFFD it never held
    response_body: binary ? body.toString('base64') : (cut || x.truncated ? body.subarray(0, body.length - incompleteTail(body)) : body).toString('utf8'),
  };
}
