/**
 * CONNECT: the client asks for a tunnel to `host:port`. When its first bytes are a TLS handshake,
 * the proxy answers it with a leaf for the name the client asked (SNI, else the CONNECT's host),
 * and the requests inside are forwarded like any other (to `https://host:port`). A client that
 * sends anything else is tunnelled to the target untouched, and counted. Loaded with the first
 * CONNECT (it brings node:tls and node:https): a proxy that sees none starts without them.
 */
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { connect as connectTcp, type Socket } from 'node:net';
import { Duplex } from 'node:stream';
import { createSecureContext, TLSSocket, type SecureContext } from 'node:tls';
import { bareHost } from '../evidence/scope.js';
import { streamedThrough } from '../young-generation.js';
import type { ProxyCa } from './ca.js';
import { forward, forwardUpgrade, type ForwardContext } from './forward.js';

export interface ConnectContext extends ForwardContext {
  ca: ProxyCa;
  counts: ForwardContext['counts'] & { tunnels: number; intercepted: number; tunnelBytes: number };
}

/** The CONNECT authority a decrypted socket came through. */
const authorities = new WeakMap<Socket, string>();
/** TLS handshake record type. */
const HANDSHAKE = 0x16;
const MAX_CONTEXTS = 1000;

/** Sets `ctx.https` up, and answers what handles each CONNECT. */
export function interception(ctx: ConnectContext): (socket: Socket, head: Buffer, host: string, port: number) => void {
  ctx.https ??= { request: httpsRequest, agent: new HttpsAgent({ keepAlive: true, scheduling: 'lifo', maxSockets: 256, maxFreeSockets: 64, timeout: ctx.upstreamTimeoutMs, rejectUnauthorized: false }) };
  return createConnectHandler(ctx, createInnerServer(ctx));
}

/** The server that reads the requests inside intercepted tunnels (it never listens). */
function createInnerServer(ctx: ConnectContext): Server {
  const urlOf = (req: IncomingMessage, scheme: string) => new URL(`${scheme}://${authorities.get(req.socket)}${req.url?.startsWith('/') ? req.url : `/${req.url ?? ''}`}`);
  const inner = createHttpServer({ maxHeaderSize: 64 * 1024, requestTimeout: 0, keepAliveTimeout: 30_000 }, (req: IncomingMessage, res: ServerResponse) => {
    forward(ctx, req, res, urlOf(req, 'https'));
  });
  inner.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => forwardUpgrade(ctx, req, socket, head, urlOf(req, 'wss')));
  inner.on('clientError', (_err, socket: Socket) => socket.destroy());
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

function createConnectHandler(ctx: ConnectContext, inner: Server): (socket: Socket, head: Buffer, host: string, port: number) => void {
  const contextFor = contexts(ctx.ca);
  return (socket, head, host, port) => {
    // A tunnel, and a client that says nothing after its CONNECT or stops mid-handshake, would
    // hold a connection for ever: no byte either way for this long ends it (as a target that
    // stops sending is a timeout). A tunnel's bytes both ways cross this socket.
    socket.setTimeout(ctx.upstreamTimeoutMs, () => socket.destroy());
    socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    const decide = (first: Buffer) => {
      if (first[0] === HANDSHAKE) intercept(socket, first, host, port);
      else {
        socket.unshift(first);
        tunnel(socket, host, port);
      }
    };
    if (head.length > 0) return decide(head);
    socket.once('data', (chunk: Buffer) => {
      socket.pause();
      decide(chunk);
    });
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
    });
    inner.emit('connection', tls);
  }

  function tunnel(socket: Socket, host: string, port: number): void {
    ctx.counts.tunnels++;
    const upstream = connectTcp({ host: bareHost(host), port });
    const close = () => {
      upstream.destroy();
      socket.destroy();
    };
    upstream.on('error', close);
    socket.on('error', close);
    upstream.on('close', close);
    socket.on('close', close);
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
