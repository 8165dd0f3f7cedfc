/**
 * Upgrades and informational (1xx) answers through the proxy, run in this process with a short
 * target timeout and a recorder that keeps what it is handed: targets that accept and never
 * answer, clients that leave, upgrade requests with a body, declined upgrades with a large body,
 * 1xx answers over http and inside an intercepted CONNECT, and chunked request bodies of any method. Raw TCP (and TLS) targets write
 * what a test gives them; raw sockets are the clients.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as connectTls, createServer as createTlsServer } from 'node:tls';
import { openCa } from '../../src/proxy/ca.ts';
import { startProxy, type ProxyExchange, type ProxyServer, type Recorder } from '../../src/proxy/index.ts';
import { makeCertificates } from '../engine/fixtures/certs.ts';
import { rawExchange } from '../helpers/raw-client.ts';
import { echoWebSockets, readTextFrame, textFrame } from '../helpers/websocket.ts';

/** The proxy's timeout to its targets here: a target that says nothing fails after it. */
const TIMEOUT_MS = 400;

const recorded: ProxyExchange[] = [];
/** Every URL is a target's: each exchange the proxy records is kept here. */
const recorder: Recorder = { targetOf: () => 1, record: (_target, exchange) => void recorded.push(exchange) };

let quick: ProxyServer;
/** The default timeout (60 s): what a test sees of it did not come from the timeout. */
let patient: ProxyServer;
/** What the raw targets answer, by request path (written once the request's head has come). */
const answers = new Map<string, string>();
/** At the end of an answer: the target closes its connection after it. */
const CLOSE = '\0close';
let rawPort: number;
let tlsPort: number;
/** Accepts connections and says nothing; counts the ones open. */
let quietPort: number;
const quietOpen = new Set<Socket>();
/** A node:http server (it ignores Upgrade: h2c) that answers each request with its body. */
let echoPort: number;
/** Echoes WebSocket text frames. */
let wsPort: number;
/** A port nothing listens on. */
let closedPort: number;
const servers: Array<Server | HttpServer> = [];
/** The CA's directory (the test helper's tempDir would load the whole server). */
let caDir: string;

function listen(server: Server | HttpServer): Promise<number> {
  servers.push(server);
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}

/** A target that writes answers[path] once a request's head has come. */
function answering(socket: Socket): void {
  let head = '';
  socket.on('error', () => {});
  socket.on('data', (chunk: Buffer) => {
    head += chunk.toString('latin1');
    if (!head.includes('\r\n\r\n')) return;
    const answer = answers.get(head.split(' ')[1]!) ?? 'HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n';
    head = '';
    // CLOSE at its end: the target closes the connection once it has written the rest
    if (answer.endsWith(CLOSE)) socket.end(Buffer.from(answer.slice(0, -CLOSE.length), 'latin1'));
    else socket.write(Buffer.from(answer, 'latin1'));
  });
}

/** Writes `pieces` to the proxy on a new connection, 100 ms apart: what came back once it closed the connection or `waitMs` passed. */
const exchange = (port: number, pieces: string[], waitMs = 5000) => rawExchange(port, pieces, waitMs);

/** The head of a WebSocket handshake for `path` at `port`, through the proxy (absolute form). */
const handshake = (port: number, path: string) =>
  `GET http://127.0.0.1:${port}${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
  `Sec-WebSocket-Key: ${Buffer.from('0123456789abcdef').toString('base64')}\r\nSec-WebSocket-Version: 13\r\n\r\n`;

/** An h2c upgrade with a body, as `curl --http2 -x PROXY http://target/path -d ...` sends it. */
const h2cPost = (port: number, path: string, framing: string) =>
  `POST http://127.0.0.1:${port}${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n` +
  `HTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\nContent-Type: application/x-www-form-urlencoded\r\n${framing}\r\n`;

/** The exchange recorded for `path` at `port`, once the proxy has handed it over. */
async function recordOf(port: number, path: string): Promise<ProxyExchange> {
  const url = `http://127.0.0.1:${port}${path}`;
  for (const deadline = Date.now() + 5000; Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 20))) {
    const found = recorded.find((x) => x.url === url);
    if (found) return found;
  }
  assert.fail(`nothing recorded for ${url}; recorded: ${recorded.map((x) => x.url).join(', ')}`);
}

/** Waits for `condition`, up to `ms`. */
async function eventually(condition: () => boolean, ms = 5000): Promise<boolean> {
  for (const deadline = Date.now() + ms; Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 20))) {
    if (condition()) return true;
  }
  return condition();
}

before(async () => {
  caDir = await mkdtemp(join(tmpdir(), 'assessd-upgrade-'));
  const ca = await openCa(caDir);
  quick = await startProxy({ host: '127.0.0.1', port: 0, ca: async () => ca, ownPorts: () => [], recorder, upstreamTimeoutMs: TIMEOUT_MS, log: () => {} });
  patient = await startProxy({ host: '127.0.0.1', port: 0, ca: async () => ca, ownPorts: () => [], recorder, log: () => {} });
  rawPort = await listen(createServer(answering));
  tlsPort = await listen(createTlsServer(makeCertificates().selfSigned, answering));
  quietPort = await listen(
    createServer((socket) => {
      quietOpen.add(socket);
      socket.on('error', () => {});
      socket.on('close', () => quietOpen.delete(socket));
      // read (and drop) what comes, so that the client's end is seen
      socket.resume();
    }),
  );
  echoPort = await listen(
    createHttpServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => res.end(`got ${Buffer.concat(chunks).toString()}`));
    }),
  );
  const ws = createHttpServer();
  echoWebSockets(ws);
  wsPort = await listen(ws);
  const closed = createServer();
  closedPort = await listen(closed);
  closed.close();
});

after(async () => {
  await quick?.close();
  await patient?.close();
  for (const socket of quietOpen) socket.destroy();
  for (const server of servers) server.close();
  await rm(caDir, { recursive: true, force: true });
});

describe('an upgrade to a target that never answers', () => {
  test('is a 502 "timeout: ... did not answer in time" after the target timeout, the client\'s connection closed, and recorded with the error', async () => {
    const { text, ended } = await exchange(quick.port, [handshake(quietPort, '/never')], 20 * TIMEOUT_MS);
    assert.ok(ended, `the proxy closes the connection (got ${JSON.stringify(text)})`);
    assert.match(text, /^HTTP\/1\.1 502 Bad Gateway\r\n/);
    assert.match(text, new RegExp(`502 Bad Gateway: timeout: 127\\.0\\.0\\.1:${quietPort} did not answer in time\\n$`));
    const record = await recordOf(quietPort, '/never');
    assert.equal(record.status, 0);
    assert.equal(record.error, `timeout: 127.0.0.1:${quietPort} did not answer in time`);
  });

  for (const leave of ['end', 'destroy'] as const) {
    test(`a client that leaves before the answer (${leave}): the target's connection is closed at once, and the client's`, async () => {
      const client = connect({ port: patient.port, host: '127.0.0.1', allowHalfOpen: true });
      client.on('error', () => {});
      const closed = once(client, 'close');
      const before = new Set(quietOpen);
      client.write(handshake(quietPort, `/left-${leave}`));
      assert.ok(await eventually(() => quietOpen.size > before.size), 'the proxy reached the target');
      const upstream = [...quietOpen].find((socket) => !before.has(socket))!;
      client[leave]();
      assert.ok(await eventually(() => upstream.destroyed || !quietOpen.has(upstream)), 'the target\'s connection is closed (the proxy\'s timeout is 60 s)');
      if (leave === 'end') {
        // the client half-closed its side: the proxy closes the rest
        await Promise.race([closed, new Promise((_, reject) => setTimeout(() => reject(new Error('the client\'s connection is left open')), 5000))]);
      }
      assert.equal((await recordOf(quietPort, `/left-${leave}`)).error, 'the client closed its connection before the answer had ended');
    });
  }

  test('upgrades to a silent target, their clients gone or holding their side open, do not use up the proxy\'s connections', async () => {
    const ca = await openCa(caDir);
    const capped = await startProxy({ host: '127.0.0.1', port: 0, ca: async () => ca, ownPorts: () => [], upstreamTimeoutMs: TIMEOUT_MS, maxConnections: 3, log: () => {} });
    answers.set('/after', 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
    try {
      const clients: Socket[] = [];
      for (let i = 0; i < 6; i++) {
        // half of them leave (half-close), half keep their side open after the 502
        const client = connect({ port: capped.port, host: '127.0.0.1', allowHalfOpen: true });
        client.on('error', () => {});
        client.resume();
        client.write(handshake(quietPort, `/capped-${i}`));
        clients.push(client);
        if (i % 2 === 0) setTimeout(() => client.end(), 50);
      }
      // each connection is released after the timeout at the latest
      await new Promise((resolve) => setTimeout(resolve, 4 * TIMEOUT_MS));
      const { text } = await exchange(capped.port, [`GET http://127.0.0.1:${rawPort}/after HTTP/1.1\r\nHost: 127.0.0.1:${rawPort}\r\nConnection: close\r\n\r\n`]);
      assert.match(text, /^HTTP\/1\.1 200 OK\r\n/, 'a new client is served');
      for (const client of clients) client.destroy();
    } finally {
      await capped.close();
    }
  });

  test('a target that refuses: 502 "refused", recorded with the error', async () => {
    const { text, ended } = await exchange(quick.port, [handshake(closedPort, '/refused')]);
    assert.ok(ended);
    assert.match(text, new RegExp(`^HTTP/1\\.1 502 Bad Gateway\\r\\n[^]*502 Bad Gateway: refused: 127\\.0\\.0\\.1:${closedPort} refused the connection\\n$`));
    assert.equal((await recordOf(closedPort, '/refused')).error, `refused: 127.0.0.1:${closedPort} refused the connection`);
  });
});

describe('a WebSocket', () => {
  test('relayed both ways once switched, a frame sent with the handshake (before the 101) included; the handshake recorded as 101', async () => {
    const client = connect(quick.port, '127.0.0.1');
    let got = Buffer.alloc(0);
    client.on('data', (chunk: Buffer) => (got = Buffer.concat([got, chunk])));
    client.write(Buffer.concat([Buffer.from(handshake(wsPort, '/chat')), textFrame('early', true)]));
    const frame = () => {
      const end = got.indexOf('\r\n\r\n');
      return end < 0 ? undefined : readTextFrame(got.subarray(end + 4));
    };
    assert.ok(await eventually(() => frame() !== undefined), JSON.stringify(got.toString('latin1')));
    assert.match(got.toString('latin1'), /^HTTP\/1\.1 101 Switching Protocols\r\n/);
    assert.equal(frame(), 'echo: early');
    // quiet for longer than the target timeout: still open
    await new Promise((resolve) => setTimeout(resolve, 2 * TIMEOUT_MS));
    got = Buffer.alloc(0);
    client.write(textFrame('later', true));
    assert.ok(await eventually(() => readTextFrame(got) !== undefined));
    assert.equal(readTextFrame(got), 'echo: later');
    client.destroy();
    const record = await recordOf(wsPort, '/chat');
    assert.equal(record.status, 101);
    assert.equal(record.error, undefined);
  });
});

describe('an upgrade request with a body', () => {
  test('POST with Upgrade: h2c and a Content-Length (curl --http2 -d): the body reaches the target, its answer the client, both are recorded', async () => {
    const { text, ended } = await exchange(patient.port, [h2cPost(echoPort, '/h2c-length', 'Content-Length: 5\r\n') + 'sma', 'll']);
    assert.ok(ended, `answered and closed (got ${JSON.stringify(text)})`);
    assert.match(text, /^HTTP\/1\.1 200 OK\r\n/);
    assert.ok(text.endsWith('\r\n\r\ngot small'), JSON.stringify(text));
    const record = await recordOf(echoPort, '/h2c-length');
    assert.equal(record.requestBody.toString(), 'small');
    assert.equal(record.requestSize, 5);
    assert.equal(record.responseBody.toString(), 'got small');
  });

  test('the same with a chunked body, sent in pieces: the target gets it whole', async () => {
    const { text, ended } = await exchange(patient.port, [h2cPost(echoPort, '/h2c-chunked', 'Transfer-Encoding: chunked\r\n') + '3\r\nabc\r\n', '4;ext=1\r\ndefg', '\r\n0\r\nX-Trailer: 1\r\n\r\n']);
    assert.ok(ended, `answered and closed (got ${JSON.stringify(text)})`);
    assert.ok(text.endsWith('\r\n\r\ngot abcdefg'), JSON.stringify(text));
    const record = await recordOf(echoPort, '/h2c-chunked');
    assert.equal(record.requestBody.toString(), 'abcdefg');
    assert.equal(record.requestSize, 7);
  });

  test('a chunked body whose chunk size is not one: 400, and the target\'s connection closed', async () => {
    const before = new Set(quietOpen);
    // the bad chunk is sent once the proxy's connection to the target is open (a busy machine may take a while)
    const client = connect(patient.port, '127.0.0.1');
    let text = '';
    client.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
    client.on('error', () => {});
    const closed = new Promise((resolve) => client.once('close', resolve));
    client.write(h2cPost(quietPort, '/bad-chunks', 'Transfer-Encoding: chunked\r\n'));
    assert.ok(await eventually(() => [...quietOpen].some((socket) => !before.has(socket))), 'the proxy had connected to the target');
    client.write('zz\r\nabc\r\n');
    const ended = await Promise.race([closed.then(() => true), new Promise((resolve) => setTimeout(() => resolve(false), 5000).unref())]);
    client.destroy();
    assert.ok(ended);
    assert.match(text, /^HTTP\/1\.1 400 Bad Request\r\n[^]*the request's chunked body is not valid\n$/);
    assert.ok(await eventually(() => [...quietOpen].every((socket) => before.has(socket))), 'the target\'s connection is closed');
  });
});

describe('a declined upgrade', () => {
  test('a 403 with a 2 MB body: the client gets it whole, and so does the record', async () => {
    const body = 'd'.repeat(2 * 1024 * 1024);
    answers.set('/declined', `HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
    const { text, ended } = await exchange(quick.port, [handshake(rawPort, '/declined')]);
    assert.ok(ended);
    assert.match(text, /^HTTP\/1\.1 403 Forbidden\r\n/);
    assert.equal(text.slice(text.indexOf('\r\n\r\n') + 4).length, body.length, 'the client got the body');
    const record = await recordOf(rawPort, '/declined');
    assert.equal(record.status, 403);
    assert.equal(record.responseSize, body.length);
    assert.equal(record.responseBody.length, body.length);
    assert.equal(record.truncated, false);
  });
});

describe('a declined upgrade whose answer has no length', () => {
  test('goes to the client chunked, its last chunk only once it came whole: cut short, it reads as cut (it was relayed unframed, whole-looking at the close)', async () => {
    answers.set('/declined-chunked', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n');
    answers.set('/declined-chunked-cut', `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n${CLOSE}`);
    const whole = (await exchange(quick.port, [handshake(rawPort, '/declined-chunked')])).text;
    assert.match(whole, /^HTTP\/1\.1 200 OK\r\n[^]*Transfer-Encoding: chunked\r\n/);
    assert.ok(whole.endsWith('\r\n\r\n5\r\nhello\r\n0\r\n\r\n'), JSON.stringify(whole));
    const cut = await exchange(quick.port, [handshake(rawPort, '/declined-chunked-cut')]);
    assert.ok(cut.ended);
    assert.match(cut.text, /Transfer-Encoding: chunked\r\n/);
    assert.ok(cut.text.endsWith('\r\n\r\n5\r\nhello\r\n'), `no last chunk: ${JSON.stringify(cut.text)}`);
    assert.match((await recordOf(rawPort, '/declined-chunked-cut')).error ?? '', /cut short/);
  });
});

describe('informational answers (1xx)', () => {
  const hints = 'HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\nHTTP/1.1 102 Processing\r\n\r\n';
  const final = 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok';

  test('103 and 102 from the target reach the client before the final answer, as they came', async () => {
    answers.set('/hints', hints + final);
    const { text } = await exchange(quick.port, [`GET http://127.0.0.1:${rawPort}/hints HTTP/1.1\r\nHost: 127.0.0.1:${rawPort}\r\nConnection: close\r\n\r\n`]);
    assert.ok(text.startsWith(`${hints}HTTP/1.1 200 OK\r\n`), JSON.stringify(text));
    assert.ok(text.endsWith('\r\n\r\nok'));
    assert.equal((await recordOf(rawPort, '/hints')).status, 200);
  });

  /** A GET of `path` inside an intercepted CONNECT to the TLS target: what came back once it ended. */
  async function throughTunnel(path: string): Promise<string> {
    const raw = connect(quick.port, '127.0.0.1');
    raw.write(`CONNECT localhost:${tlsPort} HTTP/1.1\r\nHost: localhost:${tlsPort}\r\n\r\n`);
    await once(raw, 'data');
    const secure = connectTls({ socket: raw, servername: 'localhost', rejectUnauthorized: false, ALPNProtocols: ['http/1.1'] });
    await once(secure, 'secureConnect');
    let text = '';
    secure.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
    secure.write(`GET ${path} HTTP/1.1\r\nHost: localhost:${tlsPort}\r\nConnection: close\r\n\r\n`);
    await once(secure, 'end');
    secure.destroy();
    return text;
  }

  test('inside an intercepted CONNECT (https) too', async () => {
    answers.set('/hints-tls', hints + final);
    const text = await throughTunnel('/hints-tls');
    assert.ok(text.startsWith(`${hints}HTTP/1.1 200 OK\r\n`), JSON.stringify(text));
  });

  test('inside an intercepted CONNECT (https), an answer with bare LF line ends to a GET is read again leniently on a TLS connection of its own (a self-signed target, as labs have)', async () => {
    answers.set('/bare-lf-tls', 'HTTP/1.1 200 OK\nContent-Length: 5\n\nhello');
    const text = await throughTunnel('/bare-lf-tls');
    assert.match(text, /^HTTP\/1\.1 200 OK\r\n[^]*\r\n\r\nhello$/, JSON.stringify(text));
  });

  test('inside an intercepted CONNECT (https), an answer with a control character in a header\'s value goes to the client as it came, written on the TLS connection itself', async () => {
    answers.set('/control-tls', 'HTTP/1.1 200 OK\r\nX-Odd: a\x01b\r\nContent-Length: 5\r\n\r\nhello');
    const text = await throughTunnel('/control-tls');
    assert.match(text, /^HTTP\/1\.1 200 OK\r\nX-Odd: a\x01b\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello$/, JSON.stringify(text));
  });

  test('an upgrade the target declines with an answer that stops coming: stored as cut short by the proxy\'s time limit, as a plain request\'s', async () => {
    answers.set('/declined-stalls', 'HTTP/1.1 403 Forbidden\r\nContent-Length: 10\r\n\r\npart');
    const { text, ended } = await exchange(quick.port, [handshake(rawPort, '/declined-stalls')]);
    assert.ok(ended);
    assert.match(text, /^HTTP\/1\.1 403 Forbidden\r\n[^]*part$/, JSON.stringify(text));
    assert.equal((await recordOf(rawPort, '/declined-stalls')).error, `the answer was cut short: no byte moved for ${TIMEOUT_MS / 1000} s (the proxy's time limit)`);
  });

  test('a flood of 1xx: 64 KiB of them relayed, the rest dropped, and past 1,000 the request fails as an invalid answer (each was written to the client however far behind it was, without bound)', async () => {
    const processing = `HTTP/1.1 102 Processing\r\nX-Pad: ${'p'.repeat(1000)}\r\n\r\n`;
    answers.set('/flood', processing.repeat(1100) + final);
    answers.set('/flood-ws', processing.repeat(1100));
    const plain = await exchange(quick.port, [`GET http://127.0.0.1:${rawPort}/flood HTTP/1.1\r\nHost: 127.0.0.1:${rawPort}\r\nConnection: close\r\n\r\n`]);
    const upgrade = await exchange(quick.port, [handshake(rawPort, '/flood-ws')]);
    for (const [name, { text }] of [['plain', plain], ['upgrade', upgrade]] as const) {
      const relayed = text.split('HTTP/1.1 102 ').length - 1;
      assert.ok(relayed > 0 && relayed * processing.length <= 64 * 1024, `${name}: ${relayed} relayed`);
      assert.match(text, /HTTP\/1\.1 502 Bad Gateway\r\n[^]*invalid answer: 127\.0\.0\.1:\d+ sent over 1000 informational \(1xx\) answers to one request/, name);
    }
    assert.equal((await recordOf(rawPort, '/flood')).error, `invalid answer: 127.0.0.1:${rawPort} sent over 1000 informational (1xx) answers to one request`);
  });

  test('a flood of 1xx on an upgrade, then a final answer or a 101 (in the same read as the last 1xx): a 502 as on a plain request, not the answer after the flood', async () => {
    const processing = 'HTTP/1.1 102 Processing\r\n\r\n';
    answers.set('/flood-ws-final', processing.repeat(1100) + final);
    answers.set('/flood-ws-101', `${processing.repeat(1100)}HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n`);
    for (const path of ['/flood-ws-final', '/flood-ws-101']) {
      const { text } = await exchange(quick.port, [handshake(rawPort, path)]);
      assert.match(text, /HTTP\/1\.1 502 Bad Gateway\r\n[^]*sent over 1000 informational \(1xx\) answers to one request/, `${path}: ${JSON.stringify(text.slice(-300))}`);
      assert.doesNotMatch(text, /HTTP\/1\.1 (200 OK|101 Switching)/, path);
      assert.equal((await recordOf(rawPort, path)).error, `invalid answer: 127.0.0.1:${rawPort} sent over 1000 informational (1xx) answers to one request`);
    }
  });

  test('100 Continue counts too: endless 100s fail the request as an invalid answer past 1,000', async () => {
    answers.set('/continues', 'HTTP/1.1 100 Continue\r\n\r\n'.repeat(1100) + final);
    const { text } = await exchange(quick.port, [`GET http://127.0.0.1:${rawPort}/continues HTTP/1.1\r\nHost: 127.0.0.1:${rawPort}\r\nConnection: close\r\n\r\n`]);
    assert.match(text, /^HTTP\/1\.1 502 Bad Gateway\r\n[^]*sent over 1000 informational \(1xx\) answers to one request/, JSON.stringify(text.slice(0, 300)));
  });

  test('1xx heads of many tiny lines: past 1 MiB of them the request fails as an invalid answer, before the final answer (a thousand heads of 9,000 lines took 4.6 s of CPU a request, and 20 at once held the server 7-13 s)', async () => {
    const fat = (status: string) => `HTTP/1.1 ${status}\r\n${Array.from({ length: 5000 }, (_, i) => `a:${i}\r\n`).join('')}\r\n`;
    answers.set('/fat-hints', fat('103 Early Hints').repeat(60) + final);
    answers.set('/fat-continues', fat('100 Continue').repeat(60) + final);
    answers.set('/fat-hints-ws', fat('103 Early Hints').repeat(60));
    const error = `invalid answer: 127.0.0.1:${rawPort} sent over 1 MiB of informational (1xx) answers to one request`;
    for (const path of ['/fat-hints', '/fat-continues']) {
      const { text } = await exchange(quick.port, [`GET http://127.0.0.1:${rawPort}${path} HTTP/1.1\r\nHost: 127.0.0.1:${rawPort}\r\nConnection: close\r\n\r\n`]);
      assert.ok(/HTTP\/1\.1 502 Bad Gateway\r\n[^]*sent over 1 MiB of informational \(1xx\) answers to one request/.test(text), `${path}: ${JSON.stringify(text.slice(-300))}`);
      assert.ok(!text.includes('HTTP/1.1 200 OK'), `${path}: the final answer relayed`);
      // 64 KiB of them relayed at most: one such head
      assert.ok(text.split('HTTP/1.1 103 ').length - 1 <= 1, `${path}: more than 64 KiB of 1xx relayed`);
      assert.equal((await recordOf(rawPort, path)).error, error);
    }
    const upgrade = await exchange(quick.port, [handshake(rawPort, '/fat-hints-ws')]);
    assert.ok(/HTTP\/1\.1 502 Bad Gateway\r\n[^]*sent over 1 MiB of informational/.test(upgrade.text), JSON.stringify(upgrade.text.slice(-300)));
  });

  test('a 1xx before an upgrade\'s answer is not relayed to an HTTP/1.0 client either', async () => {
    answers.set('/hints-ws-old', `${hints}HTTP/1.1 403 Forbidden\r\nContent-Length: 2\r\n\r\nno`);
    const { text } = await exchange(quick.port, [handshake(rawPort, '/hints-ws-old').replace(' HTTP/1.1\r\n', ' HTTP/1.0\r\n')]);
    assert.match(text, /^HTTP\/1\.1 403 Forbidden\r\n/, JSON.stringify(text));
  });

  test('a 100 Continue from the target is not relayed (the proxy answered the client\'s Expect itself), nor is any 1xx to an HTTP/1.0 client', async () => {
    answers.set('/continue', `HTTP/1.1 100 Continue\r\n\r\n${final}`);
    const continued = await exchange(quick.port, [`GET http://127.0.0.1:${rawPort}/continue HTTP/1.1\r\nHost: 127.0.0.1:${rawPort}\r\nConnection: close\r\n\r\n`]);
    assert.match(continued.text, /^HTTP\/1\.1 200 OK\r\n/);
    answers.set('/hints-old', hints + final);
    const old = await exchange(quick.port, [`GET http://127.0.0.1:${rawPort}/hints-old HTTP/1.0\r\nHost: 127.0.0.1:${rawPort}\r\n\r\n`]);
    assert.match(old.text, /^HTTP\/1\.1 200 OK\r\n/);
  });

  test('a 103 before an upgrade\'s 101 reaches the client before it', async () => {
    answers.set('/hints-upgrade', `${hints}HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n`);
    const { text } = await exchange(quick.port, [handshake(rawPort, '/hints-upgrade')], 1000);
    assert.ok(text.startsWith(`${hints}HTTP/1.1 101 Switching Protocols\r\n`), JSON.stringify(text));
  });
});

describe('a request body in chunks, whatever the method', () => {
  for (const method of ['GET', 'DELETE', 'POST']) {
    test(`${method} with a chunked body: the target gets it chunked, answers it, and the record holds it (a GET's went unframed: the target took it for the next request)`, async () => {
      const path = `/chunked-${method.toLowerCase()}`;
      const { text } = await exchange(quick.port, [
        `${method} http://127.0.0.1:${echoPort}${path} HTTP/1.1\r\nHost: 127.0.0.1:${echoPort}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n`,
        '6\r\n world\r\n0\r\n\r\n',
      ]);
      assert.match(text, /^HTTP\/1\.1 200 OK\r\n/, text);
      assert.equal(text.match(/HTTP\/1\.1 /g)?.length, 1, `one answer: ${JSON.stringify(text)}`);
      assert.match(text, /got hello world/);
      const x = await recordOf(echoPort, path);
      assert.equal(x.requestBody.toString(), 'hello world');
      assert.ok(x.requestHeaders.some(([name, value]) => name.toLowerCase() === 'transfer-encoding' && value === 'chunked'), 'the record says how it was sent');
    });
  }
});

describe('framing', () => {
  test('an answer in a transfer coding but chunked (gzip, chunked) is a 502 saying so, not gzip bytes passed off as the body', async () => {
    answers.set('/te-gzip', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n');
    const { text } = await exchange(quick.port, [`GET http://127.0.0.1:${rawPort}/te-gzip HTTP/1.1\r\nHost: 127.0.0.1:${rawPort}\r\nConnection: close\r\n\r\n`]);
    assert.match(text, /^HTTP\/1\.1 502 Bad Gateway\r\n[^]*invalid answer: 127\.0\.0\.1:\d+ sent a transfer coding the proxy does not relay \("gzip, chunked"\)/, JSON.stringify(text));
  });

  test('Connection naming Content-Length does not take the framing away: a GET\'s body reaches the target as its body, never as the next request on the pooled connection', async () => {
    const smuggled = 'GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n';
    const { text } = await exchange(quick.port, [
      `GET http://127.0.0.1:${echoPort}/a HTTP/1.1\r\nHost: 127.0.0.1:${echoPort}\r\nConnection: content-length\r\nContent-Length: ${smuggled.length}\r\n\r\n${smuggled}` +
        `GET http://127.0.0.1:${echoPort}/b HTTP/1.1\r\nHost: 127.0.0.1:${echoPort}\r\nConnection: close\r\n\r\n`,
    ]);
    const answers = text.split(/(?=HTTP\/1\.1 )/);
    assert.equal(answers.length, 2, JSON.stringify(text));
    assert.ok(answers[0]!.endsWith(`got ${smuggled}`), JSON.stringify(answers[0]));
    assert.ok(answers[1]!.startsWith('HTTP/1.1 200 OK') && answers[1]!.endsWith('got '), JSON.stringify(answers[1]));
  });
});
