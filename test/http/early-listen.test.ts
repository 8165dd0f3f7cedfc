import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer as createHttpServer, request, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { listenEarly, type EarlyListener } from '../../src/http/early-listen.ts';
import { freePort } from '../helpers/server.ts';

const HOST = '127.0.0.1';

/**
 * A connection that is open (the kernel accepted it), `bytes` sent on it: what came back so far
 * (`text()`), and all of it once the other side ends (`answer`, or the error it ends with).
 */
async function sending(port: number, bytes: string): Promise<{ socket: Socket; text: () => string; answer: Promise<string> }> {
  const socket = connect(port, HOST);
  await once(socket, 'connect');
  socket.write(bytes);
  let text = '';
  socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
  const answer = new Promise<string>((resolve, reject) => {
    socket.once('end', () => resolve(text));
    socket.once('error', reject);
  });
  return { socket, text: () => text, answer };
}

/** `path` asked for on a connection of its own, closed after the answer. */
function asking(port: number, path: string): ReturnType<typeof sending> {
  return sending(port, `GET ${path} HTTP/1.1\r\nHost: ${HOST}\r\nConnection: close\r\n\r\n`);
}

function echoServer(answered: string[] = []): Server {
  return createHttpServer((req, res) => {
    answered.push(req.url!);
    res.end(`answered ${req.url}`);
  });
}

/** Runs `body` with `server` (an echo server by default) given the early port, and closes it after, its connections too. */
async function whileAdopted(early: EarlyListener, body: (server: Server) => Promise<void>, server: Server = echoServer()): Promise<void> {
  await early.adopt(server);
  try {
    await body(server);
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}

const settle = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test('connections made before the server takes the port wait, unread, and are answered by it, in their order', { timeout: 10_000 }, async () => {
  const port = await freePort();
  const early = listenEarly(port, HOST);
  const first = await asking(port, '/first');
  const second = await asking(port, '/second');
  let answeredEarly = false;
  void first.answer.then(() => (answeredEarly = true));
  await settle(50);
  assert.equal(answeredEarly, false, 'nothing is answered before the server takes the port');
  const answered: string[] = [];
  await whileAdopted(early, async (server) => {
    assert.match(await first.answer, /^HTTP\/1\.1 200 [\s\S]*answered \/first$/);
    assert.match(await second.answer, /answered \/second$/);
    assert.deepEqual(answered, ['/first', '/second']);
    // the same port, now the server's own: later connections go to it too
    assert.equal((server.address() as AddressInfo).port, port);
    const later = await asking(port, '/later');
    assert.match(await later.answer, /answered \/later$/);
    await early.close(); // nothing once adopted: the port stays the server's
    assert.match(await (await asking(port, '/still')).answer, /answered \/still$/);
  }, echoServer(answered));
  // closing the server closed the port
  await assert.rejects(once(connect(port, HOST), 'connect'), { code: 'ECONNREFUSED' });
});

test('a connection the client closes while it waits is left out; the others are answered', { timeout: 10_000 }, async () => {
  const port = await freePort();
  const early = listenEarly(port, HOST);
  const gone = connect(port, HOST);
  await once(gone, 'connect');
  gone.destroy();
  const kept = await asking(port, '/kept');
  await settle(20);
  const answered: string[] = [];
  await whileAdopted(early, async () => {
    assert.match(await kept.answer, /answered \/kept$/);
    assert.deepEqual(answered, ['/kept']);
  }, echoServer(answered));
});

test('close() (a start that failed) ends the waiting connections and frees the port; adopt() is refused after it', { timeout: 10_000 }, async () => {
  const port = await freePort();
  const early = listenEarly(port, HOST);
  const waiting = await asking(port, '/waiting');
  await settle(20);
  await early.close();
  // ended without an answer: not left hanging
  const ended = await waiting.answer.then((text) => `end: ${text}`, (err: NodeJS.ErrnoException) => err.code);
  assert.ok(ended === 'end: ' || ended === 'ECONNRESET', ended);
  await assert.rejects(once(connect(port, HOST), 'connect'), { code: 'ECONNREFUSED' });
  await assert.rejects(early.adopt(echoServer()), /closed already/);
  // the port is free for whoever comes next
  await whileAdopted(listenEarly(port, HOST), async () => {});
});

test('close() right after listenEarly(), before the bind is done, still frees the port', { timeout: 10_000 }, async () => {
  const port = await freePort();
  await listenEarly(port, HOST).close();
  await whileAdopted(listenEarly(port, HOST), async (server) => {
    assert.equal((server.address() as AddressInfo).port, port);
  });
});

test("a port that cannot be bound: adopt() rejects with the bind's own error, close() is quiet", { timeout: 10_000 }, async () => {
  const holder = echoServer().listen(0, HOST);
  await once(holder, 'listening');
  const { port } = holder.address() as AddressInfo;
  try {
    const early = listenEarly(port, HOST);
    await settle(10);
    await assert.rejects(early.adopt(echoServer()), { code: 'EADDRINUSE' });
    await early.close();
    const other = listenEarly(port, HOST);
    await other.close();
  } finally {
    holder.close();
  }
});

test('past maxWaiting connections, one more is closed at once; those that wait are answered', { timeout: 10_000 }, async () => {
  const port = await freePort();
  const early = listenEarly(port, HOST, 2);
  const kept = [await asking(port, '/a'), await asking(port, '/b')];
  const extra = await asking(port, '/c');
  const ended = await extra.answer.then((text) => `end: ${text}`, (err: NodeJS.ErrnoException) => err.code);
  assert.ok(ended === 'end: ' || ended === 'ECONNRESET', ended);
  const answered: string[] = [];
  await whileAdopted(early, async () => {
    for (const { answer } of kept) assert.match(await answer, /^HTTP\/1\.1 200 /);
    assert.deepEqual(answered, ['/a', '/b']);
  }, echoServer(answered));
});

test('a request line sent before the server takes the port is parsed by it: a bad one gets its 400', { timeout: 10_000 }, async () => {
  const port = await freePort();
  const early = listenEarly(port, HOST);
  const bad = await sending(port, 'NOT A REQUEST\r\n\r\n');
  await whileAdopted(early, async () => {
    await once(bad.socket, 'close');
    assert.match(bad.text(), /^HTTP\/1\.1 400 /);
  });
});

// request() from node:http, as a client library would: it connects, sends, and waits
test('a client library request sent while the port waits resolves once the server has it', { timeout: 10_000 }, async () => {
  const port = await freePort();
  const early = listenEarly(port, HOST);
  const response = new Promise<number>((resolve, reject) => {
    const req = request({ host: HOST, port, path: '/lib', agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode!);
    });
    req.on('error', reject);
    req.end();
  });
  await settle(30);
  await whileAdopted(early, async () => {
    assert.equal(await response, 200);
  });
});

test("a connection that waited is the server's own: node's headers timeout ends a slow one, and close() closes an idle one", { timeout: 15_000 }, async () => {
  const port = await freePort();
  const early = listenEarly(port, HOST);
  // a head that never ends
  const slow = await sending(port, `GET /slow HTTP/1.1\r\nHost: ${HOST}\r\n`);
  // a kept-alive connection: answered, then idle
  const idle = await sending(port, `GET /idle HTTP/1.1\r\nHost: ${HOST}\r\n\r\n`);
  const server = createHttpServer({ headersTimeout: 1000, requestTimeout: 0, connectionsCheckingInterval: 200 }, (req, res) => res.end(`answered ${req.url}`));
  await early.adopt(server);
  await once(slow.socket, 'close');
  assert.match(slow.text(), /^HTTP\/1\.1 408 /);
  for (const deadline = Date.now() + 5000; !idle.text().includes('answered /idle') && Date.now() < deadline; ) await settle(10);
  assert.match(idle.text(), /answered \/idle$/);
  const closed = new Promise((resolve) => server.close(resolve));
  await once(idle.socket, 'close');
  await closed;
});
