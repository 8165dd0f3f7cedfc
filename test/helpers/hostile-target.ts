/**
 * A hostile target: servers on 127.0.0.1 that answer the checks with what an adversary would send
 * (bodies that make a backtracking reader quadratic, floods of headers, bytes that are not HTTP,
 * endless or trickled bodies, redirects to our own API, a giant certificate). Each is written on
 * the raw socket, so nothing Node would refuse to send is out of reach.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createNetServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer as createTlsServer } from 'node:tls';

export interface HostileTarget {
  url: string;
  port: number;
  /** The request heads it received, in order. */
  requests: string[];
  close(): Promise<void>;
}

/** What a case does with one connection once the request head has arrived. */
export type Answer = (socket: Socket, head: string) => void;

/** A head and a body, as bytes; `Content-Length` is added unless `headers` has framing already. */
export function response(status: string, headers: string[], body: string | Buffer = ''): Buffer {
  const bytes = typeof body === 'string' ? Buffer.from(body, 'latin1') : body;
  const framed = headers.some((h) => /^(content-length|transfer-encoding):/i.test(h));
  const lines = [`HTTP/1.1 ${status}`, ...headers, ...(framed ? [] : [`Content-Length: ${bytes.length}`]), 'Connection: close'];
  return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), bytes]);
}

/** Answers every request with the same bytes, then closes. */
export function always(bytes: Buffer): Answer {
  return (socket) => socket.end(bytes);
}

function serveOn(server: Server, answer: Answer, scheme: 'http' | 'https'): Promise<HostileTarget> {
  const sockets = new Set<Socket>();
  const requests: string[] = [];
  const onSocket = (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    let head = '';
    const onData = (chunk: Buffer) => {
      head += chunk.toString('latin1');
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      socket.off('data', onData);
      requests.push(head.slice(0, end));
      answer(socket, head.slice(0, end));
    };
    socket.on('data', onData);
  };
  server.on(scheme === 'https' ? 'secureConnection' : 'connection', onSocket);
  if (scheme === 'https') server.on('connection', (raw: Socket) => raw.on('error', () => {}));
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      resolve({
        url: `${scheme}://127.0.0.1:${port}/`,
        port,
        requests,
        close: () =>
          new Promise<void>((done) => {
            for (const socket of sockets) socket.destroy();
            server.close(() => done());
          }),
      });
    });
  });
}

export function serveHostile(answer: Answer): Promise<HostileTarget> {
  return serveOn(createNetServer(), answer, 'http');
}

export function serveHostileTls(answer: Answer, tls: { key: string; cert: string }): Promise<HostileTarget> {
  return serveOn(createTlsServer(tls), answer, 'https');
}

/** A body that never ends: chunks of `chunk` every `everyMs`, chunked, until the client goes. */
export function endlessChunked(chunk: string, everyMs: number): Answer {
  return (socket) => {
    socket.write('HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n');
    const timer = setInterval(() => {
      if (socket.destroyed) return clearInterval(timer);
      socket.write(`${Buffer.byteLength(chunk).toString(16)}\r\n${chunk}\r\n`);
    }, everyMs);
    socket.on('close', () => clearInterval(timer));
  };
}

/** A head that arrives a byte at a time, `everyMs` apart, and never ends (slowloris, reversed). */
export function trickle(everyMs: number): Answer {
  return (socket) => {
    const text = `HTTP/1.1 200 OK\r\nX-Slow: ${'s'.repeat(100_000)}`;
    let at = 0;
    const timer = setInterval(() => {
      if (socket.destroyed || at >= text.length) return clearInterval(timer);
      socket.write(text[at++]!);
    }, everyMs);
    socket.on('close', () => clearInterval(timer));
  };
}

/** A declared body of `bytes`, streamed with back-pressure until the client stops reading. */
export function hugeBody(bytes: number): Answer {
  return (socket) => {
    socket.write(`HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: ${bytes}\r\n\r\n`);
    const block = Buffer.alloc(64 * 1024, '<meta ');
    let sent = 0;
    const pump = () => {
      while (sent < bytes && !socket.destroyed) {
        const n = Math.min(block.length, bytes - sent);
        sent += n;
        if (!socket.write(block.subarray(0, n))) return void socket.once('drain', pump);
      }
      socket.end();
    };
    pump();
  };
}

/**
 * A self-signed certificate for 127.0.0.1 carrying `padBytes` of comment extension: a chain the
 * client's TLS library refuses as too big (OpenSSL's limit is 100 KiB) when `padBytes` passes it.
 */
export function bigCertificate(padBytes: number): { key: string; cert: string } {
  const dir = mkdtempSync(join(tmpdir(), 'assessd-bigcert-'));
  try {
    const config = join(dir, 'big.cnf');
    writeFileSync(
      config,
      ['[req]', 'distinguished_name = dn', 'x509_extensions = ext', '[dn]', '[ext]', 'subjectAltName = IP:127.0.0.1', `nsComment = "${'x'.repeat(padBytes)}"`, ''].join('\n'),
    );
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'),
      '-subj', '/CN=127.0.0.1', '-days', '2', '-config', config], { stdio: ['ignore', 'ignore', 'pipe'] });
    return { key: readFileSync(join(dir, 'key.pem'), 'utf8'), cert: readFileSync(join(dir, 'cert.pem'), 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
