/**
 * An upgrade (a WebSocket handshake, an h2c one) relayed to its target: its body too, if it has
 * one, then the target's 101 and bytes both ways untouched; any other answer relayed as an answer.
 * The handshake is recorded as forward.ts records an exchange.
 */
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { PassThrough, pipeline, Transform } from 'node:stream';
import { collectAsItStreams } from '../young-generation.js';
import { capture, type Capture } from './capture.js';
import {
  CLIENT_LEFT,
  closeTogether,
  CRLF,
  endToEnd,
  endWithText,
  failureKind,
  failureStatus,
  flooded,
  HOST,
  informational,
  LAST_CHUNK,
  MAX_HEADER_BYTES,
  pathOf,
  rawHead,
  recordExchange,
  refuseLoops,
  stalledText,
  requestSizeOf,
  timedOut,
  noInformationYet,
  tooManyInformational,
  unrelayableCoding,
  UPGRADE,
  upstreamFailure,
  peerOf,
  serverNameOf,
  STOPPING_TEXT,
  upstreamHeaders,
  upstreamRequest,
  type Answered,
  type ForwardContext,
  type Tunnelled,
  type Information,
} from './forward.js';

/**
 * Takes the next raw bytes of a request's body and returns the body's data in them and, once the
 * body has ended, where in them it did; throws on bytes that are no body so framed.
 */
type BodyCutter = (bytes: Buffer) => { data: Buffer[]; end?: number };

/** A body of `length` bytes (Content-Length; 0: none). */
function lengthCutter(length: number): BodyCutter {
  let left = length;
  return (bytes) => {
    const n = Math.min(left, bytes.length);
    left -= n;
    return { data: n > 0 ? [bytes.subarray(0, n)] : [], ...(left === 0 ? { end: n } : {}) };
  };
}

/** A chunked body (RFC 9112 7.1): the chunks' data, without their sizes, extensions and trailer fields. */
function chunkedCutter(): BodyCutter {
  /** A size or trailer line so far. */
  let line = '';
  /** Bytes of the current chunk still to come, its closing CRLF included. */
  let left = 0;
  /** Past the last chunk: trailer lines until an empty one. */
  let trailers = false;
  return (bytes) => {
    const data: Buffer[] = [];
    for (let at = 0; at < bytes.length; ) {
      if (left > 0) {
        const n = Math.min(left, bytes.length - at);
        const ofData = Math.min(n, left - 2);
        if (ofData > 0) data.push(bytes.subarray(at, at + ofData));
        left -= n;
        at += n;
        continue;
      }
      const lf = bytes.indexOf(0x0a, at);
      line += bytes.toString('latin1', at, lf < 0 ? bytes.length : lf);
      if (line.length > MAX_HEADER_BYTES) throw new Error('a chunk line over 64 KiB');
      if (lf < 0) break;
      at = lf + 1;
      const text = line.trim();
      line = '';
      if (trailers) {
        if (text === '') return { data, end: at };
        continue;
      }
      // at most 12 hex digits: a size past 2^48 bytes is no upload's
      const size = /^([0-9a-fA-F]{1,12})[ \t]*(;|$)/.exec(text);
      if (!size) throw new Error('not a chunk size');
      left = Number.parseInt(size[1]!, 16);
      if (left === 0) trailers = true;
      else left += 2;
    }
    return { data };
  };
}

/** Bytes past an upgrade request's body held until the answer (the new protocol's, sent early); past them the client is not read. */
const EARLY_BYTES = 64 * 1024;

/** A body written as chunks, one per piece that comes, and the last chunk once it has ended whole. */
function chunkedFraming(): Transform {
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      // (an empty one would be the last chunk)
      if (chunk.length === 0) return done();
      this.push(Buffer.from(`${chunk.length.toString(16)}\r\n`, 'latin1'));
      this.push(chunk);
      done(null, CRLF);
    },
    flush(done) {
      done(null, LAST_CHUNK);
    },
  });
}

/**
 * Relays an upgrade (a WebSocket handshake, an h2c one) to `url`: its body too, if it has one
 * (node hands the socket over at the head: `head` holds what it read past it, the rest comes on
 * `client`); the target's 1xx and 101 go back as they came, then bytes flow both ways untouched.
 * Any other answer is relayed as an answer, and the connection ends with it. The target's timeout
 * is forward()'s until a 101 (a WebSocket may then stay quiet); a client that leaves before the
 * answer takes the target's connection with it. The handshake is recorded, bodies included, a
 * failed one with its error (a WebSocket's frames are not).
 */
export function forwardUpgrade(ctx: ForwardContext, req: IncomingMessage, client: Socket, head: Buffer, url: URL, tunnelled?: Tunnelled): void {
  ctx.counts.upgrades++;
  const unrelayable = unrelayableCoding(req);
  if (unrelayable !== undefined) return endWithText(client, '501 Not Implemented', unrelayable);
  if (ctx.stopping) return endWithText(client, '503 Service Unavailable', STOPPING_TEXT);
  const https = url.protocol === 'https:' || url.protocol === 'wss:';
  const target = ctx.recorder?.targetOf(url);
  const startedAt = Date.now();
  const started = performance.now();
  const chunked = req.headers['transfer-encoding'] !== undefined;
  const headers = upstreamHeaders(req, url, UPGRADE, HOST, tunnelled);
  const path = pathOf(req, tunnelled);
  // an upgraded connection is never given back to a pool
  const upstream = upstreamRequest(ctx, url, path, https, req.method, headers, {
    agent: false,
    timeout: ctx.upstreamTimeoutMs,
    ...(https ? { rejectUnauthorized: false, ...serverNameOf(tunnelled) } : {}),
  });
  /** No byte moved for ctx.upstreamTimeoutMs: the proxy cut the request (a declined upgrade's answer begun is said cut by that). */
  let stalled = false;
  upstream.on('timeout', () => {
    stalled = true;
    upstream.destroy(timedOut());
  });
  refuseLoops(ctx, upstream);
  const body = new PassThrough();
  body.pipe(upstream);
  const requestBody = target === undefined ? undefined : capture(body, ctx.bodyCap, ctx.captureBudget);
  let responseBody: Capture | undefined;
  const releaseCaptures = () => {
    requestBody?.release();
    responseBody?.release();
  };
  /** The client has its answer, or is getting it (the target's, or the proxy's 502). */
  let answered = false;
  /** Bytes flow both ways untouched. */
  let upgraded = false;
  let clientGone = false;
  let settled = false;
  const finish = (answer: Answered) => {
    if (settled) return;
    settled = true;
    if (target === undefined || !ctx.recorder) return void ctx.counts.unrecorded++;
    const sent = { url, path, https, req, headers, body: requestBody, size: requestSizeOf(req, requestBody!.size, body.writableEnded), startedAt, started };
    recordExchange(ctx, target, sent, answer, releaseCaptures);
  };

  const cut = chunked ? chunkedCutter() : lengthCutter(Number(req.headers['content-length'] ?? 0));
  const early: Buffer[] = [];
  let earlyBytes = 0;
  /** The client's bytes before the answer: the body's go to the target, those past it wait for the new protocol. */
  const take = (bytes: Buffer) => {
    if (!body.writableEnded) {
      let read: ReturnType<BodyCutter>;
      try {
        read = cut(bytes);
      } catch {
        return refuseBody();
      }
      let room = true;
      for (const data of read.data) room = body.write(data);
      if (!room) {
        client.pause();
        body.once('drain', () => client.resume());
      }
      if (read.end === undefined) return;
      body.end();
      bytes = bytes.subarray(read.end);
    }
    if (bytes.length === 0) return;
    early.push(bytes);
    earlyBytes += bytes.length;
    if (earlyBytes >= EARLY_BYTES) client.pause();
  };
  /** A chunked body that is not one: the target's request cannot be finished. */
  const refuseBody = () => {
    answered = true;
    client.off('data', take);
    upstream.destroy();
    releaseCaptures();
    endWithText(client, '400 Bad Request', '400 Bad Request: the request\'s chunked body is not valid\n');
  };
  /** The client went away: the target's connection goes too (and a half-closed client's connection). */
  const left = () => {
    if (upgraded || clientGone) return;
    clientGone = true;
    upstream.destroy();
    client.destroy();
    // the answer's own end records a declined upgrade
    if (answered) return;
    // gone while still sending its request: nothing recorded (as forward's)
    if (!body.writableEnded) return releaseCaptures();
    finish({ status: 0, statusText: '', rawHeaders: [], error: CLIENT_LEFT });
  };
  client.on('end', () => {
    if (!answered) left();
  });
  client.on('close', left);
  // read from now on (node handed the socket over paused), to see the client leave: `head` first
  client.on('data', take);
  take(head);

  // 1xx answers go back as forward's do, a 100 too: an upgrade's Expect is the target's to answer
  const seen = noInformationYet();
  upstream.on('information', (info: Information) => {
    const relayed = informational(req, upstream, info, seen);
    if (relayed && !answered) client.write(relayed);
  });
  upstream.on('upgrade', (answer: IncomingMessage, socket: Socket, upstreamHead: Buffer) => {
    if (flooded(seen)) {
      // handed over with no listener of node's: the request's destroy (informational) fails it too
      socket.on('error', () => {});
      socket.destroy();
      return failed(tooManyInformational(seen));
    }
    answered = upgraded = true;
    client.off('data', take);
    // a WebSocket may stay quiet as long as its ends like, over ws:// or inside an intercepted CONNECT
    socket.setTimeout(0);
    client.setTimeout(0);
    client.write(rawHead(answer.statusCode, answer.statusMessage, answer.rawHeaders));
    if (upstreamHead.length > 0) client.write(upstreamHead);
    for (const bytes of early) socket.write(bytes);
    early.length = 0;
    socket.pipe(client).pipe(socket);
    collectAsItStreams(socket);
    collectAsItStreams(client);
    closeTogether(socket, client);
    finish({ status: answer.statusCode ?? 101, statusText: answer.statusMessage ?? '', rawHeaders: answer.rawHeaders, ...(target === undefined ? {} : { peer: peerOf(socket) }) });
  });
  upstream.on('response', (answer: IncomingMessage) => {
    if (flooded(seen)) {
      answer.socket.destroy();
      return failed(tooManyInformational(seen));
    }
    answered = true;
    // read now: the answer's socket is let go once it has ended, and a closed one says nothing
    const peer = target === undefined ? undefined : peerOf(answer.socket);
    responseBody = target === undefined ? undefined : capture(answer, ctx.bodyCap, ctx.captureBudget);
    // the target declined the upgrade: its answer goes back as an answer, the connection closed after it;
    // a body without a length goes chunked, its last chunk only once it came whole: cut short, it
    // reads as cut to the client too, not as whole at the close (as relayRaw's)
    const status = answer.statusCode ?? 0;
    const bodiless = req.method === 'HEAD' || status === 204 || status === 304;
    const chunked = !bodiless && answer.headers['content-length'] === undefined && req.httpVersion !== '1.0';
    client.write(rawHead(status, answer.statusMessage, endToEnd(answer.rawHeaders), `${chunked ? 'Transfer-Encoding: chunked\r\n' : ''}Connection: close\r\n`));
    pipeline(answer, chunked ? chunkedFraming() : new PassThrough(), client, () => client.destroy());
    const ended = (error?: string) => finish({ status: answer.statusCode ?? 0, statusText: answer.statusMessage ?? '', rawHeaders: answer.rawHeaders, body: responseBody, peer, ...(error ? { error } : {}) });
    answer.on('end', () => ended());
    answer.on('close', () => {
      if (!answer.complete) ended(clientGone ? CLIENT_LEFT : stalled ? stalledText(ctx) : 'the answer was cut short');
    });
  });
  upstream.on('error', failed);
  /** The target failed before an answer could be relayed: a 502 that says what failed (once). */
  function failed(err: NodeJS.ErrnoException): void {
    // after the answer's head, its own end says what happened; a client gone is answered nothing
    if (answered || clientGone) return;
    answered = true;
    ctx.counts.upstreamErrors++;
    const failure = upstreamFailure(err, url);
    const [status, text] = failureStatus(err);
    endWithText(client, `${status} ${text}`, `${status} ${text}: ${failure}\n`, `X-Assessd-Proxy-Error: ${failureKind(failure)}\r\n`);
    finish({ status: 0, statusText: '', rawHeaders: [], error: failure });
  }
}
