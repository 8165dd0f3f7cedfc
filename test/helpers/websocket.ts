/**
 * The least of RFC 6455 a test needs: a server that echoes text frames, and a client that sends
 * one and reads the echo, over any socket (a proxy's tunnel included). Node 20 has neither.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
export const acceptFor = (key: string) => createHash('sha1').update(key + GUID).digest('base64');

/** A text frame; masked from a client, as the protocol requires. */
export function textFrame(text: string, masked: boolean): Buffer {
  const payload = Buffer.from(text);
  const length = payload.length < 126 ? Buffer.from([payload.length | (masked ? 0x80 : 0)]) : Buffer.from([126 | (masked ? 0x80 : 0), payload.length >> 8, payload.length & 0xff]);
  if (!masked) return Buffer.concat([Buffer.from([0x81]), length, payload]);
  const mask = randomBytes(4);
  const body = Buffer.from(payload.map((byte, i) => byte ^ mask[i % 4]!));
  return Buffer.concat([Buffer.from([0x81]), length, mask, body]);
}

/** The text of the first whole frame in `bytes`, or undefined when it has not all arrived. */
export function readTextFrame(bytes: Buffer): string | undefined {
  if (bytes.length < 2) return undefined;
  const masked = (bytes[1]! & 0x80) !== 0;
  let length = bytes[1]! & 0x7f;
  let at = 2;
  if (length === 126) {
    if (bytes.length < 4) return undefined;
    length = bytes.readUInt16BE(2);
    at = 4;
  }
  const mask = masked ? bytes.subarray(at, at + 4) : undefined;
  if (mask) at += 4;
  if (bytes.length < at + length) return undefined;
  const payload = Buffer.from(bytes.subarray(at, at + length));
  if (mask) for (let i = 0; i < payload.length; i++) payload[i]! ^= mask[i % 4]!;
  return payload.toString();
}

/** Makes `server` answer WebSocket upgrades by echoing each text frame, prefixed `echo: `. */
export function echoWebSockets(server: Server): void {
  server.on('upgrade', (req: IncomingMessage, socket: Duplex) => {
    socket.write(
      `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${acceptFor(String(req.headers['sec-websocket-key']))}\r\n\r\n`,
    );
    let buffered = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      const text = readTextFrame(buffered);
      if (text === undefined) return;
      buffered = Buffer.alloc(0);
      socket.write(textFrame(`echo: ${text}`, false));
    });
    socket.on('error', () => socket.destroy());
  });
}
