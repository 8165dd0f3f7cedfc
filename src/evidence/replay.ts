/**
 * A stored request sent again (the repeater): as recorded, or with edits, to the target's own host
 * and port only; its answer becomes an exchange of source `replay`. Certificates are not checked
 * (labs use self-signed ones); a time limit and a size cap bound what the target can make us hold.
 * Knows nothing of HTTP routing.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { browserAgent, headOverflowCode, TOO_MANY_INTERIM } from '../http/browser-head.js';
import { BODY_CAP, MAX_HEADERS } from './har.js';
import { cutRequestBody, decodedBody, hasControlCharacter, headerPairs, headerText, onTheWire, TOKEN, trimSpacesAndTabs, type Exchange, type Header } from './record.js';
import { bareHost, hostAndPort, MAX_URL_CHARS, pathAsWritten } from './scope.js';

/** What may change of the recorded request. */
export interface ReplayEdits {
  method?: string;
  url?: string;
  /** Replaces every header of the request (Host and Content-Length are set from the URL and body). */
  headers?: Header[];
  body?: Buffer;
}

/** A refused replay: what the request got wrong (`field`: the argument). */
export class ReplayError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

/** The target did not answer, or not in HTTP: said as a tester reads it. */
export class NoAnswer extends Error {}

/** Headers of one connection (RFC 9110 7.6.1), and those the request is given anew. */
const NOT_SENT = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'host', 'content-length']);
const MAX_RESPONSE_HEADERS = 256 * 1024;
/** Bytes of an answer read at most: past the storage cap it is cut, and past this the connection ends. */
const MAX_READ = BODY_CAP;

/**
 * `Name: value` lines (CRLF or LF) as headers; a line that is not one is refused, naming it: no
 * whitespace before the name (a folded line) or between it and its colon (RFC 9112 5.1). Only
 * HTTP's own whitespace, spaces and tabs, is trimmed from a value (JavaScript's trim() took a
 * no-break space, U+FEFF or U+3000 off a tester's payload).
 */
export function parseHeaderLines(text: string): Header[] {
  const headers: Header[] = [];
  text.split(/\r?\n/).forEach((line, i) => {
    if (trimSpacesAndTabs(line) === '') return;
    const colon = line.indexOf(':');
    const name = colon === -1 ? '' : line.slice(0, colon);
    if (!TOKEN.test(name)) throw new ReplayError('headers', `line ${i + 1} of the headers is not "Name: value": ${JSON.stringify(line.slice(0, 80))}`);
    const value = trimSpacesAndTabs(line.slice(colon + 1));
    if (/[\0\r\n]/.test(value)) throw new ReplayError('headers', `line ${i + 1} of the headers holds a control character`);
    headers.push([name, value]);
  });
  // as many as a transaction may hold (its HAR and bundle would not import again)
  if (headers.length > MAX_HEADERS) throw new ReplayError('headers', `at most ${MAX_HEADERS.toLocaleString('en')} header lines, not ${headers.length.toLocaleString('en')}`);
  return headers;
}

/** The request to send: the recorded one with the edits, checked; `where` is the target's host and port. */
/** A request ready to send again. */
export interface ReplayRequest {
  method: string;
  /** The URL parsed (scheme, host, port); its path is `path`'s. */
  url: URL;
  /** The path and query as written (`..` and `\` kept: a URL parser would change them). */
  path: string;
  /** The URL as sent and recorded: `url`'s origin with `path`. */
  href: string;
  headers: Header[];
  body: Buffer;
}

export function replayRequest(recorded: Pick<Exchange, 'method' | 'url' | 'requestHeaders' | 'requestBody' | 'requestSize'>, edits: ReplayEdits, target: { host: string; port: string }): ReplayRequest {
  const method = edits.method?.trim() || recorded.method;
  if (!TOKEN.test(method) || method.length > 32) throw new ReplayError('method', `${JSON.stringify(method.slice(0, 40))} is not an HTTP method`);
  const text = edits.url?.trim() || recorded.url;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ReplayError('url', `${JSON.stringify(text.slice(0, 200))} is not an absolute URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ReplayError('url', `a replay is sent over http or https, not ${url.protocol.slice(0, -1)}`);
  const where = hostAndPort(url.href)!;
  if (where.host !== target.host || where.port !== target.port) {
    const show = (h: string, p: string) => `${h.includes(':') ? `[${h}]` : h}:${p}`;
    throw new ReplayError('url', `a replay goes to the target's own host and port (${show(target.host, target.port)}), not to ${show(where.host, where.port)}`);
  }
  // what was stored of a cut body is not the request that was sent
  if (edits.body === undefined && recorded.requestSize !== undefined) throw new ReplayError('body', cutRequestBody(recorded.requestSize, recorded.requestBody.length));
  const body = edits.body ?? recorded.requestBody;
  // HTTP/2's pseudo-headers and this connection's own are not sent again; Host and Content-Length are made anew
  const given = (edits.headers ?? recorded.requestHeaders).filter(([name]) => !name.startsWith(':') && !NOT_SENT.has(name.toLowerCase()));
  // a HAR may hold any name and value: what HTTP cannot carry is said, not failed on when sent
  for (const [name, value] of given) {
    if (!TOKEN.test(name)) throw new ReplayError('headers', `${JSON.stringify(name.slice(0, 100))} is not a header name (letters, digits and !#$%&'*+.^_\`|~- only)`);
    if (hasControlCharacter(onTheWire(value))) throw new ReplayError('headers', `the value of ${name} holds a control character (CR, LF, NUL, ...), which a header cannot carry`);
  }
  const headers: Header[] = [['Host', url.host], ...given];
  if (body.length > 0 || !['GET', 'HEAD', 'DELETE', 'OPTIONS', 'TRACE'].includes(method.toUpperCase())) headers.push(['Content-Length', String(body.length)]);
  const path = pathAsWritten(text);
  const href = `${url.origin}${path}`;
  if (href.length > MAX_URL_CHARS) throw new ReplayError('url', `a URL is at most ${MAX_URL_CHARS} characters once percent-encoded (a browser sends none longer)`);
  return { method, url, path, href, headers, body };
}

/**
 * Sends the request and answers the exchange: the request as sent, the answer as received (its
 * body decoded, cut at the storage cap). Rejects with NoAnswer when the target refuses, resets,
 * does not answer within `timeoutMs` (connect to last byte), or answers with what is not HTTP.
 */
export function sendReplay(req: ReplayRequest, timeoutMs: number): Promise<Exchange> {
  const { method, url, path, href, headers, body } = req;
  const startedAt = Date.now();
  const started = performance.now();
  const raw: string[] = headers.flatMap(([name, value]) => [name, onTheWire(value)]);
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    let done = false;
    const fail = (why: string) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      outgoing.destroy();
      reject(new NoAnswer(`${method} ${href}: ${why}`));
    };
    const outgoing = send({
      host: bareHost(url),
      port: url.port || (url.protocol === 'https:' ? 443 : 80),
      path,
      method,
      headers: raw,
      // labs use self-signed certificates: the replay is evidence, not trust
      rejectUnauthorized: false,
      // a connection of its own, whose heads are read as a browser reads them (a line node refuses mended or left out)
      agent: browserAgent(url.protocol === 'https:', { maxHeadBytes: MAX_RESPONSE_HEADERS + 1024, nulInHead: 'as-is' }),
      maxHeaderSize: MAX_RESPONSE_HEADERS,
      setHost: false,
      servername: url.hostname.startsWith('[') || /^[0-9.]+$/.test(url.hostname) ? undefined : url.hostname,
    }, (res: IncomingMessage) => {
      // as many as a transaction may hold (its HAR and bundle would not import again)
      if (res.rawHeaders.length > 2 * MAX_HEADERS) return fail(`the answer has more header lines than the ${MAX_HEADERS.toLocaleString('en')} a replay reads`);
      const chunks: Buffer[] = [];
      let received = 0;
      let kept = 0;
      let truncated = false;
      const finish = async () => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        const responseHeaders = headerPairs(res.rawHeaders);
        const wire = Buffer.concat(chunks);
        const responseBody = truncated ? wire : await decodedBody(wire, res.headers['content-encoding'], BODY_CAP);
        resolve({
          url: href, method, httpVersion: 'HTTP/1.1', requestHeaders: headers, requestBody: body,
          status: res.statusCode ?? 0, statusText: headerText(res.statusMessage ?? ''), responseHttpVersion: `HTTP/${res.httpVersion}`,
          responseHeaders, responseBody: responseBody.length > BODY_CAP ? responseBody.subarray(0, BODY_CAP) : responseBody,
          responseSize: received, truncated: truncated || responseBody.length > BODY_CAP,
          mimeType: String(res.headers['content-type'] ?? ''), startedAt, time: Math.round(performance.now() - started), source: 'replay',
          ...(res.socket?.remoteAddress ? { serverIPAddress: res.socket.remoteAddress } : {}),
        });
        outgoing.destroy();
      };
      res.on('data', (chunk: Buffer) => {
        received += chunk.length;
        if (kept + chunk.length > MAX_READ) {
          chunks.push(chunk.subarray(0, MAX_READ - kept));
          kept = MAX_READ;
          truncated = true;
          // the rest is not read: the connection ends here
          void finish();
          return;
        }
        chunks.push(chunk);
        kept += chunk.length;
      });
      res.on('end', () => void finish());
      res.on('error', (err) => fail(err.message));
    });
    // every header line, not node's first 1,000 (maxHeaderSize bounds them)
    outgoing.maxHeadersCount = 0;
    const timer = setTimeout(() => fail(`no complete answer within ${timeoutMs / 1000} s`), timeoutMs);
    outgoing.on('error', (err: NodeJS.ErrnoException) => {
      const overflow = headOverflowCode(err.code);
      fail(
        overflow !== undefined
          ? `the answer's headers are over the ${MAX_RESPONSE_HEADERS / 1024} KiB a replay reads${overflow}`
          : err.code?.startsWith('HPE_')
            ? `the answer is not valid HTTP (${err.code})`
            : err.code === TOO_MANY_INTERIM
              ? `the answer is not valid HTTP (${err.message} interim (1xx) answers)`
              : err.message,
      );
    });
    outgoing.end(body);
  });
}
