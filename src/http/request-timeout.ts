/**
 * The time a client may take to send its request, kept here rather than by node's
 * `requestTimeout`: node's counts the whole body, so a large upload the server streams as it comes
 * (a HAR of hundreds of MiB, which the server parses at its own pace) was cut off at 30 s however
 * steadily it came. A request gets `ms` to arrive whole; a body its handler streams gets instead
 * `idleMs` without a byte, not counting time the server itself holds the body back (back-pressure
 * while it parses what came).
 */
import type { IncomingMessage } from 'node:http';

interface Watch {
  timer: NodeJS.Timeout;
  /** Idle mode: the socket's bytesRead at the last look, and how long a look waits. */
  seen: number;
  idleMs: number;
  look(): void;
  /** Ends the watch: the timer cleared, its listeners taken off. */
  done(): void;
}

const watches = new WeakMap<IncomingMessage, Watch>();

/** Calls `onTimeout` if `req` has not arrived whole within `ms`. Nothing for a request already whole. */
export function timeRequest(req: IncomingMessage, ms: number, onTimeout: () => void): void {
  if (req.complete || !(ms > 0)) return;
  const { socket } = req;
  const done = () => {
    clearTimeout(watch.timer);
    watches.delete(req);
    req.off('close', done);
    socket.off('close', done);
  };
  const watch: Watch = {
    timer: setTimeout(() => watch.look(), ms),
    seen: 0,
    idleMs: 0,
    look() {
      if (req.complete || req.destroyed) return done();
      if (watch.idleMs > 0) {
        const read = req.socket.bytesRead;
        // bytes came, or the server holds them back (its handler has not read what is buffered)
        if (read !== watch.seen || req.readableLength > 0 || req.socket.isPaused()) {
          watch.seen = read;
          watch.timer = setTimeout(() => watch.look(), watch.idleMs);
          return;
        }
      }
      done();
      onTimeout();
    },
    done,
  };
  watches.set(req, watch);
  // 'close' comes once the request is over, whole or not (but see endsWithConnection)
  req.once('close', done);
}

/**
 * For a request answered before its body came (a 413, a 401): its watch ends with the connection
 * too. Node lets such a request go without a 'close' once the answer is out and the connection
 * then closes, and the timer would have kept it, its socket and its handler's closures for its
 * time. Only such requests pay the socket's listener, not every request.
 */
export function endsWithConnection(req: IncomingMessage): void {
  const watch = watches.get(req);
  if (watch) req.socket.once('close', watch.done);
}

/** From now on `req`'s body may take as long as it keeps coming: `idleMs` without a byte ends it. */
export function whileStreaming(req: IncomingMessage, idleMs: number): void {
  const watch = watches.get(req);
  if (!watch) return;
  clearTimeout(watch.timer);
  watch.idleMs = idleMs;
  watch.seen = req.socket.bytesRead;
  watch.timer = setTimeout(() => watch.look(), idleMs);
  // a streamed body's request may end without a 'close' of its own once the socket goes
  req.socket.once('close', watch.done);
}
