/**
 * Lingering close: an answer sent before the client has sent its whole request (a body over the
 * limit, a request line the parser refuses) is always read by the client. The server answers,
 * then reads and drops what the client still sends (bounded) before it closes: closing with unread
 * data would send a reset, which can reach the client before the answer does.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { LINGER } from '../../src/http/linger.ts';
import { exposedGc } from '../helpers/gc.ts';
import { spawnServer, startServer, tempDir, type ChildServer } from '../helpers/server.ts';

const MiB = 1024 * 1024;
let server: ChildServer;
let port: number;

before(async () => {
  server = await spawnServer(['--port', '0', '--data-dir', await tempDir(), '--max-import-body', String(64 * MiB)]);
  port = Number(new URL(server.url).port);
});
after(async () => {
  server?.proc.kill('SIGTERM');
  await server?.exited;
});

/** POSTs `size` bytes to the bundle import, as fast as the server takes them: the status read, or the error met. */
function postBundle(size: number): Promise<{ status?: number; body?: string; error?: string }> {
  const chunk = Buffer.alloc(MiB, 0x20);
  return new Promise((resolve) => {
    const req = httpRequest(
      { host: '127.0.0.1', port, method: 'POST', path: '/api/v1/bundles/', agent: false, headers: { authorization: `Bearer ${server.token}`, 'content-type': 'application/json', 'content-length': size } },
      (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode, body }));
        res.on('error', (e: NodeJS.ErrnoException) => resolve({ status: res.statusCode, error: e.code }));
      },
    );
    req.on('error', (e: NodeJS.ErrnoException) => resolve({ error: e.code ?? e.message }));
    let sent = 0;
    const pump = (): void => {
      while (sent < size) {
        const part = chunk.subarray(0, Math.min(chunk.length, size - sent));
        sent += part.length;
        if (!req.write(part)) return void req.once('drain', pump);
      }
      req.end();
    };
    pump();
  });
}

test('a 70 MiB body against a 64 MiB --max-import-body: 50 times in a row, always a 413 the client reads, never a reset', async () => {
  const seen = new Map<string, number>();
  for (let i = 0; i < 50; i++) {
    const r = await postBundle(70 * MiB);
    const key = r.error ? `error ${r.error}` : `${r.status} ${JSON.parse(r.body!).message}`;
    seen.set(key, (seen.get(key) ?? 0) + 1);
  }
  assert.deepEqual(Object.fromEntries(seen), { '413 Request body too large': 50 });
});

test('a request line the parser refuses, followed by 8 MiB: always the 400 answer read, then the server closes', async () => {
  for (let i = 0; i < 10; i++) {
    const answer = await new Promise<{ data: string; error?: string }>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      let data = '';
      socket.on('data', (c: Buffer) => (data += c.toString('latin1')));
      socket.on('error', (e: NodeJS.ErrnoException) => resolve({ data, error: e.code }));
      socket.on('close', () => resolve({ data }));
      socket.write('GET /\x01 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
      const mib = Buffer.alloc(MiB, 0x62);
      let sent = 0;
      const pump = (): void => {
        while (sent < 8) {
          sent++;
          if (!socket.write(mib)) return void socket.once('drain', pump);
        }
        socket.end();
      };
      pump();
    });
    assert.equal(answer.error, undefined, `attempt ${i}: ${answer.error}`);
    assert.match(answer.data, /^HTTP\/1\.1 400 Bad Request\r\n/, `attempt ${i}`);
    assert.match(answer.data, /\r\nConnection: close\r\n/i);
    assert.ok(answer.data.endsWith('{"status":"fail","message":"Bad request","code":400}'), answer.data);
  }
});

test('a client that declares a body over the limit and never sends it gets the 413 at once, and the server closes the connection (its linger is bounded)', async () => {
  const data = await new Promise<string>((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let out = '';
    socket.on('data', (c: Buffer) => (out += c.toString('latin1')));
    socket.on('close', () => resolve(out));
    socket.on('error', reject);
    socket.write(`POST /api/v1/bundles/ HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${server.token}\r\nContent-Type: application/json\r\nContent-Length: ${100 * MiB}\r\n\r\n`);
  });
  // the client never closes: the linger's idle limit did
  assert.match(data, /^HTTP\/1\.1 413 /);
});

test('a client that half-closes its connection once its request is sent gets its answer: the session it created is said (node ended the connection at the FIN, the answer lost)', async () => {
  const body = 'name=half-closed';
  const socket = connect(port, '127.0.0.1');
  socket.end(
    `POST /api/v1/sessions/ HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${server.token}\r\n` +
      `Content-Type: application/x-www-form-urlencoded\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
  );
  const answer = await new Promise<string>((resolve) => {
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk)).on('error', () => {}).on('close', () => resolve(Buffer.concat(chunks).toString()));
  });
  assert.match(answer, /^HTTP\/1\.1 201 /);
  assert.equal(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)).status, 'success');
});

/** What the server writes to a raw request, within `waitMs` (the connection left open: the client sends no body). */
function rawAnswer(head: string, waitMs = 1500): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
    socket.on('error', () => {});
    socket.write(head);
    setTimeout(() => {
      socket.destroy();
      resolve(text);
    }, waitMs);
  });
}

test('Expect: 100-continue with a declared length over the limit: the 413 comes without a 100 before it (the upload is never invited); a body within it gets its 100, then the answer', async () => {
  const head = (length: number) =>
    `POST /api/v1/sessions/ HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${server.token}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${length}\r\nExpect: 100-continue\r\n\r\n`;
  const refused = await rawAnswer(head(5 * MiB));
  assert.match(refused, /^HTTP\/1\.1 413 Payload Too Large\r\n[^]*"Request body too large"/, refused);
  assert.doesNotMatch(refused, /100 Continue/);
  // within the limit: invited, then read
  const name = `continued ${Date.now()}`;
  const body = `name=${encodeURIComponent(name)}`;
  const socket = connect(port, '127.0.0.1');
  let text = '';
  socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
  socket.write(head(Buffer.byteLength(body)));
  for (const deadline = Date.now() + 5000; !text.includes('100 Continue') && Date.now() < deadline; ) await new Promise((resolve) => setTimeout(resolve, 10));
  assert.match(text, /^HTTP\/1\.1 100 Continue\r\n\r\n$/, text);
  socket.write(body);
  for (const deadline = Date.now() + 5000; !/\r\n\r\n[^]*\}$/.test(text.slice(25)) && Date.now() < deadline; ) await new Promise((resolve) => setTimeout(resolve, 10));
  socket.destroy();
  assert.match(text, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 201 Created\r\n/, text);
  // refused for its token, which needs no body: no 100 either
  const unauthorized = await rawAnswer(head(10).replace(/Authorization: [^\r]*\r\n/, ''));
  assert.match(unauthorized, /^HTTP\/1\.1 401 Unauthorized\r\n/, unauthorized);
});

test('a refused request whose body never came is let go once its connection closes: nothing of it is kept for the request time limit (30 s by default)', async () => {
  const gc = exposedGc();
  const inProcess = await startServer({ maxBody: 1024 });
  try {
    const requests: WeakRef<object>[] = [];
    inProcess.server.on('request', (req: object) => requests.push(new WeakRef(req)));
    for (let i = 0; i < 3; i++) {
      const answer = await new Promise<string>((resolve, reject) => {
        const socket = connect(inProcess.port, '127.0.0.1');
        let out = '';
        socket.on('data', (c: Buffer) => (out += c.toString('latin1')));
        socket.on('close', () => resolve(out));
        socket.on('error', reject);
        // a body declared over the limit, a part of it sent, then the connection closed
        socket.write(`POST /api/v1/sessions/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${MiB}\r\n\r\nname=`);
        socket.once('data', () => setImmediate(() => socket.destroy()));
      });
      assert.match(answer, /^HTTP\/1\.1 413 /);
    }
    assert.equal(requests.length, 3);
    // the server's side of each connection closes too
    const open = () => new Promise<number>((resolve, reject) => inProcess.server.getConnections((err, n) => (err ? reject(err) : resolve(n))));
    for (let tries = 0; tries < 100 && (await open()) > 0; tries++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(await open(), 0);
    await new Promise((r) => setImmediate(r));
    gc();
    assert.deepEqual(requests.map((r) => r.deref() === undefined), [true, true, true], 'a request kept after its connection closed');
  } finally {
    await inProcess.close();
  }
});

test('a client that reads the 413 and closes its side is let go at once, not at the linger\'s limits (it sends nothing more)', { timeout: 15_000 }, async () => {
  const saved = { ...LINGER };
  // limits a test would time out on: only the client's FIN can end the linger in time
  Object.assign(LINGER, { maxMs: 60_000, idleMs: 60_000 });
  const inProcess = await startServer({ maxBody: 1024 });
  try {
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(inProcess.port, '127.0.0.1');
      let out = '';
      socket.on('data', (c: Buffer) => {
        out += c.toString('latin1');
        socket.end();
      });
      socket.on('close', () => resolve(out));
      socket.on('error', reject);
      socket.write(`POST /api/v1/sessions/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${MiB}\r\n\r\nname=`);
    });
    assert.match(answer, /^HTTP\/1\.1 413 /);
    assert.ok(answer.endsWith('"message":"Request body too large","code":413}'), answer);
  } finally {
    Object.assign(LINGER, saved);
    await inProcess.close();
  }
});
