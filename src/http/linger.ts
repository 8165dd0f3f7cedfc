/**
 * Lingering close (nginx's): an answer sent before the client has sent all it meant to (a body too
 * large, a request the parser refused) is written whole, then what the client still sends is read
 * and dropped, for a bounded time and size, before the connection closes. Closing a socket with
 * unread data sends a reset, and a reset can reach the client before it has read the answer.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

export interface LingerLimits {
  /** Bytes read and dropped at most. */
  maxBytes: number;
  /** Milliseconds of lingering at most, and without a byte from the client. */
  maxMs: number;
  idleMs: number;
}

/** Sockets that answered already and linger: later client errors only count their bytes. */
const lingering = new WeakMap<Socket, { read(bytes: number): void; from: number }>();

export const LINGER: LingerLimits = { maxBytes: 256 * 1024 * 1024, maxMs: 10_000, idleMs: 2_000 };

/**
 * Bounded waiting: `done` runs once, at `stop()`, or when the limits pass; `read(n)` counts bytes
 * (and pushes the idle limit back).
 */
function bounded(limits: LingerLimits, done: () => void): { read(bytes: number): void; stop(): void } {
  let readBytes = 0;
  let over = false;
  const stop = () => {
    if (over) return;
    over = true;
    clearTimeout(total);
    clearTimeout(idle);
    done();
  };
  const total = setTimeout(stop, limits.maxMs);
  const idle = setTimeout(stop, limits.idleMs);
  return {
    read(bytes) {
      readBytes += bytes;
      if (readBytes > limits.maxBytes) stop();
      else idle.refresh();
    },
    stop,
  };
}

/**
 * Writes the answer's head and body, then reads the rest of the request body and drops it; the
 * response ends (and, with `Connection: close`, the socket closes) once the body has all come or
 * the limits have passed.
 */
export function answerThenDrain(req: IncomingMessage, res: ServerResponse, writeAnswer: () => void, limits: LingerLimits = LINGER): void {
  writeAnswer();
  const wait = bounded(limits, () => {
    req.off('data', onData);
    if (!res.writableEnded) res.end();
  });
  const onData = (chunk: Buffer) => wait.read(chunk.length);
  // the request's time limit passing meanwhile is a client error too: the answer is out already
  // (a client gone already has left no socket)
  if (req.socket) lingering.set(req.socket, { read: () => {}, from: 0 });
  req.on('data', onData);
  req.once('end', wait.stop);
  req.once('error', wait.stop);
  res.once('close', wait.stop);
  // a client that closes its side (it read the answer and gave up on the body) sends nothing more
  req.socket?.once('end', wait.stop);
  req.resume();
}

/**
 * Whether the socket lingers after a parser error already: the parser, in its error state,
 * reports each later chunk as another client error, which then only counts the bytes.
 */
export function stillLingering(socket: Socket): boolean {
  const seen = lingering.get(socket);
  if (!seen) return false;
  seen.read(socket.bytesRead - seen.from);
  seen.from = socket.bytesRead;
  return true;
}

/**
 * For a socket whose request the HTTP parser refused: its writing side ends after `answer`, and it
 * is destroyed once the client closes its side or the limits pass.
 */
export function answerThenLinger(socket: Socket, answer: string, limits: LingerLimits = LINGER): void {
  const wait = bounded(limits, () => socket.destroy());
  lingering.set(socket, { read: wait.read, from: socket.bytesRead });
  socket.once('end', wait.stop);
  socket.once('close', wait.stop);
  socket.end(answer);
}

/**
 * Answers a client that half-closes its connection once its request is sent (`nc -N`, a script's
 * `shutdown(SHUT_WR)`; RFC 9112 9.6 lets it): node's server ends the connection at the client's
 * FIN unless told otherwise, and an answer that is not ready by then is lost, though the request
 * may have been carried out (a session created). With this, the connection ends after the last
 * answer instead. Node's own switch (`httpAllowHalfOpen`, which its types do not name).
 */
export function answerHalfClosed(server: Server): void {
  (server as Server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
}

/**
 * `Expect: 100-continue` answered when a handler first reads the body, not as soon as the head has
 * come (node's default): a refusal that needs no body (a declared length over the limit, 401,
 * 404...) then goes out without inviting the upload, which the client then never sends (curl asks
 * so for bodies over 1 MiB). A client that sends its body anyway after its own wait is read and
 * dropped as any refused body is (answerThenDrain).
 */
export function continueWhenRead(server: Server): void {
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    const stream = req as IncomingMessage & { _read(size: number): void };
    const read = stream._read;
    stream._read = function (this: IncomingMessage, size: number) {
      stream._read = read;
      if (!res.headersSent) res.writeContinue();
      read.call(this, size);
    };
    server.emit('request', req, res);
  });
}
