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

/**
 * Connections kept waiting at most; past them a connection is closed at once, as a full backlog
 * would refuse it. A waiting connection is not read, so one its client gave up still counts until
 * the server takes the port (or the start fails).
 */
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
      // its 'listening' sets up what tracks connections (node's headers timeout, closeIdleConnections);
      // it comes on the next tick, before any I/O: no connection comes in between
      await once(server, 'listening');
      // before any that comes after
      for (const socket of waiting) {
        socket.off('close', forget);
        socket.off('error', ignore);
        if (socket.destroyed) continue;
        // counted as the server's own: its close() waits for them as for any other
        moveCount(socket, early, server);
        server.emit('connection', socket);
        socket.resume();
      }
      waiting.clear();
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

/** node's count of a server's open connections (net.Server's own fields): what its close() waits on. */
type Counted = Server & { _connections: number };

/** Moves `socket` from `from`'s count to `to`'s, as if `to` had taken it: its close is counted there. */
function moveCount(socket: Socket, from: Server, to: Server): void {
  (from as Counted)._connections--;
  (to as Counted)._connections++;
  (socket as Socket & { _server: Server | null })._server = to;
}
