// Inside an intercepted CONNECT, held to what the proxy promises outside one: a host the URL parser
// refuses is a 400 (it crashed the process), a silent target is the target's 502 (not the
// client's leaving), headers sent a byte at a time get 408, every connection to a target whose
// certificate names another host says so (a resumed TLS session skipped the check), and plain
// HTTP in a CONNECT (how a browser sends a ws:// WebSocket through a proxy) is read and recorded.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { connect as connectTls, type TLSSocket } from 'node:tls';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openCa } from '../../src/proxy/ca.ts';
import { startProxy, type ProxyServer } from '../../src/proxy/index.ts';
import { makeCertificates } from '../engine/fixtures/certs.ts';
import { rawExchange } from '../helpers/raw-client.ts';
import { request, spawnServer, tempDir } from '../helpers/server.ts';
import { echoWebSockets, readTextFrame, textFrame } from '../helpers/websocket.ts';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import type { ProxyExchange } from '../../src/proxy/record.ts';

const certificates = makeCertificates();
let proxy: ProxyServer;
let target: HttpsServer;
let targetPort: number;
/** A plain target: WebSockets echoed, any other request answered `plain`. */
let plainTarget: HttpServer;
let plainPort: number;
/** What the proxy handed its recorder, every exchange of the two targets'. */
const recorded: ProxyExchange[] = [];

before(async () => {
  const ca = await openCa(await tempDir());
  // /big: 100,000 bytes with their length, streamed a piece at a time; else `plain`
  plainTarget = createHttpServer((req, res) => {
    if (req.url !== '/big') return void res.end('plain');
    res.writeHead(200, { 'Content-Length': 100_000 });
    let left = 100_000;
    const more = () => {
      const piece = Math.min(10_000, left);
      left -= piece;
      if (left === 0) return void res.end('a'.repeat(piece));
      res.write('a'.repeat(piece));
      setTimeout(more, 5);
    };
    more();
  });
  echoWebSockets(plainTarget);
  await new Promise<void>((resolve) => plainTarget.listen(0, '127.0.0.1', resolve));
  plainPort = (plainTarget.address() as AddressInfo).port;
  const recorder = { targetOf: (url: URL) => (url.port === String(plainPort) || url.port === String(targetPort) ? 1 : undefined), record: (_target: number, exchange: ProxyExchange) => void recorded.push(exchange) };
  proxy = await startProxy({ host: '127.0.0.1', port: 0, ca: async () => ca, ownPorts: () => [], upstreamTimeoutMs: 1500, headersTimeoutMs: 600, recorder, log: () => {} });
  // /silent: never answered; /slow: answered after 1 s (past the headers' time, within the target's); else at once
  target = createHttpsServer(certificates.selfSigned, (req, res) => {
    if (req.url === '/silent') return;
    // no length: the answer ends with the connection, which is gone when the exchange is recorded
    if (req.url?.startsWith('/names-close')) return void res.writeHead(200, { Connection: 'close' }).end(res.write('closing') && '');
    if (req.url?.includes('/raw-head')) return void res.end(JSON.stringify({ url: req.url, rawHeaders: req.rawHeaders }));
    if (req.url?.startsWith('/names')) return void res.end(`Host: ${req.headers.host}; server name: ${(req.socket as TLSSocket).servername || '(none)'}`);
    const answer = () => res.end('ok');
    if (req.url === '/slow') setTimeout(answer, 1000);
    else answer();
  });
  await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
  targetPort = (target.address() as AddressInfo).port;
});

after(async () => {
  await proxy.close();
  plainTarget.closeAllConnections();
  plainTarget.close();
  target.closeAllConnections();
  target.close();
});

/** What the proxy answers `bytes` with, once it closed the connection or `waitMs` passed. */
const raw = (bytes: string, waitMs = 3000) => rawExchange(proxy.port, bytes, waitMs);

/** What `pick` finds among the recorded exchanges, once it finds something (the proxy records after the answer); fails after 2 s. */
async function recordedOnce<T>(pick: (all: ProxyExchange[]) => T | undefined): Promise<T> {
  for (const deadline = Date.now() + 2000; ; await new Promise((resolve) => setTimeout(resolve, 20))) {
    const found = pick(recorded);
    if (found !== undefined) return found;
    if (Date.now() > deadline) assert.fail(`not recorded; recorded: ${recorded.map((x) => x.url).join(', ')}`);
  }
}

/** A TLS connection through a CONNECT to the target, read by the proxy. */
function intercepted(authority = `localhost:${targetPort}`, servername = 'localhost'): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const socket = connect(proxy.port, '127.0.0.1');
    socket.once('error', reject);
    socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`);
    socket.once('data', (chunk: Buffer) => {
      if (!chunk.toString('latin1').startsWith('HTTP/1.1 200')) return reject(new Error(chunk.toString('latin1')));
      const secure = connectTls({ socket, servername, rejectUnauthorized: false, ALPNProtocols: ['http/1.1'] });
      secure.once('secureConnect', () => resolve(secure)).once('error', reject);
    });
  });
}

/** What came on `tls` until it closed or `waitMs` passed, after `bytes` were written (one at a time, `gapMs` apart, with a gap). */
async function readAll(tls: TLSSocket, bytes: string, waitMs: number, gapMs = 0): Promise<{ text: string; ended: boolean }> {
  let text = '';
  let ended = false;
  tls.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
  tls.on('error', () => {});
  tls.once('close', () => (ended = true));
  if (gapMs === 0) tls.write(bytes);
  else {
    for (const byte of bytes) {
      if (ended) break;
      tls.write(byte);
      await new Promise((resolve) => setTimeout(resolve, gapMs));
    }
  }
  for (const deadline = Date.now() + waitMs; !ended && Date.now() < deadline; ) await new Promise((resolve) => setTimeout(resolve, 20));
  tls.destroy();
  return { text, ended };
}

describe('a request inside an intercepted CONNECT goes as the client wrote it', () => {
  const answered = async (request: string) => {
    const { text } = await readAll(await intercepted(), request, 3000);
    assert.match(text, /^HTTP\/1\.1 200 OK\r\n/, JSON.stringify(text.slice(0, 300)));
    return JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) as { url: string; rawHeaders: string[] };
  };

  test('its Host lines, two of them, one in lower case after another header (a Host header test): each in its place and case (the second was dropped, the first moved up)', async () => {
    const got = await answered(`GET /raw-head HTTP/1.1\r\nX-A: 1\r\nHost: localhost:${targetPort}\r\nX-B: 2\r\nhost: evil.example\r\nConnection: close\r\n\r\n`);
    const names = got.rawHeaders.filter((_, i) => i % 2 === 0);
    const values = got.rawHeaders.filter((_, i) => i % 2 === 1);
    assert.deepEqual(names.filter((n) => /^(host|x-a|x-b)$/i.test(n)), ['X-A', 'Host', 'X-B', 'host']);
    assert.deepEqual(values.filter((_, i) => /^host$/i.test(names[i]!)), [`localhost:${targetPort}`, 'evil.example']);
  });

  test('an absolute-form target (GET https://other.example/x): as written (it went as /x, the authority lost)', async () => {
    const got = await answered(`GET https://evil.example/raw-head?x=1 HTTP/1.1\r\nHost: localhost:${targetPort}\r\nConnection: close\r\n\r\n`);
    assert.equal(got.url, 'https://evil.example/raw-head?x=1');
    // recorded as the tunnel's target's, with the path it named (it was the two URLs run together)
    assert.equal(await recordedOnce((all) => all.find((x) => x.url.endsWith('/raw-head?x=1'))?.url), `https://localhost:${targetPort}/raw-head?x=1`);
  });

  test('one without Host gets the CONNECT\'s, first', async () => {
    const got = await answered('GET /raw-head HTTP/1.0\r\nX-A: 1\r\n\r\n');
    assert.deepEqual(got.rawHeaders.slice(0, 2), ['Host', `localhost:${targetPort}`]);
  });
});

describe('a CONNECT whose host a URL parser refuses', () => {
  // `a?:PORT` and `u@a:PORT` are a:443 and a:PORT with a user to a URL parser: the requests inside went elsewhere
  // and names no leaf should be signed for: a wildcard, an escape the URL parser decodes into another name (`a%2eb` is a.b), punctuation
  for (const authority of ['a%zz:443', '[1.2.3.4]:443', '[1::2::3]:443', '127.0.0.1?:8080', 'u@127.0.0.1:8080', '*.example.com:443', '*:443', 'a%2eb:443', 'a;b.example:443', 'a,b.example:443', `${'a'.repeat(64)}.example:443`]) {
    test(`CONNECT ${authority}: 400, and the proxy goes on (a%zz:443 crashed the process at the request inside; 127.0.0.1?:8080 sent it to port 443)`, async () => {
      const { text, ended } = await raw(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`);
      assert.ok(ended);
      assert.match(text, /^HTTP\/1\.1 400 Bad Request\r\n[^]*CONNECT needs host:port/);
      const tls = await intercepted();
      assert.match((await readAll(tls, 'GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n', 3000)).text, /^HTTP\/1\.1 200 OK\r\n[^]*ok$/);
    });
  }
});

describe('the names the CA signs leaves for', () => {
  test('a client\'s SNI that is no host name (a wildcard, punctuation, non-ASCII) gets no leaf: the handshake fails, the proxy goes on', async () => {
    for (const servername of ['*.example.com', '*', 'a;b.example', 'caf\u00e9.example']) {
      const socket = connect(proxy.port, '127.0.0.1');
      socket.write(`CONNECT localhost:${targetPort} HTTP/1.1\r\nHost: localhost:${targetPort}\r\n\r\n`);
      await once(socket, 'data');
      const secure = connectTls({ socket, servername, rejectUnauthorized: false, ALPNProtocols: ['http/1.1'] });
      const outcome = await new Promise<string>((resolve) => {
        secure.once('secureConnect', () => resolve('signed'));
        secure.once('error', () => resolve('refused'));
        secure.once('close', () => resolve('refused'));
      });
      secure.destroy();
      assert.equal(outcome, 'refused', servername);
    }
    // a host name, an IP literal: signed
    for (const servername of ['localhost', 'lab_host.example', 'xn--caf-dma.example']) {
      const socket = connect(proxy.port, '127.0.0.1');
      socket.write(`CONNECT localhost:${targetPort} HTTP/1.1\r\nHost: localhost:${targetPort}\r\n\r\n`);
      await once(socket, 'data');
      const secure = connectTls({ socket, servername, rejectUnauthorized: false, ALPNProtocols: ['http/1.1'] });
      await once(secure, 'secureConnect');
      assert.match(secure.getPeerCertificate().subjectaltname ?? '', new RegExp(`DNS:${servername.replace('.', '\\.')}`));
      secure.destroy();
    }
  });
});

describe('inside an intercepted CONNECT', () => {
  test('a target that never answers: a 502 saying the target timed out, counted as its failure (the client was cut off, and blamed)', async () => {
    const before = proxy.counts().upstreamErrors;
    const tls = await intercepted();
    const { text } = await readAll(tls, 'GET /silent HTTP/1.1\r\nHost: localhost\r\n\r\n', 6000);
    assert.match(text, /^HTTP\/1\.1 502 Bad Gateway\r\n/);
    assert.match(text, /timeout: localhost:\d+ did not answer in time/);
    assert.equal(proxy.counts().upstreamErrors, before + 1);
  });

  test('headers sent a byte at a time, each before the idle time: 408 at the headers\' time, and closed (it held the connection for ever)', async () => {
    const tls = await intercepted();
    // a byte every 150 ms: the idle time (1.5 s) never passes, the headers' time (600 ms) does
    const { text, ended } = await readAll(tls, 'GET / HTTP/1.1\r\nHost: localhost\r\nX-Slow: ' + 'a'.repeat(40), 3000, 150);
    assert.ok(ended, `closed (got ${JSON.stringify(text)})`);
    assert.match(text, /^HTTP\/1\.1 408 Request Timeout\r\n/);
  });

  test('answers node gives itself (417 to an Expect it does not know) give the next request its headers\' time again, and a request without Host goes to the CONNECT\'s authority (a 408 came at the handshake\'s time)', async () => {
    const tls = await intercepted();
    let text = '';
    tls.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
    tls.on('error', () => {});
    const closed = Promise.race([once(tls, 'close'), new Promise((resolve) => setTimeout(resolve, 5000))]);
    // 0.4 s, 0.8 s and 1.2 s after the handshake: the headers' time (0.6 s) runs from each answer
    await new Promise((resolve) => setTimeout(resolve, 400));
    tls.write('GET / HTTP/1.1\r\nHost: localhost\r\nExpect: something-else\r\n\r\n');
    await new Promise((resolve) => setTimeout(resolve, 400));
    tls.write('GET / HTTP/1.1\r\n\r\n');
    await new Promise((resolve) => setTimeout(resolve, 400));
    tls.write('GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
    await closed;
    tls.destroy();
    assert.equal(text.match(/HTTP\/1\.1 \d{3}/g)?.join(', '), 'HTTP/1.1 417, HTTP/1.1 200, HTTP/1.1 200', text);
  });

  test('an answer slower than the headers\' time is no 408: the time runs only while a request is awaited, and again after its answer', async () => {
    const tls = await intercepted();
    const { text, ended } = await readAll(tls, 'GET /slow HTTP/1.1\r\nHost: localhost\r\n\r\n', 4000);
    // the answer first; then nothing asked: the headers' time again (408) or idle closes it
    assert.match(text, /^HTTP\/1\.1 200 OK\r\n[^]*?\r\n\r\nok($|HTTP\/1\.1 408 )/);
    assert.ok(ended, 'closed once idle after the answer');
  });
});

describe('what the client addressed inside a CONNECT goes as it sent it (a virtual host, a Host header test)', () => {
  test('its Host and its TLS server name reach the target, not the CONNECT\'s authority; without a Host, the authority', async () => {
    const asSent = await readAll(await intercepted(`127.0.0.1:${targetPort}`, 'vhost.example'), 'GET /names HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n', 3000);
    assert.match(asSent.text, /\r\n\r\nHost: evil\.example; server name: vhost\.example$/, asSent.text);
    const none = await readAll(await intercepted(`127.0.0.1:${targetPort}`, 'vhost.example'), 'GET /names HTTP/1.1\r\nConnection: close\r\n\r\n', 3000);
    assert.ok(none.text.endsWith(`Host: 127.0.0.1:${targetPort}; server name: vhost.example`), none.text);
    // recorded as sent, and the certificate judged for the name asked: self-signed, and not for vhost.example
    const stored = await recordedOnce((all) => {
      const both = all.filter((x) => x.url === `https://127.0.0.1:${targetPort}/names`);
      return both.length >= 2 ? both : undefined;
    });
    assert.deepEqual(stored.map((x) => x.requestHeaders.find(([name]) => name === 'Host')?.[1]).sort(), [`127.0.0.1:${targetPort}`, 'evil.example']);
    for (const x of stored) assert.equal(x.tlsProblem, 'DEPTH_ZERO_SELF_SIGNED_CERT; ERR_TLS_CERT_ALTNAME_INVALID');
    // asked as localhost, a name it holds: only the chain is said
    await readAll(await intercepted(`127.0.0.1:${targetPort}`, 'localhost'), 'GET /names?as=localhost HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n', 3000);
    const asLocalhost = await recordedOnce((all) => all.find((x) => x.url.endsWith('/names?as=localhost')));
    assert.equal(asLocalhost.tlsProblem, 'DEPTH_ZERO_SELF_SIGNED_CERT');
    // a target that closes its connection with the answer: the certificate was read while it was open
    await readAll(await intercepted(`127.0.0.1:${targetPort}`, 'vhost.example'), 'GET /names-close HTTP/1.1\r\nHost: vhost.example\r\n\r\n', 3000);
    const closing = await recordedOnce((all) => all.find((x) => x.url.endsWith('/names-close')));
    assert.equal(closing.tlsProblem, 'DEPTH_ZERO_SELF_SIGNED_CERT; ERR_TLS_CERT_ALTNAME_INVALID');
  });

  test('an address sent as the TLS server name is not one (RFC 6066): the target is asked with none', async () => {
    const sent = await readAll(await intercepted(`127.0.0.1:${targetPort}`, '127.0.0.2'), 'GET /names HTTP/1.1\r\nHost: 127.0.0.2\r\nConnection: close\r\n\r\n', 3000);
    assert.ok(sent.text.endsWith('Host: 127.0.0.2; server name: (none)'), sent.text);
  });

  test('a plain request\'s Host is still the URL\'s (RFC 9112 3.2.2), over plain HTTP outside a tunnel', async () => {
    const exchange = await raw(`GET http://127.0.0.1:${plainPort}/host-check HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n`);
    assert.match(exchange.text, /^HTTP\/1\.1 200 /);
    const stored = await recordedOnce((all) => all.find((e) => e.url.endsWith('/host-check')));
    assert.deepEqual(stored.requestHeaders.filter(([name]) => name.toLowerCase() === 'host'), [['Host', `127.0.0.1:${plainPort}`]]);
  });
});

describe('a request node\'s parser refuses, outside and inside a tunnel: a 4xx that says why, not a closed connection', () => {
  const unknownMethod = (host: string) => `FOO /x HTTP/1.1\r\nHost: ${host}\r\n\r\n`;
  const bigHead = (host: string) => `GET /x HTTP/1.1\r\nHost: ${host}\r\nX-Big: ${'a'.repeat(70 * 1024)}\r\n\r\n`;

  test('a method node does not know (FOO): 400 naming the replay as the way to send it', async () => {
    const outside = await raw(`FOO http://127.0.0.1:${plainPort}/x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
    const inside = await readAll(await intercepted(), unknownMethod('localhost'), 3000);
    for (const [where, text] of [['outside', outside.text], ['inside', inside.text]]) {
      assert.match(text!, /^HTTP\/1\.1 400 Bad Request\r\n[^]*\r\n\r\n400 the method is not one the proxy can read \(node reads a fixed list: [^)]*\); send it with the replay of a recorded request\n$/, `${where}: ${text}`);
    }
    assert.ok(inside.ended, 'closed once answered');
  });

  test('refused while the answer before it is under way (pipelined): the refusal follows that answer, whole, instead of landing inside its body', async () => {
    const { text } = await raw(`GET http://127.0.0.1:${plainPort}/big HTTP/1.1\r\nHost: 127.0.0.1:${plainPort}\r\n\r\nFOO /x HTTP/1.1\r\nHost: x\r\n\r\n`, 5000);
    const [head, rest] = [text.slice(0, text.indexOf('\r\n\r\n') + 4), text.slice(text.indexOf('\r\n\r\n') + 4)];
    assert.match(head, /^HTTP\/1\.1 200 OK\r\n[^]*Content-Length: 100000\r\n/i);
    assert.equal(rest.slice(0, 100_000), 'a'.repeat(100_000));
    assert.match(rest.slice(100_000), /^HTTP\/1\.1 400 Bad Request\r\n[^]*400 the method is not one the proxy can read/);
  });

  test('a head over 64 KiB: 431 inside a tunnel too', async () => {
    const inside = await readAll(await intercepted(), bigHead('localhost'), 3000);
    assert.match(inside.text, /^HTTP\/1\.1 431 Request Header Fields Too Large\r\n[^]*\r\n\r\n431 the request's head is over 64 KiB\n$/, inside.text);
  });
});

describe('a stop (SIGTERM, close())', () => {
  test('the exchanges in flight finish and are recorded; a new request on a kept connection is 503; past drainMs the rest are cut, unrecorded', async () => {
    const slow = createHttpServer((req, res) => void setTimeout(() => res.end(`answered ${req.url}`), req.url === '/slower' ? 4000 : 500));
    await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
    const port = (slow.address() as AddressInfo).port;
    const seen: ProxyExchange[] = [];
    const ca = await openCa(await tempDir());
    const stopping = await startProxy({
      host: '127.0.0.1', port: 0, ca: async () => ca, ownPorts: () => [], drainMs: 1500, log: () => {},
      recorder: { targetOf: () => 1, record: (_target: number, exchange: ProxyExchange) => void seen.push(exchange) },
    });
    try {
      const kept = connect(stopping.port, '127.0.0.1');
      let text = '';
      kept.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
      kept.on('error', () => {});
      kept.write(`GET http://127.0.0.1:${port}/slow HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
      const cut = rawExchange(stopping.port, `GET http://127.0.0.1:${port}/slower HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`, 6000);
      await new Promise((resolve) => setTimeout(resolve, 150));
      const started = Date.now();
      const closed = stopping.close();
      for (const deadline = Date.now() + 3000; !text.includes('answered /slow') && Date.now() < deadline; ) await new Promise((resolve) => setTimeout(resolve, 10));
      assert.match(text, /^HTTP\/1\.1 200 OK\r\n[^]*\r\n\r\nanswered \/slow$/, 'the request in flight was answered');
      const before = text.length;
      kept.write(`GET http://127.0.0.1:${port}/after HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
      for (const deadline = Date.now() + 3000; text.length === before && !kept.destroyed && Date.now() < deadline; ) await new Promise((resolve) => setTimeout(resolve, 10));
      assert.match(text.slice(before), /^HTTP\/1\.1 503 Service Unavailable\r\n[^]*Connection: close\r\n[^]*\r\n\r\n[^]*503 assessd is stopping: the proxy takes no new request/);
      await closed;
      assert.ok(Date.now() - started >= 1400, 'waited for the one still in flight, up to drainMs');
      assert.equal((await cut).text, '', 'the one past drainMs was cut');
      // and not recorded, then or later (its end is the stop's, not the target's nor the client's)
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.deepEqual(seen.map((x) => [x.url, x.status]), [[`http://127.0.0.1:${port}/slow`, 200]]);
      kept.destroy();
    } finally {
      slow.closeAllConnections();
      slow.close();
    }
  });
});

describe('a target whose certificate names another host, from a CA the box trusts', () => {
  test('every connection to it says so in tls_problem, not only the first (a resumed TLS session is not checked for the host)', async () => {
    const dir = await tempDir();
    const caFile = join(dir, 'test-ca.pem');
    writeFileSync(caFile, certificates.ca);
    // a new connection for each request: the target closes each one
    const wrong = createHttpsServer(certificates.wrongHost, (_req, res) => res.writeHead(200, { Connection: 'close' }).end('wrong host'));
    await new Promise<void>((resolve) => wrong.listen(0, '127.0.0.1', resolve));
    const port = (wrong.address() as AddressInfo).port;
    const server = await spawnServer(['--port', '0', '--proxy-port', '0', '--data-dir', join(dir, 'data')], { NODE_EXTRA_CA_CERTS: caFile });
    try {
      const proxyPort = Number(/proxy on http:\/\/127\.0\.0\.1:(\d+)/.exec(server.output())![1]);
      const added = await request(server.url, '/api/v1/targets/', { method: 'POST', form: { target_url: `https://localhost:${port}/` } });
      assert.equal(added.status, 201, added.text);
      const targetId = (await request(server.url, '/api/v1/targets/')).json.data.find((t: any) => t.target_url === `https://localhost:${port}/`).id;
      for (let i = 0; i < 3; i++) {
        const tls = await new Promise<TLSSocket>((resolve, reject) => {
          const socket = connect(proxyPort, '127.0.0.1');
          socket.once('error', reject);
          socket.write(`CONNECT localhost:${port} HTTP/1.1\r\nHost: localhost:${port}\r\n\r\n`);
          socket.once('data', () => {
            const secure = connectTls({ socket, servername: 'localhost', rejectUnauthorized: false, ALPNProtocols: ['http/1.1'] });
            secure.once('secureConnect', () => resolve(secure)).once('error', reject);
          });
        });
        assert.match((await readAll(tls, `GET /${i} HTTP/1.1\r\nHost: localhost:${port}\r\nConnection: close\r\n\r\n`, 3000)).text, /^HTTP\/1\.1 200 /);
      }
      let list: any[] = [];
      for (const deadline = Date.now() + 10_000; list.length < 3 && Date.now() < deadline; ) {
        list = (await request(server.url, `/api/v1/targets/${targetId}/transactions/?limit=10`)).json.data;
        if (list.length < 3) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      assert.equal(list.length, 3);
      for (const row of list) {
        const tx = (await request(server.url, `/api/v1/targets/${targetId}/transactions/${row.id}`)).json.data;
        assert.equal(tx.tls_problem, 'ERR_TLS_CERT_ALTNAME_INVALID', `${tx.url}: ${JSON.stringify(tx.tls_problem)}`);
      }
    } finally {
      server.proc.kill('SIGTERM');
      await server.exited;
      wrong.close();
    }
  });
});

describe('plain HTTP inside a CONNECT (a browser\'s ws:// through a proxy)', () => {
  /** A CONNECT to the plain target; resolves once it is answered. */
  const tunnelled = () =>
    new Promise<Socket>((resolve, reject) => {
      const socket = connect(proxy.port, '127.0.0.1');
      socket.once('error', reject);
      socket.write(`CONNECT 127.0.0.1:${plainPort} HTTP/1.1\r\nHost: 127.0.0.1:${plainPort}\r\n\r\n`);
      socket.once('data', (chunk: Buffer) => (chunk.toString('latin1').startsWith('HTTP/1.1 200') ? resolve(socket) : reject(new Error(chunk.toString('latin1')))));
    });

  test('a WebSocket: its handshake recorded as an http:// exchange of the target, its frames echoed after a quiet spell past the idle time (the tunnel was cut, and nothing recorded)', async () => {
    const socket = await tunnelled();
    let got = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => (got = Buffer.concat([got, chunk])));
    socket.write(`GET /chat HTTP/1.1\r\nHost: 127.0.0.1:${plainPort}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${Buffer.from('0123456789abcdef').toString('base64')}\r\nSec-WebSocket-Version: 13\r\n\r\n`);
    // longer than the idle time (1.5 s) without a frame
    await new Promise((resolve) => setTimeout(resolve, 2000));
    assert.match(got.toString('latin1'), /^HTTP\/1\.1 101 /);
    assert.ok(!socket.destroyed, 'the quiet WebSocket is still open');
    got = Buffer.alloc(0);
    socket.write(textFrame('through a CONNECT', true));
    for (const deadline = Date.now() + 3000; readTextFrame(got) === undefined && Date.now() < deadline; ) await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(readTextFrame(got), 'echo: through a CONNECT');
    socket.destroy();
    const handshake = recorded.find((x) => x.url === `http://127.0.0.1:${plainPort}/chat`);
    assert.ok(handshake, `recorded: ${JSON.stringify(recorded.map((x) => x.url))}`);
    assert.equal(handshake.status, 101);
  });

  test('a request line written in pieces is read as HTTP too (it was tunnelled, and not recorded)', async () => {
    const socket = await tunnelled();
    let text = '';
    socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
    const closed = new Promise((resolve) => socket.once('close', resolve));
    socket.write('GET /spl');
    await new Promise((resolve) => setTimeout(resolve, 100));
    socket.write(`it HTTP/1.1\r\nHost: 127.0.0.1:${plainPort}\r\nConnection: close\r\n\r\n`);
    await closed;
    assert.match(text, /^HTTP\/1\.1 200 OK\r\n[^]*plain$/);
    assert.ok(recorded.some((x) => x.url === `http://127.0.0.1:${plainPort}/split`), 'recorded');
  });

  test('requests on one connection, the first in the CONNECT\'s own packet: each answered and recorded as http://', async () => {
    const socket = connect(proxy.port, '127.0.0.1');
    let text = '';
    socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
    const closed = new Promise((resolve) => socket.once('close', resolve));
    socket.write(`CONNECT 127.0.0.1:${plainPort} HTTP/1.1\r\nHost: 127.0.0.1:${plainPort}\r\n\r\nGET /one HTTP/1.1\r\nHost: 127.0.0.1:${plainPort}\r\n\r\n`);
    for (const deadline = Date.now() + 3000; !text.includes('plain') && Date.now() < deadline; ) await new Promise((resolve) => setTimeout(resolve, 20));
    socket.write(`GET /two HTTP/1.1\r\nHost: 127.0.0.1:${plainPort}\r\nConnection: close\r\n\r\n`);
    await closed;
    assert.equal(text.match(/HTTP\/1\.1 200 OK\r\n[^]*?\r\n\r\nplain/g)?.length, 2, text);
    for (const path of ['/one', '/two']) assert.ok(recorded.some((x) => x.url === `http://127.0.0.1:${plainPort}${path}` && x.status === 200), path);
  });
});

describe('a CONNECT to a service that speaks first', () => {
  test('a client silent after its CONNECT (it waits for an SSH or SMTP banner) is tunnelled once SERVER_FIRST_MS pass: the banner comes, then both ways', async () => {
    const { createServer: createTcpServer } = await import('node:net');
    const { SERVER_FIRST_MS } = await import('../../src/proxy/connect.ts');
    const banner = createTcpServer((socket) => {
      socket.write('SSH-2.0-lab\r\n');
      socket.on('data', (chunk) => socket.write(`echo ${chunk}`));
      socket.on('error', () => {});
    });
    await new Promise<void>((resolve) => banner.listen(0, '127.0.0.1', resolve));
    const port = (banner.address() as AddressInfo).port;
    const client = connect(proxy.port, '127.0.0.1');
    try {
      let text = '';
      client.on('data', (chunk) => (text += chunk));
      client.write(`CONNECT 127.0.0.1:${port} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
      const started = Date.now();
      const until = async (pattern: RegExp) => {
        for (const deadline = Date.now() + 5000; !pattern.test(text); ) {
          assert.ok(Date.now() < deadline, `waited for ${pattern}: ${JSON.stringify(text)}`);
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      };
      await until(/SSH-2\.0-lab\r\n$/);
      assert.ok(Date.now() - started >= SERVER_FIRST_MS - 50, 'a client that may still speak first is given the time');
      assert.match(text, /^HTTP\/1\.1 200 Connection Established\r\n\r\nSSH-2\.0-lab\r\n$/);
      client.write('hello');
      await until(/echo hello$/);
    } finally {
      client.destroy();
      banner.close();
    }
  });
});
