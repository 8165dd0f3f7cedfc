/**
 * A server's stop, for its connections: no new one; each answer from then on closes its
 * connection (a page asking every 1.5 s on a kept one had it carry request after request, and the
 * server never ended), a connection goes as soon as it is idle, and what is still in flight after
 * `drainMs` is cut (a client sending a byte a second held the stop for the request timeout's 30 s).
 * Resolves once every connection has ended.
 */
import type { Server } from 'node:http';

export function drain(server: Server, drainMs: number): Promise<void> {
  server.prependListener('request', (_req, res) => {
    res.shouldKeepAlive = false;
  });
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  const cut = setTimeout(() => server.closeAllConnections(), drainMs);
  // a connection whose request was in flight goes once its answer is out, not after keepAliveTimeout
  const idle = setInterval(() => server.closeIdleConnections(), 100);
  return closed.finally(() => {
    clearTimeout(cut);
    clearInterval(idle);
  });
}
