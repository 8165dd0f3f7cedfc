/**
 * A server's port bound as its start begins, before what it serves is ready: a client that
 * connects meanwhile (a browser, a script polling health) waits in its connection instead of being
 * refused, and its request is read once the server takes the port over, as a socket-activated
 * daemon's is. Nothing is read from a connection, let alone answered, before then.
 */
import { once } from 'node:events';
import { createServer, type Server, type Socket } from 'node:net';

export interface EarlyListener {
  /**
   * Hands the port to `server`, which listens on it from then on, and gives it the connections
   * that came meanwhile, in their order. Rejects with the bind's own error (`EADDRINUSE`, ...).
   */
  adopt(server: Server): Promise<void>;
  /**
   * A start that failed: the connections that waited closed, and the port once it is bound (a bind
   * under way finishes first). Nothing once adopted: the server closes it then.
   */
  close(): Promise<void>;
}

/** Connections kept waiting at most; past them a connection is closed at once, as a full backlog would refuse it. */
export const MAX_WAITING = 1024;

export function listenEarly(port: number, host: string, maxWaiting = MAX_WAITING): EarlyListener {
  const waiting = new Set<Socket>();
  const forget = function (this: Socket) {
    waiting.delete(this);
  };
  const ignore = () => {};
  let settled: 'open' | 'adopted' | 'closed' = 'open';
  // paused: not a byte read until the server that answers has them
  const early = createServer({ pauseOnConnect: true }, (socket) => {
    // (closed: one that came before the port did)
    if (settled === 'closed' || waiting.size >= maxWaiting) return void socket.destroy();
    waiting.add(socket);
    socket.on('close', forget);
    // a reset while it waits: the socket closes, nothing else to do
    socket.on('error', ignore);
  });
  const bound = new Promise<void>((resolve, reject) => {
    early.once('listening', resolve);
    early.once('error', reject);
  });
  // reported by adopt(), which the start always reaches or replaces with close()
  bound.catch(() => {});
  early.listen(port, host);
  return {
    async adopt(server) {
      await bound;
      if (settled !== 'open') throw new Error(`the early listener was ${settled} already`);
      settled = 'adopted';
      // the same socket (node takes a server's handle): connections go to `server` from now on
      server.listen(early);
      // before any that comes after
      for (const socket of waiting) {
        socket.off('close', forget);
        socket.off('error', ignore);
        if (socket.destroyed) continue;
        server.emit('connection', socket);
        socket.resume();
      }
      waiting.clear();
      await once(server, 'listening');
    },
    async close() {
      if (settled !== 'open') return;
      settled = 'closed';
      for (const socket of waiting) socket.destroy();
      waiting.clear();
      if (await bound.then(() => true, () => false)) await new Promise((resolve) => early.close(resolve));
    },
  };
}
