/** A client that speaks raw bytes to a server on 127.0.0.1 (a proxy, a target) and keeps what came back. */
import { connect, type Socket } from 'node:net';

export interface RawExchange {
  /** What came back, one character per byte. */
  text: string;
  /** The server closed the connection (before `waitMs`). */
  ended: boolean;
}

/**
 * Writes `pieces` (one byte per character) on a new connection to `port`, `gapMs` apart, and
 * resolves with what came back once the server closed the connection or `waitMs` passed.
 */
export function rawExchange(port: number, pieces: string | string[], waitMs = 3000, gapMs = 100): Promise<RawExchange> {
  return new Promise((resolve) => {
    const socket: Socket = connect(port, '127.0.0.1');
    let text = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ text, ended: false });
    }, waitMs);
    socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ text, ended: true });
    });
    socket.on('error', () => {});
    void (async () => {
      for (const [i, piece] of (typeof pieces === 'string' ? [pieces] : pieces).entries()) {
        if (i > 0) await new Promise((wait) => setTimeout(wait, gapMs));
        if (socket.destroyed) return;
        socket.write(Buffer.from(piece, 'latin1'));
      }
    })();
  });
}
