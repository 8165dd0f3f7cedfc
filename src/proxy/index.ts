/**
 * The intercepting proxy: a second listener beside the API. Plain requests (absolute form) are
 * forwarded, CONNECT tunnels intercepted when the client speaks TLS in them, upgrades relayed;
 * beyond loopback every request needs the token (`Proxy-Authorization: Basic`, the token as the
 * password); a request to assessd itself is refused, never looped.
 */
import { once } from 'node:events';
import { Agent as HttpAgent, createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { isIP, type AddressInfo, type Socket } from 'node:net';
import { hostname as machineName, networkInterfaces } from 'node:os';
import { bareHost } from '../evidence/scope.js';
import { tokenMatcher } from '../http/access.js';
import { isLoopback, unmapped } from '../options.js';
import type { ProxyCa } from './ca.js';
import type { ConnectContext } from './connect.js';
import { afterPipelined, answerClientError, forward, STOPPING_TEXT } from './forward.js';
import { signableName } from './names.js';
import { forwardUpgrade } from './upgrade.js';
import type { Recorder } from './record.js';

export type { ProxyCa } from './ca.js';
export type { ProxyExchange, Recorder } from './record.js';

export interface ProxyOptions {
  host: string;
  /** 0 picks a free one. */
  port: number;
  /** The CA that signs the leaves (asked at the first CONNECT). */
  ca: () => Promise<ProxyCa>;
  /** Required beyond loopback (Proxy-Authorization: Basic, any user, the token as the password). */
  token?: string;
  recorder?: Recorder;
  /** assessd's own ports (the API's): a request to one of them on this machine is refused. */
  ownPorts: () => number[];
  /** Body bytes kept per exchange (default 16 MiB). */
  bodyCap?: number;
  /** Connections at once (default 1024); past it, new ones are closed at once. */
  maxConnections?: number;
  /** Milliseconds to a target's connection and between its bytes (default 60 s). */
  upstreamTimeoutMs?: number;
  /** Milliseconds a client may take to send a request's headers (default 60 s); then 408 and closed. */
  headersTimeoutMs?: number;
  /** Milliseconds a stop waits for the exchanges in flight (default 10 s); those left then are cut. */
  drainMs?: number;
  log: (line: string) => void;
}

export interface ProxyCounts {
  /** Requests forwarded (plain and inside intercepted tunnels). */
  requests: number;
  /** Exchanges handed to the recorder (a target's). */
  recorded: number;
  /** Of those, the ones that could not be stored (the disk refused, the target was deleted). */
  dropped: number;
  /** Exchanges forwarded and only counted (no target's). */
  unrecorded: number;
  upgrades: number;
  /** CONNECTs read: answered with a leaf (the client spoke TLS), or plain HTTP inside. */
  intercepted: number;
  /** CONNECTs passed through untouched (neither TLS nor HTTP inside), and their bytes. */
  tunnels: number;
  tunnelBytes: number;
  upstreamErrors: number;
  /** Requests refused: no token (407), assessd itself (403), not a proxy request (400). */
  refused: number;
}

export interface ProxyServer {
  readonly host: string;
  readonly port: number;
  counts(): ProxyCounts;
  /** Stops listening; the exchanges in flight finish (`drainMs` at most), then every connection ends. */
  close(): Promise<void>;
}

const REALM = 'Basic realm="assessd proxy"';
/** Bytes of bodies kept for the record at once, across exchanges in flight (capture.ts). */
const CAPTURE_BUDGET = 64 * 1024 * 1024;

/** Names and addresses that are this machine: a request to one of them on an own port loops. */
function localNames(): Set<string> {
  const names = new Set(['localhost', '0.0.0.0', '::', machineName().toLowerCase()]);
  for (const list of Object.values(networkInterfaces())) for (const entry of list ?? []) names.add(entry.address.toLowerCase());
  return names;
}

export async function startProxy(options: ProxyOptions): Promise<ProxyServer> {
  const counts: ConnectContext['counts'] = {
    requests: 0, recorded: 0, unrecorded: 0, upgrades: 0, intercepted: 0, tunnels: 0, tunnelBytes: 0, upstreamErrors: 0,
  };
  let refused = 0;
  const ctx: Omit<ConnectContext, 'ca'> = {
    httpAgent: new HttpAgent({ keepAlive: true, scheduling: 'lifo', maxSockets: 256, maxFreeSockets: 64, timeout: options.upstreamTimeoutMs ?? 60_000 }),
    bodyCap: options.bodyCap ?? 16 * 1024 * 1024,
    captureBudget: { limit: CAPTURE_BUDGET, used: 0 },
    ...(options.recorder ? { recorder: options.recorder } : {}),
    counts,
    upstreamTimeoutMs: options.upstreamTimeoutMs ?? 60_000,
    headersTimeoutMs: options.headersTimeoutMs ?? 60_000,
    loops: (host, port) => loops(host, port),
    inFlight: new Set(),
    recording: new Set(),
    stopping: false,
    cutting: false,
    lenientOrigins: new Set(),
  };
  const needsToken = options.token !== undefined && !isLoopback(options.host);
  const tokenOk = tokenMatcher(options.token);
  // the names that reach this box, read with the first request rather than before the first answer
  let local: Set<string> | undefined;
  let boundPort = options.port;

  /** Basic credentials whose password is the token. */
  function authorized(req: IncomingMessage): boolean {
    if (!needsToken) return true;
    const match = /^basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(req.headers['proxy-authorization'] ?? '');
    if (!match) return false;
    const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
    return tokenOk(decoded.slice(decoded.indexOf(':') + 1));
  }

  /** Why a request to host:port is refused: assessd itself (its API, this proxy). */
  function loops(host: string, port: number): boolean {
    const bare = unmapped(bareHost(host).toLowerCase().replace(/\.$/, ''));
    const isLocal = (local ??= localNames()).has(bare) || bare.endsWith('.localhost') || (isIP(bare) !== 0 && isLoopback(bare));
    return isLocal && (port === boundPort || options.ownPorts().includes(port));
  }

  // CONNECT brings TLS (node:tls, node:https, the CA): loaded with the first one
  let onConnect: Promise<(socket: Socket, head: Buffer, host: string, port: number) => void> | undefined;
  const connectHandler = () =>
    (onConnect ??= Promise.all([import('./connect.js'), options.ca()]).then(([{ interception }, ca]) => interception(Object.assign(ctx, { ca }))));

  function refuse(res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void {
    refused++;
    res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', Connection: 'close', ...headers });
    res.end(`${status} ${text}\n`);
  }

  function refuseRaw(socket: Socket, status: string, text: string, extra = ''): void {
    refused++;
    socket.end(`HTTP/1.1 ${status}\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n${extra}\r\n${status.split(' ')[0]} ${text}\n`);
  }

  /** The absolute URL of a plain proxy request, or undefined (an origin-form request to the proxy itself). */
  function targetUrl(req: IncomingMessage): URL | undefined {
    if (!req.url || req.url.startsWith('/')) return undefined;
    try {
      const url = new URL(req.url);
      return url.protocol === 'http:' || url.protocol === 'ws:' ? url : undefined;
    } catch {
      return undefined;
    }
  }

  const headersTimeout = ctx.headersTimeoutMs;
  // node looks for connections past the headers' time every connectionsCheckingInterval (30 s by
  // default, which made a 60 s limit up to 90): every 2 s here
  const httpOptions = { maxHeaderSize: 64 * 1024, requestTimeout: 0, headersTimeout, keepAliveTimeout: 30_000, connectionsCheckingInterval: Math.min(2_000, headersTimeout / 2) };
  const server = createHttpServer(httpOptions, (req, res) => {
    if (!authorized(req)) return refuse(res, 407, 'Proxy Authentication Required: the token as the password (Proxy-Authorization: Basic)', { 'Proxy-Authenticate': REALM });
    const url = targetUrl(req);
    if (!url) return refuse(res, 400, 'Bad Request: this is assessd\'s proxy; send it requests for http:// URLs (absolute form), or CONNECT for https');
    if (loops(url.hostname, Number(url.port || 80))) return refuse(res, 403, `Forbidden: ${url.host} is assessd itself; a request there through its own proxy would loop`);
    forward(ctx, req, res, url);
  });
  server.on('connect', (req: IncomingMessage, socket: Socket, head: Buffer) => {
    socket.on('error', () => socket.destroy());
    if (!authorized(req)) return refuseRaw(socket, '407 Proxy Authentication Required', 'the token as the password (Proxy-Authorization: Basic)', `Proxy-Authenticate: ${REALM}\r\n`);
    // a host alone (no user@, nor a ? or # that would make the rest a query: `a?:8080` is a:443 to
    // a URL parser), and one a URL parser takes too (`a%zz`, `[1.2.3.4]` pass the pattern only):
    // the requests inside are forwarded to https://host:port
    const match = /^(\[[0-9a-fA-F:.]+\]|[^:\s/?#@\\]+):([0-9]{1,5})$/.exec(req.url ?? '');
    const port = Number(match?.[2]);
    if (!match || !(port > 0 && port < 65536) || !URL.canParse(`https://${match[1]}:${port}/`)) return refuseRaw(socket, '400 Bad Request', 'CONNECT needs host:port');
    // a leaf is signed for this name: an IP address or a host name as written (no `*.example.com`, no `a%2eb`)
    if (!signableName(match[1]!)) return refuseRaw(socket, '400 Bad Request', 'CONNECT needs host:port, the host an IP address or a host name (letters, digits, hyphens, underscores)');
    if (loops(match[1]!, port)) return refuseRaw(socket, '403 Forbidden', `${match[1]}:${port} is assessd itself; a tunnel there through its own proxy would loop`);
    if (ctx.stopping) return refuseRaw(socket, '503 Service Unavailable', STOPPING_TEXT);
    afterPipelined(socket, () => connectHandler().then(
      (handle) => handle(socket, head, match[1]!, port),
      (err: Error) => {
        options.log(`the proxy cannot intercept TLS: ${err.message}`);
        refuseRaw(socket, '502 Bad Gateway', `assessd's proxy cannot intercept TLS: ${err.message}`);
      },
    ));
  });
  server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
    socket.on('error', () => socket.destroy());
    if (!authorized(req)) return refuseRaw(socket, '407 Proxy Authentication Required', 'the token as the password', `Proxy-Authenticate: ${REALM}\r\n`);
    const url = targetUrl(req);
    if (!url) return refuseRaw(socket, '400 Bad Request', 'send upgrades for absolute ws:// or http:// URLs');
    if (loops(url.hostname, Number(url.port || 80))) return refuseRaw(socket, '403 Forbidden', `${url.host} is assessd itself`);
    afterPipelined(socket, () => forwardUpgrade(ctx, req, socket, head, url));
  });
  server.on('clientError', answerClientError);
  server.maxConnections = options.maxConnections ?? 1024;
  // every header line of a request, not node's first 1,000 (maxHeaderSize bounds them)
  server.maxHeadersCount = 0;
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    socket.setNoDelay(true);
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  server.listen(options.port, options.host);
  await once(server, 'listening');
  boundPort = (server.address() as AddressInfo).port;
  return {
    host: options.host,
    port: boundPort,
    counts: () => ({ ...counts, dropped: options.recorder?.dropped ?? 0, refused }),
    async close() {
      // no new connection, no new request on a kept one (503); the exchanges in flight finish, and
      // are recorded, for drainMs at most (a long download is cut then)
      ctx.stopping = true;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const deadline = Date.now() + (options.drainMs ?? 10_000); ctx.inFlight.size > 0 && Date.now() < deadline; ) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      // the tunnels' sockets are among these: intercepted ones end with them
      ctx.cutting = true;
      for (const socket of sockets) socket.destroy();
      ctx.httpAgent.destroy();
      ctx.https?.agent.destroy();
      await closed;
      // what ended is handed to the recorder before the store closes (a compressed answer is decoded first)
      await Promise.allSettled([...ctx.recording]);
    },
  };
}
