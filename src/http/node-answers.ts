/**
 * Requests node's server answers by itself unless told otherwise, before any handler sees them:
 * each goes through the server's own checks instead, so that it gets the Host check, the token and
 * a JSON answer like every other request.
 */
import { ServerResponse, type IncomingMessage, type Server } from 'node:http';
import type { Socket } from 'node:net';

/**
 * An `Expect` other than `100-continue`: node answers a bare 417 of its own, before the Host check
 * and without a body. The expectation is ignored instead (RFC 9110 10.1.1: a server MAY answer
 * 417, it need not) and the request answered as any other.
 */
export function ignoreUnknownExpectations(server: Server): void {
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => server.emit('request', req, res));
}

/**
 * `CONNECT`: node hands the socket to a `connect` listener, and closes it without a word when
 * there is none. It is answered as any request (no route takes CONNECT), then the connection closes.
 */
export function answerConnect(server: Server): void {
  server.on('connect', (req: IncomingMessage, socket: Socket) => {
    socket.on('error', () => socket.destroy());
    const res = new ServerResponse(req);
    res.shouldKeepAlive = false;
    res.assignSocket(socket);
    res.on('finish', () => {
      res.detachSocket(socket);
      socket.destroySoon();
    });
    server.emit('request', req, res);
  });
}
