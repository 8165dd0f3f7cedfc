/** The checks' one HTTP client: a single page, a time limit, a size cap, redirects kept on the target's origin. */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { DetailedPeerCertificate, SecureContext, TLSSocket } from 'node:tls';
import { ByteBlocks } from '../../byte-blocks.js';
import { browserAgent, headOverflowCode, NUL_IN_HEAD, TOO_MANY_INTERIM, underlying } from '../../http/browser-head.js';
import { headerPairs, headerText } from '../../evidence/record.js';

export const DEFAULT_MAX_BYTES = 1024 * 1024;
export const MAX_REDIRECTS = 5;
export const USER_AGENT = 'assessd';
/** Response headers read in all (Node's own default is 16 KiB; browsers read far more: a target with big headers is not silent). */
export const MAX_HEADER_BYTES = 256 * 1024;
/**
 * An answer with more header lines than this is not read: said as such, unranked. Within the 256
 * KiB a target fits 60,000 (`a:`), and node turns each into strings a check then reads for every
 * header it looks for: half a second of the event loop. No server sends a thousandth of that.
 */
export const MAX_HEADER_LINES = 5000;
const TOO_MANY_HEADER_LINES = 'ERR_ASSESSD_TOO_MANY_HEADER_LINES';

export interface FetchOptions {
  method?: string;
  headers?: Record<string, string>;
  /** Connect to last byte, over every redirect. */
  timeoutMs: number;
  signal?: AbortSignal;
  /** The body is cut there (default 1 MiB) and `truncated` says so. */
  maxBytes?: number;
  /** Redirects to follow (default and at most 5), never to another origin (scheme, host and port). */
  maxRedirects?: number;
  /** The TLS context whose trusted certificates decide `tls.authorized` (see trust.ts); Node's default otherwise. */
  secureContext?: SecureContext;
  /** Every request sent (each redirect too) is appended here with its answer, or why none came; its index is the hop's `sent`. */
  transcript?: Sent[];
}

/** One request as sent and its answer as received (the body as far as it was read), or why none came. */
export interface Sent {
  url: string;
  method: string;
  /** The request's headers as the request held them (Host included), `[name, value]`. */
  requestHeaders: Array<[string, string]>;
  /** ms since the epoch. */
  startedAt: number;
  /** ms from the request to its answer's end, or to the failure. */
  time: number;
  /** What was received, when an answer began (it may be incomplete: see `error`). */
  response?: {
    status: number;
    statusText: string;
    httpVersion: string;
    /** The headers as received, in order, `[name, value]`. */
    headers: Array<[string, string]>;
    /** The body as read: cut at `maxBytes` when `truncated`. */
    body: Buffer;
    /** Bytes of the body received, before any cut. */
    size: number;
    truncated: boolean;
  };
  /** https: what was wrong with the target's certificate, when the context does not trust it. */
  tlsProblem?: string;
  /** No complete answer: why (refused, reset, timeout, not HTTP, TLS). */
  error?: string;
}

export interface TlsInfo {
  certificate: DetailedPeerCertificate;
  protocol: string | null;
  /** The chain verified against the context's trusted certificates, and the certificate is for the host. */
  authorized: boolean;
  /** OpenSSL's or Node's code when the chain or host did not verify, e.g. `DEPTH_ZERO_SELF_SIGNED_CERT`. */
  authorizationError?: string;
}

/** One response as received: `headerLines` are the headers as sent, `Name: value`. */
export interface Hop {
  url: string;
  status: number;
  headerLines: string[];
  /** Its index in the options' `transcript`, when one was given. */
  sent?: number;
}

export interface Page extends Hop {
  method: string;
  body: string;
  /** Bytes of the body as read (`body` may be longer: bytes that are not UTF-8 read as U+FFFD). */
  bodyBytes?: number;
  /** The body went past `maxBytes` and was cut there. */
  truncated: boolean;
  /** The redirects followed, oldest first (each a response before this one). */
  redirects: Hop[];
  /** A redirect's `Location` that was not followed: another origin, or one redirect too many. */
  stoppedRedirect?: { location: string; reason: string };
  /** The TLS socket of the last response (https only). */
  tls?: TlsInfo;
}

export type FetchPage = (url: string, options: FetchOptions) => Promise<Page>;

/** What a user's abort rejects with, as `fetch` does. */
export function abortError(signal: AbortSignal): DOMException {
  const error = new DOMException('The check was aborted', 'AbortError');
  Object.defineProperty(error, 'cause', { value: signal.reason });
  return error;
}

export function isAbortError(error: unknown): boolean {
  return (error instanceof Error || error instanceof DOMException) && error.name === 'AbortError';
}

/**
 * What every other failure rejects with: the target refused, reset, or did not answer in time,
 * or it answered with bytes that are not HTTP, or its TLS handshake failed; `title` says which.
 * Its message names the request and the reason, never a file of ours.
 */
export type NoAnswerError = Error & { name: 'NoAnswerError'; title: string; /** The failed request's index in the transcript. */ sent?: number };

export const NO_ANSWER = 'Target did not answer';
export const NOT_HTTP = 'Target answered, but not valid HTTP';
export const TLS_FAILED = 'Target answered, but the TLS handshake failed';

export function isNoAnswer(error: unknown): error is NoAnswerError {
  return error instanceof Error && error.name === 'NoAnswerError';
}

/** The reason of a failure, as a tester reads it: OpenSSL's reason without its source file and line. */
export function failureReason(cause: unknown): { reason: string; title: string } {
  if (!(cause instanceof Error)) return { reason: String(cause), title: NO_ANSWER };
  const { code, reason } = cause as NodeJS.ErrnoException & { reason?: string };
  // an answer whose head is past what a check reads: HTTP, only too large to read (said as such)
  const overflow = headOverflowCode(code);
  if (overflow !== undefined) return { reason: `headers larger than the ${MAX_HEADER_BYTES / 1024} KiB a check reads${overflow}`, title: NOT_HTTP };
  if (code === NUL_IN_HEAD) return { reason: 'a NUL byte in its head, which browsers refuse (ERR_INVALID_HTTP_RESPONSE)', title: NOT_HTTP };
  if (code === TOO_MANY_INTERIM) return { reason: `${cause.message} interim (1xx) answers`, title: NOT_HTTP };
  if (code === TOO_MANY_HEADER_LINES) return { reason: `more header lines than the ${MAX_HEADER_LINES.toLocaleString('en')} a check reads`, title: NOT_HTTP };
  if (typeof code === 'string' && code.startsWith('HPE_')) {
    return { reason: `not valid HTTP (${code}: ${cause.message.replace(/^Parse Error: /, '')})`, title: NOT_HTTP };
  }
  if (typeof code === 'string' && (code.startsWith('ERR_SSL_') || /error:[0-9A-F]{8}:/.test(cause.message))) {
    const said = typeof reason === 'string' && reason ? reason : withoutSourcePaths(cause.message);
    return { reason: `the TLS handshake failed (${code}: ${said})`, title: TLS_FAILED };
  }
  return { reason: withoutSourcePaths(cause.message), title: NO_ANSWER };
}

/**
 * `...:excessive message size:../deps/openssl/openssl/ssl/statem/statem_clnt.c:1923:` loses its
 * file and line. A path is read for 256 characters at most: unbounded, the pattern was quadratic
 * over a run of `/` (40,000 took 1.7 s).
 */
function withoutSourcePaths(message: string): string {
  return message.replace(/:?(?:\.\.\/|\/)[^\s:]{0,256}\.[ch]:\d+:?/g, '').trim();
}

function noAnswerError(method: string, url: string, cause: unknown, sent: number | undefined): NoAnswerError {
  const { reason, title } = failureReason(cause);
  return Object.assign(new Error(`${method} ${url}: ${reason}`, { cause }), { name: 'NoAnswerError' as const, title, ...(sent === undefined ? {} : { sent }) });
}

/** The lines of `name` (any case) among `lines`, as sent. */
export function headerLinesNamed(lines: readonly string[], name: string): string[] {
  const prefix = `${name.toLowerCase()}:`;
  // only the name is lowered: a line may be 200 KB long, and it is asked for many names
  return lines.filter((line) => line.slice(0, prefix.length).toLowerCase() === prefix);
}

/** The value part of a `Name: value` line. */
export function headerValue(line: string): string {
  return line.slice(line.indexOf(':') + 1).trim();
}

/**
 * One request (and the target's own redirects), with one deadline for all of it: a target that
 * never answers ends with an Error saying the time limit, an abort with an AbortError.
 */
export const fetchPage: FetchPage = (url, options) => {
  const { signal, timeoutMs } = options;
  if (signal?.aborted) return Promise.reject(abortError(signal));
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error(`no complete answer within ${timeoutMs} ms`)), timeoutMs);
  const onAbort = () => controller.abort(abortError(signal!));
  signal?.addEventListener('abort', onAbort, { once: true });
  const method = (options.method ?? 'GET').toUpperCase();
  const failed: { sent?: number } = {};
  return followRedirects(url, options, controller.signal, failed)
    .catch((error: unknown) => {
      throw isAbortError(error) ? error : noAnswerError(method, url, error, failed.sent);
    })
    .finally(() => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    });
};

async function followRedirects(startUrl: string, options: FetchOptions, deadline: AbortSignal, failed: { sent?: number }): Promise<Page> {
  const { origin } = new URL(startUrl);
  const maxRedirects = Math.min(options.maxRedirects ?? MAX_REDIRECTS, MAX_REDIRECTS);
  const redirects: Hop[] = [];
  let url = new URL(startUrl);
  let method = (options.method ?? 'GET').toUpperCase();
  for (;;) {
    const page = await requestOnce(url, method, options, deadline, failed);
    const location = isRedirect(page.status) ? headerValue(headerLinesNamed(page.headerLines, 'location')[0] ?? '') : '';
    if (!location) return { ...page, redirects };
    let next: URL;
    try {
      next = new URL(location, url);
    } catch {
      return { ...page, redirects, stoppedRedirect: { location, reason: 'not a URL' } };
    }
    // the target's own origin only: another port of the same host may be anything (assessd's own API)
    const reason = !/^https?:$/.test(next.protocol)
      ? 'not http or https'
      : next.origin !== origin
        ? `another origin than ${origin}`
        : redirects.length >= maxRedirects
          ? `more than ${maxRedirects} redirects`
          : '';
    if (reason) return { ...page, redirects, stoppedRedirect: { location: next.href, reason } };
    redirects.push({ url: page.url, status: page.status, headerLines: page.headerLines, ...(page.sent === undefined ? {} : { sent: page.sent }) });
    if (page.status === 303 ? method !== 'HEAD' : method === 'POST' && page.status <= 302) method = 'GET';
    url = next;
  }
}

/** The URL as sent: a fragment (a redirect's Location may have one) never leaves the client. */
function withoutFragment(url: URL): string {
  // a serialized URL has `#` only where its fragment starts
  const hash = url.href.indexOf('#');
  return hash === -1 ? url.href : url.href.slice(0, hash);
}

function isRedirect(status: number): boolean {
  return status === 301 || status === 302 || status === 303 || status === 307 || status === 308;
}

type OneResponse = Omit<Page, 'redirects' | 'stoppedRedirect'>;

/** A response being read: `body.length` bytes kept of the `received`. */
interface Answer {
  response: IncomingMessage;
  tls?: TlsInfo;
  /** Copied into blocks: a target answering in 1-byte chunks made ~300 bytes of memory of each byte kept as it came. */
  body: ByteBlocks;
  received: number;
  truncated: boolean;
}

function requestOnce(url: URL, method: string, options: FetchOptions, deadline: AbortSignal, failed: { sent?: number }): Promise<OneResponse> {
  return new Promise((resolve, reject) => {
    if (deadline.aborted) return reject(deadline.reason);
    const https = url.protocol === 'https:';
    const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
    const startedAt = Date.now();
    const started = performance.now();
    const request = (https ? httpsRequest : httpRequest)(url, {
      method,
      headers: { 'user-agent': USER_AGENT, accept: '*/*', ...options.headers },
      // An agent of its own: no kept connection, no TLS session resumed (a resumed session skips the checks).
      // and each head read as a browser reads it (a line node's parser refuses mended or left out)
      agent: browserAgent(https, { maxHeadBytes: MAX_HEADER_BYTES + 1024, nulInHead: 'fail' }),
      // A tester inspects bad certificates: the TLS check reports them instead.
      rejectUnauthorized: false,
      // Reach old servers too (TLS 1.0, weak ciphers): the TLS check says what was negotiated
      // (a given context is made so too, see trust.ts).
      ...(https ? (options.secureContext ? { secureContext: options.secureContext } : { minVersion: 'TLSv1' as const, ciphers: 'DEFAULT:@SECLEVEL=0' }) : {}),
      // Read the answer as a browser would: big headers and odd characters are still an answer.
      maxHeaderSize: MAX_HEADER_BYTES,
      insecureHTTPParser: true,
    });
    // node keeps the first 1,000 header lines and drops the rest unsaid: a target with 1,100 would
    // hide its X-Frame-Options from the checks. One more than a check reads is kept, to say so
    request.maxHeadersCount = MAX_HEADER_LINES + 1;
    const requestHeaders = request.getRawHeaderNames().map((name): [string, string] => [name, String(request.getHeader(name))]);
    let answer: Answer | undefined;
    let settled = false;
    /** Appends this request and what came back to the transcript: its index there. */
    const note = (error?: string): number | undefined => {
      if (!options.transcript) return undefined;
      const response = answer && {
        status: answer.response.statusCode ?? 0,
        statusText: headerText(answer.response.statusMessage ?? ''),
        httpVersion: `HTTP/${answer.response.httpVersion}`,
        headers: headerPairs(answer.response.rawHeaders),
        body: answer.body.bytes(),
        size: answer.received,
        truncated: answer.truncated,
      };
      const tlsProblem = answer?.tls && !answer.tls.authorized ? (answer.tls.authorizationError ?? 'not trusted') : undefined;
      const sent: Sent = { url: withoutFragment(url), method, requestHeaders, startedAt, time: Math.round(performance.now() - started), ...(response ? { response } : {}), ...(tlsProblem ? { tlsProblem } : {}), ...(error ? { error } : {}) };
      return options.transcript.push(sent) - 1;
    };
    const fail = () => request.destroy(deadline.reason);
    deadline.addEventListener('abort', fail, { once: true });
    request.on('close', () => deadline.removeEventListener('abort', fail));
    const failWith = (error: unknown) => {
      if (settled) return;
      settled = true;
      const cause = deadline.aborted ? deadline.reason : error;
      failed.sent = note(failureReason(cause).reason);
      reject(cause);
    };
    request.on('error', failWith);
    request.on('response', (response) => {
      if (response.rawHeaders.length > 2 * MAX_HEADER_LINES) {
        failWith(Object.assign(new Error(`${method} ${url.href}: more than ${MAX_HEADER_LINES} header lines`), { code: TOO_MANY_HEADER_LINES }));
        request.destroy();
        return;
      }
      const tls = https ? tlsInfo(response) : undefined;
      const got: Answer = (answer = { response, ...(tls ? { tls } : {}), body: new ByteBlocks(maxBytes), received: 0, truncated: false });
      const done = () => {
        if (settled) return;
        settled = true;
        const sent = note();
        resolve({
          url: url.href,
          method,
          status: response.statusCode ?? 0,
          headerLines: pairLines(response.rawHeaders),
          body: got.body.bytes().toString('utf8'),
          bodyBytes: got.body.length,
          truncated: got.truncated,
          ...(tls ? { tls } : {}),
          ...(sent === undefined ? {} : { sent }),
        });
      };
      response.on('data', (chunk: Buffer) => {
        if (got.truncated) return;
        got.received += chunk.length;
        const room = maxBytes - got.body.length;
        if (chunk.length > room) {
          got.body.push(chunk.subarray(0, room));
          got.truncated = true;
          done();
          // The rest is never read: the connection goes.
          request.destroy();
          return;
        }
        got.body.push(chunk);
      });
      response.on('end', done);
      const cut = () => failWith(new Error('the target closed the connection mid-answer'));
      response.on('error', cut);
      response.on('close', () => response.complete || cut());
    });
    request.end();
  });
}

function tlsInfo(response: IncomingMessage): TlsInfo | undefined {
  const socket = underlying(response.socket) as TLSSocket;
  if (typeof socket.getPeerCertificate !== 'function') return undefined;
  const certificate = socket.getPeerCertificate(true);
  return {
    certificate,
    protocol: socket.getProtocol(),
    authorized: socket.authorized,
    ...(socket.authorizationError ? { authorizationError: String(socket.authorizationError) } : {}),
  };
}

/** `Name: value` lines, bytes that are UTF-8 as the text they spell (as the stored evidence has them), in findings too. */
function pairLines(raw: string[]): string[] {
  return headerPairs(raw).map(([name, value]) => `${name}: ${value}`);
}
