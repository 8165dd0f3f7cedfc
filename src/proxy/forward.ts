/**
 * One request forwarded to its target and the answer back, both streamed (pipe keeps the
 * back-pressure: memory stays flat whatever a body's size), hop-by-hop headers dropped as RFC 9110
 * 7.6.1 says, nothing answered from a cache (upgrades: upgrade.ts, with what is shared here). The
 * request comes from a plain proxy request (absolute form) or from inside an intercepted CONNECT.
 */
import { Agent as HttpAgent, request as httpRequest, type Agent, type ClientRequest, type IncomingMessage, type RequestOptions, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { PeerCertificate, TLSSocket } from 'node:tls';
import { DECODED_CODINGS, decodedBody, hasControlCharacter, headerText, headerValue, TOKEN } from '../evidence/record.js';
import { bareHost, pathAsWritten, percentEncoded } from '../evidence/scope.js';
import { browserAgent, headOverflowCode, underlying } from '../http/browser-head.js';
import { https as httpsModule, tls } from '../lazy-builtins.js';
import { collectAsItStreams, STREAM_COLLECTION_BYTES } from '../young-generation.js';
import { capture, type Capture, type CaptureBudget } from './capture.js';
import { pairs, type ProxyExchange, type Recorder } from './record.js';

export interface ForwardContext {
  /** A keep-alive agent to plain targets. */
  httpAgent: Agent;
  /**
   * https targets (inside intercepted CONNECTs): node:https's request and a keep-alive agent that
   * requires no trusted certificate (labs use self-signed ones); loaded with the first CONNECT.
   */
  https?: { request: (options: RequestOptions) => ClientRequest; agent: Agent };
  /** Body bytes kept for the record, per body. */
  bodyCap: number;
  /** What all bodies being kept for the record may hold together. */
  captureBudget: CaptureBudget;
  recorder?: Recorder;
  counts: { requests: number; recorded: number; unrecorded: number; upstreamErrors: number; upgrades: number };
  /** Answers being relayed: a stop lets them finish (index.ts's close). */
  inFlight: Set<ServerResponse>;
  /** Exchanges on their way to the recorder (a compressed answer is decoded first). */
  recording: Set<Promise<void>>;
  /** Set by a stop: a new request or upgrade is 503. */
  stopping: boolean;
  /** Set once a stop cuts what is still in flight: those exchanges are not recorded (cut by us, not by either end). */
  cutting: boolean;
  /** Milliseconds to a target's connection and between its bytes. */
  upstreamTimeoutMs: number;
  /** Whether an address and port are assessd's own (the API's, this proxy's) on this machine. */
  loops: (host: string, port: number) => boolean;
  /**
   * Origins (`http://host:port`) whose answers node's strict reading refused and a lenient one read
   * (LENIENTLY_READ): their later requests, a POST too, go on connections of their own read leniently
   * from the first. The latest LENIENT_ORIGINS.
   */
  lenientOrigins: Set<string>;
}

/**
 * Client connections whose requests go on connections of their own to their targets, by the client's
 * socket: NTLM and Negotiate (Kerberos) authenticate a connection, not a request, and answer the
 * last message of a login only on the connection that got its challenge. From a request that
 * carries one of them on, the client's connection keeps its own (one per origin, as a browser's
 * connection is one), instead of taking any of the shared pool: a login beside another request to
 * the same site (a page's images) failed every time.
 */
const pinned = new WeakMap<Socket, { http?: Agent; https?: Agent }>();
const CONNECTION_AUTHENTICATION = /^\s*(?:NTLM|Negotiate|Kerberos)\b/i;

/** The agent of the client connection `req` came on when it is pinned (or pins it now), else undefined. */
function pinnedAgent(ctx: ForwardContext, req: IncomingMessage, https: boolean): Agent | undefined {
  const socket = req.socket;
  let agents = pinned.get(socket);
  if (agents === undefined) {
    if (!CONNECTION_AUTHENTICATION.test(req.headers.authorization ?? '')) return undefined;
    const own: { http?: Agent; https?: Agent } = {};
    agents = own;
    pinned.set(socket, own);
    socket.once('close', () => {
      own.http?.destroy();
      own.https?.destroy();
    });
  }
  const options = { keepAlive: true, maxSockets: 1, maxFreeSockets: 1, timeout: ctx.upstreamTimeoutMs };
  return https
    ? (agents.https ??= new (httpsModule().Agent)({ ...options, rejectUnauthorized: false, maxCachedSessions: 0 }))
    : (agents.http ??= new HttpAgent(options));
}

/** Origins lenientOrigins remembers, the latest. */
const LENIENT_ORIGINS = 1024;

/** Remembers that `origin` answers in what only a lenient reading reads, as its latest. */
function rememberLenient(ctx: ForwardContext, origin: string): void {
  ctx.lenientOrigins.delete(origin);
  ctx.lenientOrigins.add(origin);
  if (ctx.lenientOrigins.size > LENIENT_ORIGINS) ctx.lenientOrigins.delete(ctx.lenientOrigins.values().next().value!);
}

/**
 * Fails `upstream` when its new connection turns out to reach assessd itself: a name the URL check
 * could not know (a host name of the box's resolving to it). A kept-alive socket was checked when
 * it connected.
 */
export function refuseLoops(ctx: ForwardContext, upstream: ClientRequest): void {
  upstream.on('socket', (socket: Socket) => {
    if (!socket.connecting) return;
    socket.once('connect', () => {
      if (ctx.loops(socket.remoteAddress ?? '', socket.remotePort ?? 0)) upstream.destroy(Object.assign(new Error('loop'), { code: 'LOOP' }));
    });
  });
}

const NONE: ReadonlySet<string> = new Set();
export const HOST = new Set(['host']);
const HOST_AND_EXPECT = new Set(['host', 'expect']);
const EXPECT = new Set(['expect']);
/** `drop` but for Host (a tunnel's Host lines go as sent). */
const withoutHost = (drop: ReadonlySet<string>) => (drop === HOST_AND_EXPECT ? EXPECT : drop === HOST ? NONE : drop);
export const UPGRADE = new Set(['connection', 'upgrade']);

/** Headers that belong to one connection, never forwarded (RFC 9110 7.6.1), plus the proxy's own. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authorization', 'proxy-authenticate', 'te', 'trailer', 'transfer-encoding', 'upgrade']);

/**
 * The raw header list without hop-by-hop headers and those the Connection header names (`keep`
 * survives: an upgrade's), and without `drop` (lower case).
 */
export function endToEnd(raw: readonly string[], keep: ReadonlySet<string> = NONE, drop: ReadonlySet<string> = NONE): string[] {
  const lower = raw.map((name, i) => (i % 2 === 0 ? name.toLowerCase() : name));
  let named: Set<string> | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    if (lower[i] === 'connection') for (const token of raw[i + 1]!.split(',')) (named ??= new Set()).add(token.trim().toLowerCase());
  }
  const out: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = lower[i]!;
    // Content-Length frames the message: `Connection: content-length` dropping it sent a GET's body
    // unframed, the target took it for the next request on the pooled connection (smuggling)
    const framing = name === 'content-length';
    if (drop.has(name) || (!keep.has(name) && (HOP_BY_HOP.has(name) || (named?.has(name) && !framing)))) continue;
    out.push(raw[i]!, raw[i + 1]!);
  }
  return out;
}

/** Ends both sockets once either fails or closes (a tunnel's two ends, an upgraded connection's); answers that ending. */
export function closeTogether(a: Socket, b: Socket): () => void {
  const close = () => {
    a.destroy();
    b.destroy();
  };
  for (const socket of [a, b]) socket.on('error', close).on('close', close);
  return close;
}

/**
 * A request read inside a CONNECT's tunnel: the client addressed the target itself, so its Host
 * and its TLS server name go as it sent them (a virtual host, a Host header test), not the
 * CONNECT's authority, which says only where to connect.
 */
export interface Tunnelled {
  /** The name the client asked for in its TLS handshake (SNI), if any. */
  servername?: string;
}

/**
 * The headers a request goes to its target with: Host the URL's authority (RFC 9112 3.2.2), first,
 * or in a tunnel the client's own Host lines where it wrote them (the authority first when it sent
 * none), then the client's end-to-end ones (`keep` kept, `drop` dropped) without assessd's login
 * cookies and the codings the record cannot decode, and a chunked body said so: node chunks a
 * GET's, HEAD's, DELETE's or OPTIONS's body only when told (unframed, the target took the body for
 * the next request).
 */
export function upstreamHeaders(req: IncomingMessage, url: URL, keep: ReadonlySet<string>, drop: ReadonlySet<string>, tunnelled?: Tunnelled): string[] {
  // in a tunnel the client addressed the target itself: its Host lines go as it wrote them, in their
  // places and case (a Host header test: two of them, one in lower case after another header); one
  // without gets the CONNECT's host first; outside one, Host is the URL's
  const asSent = tunnelled !== undefined && firstHost(req.rawHeaders) !== undefined;
  const rest = decodableCodings(withoutLoginCookies(endToEnd(req.rawHeaders, keep, asSent ? withoutHost(drop) : drop)));
  const headers = asSent ? rest : ['Host', url.host, ...rest];
  if (req.headers['transfer-encoding'] !== undefined) headers.push('Transfer-Encoding', 'chunked');
  return headers;
}

function firstHost(raw: readonly string[]): string | undefined {
  for (let i = 0; i + 1 < raw.length; i += 2) if (raw[i]!.length === 4 && raw[i]!.toLowerCase() === 'host') return raw[i + 1];
  return undefined;
}

/** The upstream request's TLS server name: the client's in a tunnel (node's default is the host, none for an address). */
export function serverNameOf(tunnelled: Tunnelled | undefined): { servername?: string } {
  return tunnelled?.servername ? { servername: tunnelled.servername } : {};
}

/**
 * Answers a request node's parser refused, then closes (the proxy's own listener and the server
 * inside tunnels alike): headers too large 431, too slow 408, a method node does not know (`FOO`:
 * its parser reads a fixed list, `http.METHODS`) and anything else that is not HTTP 400, saying so.
 */
export function answerClientError(err: NodeJS.ErrnoException, socket: Socket): void {
  const underWay = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
  // the refused bytes are the body of the request under way (a bad chunk): it cannot be finished,
  // so its forwarding stops, and the client is answered at once (the target was left waiting for
  // the rest, and the client for the target's time limit)
  const refuseBody = underWay && !underWay.req.complete ? bodyRefusals.get(underWay) : undefined;
  if (refuseBody) return refuseBody(...refusalOf(err, 'body'));
  // an answer under way (the refused request came pipelined after another): the refusal follows it,
  // written now it would come first, or inside its body
  if (underWay && !underWay.writableFinished) {
    underWay.once('finish', () => answerClientError(err, socket));
    underWay.once('close', () => {
      if (!underWay.writableFinished) socket.destroy();
    });
    return;
  }
  if (!socket.writable) return void socket.destroy();
  const [status, text] = refusalOf(err, 'head');
  const body = `${status.split(' ')[0]} ${text}\n`;
  // closed once written, whether or not the client closes its side (a slow one holds it open)
  socket.end(`HTTP/1.1 ${status}\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`, () => socket.destroy());
}

/** The status line and text a request node's parser refused is answered with: in its head, or in its body. */
function refusalOf(err: NodeJS.ErrnoException, where: 'head' | 'body'): [status: string, text: string] {
  if (err.code === 'HPE_HEADER_OVERFLOW') return ['431 Request Header Fields Too Large', 'the request\'s head is over 64 KiB'];
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') return ['408 Request Timeout', `the request's ${where} did not come in time`];
  if (err.code === 'HPE_INVALID_METHOD') {
    return ['400 Bad Request', 'the method is not one the proxy can read (node reads a fixed list: GET, POST, PUT, PATCH, DELETE, WebDAV\'s...); send it with the replay of a recorded request'];
  }
  return ['400 Bad Request', where === 'head' ? 'not a valid HTTP request' : `the request's body is not valid HTTP (${err.code ?? err.message})`];
}

/** What failed, for the 502's body and the record: DNS, refused, timeout, TLS, reset. */
export function upstreamFailure(err: NodeJS.ErrnoException, url: URL): string {
  const where = url.host;
  switch (err.code) {
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `DNS: ${url.hostname} could not be resolved (${err.code})`;
    case 'ECONNREFUSED':
      return `refused: ${where} refused the connection`;
    case 'ETIMEDOUT':
    case 'ESOCKETTIMEDOUT':
    case 'UPSTREAM_TIMEOUT':
      return `timeout: ${where} did not answer in time`;
    case 'ECONNRESET':
    case 'EPIPE':
      return `reset: ${where} closed the connection`;
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return `unreachable: no route to ${where}`;
    case 'LOOP':
      return `loop: ${where} is assessd itself; a request there through its own proxy would loop`;
    case 'UNASKED_UPGRADE':
      return `invalid answer: ${where} switched protocols (101) without being asked to`;
    case 'UNRELAYABLE_STATUS':
      return `invalid answer: ${where} sent a status line that is not HTTP's (${err.message})`;
    case 'UNRELAYABLE_CODING':
    case 'UNRELAYABLE_HEAD':
      return `invalid answer: ${where} sent ${err.message}`;
    case 'TOO_MANY_INFORMATIONAL':
      return `invalid answer: ${where} sent ${err.message} informational (1xx) answers to one request`;
    default:
      if (err.code?.startsWith('ERR_SSL') || err.code?.startsWith('ERR_TLS') || err.code === 'EPROTO') {
        return `TLS: the handshake with ${where} failed (${(err as { reason?: string }).reason ?? err.code})`;
      }
      // HTTP, only past what the proxy reads of a head
      const overflow = headOverflowCode(err.code);
      if (overflow !== undefined) return `invalid answer: ${where} sent headers over ${MAX_HEADER_BYTES / 1024} KiB${overflow}`;
      // node's parser refused the answer's bytes
      if (err.code?.startsWith('HPE_')) return `invalid answer: ${where} sent what is not HTTP (${err.code})`;
      return `failed: ${where}: ${err.code ?? err.message}`;
  }
}

/** What a record says when the client closed its connection before the answer had ended. */
export const CLIENT_LEFT = 'the client closed its connection before the answer had ended';

/** A login cookie of assessd's web application (`assessd-<port>`, src/http/access.ts). */
const LOGIN_COOKIE = /^\s*assessd-\d+=/;

/**
 * A client's Accept-Encoding without the codings the record could not decode (zstd, which Chromium
 * asks for; compress; `*`), as Burp does by default: a target answering in one had its body stored
 * as compressed bytes that no search or grep plugin read, and nothing said so. Left as sent when
 * it names none; `identity` when it names nothing else.
 */
function decodableCodings(headers: string[]): string[] {
  const at = headers.findIndex((name, i) => i % 2 === 0 && name.length === 15 && name.toLowerCase() === 'accept-encoding');
  if (at === -1) return headers;
  const out: string[] = [];
  for (let i = 0; i + 1 < headers.length; i += 2) {
    const [name, value] = [headers[i]!, headers[i + 1]!];
    if (name.length !== 15 || name.toLowerCase() !== 'accept-encoding') {
      out.push(name, value);
      continue;
    }
    const codings = value.split(',');
    const kept = codings.filter((coding) => {
      const name = coding.split(';', 1)[0]!.trim().toLowerCase();
      return name === 'identity' || DECODED_CODINGS.has(name);
    });
    // (an empty value, identity alone, names none of the others either)
    if (kept.length === codings.length || value.trim() === '') out.push(name, value);
    // naming none the record decodes: identity (without the header a target may choose any coding)
    else out.push(name, kept.length > 0 ? kept.map((coding) => coding.trim()).join(', ') : 'identity');
  }
  return out;
}

/**
 * The request's headers without assessd's own login cookies. The browser sends a cookie to every
 * port of the host it was set for (cookies ignore ports): a target on the same host as the web
 * application (127.0.0.1) would receive the tester's API login, and the record would keep it.
 */
export function withoutLoginCookies(headers: string[]): string[] {
  // nearly every request: nothing to take out, and no copy made
  if (!headers.some((value, i) => i % 2 === 1 && value.includes('assessd-'))) return headers;
  const out: string[] = [];
  for (let i = 0; i + 1 < headers.length; i += 2) {
    const [name, value] = [headers[i]!, headers[i + 1]!];
    if (name.length !== 6 || name.toLowerCase() !== 'cookie' || !value.includes('assessd-')) {
      out.push(name, value);
      continue;
    }
    const kept = value.split(';').filter((pair) => !LOGIN_COOKIE.test(pair)).map((pair) => pair.trim()).join('; ');
    if (kept !== '') out.push(name, kept);
  }
  return out;
}

/** The kind of an upstreamFailure (`DNS`, `refused`, ...), for the 502's header. */
export const failureKind = (failure: string) => failure.slice(0, failure.indexOf(':'));

/**
 * Why node could not relay this status line (node's writeHead throws on them): a code outside
 * 100-999, a reason phrase with a control character. Undefined when it can.
 */
function unrelayableStatus(code: number | undefined, reason: string | undefined): string | undefined {
  if (code === undefined || !(code >= 100 && code <= 999)) return `status ${code}`;
  if (reason !== undefined && hasControlCharacter(reason)) return `a control character in the reason phrase`;
  return undefined;
}

/**
 * What was wrong with a target's certificate (the proxy connects anyway: labs use self-signed
 * ones), for the name the client asked for: node checks the name only once the chain verified, so
 * a self-signed certificate for another name is said both ways (`DEPTH_ZERO_SELF_SIGNED_CERT;
 * ERR_TLS_CERT_ALTNAME_INVALID`).
 */
function tlsProblem(peer: Peer | undefined, host: string): string | undefined {
  const secure = peer?.tls;
  if (!secure || secure.authorized) return undefined;
  const problem = secure.authorizationError ?? 'not trusted';
  if (problem === 'ERR_TLS_CERT_ALTNAME_INVALID') return problem;
  const cert = secure.certificate;
  const mismatch = cert && Object.keys(cert).length > 0 ? tls().checkServerIdentity(host, cert) : undefined;
  return mismatch ? `${problem}; ${(mismatch as NodeJS.ErrnoException).code ?? 'ERR_TLS_CERT_ALTNAME_INVALID'}` : problem;
}

/** Bytes of an answer's head the proxy reads, as of a request's (a valid answer is relayed, not refused at node's 16 KiB). */
export const MAX_HEADER_BYTES = 64 * 1024;

/**
 * The request to the target at `url`, for `path` as the client wrote it, with the headers as given
 * (Host among them: node adds none), over https (intercepted CONNECTs) or plain http; `extra`
 * says which agent.
 */
export function upstreamRequest(ctx: ForwardContext, url: URL, path: string, https: boolean, method: string | undefined, headers: string[], extra: RequestOptions): ClientRequest {
  const upstream = (https ? ctx.https!.request : httpRequest)({
    host: bareHost(url),
    port: url.port || (https ? 443 : 80),
    method,
    path,
    headers,
    setHost: false,
    maxHeaderSize: MAX_HEADER_BYTES,
    ...extra,
  } as RequestOptions);
  // every header line of the answer, not node's first 1,000 (MAX_HEADER_BYTES bounds them)
  upstream.maxHeadersCount = 0;
  return upstream;
}

/**
 * The path and query as the client wrote them (`url` is parsed: `..` resolved, `\` made `/`);
 * `OPTIONS *` (inside a tunnel: a plain proxy request is absolute) asks the server itself.
 */
export function pathOf(req: IncomingMessage, tunnelled?: Tunnelled): string {
  if (req.url === '*') return '*';
  // inside a tunnel the client may write the absolute form (a test of how the target reads one): it goes as written
  if (tunnelled !== undefined && /^[a-z][a-z0-9+.-]*:\/\//i.test(req.url ?? '')) return percentEncoded(req.url!);
  return pathAsWritten(req.url ?? '/');
}

/**
 * The URL recorded: the parsed scheme and authority with the path as written (made for a recorded
 * exchange only). A WebSocket handshake is an HTTP exchange: recorded under its http(s) URL.
 */
function recordedUrl(url: URL, path: string): string {
  // an absolute-form target written inside a tunnel went as written; the record is the tunnel's target's, its path
  const written = path === '*' ? '/*' : path.startsWith('/') ? path : pathAsWritten(path);
  return `${url.protocol.replace(/^ws/, 'http')}//${url.host}${written}`;
}

/**
 * Bytes of a request's body as sent, for the record: all of it once the request is complete;
 * while the client is still sending it (the target answered first), its Content-Length, or -1
 * when it has none (chunked): the record then says its body is cut.
 */
export function requestSizeOf(req: IncomingMessage, seen: number, complete = req.complete): number {
  if (complete) return seen;
  const declared = Number(req.headers['content-length']);
  return Number.isSafeInteger(declared) && declared > seen ? declared : -1;
}

/** A request as it went to its target, for the record. */
interface Sent {
  url: URL;
  /** As the client wrote it. */
  path: string;
  https: boolean;
  req: IncomingMessage;
  /** As sent (raw list). */
  headers: string[];
  /** Its body's capture (none: it had none). */
  body?: Capture;
  /** requestSizeOf. */
  size: number;
  startedAt: number;
  started: number;
}

/** What came back of a request, for the record: status 0 when nothing did (`error` says why). */
export interface Answered {
  status: number;
  statusText: string;
  rawHeaders: readonly string[];
  body?: Capture;
  error?: string;
  /** The target's connection as the answer came (peerOf): read then, as a closed socket says nothing. */
  peer?: Peer;
  /** The request was sent this many times more (forwardNow's send). */
  resent?: number;
}

/** What the record needs of the target's connection. */
export interface Peer {
  remoteAddress?: string;
  /** https: whether the target's certificate verified, why not, and the certificate. */
  tls?: { authorized: boolean; authorizationError?: string; certificate?: PeerCertificate };
}

/** The target's connection's address and certificate, read while it is open. */
export function peerOf(socket: Socket | undefined): Peer | undefined {
  if (!socket) return undefined;
  const secure = socket as TLSSocket;
  const tls =
    typeof secure.getPeerCertificate === 'function'
      ? { authorized: secure.authorized, ...(secure.authorizationError ? { authorizationError: String(secure.authorizationError) } : {}), ...(secure.authorized ? {} : { certificate: secure.getPeerCertificate() }) }
      : undefined;
  return { ...(socket.remoteAddress ? { remoteAddress: socket.remoteAddress } : {}), ...(tls ? { tls } : {}) };
}

/** The record's `tlsProblem`, checked for the name the client asked for (its TLS server name inside a tunnel, else the URL's host). */
function tlsProblemOf(sent: Sent, peer: Peer | undefined): { tlsProblem?: string } {
  if (!sent.https) return {};
  const asked = (sent.req.socket as TLSSocket).servername;
  const problem = tlsProblem(peer, typeof asked === 'string' && asked !== '' ? asked : bareHost(sent.url));
  return problem ? { tlsProblem: problem } : {};
}

/**
 * Hands an exchange that has ended to the recorder (the client never waits for it), then gives
 * its captures back (`release`: the record holds its own copies, and the queue has its own bound).
 */
export function recordExchange(ctx: ForwardContext, target: number, sent: Sent, answer: Answered, release: () => void): void {
  if (ctx.cutting) return release();
  const { body } = answer;
  // the answer's raw header list is made into the record's pairs only now, for a recorded exchange
  const responseHeaders = pairs(answer.rawHeaders);
  const exchange = async (): Promise<ProxyExchange> => ({
    url: recordedUrl(sent.url, sent.path),
    method: sent.req.method ?? 'GET',
    // as it went: node's client speaks HTTP/1.1 whatever the client spoke
    httpVersion: 'HTTP/1.1',
    requestHeaders: pairs(sent.headers),
    requestBody: sent.body?.bytes() ?? Buffer.alloc(0),
    requestSize: sent.size,
    status: answer.status,
    statusText: headerText(answer.statusText),
    responseHeaders,
    responseBody: body ? await decodedBody(body.bytes(), headerValue(responseHeaders, 'content-encoding'), ctx.bodyCap) : Buffer.alloc(0),
    responseSize: body?.size ?? 0,
    truncated: body?.truncated ?? false,
    startedAt: sent.startedAt,
    time: performance.now() - sent.started,
    ...(answer.peer?.remoteAddress ? { serverIPAddress: answer.peer.remoteAddress } : {}),
    ...tlsProblemOf(sent, answer.peer),
    ...(answer.error ? { error: answer.error } : {}),
    ...(answer.resent ? { resent: answer.resent } : {}),
  });
  const recording = exchange()
    .then((x) => {
      ctx.recorder!.record(target, x);
      ctx.counts.recorded++;
    })
    .finally(release);
  ctx.recording.add(recording);
  void recording.finally(() => ctx.recording.delete(recording));
}

/** What a request or an upgrade that comes while the proxy stops is answered (then the connection closes). */
export const STOPPING_TEXT = "assessd is stopping: the proxy takes no new request (those in flight finish)";

/**
 * Why node cannot relay a request's body as it is, as the 501's text; undefined when it can. Node
 * takes the chunks off and leaves any other coding on the body: relayed (as chunked alone), the
 * target would take gzip bytes for the body itself. A coding not understood is 501 (RFC 9112 6.1).
 */
export function unrelayableCoding(req: IncomingMessage): string | undefined {
  const coding = req.headers['transfer-encoding'];
  if (coding === undefined || coding.trim().toLowerCase() === 'chunked') return undefined;
  return `501 Not Implemented: the proxy relays no transfer coding but chunked, not ${JSON.stringify(coding.slice(0, 100))}\n`;
}

/** What a record says of an answer cut where no byte moved for ctx.upstreamTimeoutMs (a target gone quiet, a client that stopped reading). */
export const stalledText = (ctx: ForwardContext) => `the answer was cut short: no byte moved for ${ctx.upstreamTimeoutMs / 1000} s (the proxy's time limit)`;

/** The error a target that stays quiet past ctx.upstreamTimeoutMs fails its request with. */
export const timedOut = () => Object.assign(new Error('timeout'), { code: 'UPSTREAM_TIMEOUT' });

/** The proxy's status for a target's failure: a loop is refused as the URL check refuses one; anything else is the target's. */
export const failureStatus = (err: NodeJS.ErrnoException): [number, string] => (err.code === 'LOOP' ? [403, 'Forbidden'] : [502, 'Bad Gateway']);

/** A head as it came (node's one character per byte, sent back as those bytes): the status line, the header lines, `extra` (whole lines). */
export function rawHead(status: number | undefined, reason: string | undefined, raw: readonly string[], extra = ''): Buffer {
  let head = `HTTP/1.1 ${status} ${reason}\r\n`;
  for (let i = 0; i + 1 < raw.length; i += 2) head += `${raw[i]}: ${raw[i + 1]}\r\n`;
  return Buffer.from(`${head}${extra}\r\n`, 'latin1');
}

/** Answers `socket` with a plain-text `status` (`502 Bad Gateway`) and `text`, then closes it, whether or not the client closes its side. */
export function endWithText(socket: Socket, status: string, text: string, extraHeaders = ''): void {
  socket.end(`HTTP/1.1 ${status}\r\nContent-Type: text/plain; charset=utf-8\r\n${extraHeaders}Connection: close\r\n\r\n${text}`, () => socket.destroy());
}

/** A 1xx answer as node's client hands it over ('information'). */
export interface Information {
  statusCode: number;
  statusMessage: string;
  rawHeaders: string[];
}

/** ServerResponse's own raw write, which its writeEarlyHints and writeProcessing use (queued behind an earlier answer on the connection). */
type RawWriter = { _writeRaw(data: Buffer, encoding?: BufferEncoding, written?: () => void): boolean };

/**
 * Bytes of 1xx heads relayed for one request: past them the rest are dropped (a target's flood of
 * them would pile up in the proxy's memory behind a client that does not read), the final answer
 * still comes; and 1xx answers one request may have before it fails as an invalid answer.
 */
const INFORMATIONAL_BYTES = 64 * 1024;
const MAX_INFORMATIONAL = 1000;
/**
 * Bytes of 1xx heads one request may have (received, relayed or not) before it fails as an invalid
 * answer. Each head costs node's parser and the proxy's copy of its lines: a thousand 103s of 9,000
 * tiny headers each (54 KB a head, under the 64 KiB a head may have) took 4.6 s of CPU a request, and
 * 20 such requests at once held the server's event loop 7-13 s at a time.
 */
const MAX_INFORMATIONAL_BYTES = 1024 * 1024;

/** The error a request fails with past MAX_INFORMATIONAL 1xx answers, or MAX_INFORMATIONAL_BYTES of them. */
export const tooManyInformational = (seen?: InformationSeen) =>
  Object.assign(new Error(seen !== undefined && seen.received > MAX_INFORMATIONAL_BYTES ? `over ${MAX_INFORMATIONAL_BYTES / 1024 / 1024} MiB of` : `over ${MAX_INFORMATIONAL}`), { code: 'TOO_MANY_INFORMATIONAL' });

/**
 * Whether a request's 1xx answers went past MAX_INFORMATIONAL or MAX_INFORMATIONAL_BYTES: a final
 * answer (or a 101) parsed in the same read as the last of them is emitted after `informational`
 * failed the request, and is refused too.
 */
export const flooded = (seen: InformationSeen | undefined) => seen !== undefined && (seen.count > MAX_INFORMATIONAL || seen.received > MAX_INFORMATIONAL_BYTES);

/** One request's 1xx answers so far, the bytes of their heads as received, and the bytes of them relayed. */
export interface InformationSeen {
  count: number;
  received: number;
  bytes: number;
}

export const noInformationYet = (): InformationSeen => ({ count: 0, received: 0, bytes: 0 });

/**
 * Counts a 1xx head against the bounds: its bytes as received (as rawHead() writes it: `HTTP/1.1
 * 103 <message>` CRLF, `name: value` CRLF each, CRLF), or undefined (and the request failed) past one.
 */
function counted(upstream: ClientRequest, info: Information, seen: InformationSeen): number | undefined {
  let bytes = 17 + (info.statusMessage?.length ?? 0);
  for (const line of info.rawHeaders) bytes += line.length + 2;
  seen.count++;
  seen.received += bytes;
  if (!flooded(seen)) return bytes;
  upstream.destroy(tooManyInformational(seen));
  return undefined;
}

/**
 * What to relay of a target's 1xx answer, as it came (RFC 9110 15.2: a proxy forwards those it
 * did not ask for), or undefined; not recorded. Not to an HTTP/1.0 client, which knows no 1xx; not
 * one node could not relay as a final answer either; none past the bounds above (`seen` counts
 * one request's). The request fails past MAX_INFORMATIONAL, or MAX_INFORMATIONAL_BYTES of them.
 */
export function informational(req: IncomingMessage, upstream: ClientRequest, info: Information, seen: InformationSeen): Buffer | undefined {
  const received = counted(upstream, info, seen);
  // what would not fit, as received, is not built (its end-to-end lines are never more bytes)
  if (received === undefined || seen.bytes + received > INFORMATIONAL_BYTES) return undefined;
  if (req.httpVersion === '1.0' || unrelayableStatus(info.statusCode, info.statusMessage) !== undefined) return undefined;
  const head = rawHead(info.statusCode, info.statusMessage, endToEnd(info.rawHeaders));
  if (seen.bytes + head.length > INFORMATIONAL_BYTES) return undefined;
  seen.bytes += head.length;
  return head;
}

/**
 * A 1xx of the target's goes on to the client before the final answer (`informational`). Not a
 * 100: node's server answered the client's Expect itself, and the target was not sent it.
 */
function relayInformation(req: IncomingMessage, res: ServerResponse, upstream: ClientRequest, info: Information, seen: InformationSeen): void {
  // (node's client hands a 1xx over only before the final answer: never after its head was written)
  if (res.headersSent) return;
  if (info.statusCode === 100) {
    // not relayed, but counted: endless 100s are a flood like any other
    counted(upstream, info, seen);
    return;
  }
  const head = informational(req, upstream, info, seen);
  if (head) (res as unknown as RawWriter)._writeRaw(head);
}

/**
 * A body that may be large (chunked, read to the connection's end, or of 4 MiB and more) counts
 * toward the young generation's collections (young-generation.ts): its read buffers are then freed
 * as it streams. One whose length says it is small is spared the listener (an answer without a
 * length gets it even when it has no body, as for HEAD; a request without a body never comes here).
 */
function countStreamed(message: IncomingMessage): void {
  if (Number(message.headers['content-length']) < STREAM_COLLECTION_BYTES) return;
  collectAsItStreams(message);
}

/**
 * An answer whose Content-Length is at most this is relayed once it has come whole (a small
 * answer's body comes with its head): one write to the client instead of a stream's two.
 */
const WHOLE_ANSWER_BYTES = 64 * 1024;

/** Methods whose requests may be sent twice to the same effect as once (RFC 9110 9.2.2). */
const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE']);

/** How many times a request is sent again after a kept-alive connection closed under it (resendable). */
const MAX_RESENDS = 2;

/**
 * What node's strict reading refuses in an answer that browsers and curl read, so that it is asked
 * again and read leniently (readLeniently): bare LF line ends (some embedded servers send them), a
 * control character in a header's value (Chromium reads `\x01`-`\x1f` and `\x7f` there; a NUL
 * fails its page, and relayed as it came, the client's too), Content-Length given twice with one
 * value (two lines, or `2, 2`: the lenient connection's head has it once). A name with such a
 * character, or Content-Lengths that differ, are refused leniently read as well: a 502.
 */
const LENIENTLY_READ = new Set(['HPE_CR_EXPECTED', 'HPE_LF_EXPECTED', 'HPE_INVALID_HEADER_TOKEN', 'HPE_UNEXPECTED_CONTENT_LENGTH', 'HPE_INVALID_CONTENT_LENGTH']);
/**
 * Of the Content-Length refusals, those a lenient reading may mend (a length given twice, or as a
 * list): Content-Length beside Transfer-Encoding is refused however it is read, and is not asked again.
 */
const MENDABLE_LENGTH = new Set(['Duplicate Content-Length', 'Invalid character in Content-Length']);

/** Whether node's refusal `err` is one LENIENTLY_READ asks again for. */
function lenientlyReadable(err: NodeJS.ErrnoException & { reason?: string }): boolean {
  if (!LENIENTLY_READ.has(err.code ?? '')) return false;
  return !err.code!.endsWith('_CONTENT_LENGTH') || MENDABLE_LENGTH.has(err.reason ?? '');
}

/** A chunk's line end, and the last chunk of a chunked body. */
export const CRLF = Buffer.from('\r\n');
export const LAST_CHUNK = Buffer.from('0\r\n\r\n');

/**
 * Whether every header name is a token, as a lenient reading does not check: a raw relay must not
 * send `Transfer-Encoding : chunked` (the name with its space), a framing its body no longer has.
 * The lenient connection's head is read as Chromium reads it (http/browser-head.ts), which leaves
 * such names out already: this stays as the raw relay's own guard.
 */
function namesAreTokens(raw: readonly string[]): boolean {
  for (let i = 0; i < raw.length; i += 2) if (!TOKEN.test(raw[i]!)) return false;
  return true;
}

/** Whether a request has a body: only one that says so with Content-Length or Transfer-Encoding does (RFC 9112 6.3). */
function hasBody(req: IncomingMessage): boolean {
  const { headers } = req;
  return headers['transfer-encoding'] !== undefined || (headers['content-length'] !== undefined && headers['content-length'] !== '0');
}

/** How a request being forwarded is refused when its body turns out not to be HTTP (answerClientError). */
const bodyRefusals = new WeakMap<ServerResponse, (status: string, text: string) => void>();

/** Requests a client pipelined on one connection, waiting for the one before them to be answered. */
const MAX_PIPELINED = 64;

interface Pipeline {
  busy: boolean;
  waiting: (() => void)[];
}

const pipelines = new WeakMap<Socket, Pipeline>();

/**
 * Forwards `req` to `url` and its answer to `res`, one request of a connection at a time, in its
 * order: node hands over every request a client pipelined at once, and forwarding them together
 * made an upstream request each (~8 KB) with no bound, and went on sending them to the target after
 * the client had gone. A request waits for the answer before it to end; those still waiting when
 * the client leaves are never sent; a client with more than MAX_PIPELINED waiting is cut off.
 */
export function forward(ctx: ForwardContext, req: IncomingMessage, res: ServerResponse, url: URL, tunnelled?: Tunnelled): void {
  const socket = req.socket;
  let pipeline = pipelines.get(socket);
  if (!pipeline) pipelines.set(socket, (pipeline = { busy: false, waiting: [] }));
  if (!pipeline.busy) return forwardInTurn(pipeline, ctx, req, res, url, tunnelled);
  if (pipeline.waiting.length >= MAX_PIPELINED) {
    pipeline.waiting.length = 0;
    return void socket.destroy();
  }
  const queued = pipeline;
  queued.waiting.push(() => {
    if (socket.destroyed) queued.waiting.length = 0;
    else forwardInTurn(queued, ctx, req, res, url, tunnelled);
  });
}

/** Forwards the connection's request whose turn it is; the next waiting one goes once its answer is whole. */
function forwardInTurn(pipeline: Pipeline, ctx: ForwardContext, req: IncomingMessage, res: ServerResponse, url: URL, tunnelled?: Tunnelled): void {
  pipeline.busy = true;
  let done = false;
  const next = () => {
    if (done) return;
    done = true;
    if (pipeline.waiting.length === 0) {
      pipeline.busy = false;
      return;
    }
    // on the next tick (the connection still busy till then, so none overtakes it): node's agent
    // takes the target's connection back on one queued as the answer ended, before this, and the
    // next request then goes on it instead of opening another
    process.nextTick(() => {
      const take = pipeline.waiting.shift();
      if (take) take();
      else pipeline.busy = false;
    });
  };
  // 'prefinish': the answer is whole and handed to the connection ('finish' waits for the write's
  // callback, a TLS connection's flush: the next request of a tunnel waited for it too)
  res.once('prefinish', next);
  res.once('close', next);
  forwardNow(ctx, req, res, url, tunnelled);
}

/**
 * Runs `take` (an upgrade's or a CONNECT's, which take the connection over) once the requests the
 * client pipelined before it are answered: node hands it over at once, and its 101 or 200 came
 * before their answers, which then arrived inside the tunnel.
 */
export function afterPipelined(socket: Socket, take: () => void): void {
  const pipeline = pipelines.get(socket);
  if (!pipeline?.busy) return take();
  pipeline.waiting.push(() => {
    // the connection is the upgrade's from now on: nothing else is forwarded on it
    pipeline.busy = true;
    if (!socket.destroyed) take();
  });
}

/**
 * Forwards `req` to `url` and its answer to `res`. The exchange is handed to the recorder once it
 * has ended (the client never waits for it), or counted when no target claims it.
 */
function forwardNow(ctx: ForwardContext, req: IncomingMessage, res: ServerResponse, url: URL, tunnelled?: Tunnelled): void {
  if (ctx.stopping) {
    res.writeHead(503, { 'Content-Type': 'text/plain; charset=utf-8', Connection: 'close' });
    res.end(`503 ${STOPPING_TEXT}\n`);
    return;
  }
  ctx.counts.requests++;
  ctx.inFlight.add(res);
  res.once('close', () => ctx.inFlight.delete(res));
  const unrelayable = unrelayableCoding(req);
  if (unrelayable !== undefined) {
    res.writeHead(501, { 'Content-Type': 'text/plain; charset=utf-8', Connection: 'close' });
    res.end(unrelayable);
    return;
  }
  const https = url.protocol === 'https:';
  const target = ctx.recorder?.targetOf(url);
  const startedAt = Date.now();
  const started = performance.now();
  // `Expect` was answered here
  const headers = upstreamHeaders(req, url, NONE, HOST_AND_EXPECT, tunnelled);
  const path = pathOf(req, tunnelled);
  const bodyless = !hasBody(req);
  // counted once a 1xx comes (most requests get none)
  let seen: InformationSeen | undefined;
  /** Times the request went to the target again (resendable, readLeniently): the target may have received each. */
  let resent = 0;
  /** No byte moved for ctx.upstreamTimeoutMs (a target gone quiet, or a client that stopped reading): the proxy cut the request. */
  let stalled = false;
  /** The answer is read leniently: node's strict reading refused it (readLeniently), or the origin's before (ctx.lenientOrigins; its origin is made only when there is one). */
  let lenient = ctx.lenientOrigins.size > 0 && ctx.lenientOrigins.has(url.origin);
  let upstream = send();
  const requestBody = target === undefined ? undefined : capture(req, ctx.bodyCap, ctx.captureBudget);
  let responseBody: Capture | undefined;
  const releaseCaptures = () => {
    requestBody?.release();
    responseBody?.release();
  };
  // a request that cannot be finished is no exchange with the target: not recorded (as one the
  // client left while sending it)
  bodyRefusals.set(res, (status, text) => {
    settled = true;
    upstream.destroy();
    releaseCaptures();
    // (a raw relay has sent its head without node knowing: no second answer after it)
    if (res.headersSent || rawRelay) return void res.destroy();
    const code = Number(status.split(' ')[0]);
    const body = `${code} ${text}\n`;
    res.writeHead(code, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': Buffer.byteLength(body), Connection: 'close' });
    res.end(body);
  });
  if (!bodyless) {
    // pipe, not pipeline: pipeline makes an AbortController per stream pair, a tenth of a small request's cost
    req.pipe(upstream);
    countStreamed(req);
  } else {
    // no body (RFC 9112 6.3): the request is whole now (send() ended it), and a pipe's dozen listeners are spared
    req.resume();
  }
  // the client went away before the answer ended: the target's connection goes too, and the
  // record says who left (the target did not fail)
  let clientGone = false;
  /** The target cut its answer short: the proxy closed the client's connection itself (cutShort). */
  let targetCut = false;
  /** A small answer's head and body so far, held back to go to the client in one write. */
  let held: Buffer[] | undefined;
  /**
   * Cut short by the target: the client's answer is cut too (it cannot be finished), after what
   * came of it, as from the target itself. Once: the target's error and the answer's close both
   * come here.
   */
  const cutShort = () => {
    if (targetCut) return;
    targetCut = true;
    // (writeHead only made the head: nothing of a held answer went out yet.) Node corks the
    // connection for a write and uncorks on the next tick: destroyed at once, it would send nothing.
    if (held) res.write(Buffer.concat(held), () => res.destroy());
    else res.destroy();
  };
  /** The answer went out as raw bytes (relayRaw): the response is never ended, its connection closes when the answer is whole. */
  let rawRelay = false;
  res.on('close', () => {
    if (res.writableFinished || targetCut || (rawRelay && relayed?.complete)) return;
    clientGone = true;
    upstream.destroy();
  });

  let settled = false;
  const finish = (outcome: Answered) => {
    if (settled) return;
    settled = true;
    const answer = resent > 0 ? { ...outcome, resent } : outcome;
    if (target === undefined || !ctx.recorder) {
      ctx.counts.unrecorded++;
      return;
    }
    const sent = { url, path, https, req, headers, body: requestBody, size: requestSizeOf(req, requestBody!.size), startedAt, started };
    recordExchange(ctx, target, sent, answer, releaseCaptures);
  };

  /** The answer being relayed, once its head is known to be relayable. */
  let relayed: IncomingMessage | undefined;

  /**
   * The request to the target, its listeners on (a bodyless one ended). Sent again, MAX_RESENDS
   * times at most, when it went out on a kept-alive connection the target had just closed (resendable).
   */
  function send(): ClientRequest {
    const connection: RequestOptions = lenient
      ? // a connection of its own, closed after the answer: bytes read leniently never frame a later answer
        // whose heads are read as a browser reads them (a line node refuses even leniently mended or left out)
        { agent: browserAgent(https, { maxHeadBytes: MAX_HEADER_BYTES + 1024, nulInHead: 'as-is' }), insecureHTTPParser: true, timeout: ctx.upstreamTimeoutMs, ...(https ? { rejectUnauthorized: false } : {}) }
      : { agent: pinnedAgent(ctx, req, https) ?? (https ? ctx.https!.agent : ctx.httpAgent) };
    const sent = upstreamRequest(ctx, url, path, https, req.method, headers, { ...connection, ...serverNameOf(tunnelled) });
    // the agents' sockets time out (ctx.upstreamTimeoutMs): the request is then failed as a timeout
    sent.on('timeout', () => {
      stalled = true;
      sent.destroy(timedOut());
    });
    sent.on('information', (info: Information) => relayInformation(req, res, sent, info, (seen ??= noInformationYet())));
    refuseLoops(ctx, sent);
    sent.on('response', answered);
    // A 101 the client did not ask for (an upgrade is forwardUpgrade's): node's client hands over
    // the socket and says nothing more, which would leave the client waiting for ever.
    sent.on('upgrade', (_answer, socket: Socket) => {
      socket.destroy();
      failed(Object.assign(new Error('unasked upgrade'), { code: 'UNASKED_UPGRADE' }));
    });
    sent.on('error', (err: NodeJS.ErrnoException) => {
      if (relayed !== undefined) {
        // Bytes after a whole answer (a body past its Content-Length, one on a HEAD's or a 204's
        // answer): the answer itself is relayed as it came; the target's connection is not reused.
        if (relayed.complete) return;
        cutShort();
        return;
      }
      // answered already: a 502 for what its head said (answered's refusals), the rest of its read then failed to parse
      if (res.headersSent || settled) return;
      // (the two want different errors: a reset, a bare LF)
      if (readLeniently(err)) lenient = true;
      else if (!resendable(sent, err)) return failed(err);
      resent++;
      upstream = send();
    });
    if (bodyless) sent.end();
    return sent;
  }

  /**
   * Whether `sent` failed as a request does on a kept-alive connection the target closed while it
   * went out (the target's idle timeout, without a Keep-Alive hint node's agent would heed): reset
   * or closed before any answer came, so the target never read it. Browsers send such a request
   * again on a new connection; the proxy does so for what may be sent twice and is whole: an
   * idempotent method (RFC 9110 9.2.2) without a body. The new connection is fresh or another kept
   * one: at most MAX_RESENDS times.
   */
  function resendable(sent: ClientRequest, err: NodeJS.ErrnoException): boolean {
    return sent.reusedSocket && resent < MAX_RESENDS && (err.code === 'ECONNRESET' || err.code === 'EPIPE') && mayGoAgain();
  }

  /**
   * Whether to send the request again and read its answer leniently: node's strict reading refused
   * what browsers and curl read (LENIENTLY_READ). Only what may be sent twice (resendable's
   * idempotent methods without a body), on a connection of its own.
   */
  function readLeniently(err: NodeJS.ErrnoException): boolean {
    return !lenient && lenientlyReadable(err) && mayGoAgain();
  }

  /**
   * Whether the request may go to the target once more: whole (no body to send again) and of an
   * idempotent method (RFC 9110 9.2.2), no 1xx of it relayed, the client there, the proxy not stopping.
   */
  function mayGoAgain(): boolean {
    return bodyless && IDEMPOTENT.has(req.method ?? '') && seen === undefined && !clientGone && !ctx.stopping;
  }

  function answered(answer: IncomingMessage): void {
    const unrelayable = unrelayableStatus(answer.statusCode, answer.statusMessage);
    if (flooded(seen)) {
      answer.socket.destroy();
      return failed(tooManyInformational(seen));
    }
    // node takes the chunks off and leaves any other coding on the body: relayed without the header
    // that says so, the client would take gzip bytes for the body itself (RFC 9112 6.1)
    const coding = answer.headers['transfer-encoding'];
    if (coding !== undefined && coding.trim().toLowerCase() !== 'chunked') {
      answer.socket.destroy();
      return failed(Object.assign(new Error(`a transfer coding the proxy does not relay (${JSON.stringify(coding.slice(0, 100))})`), { code: 'UNRELAYABLE_CODING' }));
    }
    if (unrelayable !== undefined) {
      // never kept alive: what else it sends is not trusted either
      answer.socket.destroy();
      return failed(Object.assign(new Error(unrelayable), { code: 'UNRELAYABLE_STATUS' }));
    }
    // read leniently, both framings are let through (node's strict reading refuses them): which frames it is anyone's guess
    if (lenient && answer.headers['content-length'] !== undefined && coding !== undefined) {
      answer.socket.destroy();
      return failed(Object.assign(new Error('both Content-Length and Transfer-Encoding'), { code: 'UNRELAYABLE_HEAD' }));
    }
    let raw = false;
    // the target's head, and nothing of node's own (a Date the target did not send, on a device whose missing headers are tested)
    res.sendDate = false;
    try {
      res.writeHead(answer.statusCode!, answer.statusMessage, endToEnd(answer.rawHeaders));
    } catch (err) {
      // writeHead kept the target's reason phrase, which a 502 would take for its own
      res.statusMessage = '';
      // a control character in a header's value (read leniently, it is let through): node sends no
      // header with one, browsers and curl read it, so the head goes as it came (relayRaw)
      raw = lenient && (err as NodeJS.ErrnoException).code === 'ERR_INVALID_CHAR' && namesAreTokens(answer.rawHeaders);
      if (!raw) {
        answer.socket.destroy();
        return failed(Object.assign(new Error(`a header the proxy cannot send on (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`), { code: 'UNRELAYABLE_HEAD' }));
      }
    }
    relayed = answer;
    // read leniently and relayed: the origin's next requests are read so from the first
    if (lenient) rememberLenient(ctx, url.origin);
    // read now (for the record): a kept-alive socket goes back to its pool once the answer has ended, a closed one says nothing
    const peer = target === undefined ? undefined : peerOf(underlying(answer.socket) as Socket);
    const body = target === undefined ? undefined : capture(answer, ctx.bodyCap, ctx.captureBudget);
    responseBody = body;
    if (raw) {
      relayRaw(answer);
    } else if (Number(answer.headers['content-length']) <= WHOLE_ANSWER_BYTES && answer.headers['transfer-encoding'] === undefined) {
      // a small answer goes to the client whole: head and body in one write, without a pipe's listeners
      const chunks: Buffer[] = (held = []);
      answer.on('data', (chunk: Buffer) => chunks.push(chunk));
      answer.on('end', () => res.end(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)));
    } else {
      answer.pipe(res);
      countStreamed(answer);
    }
    const ended = (error?: string) => finish({ status: answer.statusCode ?? 0, statusText: answer.statusMessage ?? '', rawHeaders: answer.rawHeaders, body, peer, ...(error ? { error } : {}) });
    answer.on('end', () => ended());
    answer.on('close', () => {
      if (answer.complete) return;
      if (clientGone) return ended(CLIENT_LEFT);
      cutShort();
      ended(stalled ? stalledText(ctx) : 'the answer was cut short');
    });
  }

  /**
   * An answer whose head node will not send (answered): its head as it came (the status line as
   * HTTP/1.1, hop-by-hop headers left out, `Connection: close` added), on the client's connection
   * through the response's own raw write (queued behind an earlier answer), then its body as node's
   * reading left it (chunks taken off), then the connection closes. A body without a length goes
   * chunked again to an HTTP/1.1 client, so that one the target cuts short is seen cut (no last
   * chunk), not ended. Read leniently, the target's connection was its own and closes too.
   */
  function relayRaw(answer: IncomingMessage): void {
    rawRelay = true;
    const writer = res as unknown as RawWriter;
    const status = answer.statusCode ?? 0;
    const bodiless = req.method === 'HEAD' || status === 204 || status === 304;
    const chunked = !bodiless && answer.headers['content-length'] === undefined && req.httpVersion !== '1.0';
    // (Transfer-Encoding is hop-by-hop: endToEnd leaves it out)
    writer._writeRaw(rawHead(status, answer.statusMessage, endToEnd(answer.rawHeaders), `${chunked ? 'Transfer-Encoding: chunked\r\n' : ''}Connection: close\r\n`));
    answer.on('data', (chunk: Buffer) => {
      // (an empty one would be the last chunk)
      if (chunk.length === 0) return;
      let more: boolean;
      if (chunked) {
        writer._writeRaw(Buffer.from(`${chunk.length.toString(16)}\r\n`, 'latin1'));
        writer._writeRaw(chunk);
        more = writer._writeRaw(CRLF);
      } else more = writer._writeRaw(chunk);
      if (more) return;
      // held back until the client takes more: the connection's own 'drain' (the response's is for
      // its write(), not this), or, queued behind an earlier answer, once the connection is its
      answer.pause();
      const socket = res.socket;
      if (socket) socket.once('drain', () => answer.resume());
      else res.once('socket', () => answer.resume());
    });
    // once what was written went out (queued behind an earlier answer, the connection is not yet
    // this one's), ended and closed, whether or not the client closes its side
    answer.on('end', () =>
      writer._writeRaw(chunked ? LAST_CHUNK : Buffer.alloc(0), undefined, () => {
        const socket = res.socket;
        socket?.end(() => socket.destroy());
      }),
    );
    countStreamed(answer);
  }

  /** The target failed before an answer could be relayed: a 502 that says what failed. */
  function failed(err: NodeJS.ErrnoException): void {
    // once: a 1xx flood fails the request, and the final answer parsed in the same read fails it again
    if (res.headersSent) return;
    // the client went away while sending its request: nothing to answer, nothing recorded
    if (req.destroyed && !req.complete) return releaseCaptures();
    // the client went away while the target had not answered: the target failed at nothing
    if (clientGone) return finish({ status: 0, statusText: '', rawHeaders: [], error: CLIENT_LEFT });
    ctx.counts.upstreamErrors++;
    const failure = upstreamFailure(err, url);
    const [status, text] = failureStatus(err);
    res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'X-Assessd-Proxy-Error': failureKind(failure) });
    res.end(`${status} ${text}: ${failure}\n`);
    finish({ status: 0, statusText: '', rawHeaders: [], error: failure });
  }
}
