/**
 * CONNECT: the client asks for a tunnel to `host:port`. When its first bytes are a TLS handshake,
 * the proxy answers it with a leaf for the name the client asked (SNI, else the CONNECT's host),
 * and the requests inside are forwarded like any other (to `https://host:port`); when they are an
 * HTTP request (a browser's `ws://` WebSocket through a proxy), they are read as plain HTTP (to
 * `http://host:port`). A client that sends anything else is tunnelled to the target untouched,
 * and counted. Loaded with the first CONNECT (it brings node:tls and node:https): a proxy that
 * sees none starts without them.
 */
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { connect as connectTcp, isIP, type Socket } from 'node:net';
import { Duplex } from 'node:stream';
import { createSecureContext, TLSSocket, type SecureContext } from 'node:tls';
import { bareHost } from '../evidence/scope.js';
import { streamedThrough } from '../young-generation.js';
import type { ProxyCa } from './ca.js';
import { afterPipelined, answerClientError, closeTogether, forward, type ForwardContext, type Tunnelled } from './forward.js';
import { signableName } from './names.js';
import { forwardUpgrade } from './upgrade.js';

export interface ConnectContext extends ForwardContext {
  ca: ProxyCa;
  /** Milliseconds a decrypted connection has to send a request's headers (then 408), as the proxy's own. */
  headersTimeoutMs: number;
  counts: ForwardContext['counts'] & { tunnels: number; intercepted: number; tunnelBytes: number };
}

/** The CONNECT authority a decrypted socket came through. */
const authorities = new WeakMap<Socket, string>();
/** TLS handshake record type. */
const HANDSHAKE = 0x16;
const MAX_CONTEXTS = 1000;

/** Sets `ctx.https` up, and answers what handles each CONNECT. */
export function interception(ctx: ConnectContext): (socket: Socket, head: Buffer, host: string, port: number) => void {
  // No TLS session resumed: node checks a resumed session's host name against nothing, so a target's
  // wrong-host certificate would go unsaid (tls_problem) on every connection after the first.
  ctx.https ??= {
    request: httpsRequest,
    agent: new HttpsAgent({ keepAlive: true, scheduling: 'lifo', maxSockets: 256, maxFreeSockets: 64, timeout: ctx.upstreamTimeoutMs, rejectUnauthorized: false, maxCachedSessions: 0 }),
  };
  return createConnectHandler(ctx, createInnerServer(ctx, 'https'), createInnerServer(ctx, 'http'));
}

/**
 * A decrypted connection's requests in flight, and its wait for the next request's headers: the
 * inner server never listens, so node's own headersTimeout (the proxy's 408) does not run there,
 * and a client sending a byte every few seconds would hold the connection for ever.
 */
interface Waiting {
  inFlight: number;
  timer?: NodeJS.Timeout;
}
const waiting = new WeakMap<Socket, Waiting>();

/** From now, `tls` has `ms` to finish a request's headers; then it is answered 408 and closed. */
function awaitHeaders(tls: Socket, ms: number): void {
  const state = waiting.get(tls) ?? { inFlight: 0 };
  waiting.set(tls, state);
  clearTimeout(state.timer);
  state.timer = setTimeout(() => {
    if (tls.writable) tls.end('HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n', () => tls.destroy());
    else tls.destroy();
  }, ms);
  state.timer.unref();
}

/** A request's headers came on `socket`: no deadline until its answer has gone, nor idle time (the target's timeout runs). */
function headersCame(socket: Socket): Waiting | undefined {
  const state = waiting.get(socket);
  if (!state) return undefined;
  clearTimeout(state.timer);
  state.inFlight++;
  // the idle limit is for a connection that sends nothing: a request waiting for its target is
  // the target's timeout to end (a 502), not the client's connection
  socket.setTimeout(0);
  return state;
}

/**
 * The server that reads the requests inside intercepted tunnels (it never listens): TLS ones
 * (`https`), or plain HTTP ones (`http`: a browser sends a `ws://` WebSocket through a proxy as a
 * CONNECT, and speaks HTTP in it).
 */
function createInnerServer(ctx: ConnectContext, scheme: 'https' | 'http'): Server {
  const upgraded = scheme === 'https' ? 'wss' : 'ws';
  // the authority was checked when the CONNECT came (a URL parser takes it)
  const urlOf = (req: IncomingMessage, scheme: string) => new URL(`${scheme}://${authorities.get(req.socket)}${req.url?.startsWith('/') ? req.url : `/${req.url ?? ''}`}`);
  /** A request whose headers came: its connection waits for no headers until it is answered. */
  const served = (req: IncomingMessage, res: ServerResponse) => {
    const state = headersCame(req.socket);
    res.once('close', () => {
      // answered, the next request's headers have their time again (idle keep-alive ends it sooner)
      if (state && --state.inFlight === 0 && !req.socket.destroyed) awaitHeaders(req.socket, ctx.headersTimeoutMs);
    });
  };
  /** The client's Host and TLS server name go as it sent them: it addressed the target itself. */
  const tunnelled = (req: IncomingMessage): Tunnelled => {
    const servername = (req.socket as TLSSocket).servername;
    // an address is no server name (RFC 6066): node would warn and send it anyway
    return typeof servername === 'string' && servername !== '' && isIP(servername) === 0 ? { servername } : {};
  };
  // no Host is no 400 here: the request goes to the CONNECT's authority, which forward() then names as Host
  const inner = createHttpServer({ maxHeaderSize: 64 * 1024, requestTimeout: 0, keepAliveTimeout: 30_000, requireHostHeader: false }, (req: IncomingMessage, res: ServerResponse) => {
    served(req, res);
    forward(ctx, req, res, urlOf(req, scheme), tunnelled(req));
  });
  // an Expect other than 100-continue: 417, as node answers it, an answer like any other for the headers' time
  inner.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    served(req, res);
    res.writeHead(417).end();
  });
  inner.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
    headersCame(socket);
    afterPipelined(socket, () => forwardUpgrade(ctx, req, socket, head, urlOf(req, upgraded), tunnelled(req)));
  });
  inner.on('clientError', answerClientError);
  inner.maxHeadersCount = 0;
  return inner;
}

/** Secure contexts by name: a leaf's context is made once. */
function contexts(ca: ProxyCa): (name: string) => SecureContext {
  const made = new Map<string, SecureContext>();
  return (name) => {
    const key = name.toLowerCase();
    let context = made.get(key);
    if (!context) {
      const leaf = ca.leaf(key);
      context = createSecureContext({ key: leaf.keyPem, cert: leaf.cert });
      if (made.size >= MAX_CONTEXTS) made.delete(made.keys().next().value!);
      made.set(key, context);
    }
    return context;
  };
}

/** The start of an HTTP/1 request line (`GET /chat HTTP/1.1`): what a client says first when it speaks plain HTTP in a tunnel. */
const REQUEST_LINE = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+ \S+ HTTP\/1\.[01]\r?\n/;
/** What may still become a request line, a client's first bytes stopping anywhere: a method's start, or a method and its space. */
const REQUEST_START = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,32}( |$)/;
/** Bytes of a first line waited for before deciding (a longer one is tunnelled untouched). */
const LINE_BYTES = 64 * 1024;
/**
 * A client silent this long after its CONNECT is tunnelled untouched: it waits for the server to
 * speak first (SSH, SMTP, FTP, MySQL send a banner), which only a connection to it can bring. A
 * TLS client or an HTTP one speaks at once.
 */
export const SERVER_FIRST_MS = 1000;

function createConnectHandler(ctx: ConnectContext, inner: Server, plain: Server): (socket: Socket, head: Buffer, host: string, port: number) => void {
  const contextFor = contexts(ctx.ca);
  return (socket, head, host, port) => {
    // A tunnel, and a client that says nothing after its CONNECT or stops mid-handshake, would
    // hold a connection for ever: no byte either way for this long ends it (as a target that
    // stops sending is a timeout). A tunnel's bytes both ways cross this socket.
    socket.setTimeout(ctx.upstreamTimeoutMs, () => socket.destroy());
    socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    const decide = (first: Buffer) => {
      if (first[0] === HANDSHAKE) intercept(socket, first, host, port);
      else if (REQUEST_LINE.test(first.toString('latin1', 0, LINE_BYTES))) readPlain(socket, first, host, port);
      else {
        socket.unshift(first);
        tunnel(socket, host, port);
      }
    };
    // the first bytes, up to a request line's end when they start as one (a client may write it in
    // pieces); the idle time bounds the wait
    const parts: Buffer[] = [];
    let size = 0;
    // nothing said within SERVER_FIRST_MS: the client waits for the server
    const silent = setTimeout(() => {
      if (socket.destroyed) return;
      socket.off('data', onData);
      socket.pause();
      tunnel(socket, host, port);
    }, SERVER_FIRST_MS);
    socket.once('close', () => clearTimeout(silent));
    const onData = (chunk: Buffer) => {
      clearTimeout(silent);
      parts.push(chunk);
      size += chunk.length;
      const start = parts[0]!;
      if (start[0] !== HANDSHAKE && size < LINE_BYTES && !chunk.includes(0x0a) && REQUEST_START.test(start.toString('latin1', 0, 33))) return;
      socket.off('data', onData);
      socket.pause();
      decide(parts.length === 1 ? start : Buffer.concat(parts));
    };
    socket.on('data', onData);
    if (head.length > 0) onData(head);
  };

  function intercept(socket: Socket, first: Buffer, host: string, port: number): void {
    ctx.counts.intercepted++;
    const bare = bareHost(host);
    // the handshake's first bytes were read to tell TLS from anything else: the TLS socket reads
    // them back first, through a stream (a socket's handle would not see bytes read from it)
    const tls = new TLSSocket(replay(socket, first), {
      isServer: true,
      // no SNI (a CONNECT to an IP address): the leaf names what the CONNECT named
      secureContext: contextFor(bare),
      SNICallback: (servername, done) => {
        try {
          if (!signableName(servername)) throw new Error(`no leaf for ${JSON.stringify(servername.slice(0, 300))}: not a host name`);
          done(null, contextFor(servername));
        } catch (err) {
          done(err as Error, undefined);
        }
      },
      ALPNProtocols: ['http/1.1'],
    });
    authorities.set(tls, `${host}:${port}`);
    // a client that does not trust the CA ends the handshake: nothing more to do
    tls.on('error', () => tls.destroy());
    // the handshake done, the decrypted connection's own times govern: idle before its first
    // request as before, then the inner server's keep-alive; an upgrade's frames none (forwardUpgrade)
    tls.once('secure', () => {
      socket.setTimeout(0);
      tls.setTimeout(ctx.upstreamTimeoutMs, () => tls.destroy());
      awaitHeaders(tls, ctx.headersTimeoutMs);
    });
    tls.once('close', () => clearTimeout(waiting.get(tls)?.timer));
    inner.emit('connection', tls);
  }

  /** Plain HTTP in the tunnel: its requests forwarded and recorded as `http://host:port` ones, its upgrades as `ws://`. */
  function readPlain(socket: Socket, first: Buffer, host: string, port: number): void {
    ctx.counts.intercepted++;
    authorities.set(socket, `${host}:${port}`);
    awaitHeaders(socket, ctx.headersTimeoutMs);
    socket.once('close', () => clearTimeout(waiting.get(socket)?.timer));
    plain.emit('connection', socket);
    // the bytes read to tell HTTP from the rest go to the server's parser first (node reads the
    // socket's next bytes into that parser itself, after this tick)
    socket.emit('data', first);
    socket.resume();
  }

  function tunnel(socket: Socket, host: string, port: number): void {
    ctx.counts.tunnels++;
    const upstream = connectTcp({ host: bareHost(host), port });
    const close = closeTogether(upstream, socket);
    upstream.on('connect', () => {
      // a name of this box's that reaches assessd itself (the URL check saw only the name)
      if (ctx.loops(upstream.remoteAddress ?? '', upstream.remotePort ?? 0)) return close();
      const counted = (chunk: Buffer) => {
        ctx.counts.tunnelBytes += chunk.length;
        streamedThrough(chunk.length);
      };
      socket.on('data', counted);
      upstream.on('data', counted);
      socket.pipe(upstream).pipe(socket);
      socket.resume();
    });
  }
}

/** `socket` as a stream whose reading starts with `first`, then goes on with the socket's bytes. */
function replay(socket: Socket, first: Buffer): Duplex {
  const stream = new Duplex({
    read: () => void socket.resume(),
    write: (chunk: Buffer, _encoding, done) => void socket.write(chunk, done),
    final: (done) => void socket.end(done),
    destroy: (err, done) => {
      socket.destroy(err ?? undefined);
      done(err);
    },
  });
  stream.push(first);
  socket.on('data', (chunk: Buffer) => {
    if (!stream.push(chunk)) socket.pause();
  });
  socket.on('end', () => stream.push(null));
  socket.on('error', (err) => stream.destroy(err));
  socket.on('close', () => stream.destroy());
  return stream;
}
