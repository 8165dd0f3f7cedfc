/**
 * HAR 1.2 in and out. In: a stream of bytes parsed as it comes (json-stream.ts), each entry
 * checked and turned into an Exchange, or refused with the entry and the field; the parse yields
 * to the event loop every few milliseconds. Out: exchanges written as HAR entries.
 */
import { createJsonStream, DEFAULT_JSON_LIMITS, isBodyText, JsonStreamError, type BodyText } from './json-stream.js';
import { STATUS_CODES } from 'node:http';
import { dayExists } from '../store/dates.js';
import { headerValue, SOURCES, TOKEN, type Exchange, type Header, type Source } from './record.js';
import { MAX_URL_CHARS, pathAsWritten } from './scope.js';
import { jsonPieces } from '../json-pieces.js';

/** A body (request or response) is kept up to this many bytes; a response beyond it is cut, a request refused. */
export const BODY_CAP = 16 * 1024 * 1024;
/**
 * A header's name and value, and the header lines of a request's or an answer's head, as a HAR (or
 * a bundle) may hold them: at least what the server itself records, so that every export imports
 * again (a target's 2,000 header lines, or a name of 2 KB, through the proxy made the session's
 * bundle and HAR refused). The proxy reads a head of 64 KiB (fewer lines than this), a check and a
 * replay 256 KiB (a check at most 5,000 lines; a replay is held to this many, sent or answered).
 */
export const MAX_HEADER_VALUE = 256 * 1024;
export const MAX_HEADER_NAME = 256 * 1024;
export const MAX_HEADERS = 16_384;
const MAX_SHORT = 4096;

/** A HAR refused: the entry (when one is to blame), the field (its path in the document), and what is wrong with it. */
export class HarError extends Error {
  readonly field: string;
  constructor(
    readonly entry: number | undefined,
    field: string,
    readonly problem: string,
  ) {
    const path = entry === undefined || field.startsWith('log.') ? field : `log.entries[${entry}]${field.startsWith('(') ? '' : `.${field}`}`;
    super(entry === undefined ? `Invalid HAR: ${path}: ${problem}` : `Invalid HAR entry ${entry}: ${path}: ${problem}`);
    this.field = path;
  }
}

/** Milliseconds of work between yields to the event loop. */
const SLICE_MS = 8;

const BASE64_BYTE = new Uint8Array(256);
for (const c of 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/') BASE64_BYTE[c.charCodeAt(0)] = 1;

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v) && !isBodyText(v);

/**
 * Checks and converts one entry; null: an entry to skip (no response, or not http(s)). With
 * `extensions` (a bundle, which assessd wrote), what an export adds is read back: `_source`,
 * `_tls_problem`, `_resent`, and an entry without a response that says its `_error`; in any HAR,
 * bodies stored cut (`_truncated`, `_request_truncated`).
 */
export function entryToExchange(value: unknown, index: number, extensions = false): Exchange | null {
  const fail = (field: string, problem: string): never => {
    throw new HarError(index, field, problem);
  };
  if (!isObj(value)) return fail('(entry)', 'must be an object');
  const str = (v: unknown, field: string, max = MAX_SHORT, optional = false): string => {
    if (v === undefined && optional) return '';
    if (typeof v !== 'string') return fail(field, 'must be a string');
    if (v.length > max) fail(field, `is longer than ${max} characters`);
    return v;
  };
  const obj = (v: unknown, field: string): Obj => (isObj(v) ? v : fail(field, 'must be an object'));

  const request = obj(value.request, 'request');
  const response = obj(value.response, 'response');
  const rawUrl = str(request.url, 'request.url', MAX_URL_CHARS);
  let url: URL;
  try {
    url = new URL(rawUrl);
  } catch {
    return fail('request.url', 'is not an absolute URL');
  }
  const status = response.status;
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 0 || status > 999) fail('response.status', 'must be an integer from 0 to 999');
  // browsers list requests that never got an answer (status 0), and data:, blob:, ws: ones
  const unanswered = extensions && status === 0 && typeof value._error === 'string' && value._error !== '';
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || (status === 0 && !unanswered)) return null;

  const method = str(request.method, 'request.method');
  if (!TOKEN.test(method) || method.length > 32) fail('request.method', 'must be an HTTP method (a token of at most 32 characters)');
  const started = str(value.startedDateTime, 'startedDateTime', 64);
  const startedAt = Date.parse(started);
  if (Number.isNaN(startedAt) || !dayExists(started)) fail('startedDateTime', 'must be an ISO 8601 date and time');
  const time = value.time ?? 0;
  if (typeof time !== 'number' || !Number.isFinite(time)) fail('time', 'must be a number of milliseconds');

  const content = obj(response.content ?? {}, 'response.content');
  const responseBody = body(content, 'response.content', index);
  const size = content.size;
  const postData = request.postData === undefined ? undefined : obj(request.postData, 'request.postData');
  const requestBody = postData ? requestBodyOf(postData, index) : Buffer.alloc(0);
  const responseVersion = httpVersion(response.httpVersion);
  // the path and query as the tool recorded them: a traversal payload stays one
  const written = `${url.origin}${pathAsWritten(rawUrl.trim())}`;
  if (written.length > MAX_URL_CHARS) fail('request.url', `is longer than ${MAX_URL_CHARS} characters once percent-encoded (a browser sends none longer)`);
  const exchange: Exchange = {
    url: written,
    method,
    httpVersion: httpVersion(request.httpVersion),
    requestHeaders: headers(request.headers, 'request.headers', index),
    requestBody,
    status: status as number,
    statusText: reasonOf(status as number, str(response.statusText ?? '', 'response.statusText', 1024).replace(/[\u0000-\u001f\u007f]/g, ' '), responseVersion),
    responseHttpVersion: responseVersion,
    responseHeaders: headers(response.headers, 'response.headers', index),
    responseBody: responseBody.bytes,
    responseSize: typeof size === 'number' && Number.isSafeInteger(size) && size >= responseBody.bytes.length ? size : responseBody.bytes.length,
    truncated: responseBody.cut,
    mimeType: str(content.mimeType, 'response.content.mimeType', 1024, true).replace(/[\r\n\u0000]/g, ' '),
    startedAt,
    time: Math.max(0, time as number),
    source: 'har',
  };
  const timings = timingsOf(value.timings);
  if (timings) exchange.timings = timings;
  // the body's type as the HAR says it, for an entry whose headers do not (some tools leave them out)
  if (postData) {
    const type = typeof postData.mimeType === 'string' ? postData.mimeType.replace(/[\r\n\u0000]/g, ' ').slice(0, 1024) : '';
    if (type) exchange.requestType = type;
    else if (postData.text === undefined && Array.isArray(postData.params)) exchange.requestType = 'application/x-www-form-urlencoded';
  }
  if (typeof value.serverIPAddress === 'string' && value.serverIPAddress.length <= 64 && value.serverIPAddress !== '') exchange.serverIPAddress = value.serverIPAddress;
  // bodies stored cut say so in any HAR (an export re-imported as a HAR sent a cut request body as
  // if whole, with a Content-Length that lied): a claim that only makes replay and code ask for a body
  if (value._truncated === true) exchange.truncated = true;
  if (value._request_truncated === true) {
    // its size as sent (-1: unknown)
    const sent = request.bodySize;
    exchange.requestSize = typeof sent === 'number' && Number.isSafeInteger(sent) && sent > exchange.requestBody.length ? sent : -1;
  }
  if (extensions) readExtensions(value, exchange);
  return exchange;
}

/** An export's own fields back into the exchange; what does not read as one is ignored. */
function readExtensions(value: Obj, exchange: Exchange): void {
  const text = (v: unknown) => (typeof v === 'string' && v !== '' ? v.slice(0, MAX_SHORT) : undefined);
  if ((SOURCES as readonly unknown[]).includes(value._source)) exchange.source = value._source as Source;
  const error = text(value._error);
  if (error) exchange.error = error;
  const tlsProblem = text(value._tls_problem);
  if (tlsProblem) exchange.tlsProblem = tlsProblem;
  if (typeof value._resent === 'number' && Number.isSafeInteger(value._resent) && value._resent > 0) exchange.resent = value._resent;
}

/**
 * The reason phrase: as recorded, but for HTTP/2 and 3, which have none (a browser's HAR gives
 * `""`): the status's standard one, as `response_status` shows it (`"204 No Content"`).
 */
function reasonOf(status: number, recorded: string, version: string): string {
  return recorded === '' && /^HTTP\/[23]/.test(version) ? (STATUS_CODES[status] ?? '') : recorded;
}

/** `HTTP/1.1`, `HTTP/2`...: as recorded when it reads as one, else HTTP/1.1. */
function httpVersion(v: unknown): string {
  if (typeof v !== 'string') return 'HTTP/1.1';
  const text = v.trim();
  if (/^HTTP\/[0-9](\.[0-9])?$/i.test(text)) return text.toUpperCase();
  if (/^h[23]$/i.test(text)) return `HTTP/${text[1]}`;
  return 'HTTP/1.1';
}

/**
 * Header pairs, checked: a value with line breaks (Firefox joins repeated Set-Cookie so) is one
 * header per line; NUL and CR become spaces (RFC 9110 5.5).
 */
function headers(list: unknown, field: string, index: number): Header[] {
  if (list === undefined) return [];
  if (!Array.isArray(list)) throw new HarError(index, field, 'must be an array');
  if (list.length > MAX_HEADERS) throw new HarError(index, field, `has more than ${MAX_HEADERS} headers`);
  const out: Header[] = [];
  list.forEach((h, i) => {
    const at = `${field}[${i}]`;
    if (!isObj(h)) throw new HarError(index, at, 'must be an object');
    const { name, value } = h;
    if (typeof name !== 'string' || name === '' || name.length > MAX_HEADER_NAME || /[\r\n\u0000]/.test(name) || name.indexOf(':', 1) !== -1) {
      throw new HarError(index, `${at}.name`, `must be a header name (1 to ${MAX_HEADER_NAME} characters, no colon nor line break)`);
    }
    if (typeof value !== 'string') throw new HarError(index, `${at}.value`, 'must be a string');
    if (Buffer.byteLength(value) > MAX_HEADER_VALUE) throw new HarError(index, `${at}.value`, `is longer than ${MAX_HEADER_VALUE / 1024} KiB`);
    // a value's lines are headers of their own: they count against the same bound (a value of
    // 256 KiB of line breaks made 262,144 of them, and a HAR of such values an import that filled the memory)
    const lines = value.split('\n');
    if (out.length + lines.length > MAX_HEADERS) throw new HarError(index, field, `has more than ${MAX_HEADERS} headers (each line of a value is one)`);
    for (const line of lines) out.push([name, line.replace(/[\r\u0000]/g, ' ')]);
  });
  return out;
}

/** `bytes` without CR, LF, tabs and spaces (the same bytes when there are none). */
function withoutBlanks(bytes: Buffer): Buffer {
  if (![0x0a, 0x0d, 0x20, 0x09].some((blank) => bytes.includes(blank))) return bytes;
  return Buffer.from(bytes.toString('latin1').replace(/[\r\n\t ]+/g, ''), 'latin1');
}

function isBase64(bytes: Buffer): boolean {
  let end = bytes.length;
  while (end > 0 && bytes[end - 1] === 0x3d && bytes.length - end < 2) end--;
  for (let i = 0; i < end; i++) if (!BASE64_BYTE[bytes[i]]) return false;
  // padded: to a whole group of four, no further (`YWJj=` has one = too many); unpadded: any but one over
  return bytes.length > end ? bytes.length % 4 === 0 : end % 4 !== 1;
}

/** A body from `text` (and `encoding`), cut at the cap. */
function body(holder: Obj, field: string, index: number): { bytes: Buffer; cut: boolean } {
  const text = holder.text;
  if (text === undefined || text === null) return { bytes: Buffer.alloc(0), cut: false };
  const t: BodyText | undefined = isBodyText(text) ? text : typeof text === 'string' ? { bodyText: true, bytes: Buffer.from(text), cut: false } : undefined;
  if (!t) throw new HarError(index, `${field}.text`, 'must be a string');
  const encoding = holder.encoding;
  if (encoding !== undefined && encoding !== '' && encoding !== 'base64') throw new HarError(index, `${field}.encoding`, 'must be "base64" when present');
  if (encoding === 'base64') {
    // MIME's way, lines of 76 (some tools write it so): the line breaks and blanks are no part of it
    let b64 = withoutBlanks(t.bytes);
    // cut mid-way: decode the whole groups of four
    if (t.cut) b64 = b64.subarray(0, b64.length - (b64.length % 4));
    if (!isBase64(b64)) throw new HarError(index, `${field}.text`, 'is not valid base64 (its encoding says base64)');
    const bytes = Buffer.from(b64.toString('latin1'), 'base64');
    return bytes.length > BODY_CAP ? { bytes: bytes.subarray(0, BODY_CAP), cut: true } : { bytes, cut: t.cut };
  }
  return t.bytes.length > BODY_CAP ? { bytes: t.bytes.subarray(0, BODY_CAP), cut: true } : { bytes: t.bytes, cut: t.cut };
}

/** The request body: `text`, or the form `params` when there is no text. */
function requestBodyOf(postData: Obj, index: number): Buffer {
  if (postData.text === undefined && Array.isArray(postData.params)) {
    const form = new URLSearchParams();
    postData.params.forEach((p, i) => {
      if (!isObj(p) || typeof p.name !== 'string') throw new HarError(index, `request.postData.params[${i}].name`, 'must be a string');
      form.append(p.name, typeof p.value === 'string' ? p.value : '');
    });
    return Buffer.from(form.toString());
  }
  const { bytes, cut } = body(postData, 'request.postData', index);
  if (cut) throw new HarError(index, 'request.postData.text', `is longer than ${BODY_CAP / 1024 / 1024} MiB`);
  return bytes;
}

const TIMINGS = ['blocked', 'dns', 'connect', 'send', 'wait', 'receive', 'ssl'];

function timingsOf(v: unknown): Record<string, number> | undefined {
  if (!isObj(v)) return undefined;
  const out: Record<string, number> = {};
  for (const key of TIMINGS) if (typeof v[key] === 'number' && Number.isFinite(v[key])) out[key] = v[key] as number;
  return Object.keys(out).length > 0 ? out : undefined;
}

/** Bytes of a HAR document in, exchanges out (null for a skipped entry). Throws HarError. */
export async function* readHar(chunks: AsyncIterable<Buffer>): AsyncGenerator<Exchange | null> {
  // the parser keeps base64 texts up to the size their decoding is cut at
  const parser = createJsonStream({ ...DEFAULT_JSON_LIMITS, bodyCap: Math.ceil(BODY_CAP / 3) * 4 });
  let slice = performance.now();
  const toHar = (err: unknown) =>
    err instanceof JsonStreamError ? new HarError(err.entry, err.field, err.message) : err;
  for await (const chunk of chunks) {
    // a chunk at a time, in pieces: no piece holds the event loop long
    for (let at = 0; at < chunk.length; at += 64 * 1024) {
      try {
        parser.write(chunk.subarray(at, at + 64 * 1024));
      } catch (err) {
        throw toHar(err);
      }
      for (const { index, value } of parser.take()) yield entryToExchange(value, index);
      if (performance.now() - slice > SLICE_MS) {
        await new Promise((resolve) => setImmediate(resolve));
        slice = performance.now();
      }
    }
  }
  try {
    parser.end();
  } catch (err) {
    throw toHar(err);
  }
  for (const { index, value } of parser.take()) yield entryToExchange(value, index);
}

/** What a HAR export says about each transaction beyond HAR's own fields. */
export interface ExportFacts {
  id: number;
  binary: boolean;
}

/** One exchange as a HAR 1.2 entry. */
export function exchangeToEntry(x: Exchange, facts: ExportFacts): Record<string, unknown> {
  const pairs = (list: Header[]) => list.map(([name, value]) => ({ name, value }));
  let query: { name: string; value: string }[] = [];
  try {
    query = [...new URL(x.url).searchParams].map(([name, value]) => ({ name, value }));
  } catch {
    // stored URLs parse: kept whole
  }
  const requestType = headerValue(x.requestHeaders, 'content-type');
  const requestText = x.requestBody.length === 0 ? undefined : new TextDecoder('utf-8', { fatal: false }).decode(x.requestBody);
  const requestIsText = requestText !== undefined && Buffer.from(requestText).equals(x.requestBody);
  const timings = { send: 0, wait: x.time, receive: 0, ...x.timings };
  return {
    startedDateTime: new Date(x.startedAt).toISOString(),
    time: x.time,
    request: {
      method: x.method,
      url: x.url,
      httpVersion: x.httpVersion,
      cookies: [],
      headers: pairs(x.requestHeaders),
      queryString: query,
      ...(requestText === undefined ? {} : {
        postData: requestIsText ? { mimeType: requestType, text: requestText } : { mimeType: requestType, text: x.requestBody.toString('base64'), encoding: 'base64' },
      }),
      headersSize: -1,
      bodySize: x.requestSize ?? x.requestBody.length,
    },
    response: {
      status: x.status,
      statusText: x.statusText,
      httpVersion: x.responseHttpVersion,
      cookies: [],
      headers: pairs(x.responseHeaders),
      content: {
        size: x.responseSize,
        mimeType: x.mimeType,
        ...(x.responseBody.length === 0 ? {} : facts.binary ? { text: x.responseBody.toString('base64'), encoding: 'base64' } : { text: x.responseBody.toString('utf8') }),
      },
      redirectURL: headerValue(x.responseHeaders, 'location'),
      headersSize: -1,
      bodySize: x.responseBody.length,
    },
    cache: {},
    timings,
    ...(x.serverIPAddress ? { serverIPAddress: x.serverIPAddress } : {}),
    _id: facts.id,
    _source: x.source,
    ...(x.truncated ? { _truncated: true } : {}),
    ...(x.requestSize !== undefined ? { _request_truncated: true } : {}),
    ...(x.error ? { _error: x.error } : {}),
    ...(x.tlsProblem ? { _tls_problem: x.tlsProblem } : {}),
    ...(x.resent ? { _resent: x.resent } : {}),
  };
}

/**
 * A HAR document's text, piece by piece, the entries from `entries` as they come; `comment` (the
 * log's, HAR 1.2) says when the entries are not all there were.
 */
export async function* harPieces(entries: AsyncIterable<Record<string, unknown>>, version: string, comment?: string): AsyncGenerator<string> {
  const note = comment === undefined ? '' : `"comment":${JSON.stringify(comment)},`;
  yield `{"log":{"version":"1.2","creator":{"name":"assessd","version":${JSON.stringify(version)}},${note}"pages":[],"entries":[`;
  let first = true;
  for await (const entry of entries) {
    // an entry's bodies a piece at a time: 16 MiB of control characters is 100 MB of JSON
    yield first ? '\n' : ',\n';
    yield* jsonPieces(entry);
    first = false;
  }
  yield '\n]}}\n';
}
