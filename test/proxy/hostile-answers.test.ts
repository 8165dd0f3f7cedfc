/**
 * The proxy against a hostile target and careless clients, as `npm start` runs it: a raw TCP
 * target writes whatever bytes a test gives it (answers node's own server would never send), and
 * raw sockets are the clients. Whatever the target answers, the server stays up, the client gets
 * an answer or a clean end, and what is stored says what happened.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { createServer as createHttpsServer } from 'node:https';
import { connect as connectTls } from 'node:tls';
import { openCa } from '../../src/proxy/ca.ts';
import { makeCertificates } from '../engine/fixtures/certs.ts';
import { echoWebSockets, readTextFrame, textFrame } from '../helpers/websocket.ts';
import { startProxy } from '../../src/proxy/index.ts';
import { rawExchange } from '../helpers/raw-client.ts';
import { request, spawnServer, tempDir, type ChildServer } from '../helpers/server.ts';

let assessd: ChildServer;
let proxyPort: number;
let target: Server;
let targetPort: number;
let targetId: number;
/**
 * What the target answers, by request path; the raw requests it received. A list is written a
 * piece at a time, 100 ms apart; CUT in it closes the connection there.
 */
const answers = new Map<string, string | string[]>();
const CUT = '\0cut';
/** In a list: the connection is reset there (RST). */
const RESET = '\0reset';
/**
 * Before an answer: on a connection that has answered before, the target closes it without a word
 * (STALE: FIN; STALE_RESET: RST), as a server closing an idle connection while a request was on its
 * way; on a new connection, the rest is the answer.
 */
const STALE = '\0stale';
const STALE_RESET = '\0stale-reset';
const received: string[] = [];
let connections = 0;

/** A raw exchange through the proxy: what came back once the proxy ended the connection or `waitMs` passed. */
const rawThroughProxy = (bytes: string | string[], waitMs = 3000, port = proxyPort) => rawExchange(port, bytes, waitMs);

/** A chunked body's bytes (one character per byte), its chunks joined; throws when it has no last chunk. */
function dechunked(text: string): string {
  let out = '';
  for (let at = 0; ; ) {
    const line = text.indexOf('\r\n', at);
    const size = Number.parseInt(text.slice(at, line), 16);
    if (line < 0 || Number.isNaN(size)) throw new Error(`not chunked: ${JSON.stringify(text)}`);
    if (size === 0) return out;
    out += text.slice(line + 2, line + 2 + size);
    at = line + 2 + size + 2;
  }
}

const get = (path: string, extra = '', port = targetPort) => `GET http://127.0.0.1:${port}${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n${extra}\r\n`;

async function healthy(): Promise<void> {
  const res = await request(assessd.url, '/debug/health');
  assert.equal(res.status, 200, `the server answers its health check (${assessd.output().slice(-2000)})`);
}

/** The target's proxy transaction for `path`, once stored (the proxy writes in batches). */
async function stored(path: string, id = targetId): Promise<any> {
  for (const deadline = Date.now() + 10_000; Date.now() < deadline; ) {
    const list = (await request(assessd.url, `/api/v1/targets/${id}/transactions/?limit=1000`)).json.data;
    const found = list.find((t: any) => new URL(t.url).pathname === path);
    if (found) return (await request(assessd.url, `/api/v1/targets/${id}/transactions/${found.id}`)).json.data;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.fail(`no transaction for ${path}`);
}

/** The target: answers each request with `answers`' entry for its path. */
function answerFrom(socket: Socket): void {
  let head = '';
  let answered = 0;
  /** Which of the target's connections this is: /which-connection answers it. */
  const connection = String(connections++);
  socket.on('error', () => {});
  socket.on('data', (chunk) => {
    head += chunk.toString('latin1');
    if (!head.includes('\r\n\r\n')) return;
    received.push(head);
    const path = head.split(' ')[1]!;
    head = '';
    let answer = path === '/which-connection' ? `HTTP/1.1 200 OK\r\nContent-Length: ${connection.length + 2}\r\n\r\n[${connection}]` : answers.get(path);
    answered++;
    for (const mark of [STALE_RESET, STALE]) {
      if (typeof answer !== 'string' || !answer.startsWith(mark)) continue;
      if (answered > 1) return mark === STALE ? socket.destroy() : socket.resetAndDestroy();
      answer = answer.slice(mark.length);
    }
    if (answer === undefined) socket.end('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n');
    else if (typeof answer === 'string' && answer.endsWith(RESET)) {
      // written, then reset at once
      socket.write(Buffer.from(answer.slice(0, -RESET.length), 'latin1'));
      socket.resetAndDestroy();
    } else if (typeof answer === 'string') socket.write(Buffer.from(answer, 'latin1'));
    else void (async () => {
      for (const piece of answer) {
        if (piece === CUT) return socket.destroy();
        if (piece === RESET) return socket.resetAndDestroy();
        socket.write(Buffer.from(piece, 'latin1'));
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();
  });
}

/**
 * Another origin of the same target (a listener of its own, a target of its own in the store): what
 * the proxy learns of one origin's answers (that only a lenient reading reads them) stays with it.
 */
async function anotherOrigin(): Promise<{ port: number; id: number }> {
  const server = createServer(answerFrom);
  others.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const url = `http://127.0.0.1:${port}/`;
  const created = await request(assessd.url, '/api/v1/targets/', { method: 'POST', form: { target_url: url } });
  assert.equal(created.status, 201, created.text);
  const id = (await request(assessd.url, '/api/v1/targets/?limit=1000')).json.data.find((t: any) => t.target_url === url).id;
  return { port, id };
}
const others: Server[] = [];

before(async () => {
  target = createServer(answerFrom);
  await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
  targetPort = (target.address() as AddressInfo).port;
  assessd = await spawnServer(['--port', '0', '--data-dir', await tempDir()]);
  proxyPort = Number(/proxy on http:\/\/127\.0\.0\.1:(\d+)/.exec(assessd.output())![1]);
  const created = await request(assessd.url, '/api/v1/targets/', { method: 'POST', form: { target_url: `http://127.0.0.1:${targetPort}/` } });
  assert.equal(created.status, 201, created.text);
  targetId = (await request(assessd.url, '/api/v1/targets/')).json.data[0].id;
});

after(async () => {
  assessd?.proc.kill('SIGTERM');
  await assessd?.exited;
  target?.close();
  for (const server of others) server.close();
});

describe('answers node would refuse to send', () => {
  const statusLines: [string, string][] = [
    ['/status-099', 'HTTP/1.1 099 Low\r\nContent-Length: 2\r\n\r\nhi'],
    ['/status-000', 'HTTP/1.1 000 Zero\r\nContent-Length: 2\r\n\r\nhi'],
    ['/reason-control', 'HTTP/1.1 200 O\x01K\r\nContent-Length: 2\r\n\r\nhi'],
    ['/reason-nul', 'HTTP/1.1 200 O\x00K\r\nContent-Length: 2\r\n\r\nhi'],
    ['/reason-del', 'HTTP/1.1 200 O\x7fK\r\nContent-Length: 2\r\n\r\nhi'],
  ];
  for (const [path, answer] of statusLines) {
    test(`a status line node cannot relay (${path.slice(1)}): a 502 that says why, the server up, the exchange stored with the error`, async () => {
      answers.set(path, answer);
      const { text, ended } = await rawThroughProxy(get(path));
      assert.ok(ended, 'the proxy ends the answer');
      assert.match(text, /^HTTP\/1\.1 502 Bad Gateway\r\n/);
      assert.match(text, /X-Assessd-Proxy-Error: invalid answer\r\n/i);
      assert.match(text, /502 Bad Gateway: invalid answer: 127\.0\.0\.1:\d+ sent a status line/);
      await healthy();
      const tx = await stored(path);
      assert.match(tx.error, /^invalid answer: /);
    });
  }

  test('a 101 the client did not ask for: a 502 at once, not a hanging client; stored with the error', async () => {
    answers.set('/unasked-101', 'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\nRAW');
    const { text, ended } = await rawThroughProxy(get('/unasked-101'), 5000);
    assert.ok(ended, `the proxy ends the answer (got ${JSON.stringify(text)})`);
    assert.match(text, /^HTTP\/1\.1 502 Bad Gateway\r\n/);
    assert.match(text, /switched protocols .*without being asked/);
    await healthy();
    assert.match((await stored('/unasked-101')).error, /without being asked/);
  });

  const trailing: [string, string, string, string][] = [
    ['/extra-bytes', 'GET', 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhiJUNK', 'hi'],
    ['/longer-than-said', 'GET', 'HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcdefgh', 'abc'],
    ['/head-with-body', 'HEAD', 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello', ''],
    ['/no-content-with-body', 'GET', 'HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\nhello', ''],
  ];
  for (const [path, method, answer, body] of trailing) {
    test(`a whole answer followed by stray bytes (${path.slice(1)}): the answer reaches the client, the stray bytes do not`, async () => {
      answers.set(path, answer);
      const { text, ended } = await rawThroughProxy(get(path).replace(/^GET/, method));
      assert.ok(ended);
      const status = answer.split('\r\n')[0]!;
      assert.ok(text.startsWith(`${status}\r\n`), `${JSON.stringify(text)} starts with the target's status`);
      assert.equal(text.slice(text.indexOf('\r\n\r\n') + 4), body);
      await healthy();
      const tx = await stored(path);
      assert.equal(tx.response_status, status.slice('HTTP/1.1 '.length));
    });
  }
});

describe('small answers, relayed once whole', () => {
  test('a small answer that comes in pieces reaches the client whole, and is stored whole', async () => {
    answers.set('/small-in-pieces', ['HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nab', 'cdef', 'ghij']);
    const { text, ended } = await rawThroughProxy(get('/small-in-pieces'));
    assert.ok(ended);
    assert.match(text, /^HTTP\/1\.1 200 OK\r\n/);
    assert.equal(text.slice(text.indexOf('\r\n\r\n') + 4), 'abcdefghij');
    assert.equal((await stored('/small-in-pieces')).response_body, 'abcdefghij');
  });

  test('Content-Length given twice with one value (two lines, or 2, 2), which Chromium and curl read: relayed and stored; values that differ are still a 502', async () => {
    // (each on an origin of its own: the proxy reads it leniently from then on)
    for (const [path, lengths] of [['/cl-twice', 'Content-Length: 2\r\nContent-Length: 2'], ['/cl-comma', 'Content-Length: 2, 2']]) {
      const origin = await anotherOrigin();
      answers.set(path!, `HTTP/1.1 200 OK\r\n${lengths}\r\n\r\nok`);
      const { text } = await rawThroughProxy(get(path!, '', origin.port));
      assert.match(text, /^HTTP\/1\.1 200 OK\r\n/, `${path}: ${JSON.stringify(text.slice(0, 200))}`);
      assert.ok(text.endsWith('\r\n\r\nok'), path);
      assert.equal((await stored(path!, origin.id)).response_body, 'ok', path);
    }
    const origin = await anotherOrigin();
    answers.set('/cl-differ', 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok!');
    assert.match((await rawThroughProxy(get('/cl-differ', '', origin.port))).text, /^HTTP\/1\.1 502 /);
    // Content-Length beside Transfer-Encoding is refused however read: not asked again
    const other = await anotherOrigin();
    answers.set('/te-then-cl', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n');
    received.length = 0;
    assert.match((await rawThroughProxy(get('/te-then-cl', '', other.port))).text, /^HTTP\/1\.1 502 /);
    assert.equal(received.filter((head) => head.split(' ')[1] === '/te-then-cl').length, 1, 'the target got the request once');
    await healthy();
  });

  test('an answer without Date (a device, a test of missing headers) reaches the client without one: the proxy adds no header of its own', async () => {
    for (const [path, answer] of [
      ['/no-date', 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok'],
      ['/no-date-304', 'HTTP/1.1 304 Not Modified\r\nETag: "x"\r\n\r\n'],
    ]) {
      answers.set(path!, answer!);
      const { text } = await rawThroughProxy(get(path!));
      const head = text.slice(0, text.indexOf('\r\n\r\n'));
      assert.match(head, /^HTTP\/1\.1 (200|304) /, path);
      assert.doesNotMatch(head, /^date:/im, `${path}: ${JSON.stringify(head)}`);
    }
  });

  test('a small answer cut short: the client gets what came of it, as from the target itself, then its connection ends; stored as cut', async () => {
    answers.set('/small-cut', ['HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc', CUT]);
    const { text, ended } = await rawThroughProxy(get('/small-cut'));
    assert.ok(ended, 'the proxy ends the connection');
    assert.match(text, /^HTTP\/1\.1 200 OK\r\n/, 'the head came (it was an empty reply)');
    assert.ok(text.endsWith('\r\n\r\nabc'), `what came of the body, and no more: ${JSON.stringify(text)}`);
    await healthy();
    assert.match((await stored('/small-cut')).error, /cut short/);
  });
});

describe('answers and clients that stop', () => {
  test('an answer the target resets part-way, small (held back) or large (streamed), five times each: every record says it was cut short, none that the client left', async () => {
    const large = 'x'.repeat(300_000);
    for (let i = 0; i < 5; i++) {
      // reset at once after the bytes, or 100 ms later
      const cut = (bytes: string) => (i % 2 === 0 ? `${bytes}${RESET}` : [bytes, RESET]);
      answers.set(`/reset-small-${i}`, cut('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nhello-partial'));
      answers.set(`/reset-large-${i}`, cut(`HTTP/1.1 200 OK\r\nContent-Length: ${2 * large.length}\r\n\r\n${large}`));
      const [small, big] = await Promise.all([rawThroughProxy(get(`/reset-small-${i}`)), rawThroughProxy(get(`/reset-large-${i}`))]);
      assert.ok(small.ended && big.ended);
      assert.ok(small.text.endsWith('\r\n\r\nhello-partial'), JSON.stringify(small.text.slice(-60)));
    }
    for (let i = 0; i < 5; i++) {
      for (const path of [`/reset-small-${i}`, `/reset-large-${i}`]) assert.equal((await stored(path)).error, 'the answer was cut short', path);
    }
    await healthy();
  });

  test('a target that answers while the client is still sending its body (413 at once): the record keeps what came and says the body is cut', async () => {
    answers.set('/early', 'HTTP/1.1 413 Payload Too Large\r\nContent-Length: 0\r\n\r\n');
    const head = `POST http://127.0.0.1:${targetPort}/early HTTP/1.1\r\nHost: 127.0.0.1:${targetPort}\r\nContent-Length: 100000\r\n\r\n`;
    const { text } = await rawThroughProxy(head + 'e'.repeat(1000), 1000);
    assert.match(text, /^HTTP\/1\.1 413 /);
    const tx = await stored('/early');
    assert.equal(tx.request_body_truncated, true);
    assert.ok(tx.data.length <= 1000);
    const code = await request(assessd.url, `/api/v1/targets/${targetId}/transactions/hrt/${tx.id}`, { method: 'POST', form: { language: 'bash' } });
    assert.equal(code.status, 400);
    assert.match(code.json.message, new RegExp(`stored cut \\(${tx.data.length} of the 100000 bytes sent\\)`));
  });

  test('an answer of 1,100 header lines (past the 1,000 node keeps unless told): every line reaches the client and the record, and a replay records them all too', async () => {
    const lines = Array.from({ length: 1100 }, (_, i) => `X-F${i}: 1\r\n`).join('');
    answers.set('/many-lines', `HTTP/1.1 200 OK\r\n${lines}X-Frame-Options: DENY\r\nContent-Length: 2\r\n\r\nok`);
    const { text } = await rawThroughProxy(get('/many-lines'));
    assert.ok(text.includes('\r\nX-F1099: 1\r\nX-Frame-Options: DENY\r\n'), 'relayed whole');
    const tx = await stored('/many-lines');
    assert.match(tx.response_headers, /\r\nX-Frame-Options: DENY(\r\n|$)/, 'recorded whole');
    const replayed = await request(assessd.url, `/api/v1/targets/${targetId}/transactions/${tx.id}/replay`, { method: 'POST', form: {} });
    assert.equal(replayed.status, 201, replayed.text);
    const again = (await request(assessd.url, `/api/v1/targets/${targetId}/transactions/${replayed.json.data.id}`)).json.data;
    assert.match(again.response_headers, /\r\nX-Frame-Options: DENY(\r\n|$)/, 'the replay recorded whole');
  });

  test('a reason phrase in UTF-8 is stored as the text it spells (Ça va), as header values are', async () => {
    answers.set('/reason-utf8', `HTTP/1.1 200 ${Buffer.from('Ça va').toString('latin1')}\r\nContent-Length: 2\r\n\r\nok`);
    const { text } = await rawThroughProxy(get('/reason-utf8'));
    assert.ok(text.startsWith(`HTTP/1.1 200 ${Buffer.from('Ça va').toString('latin1')}\r\n`), 'relayed as its bytes');
    assert.equal((await stored('/reason-utf8')).response_status, '200 Ça va');
  });

  test('an answer with 20 KiB of headers (past node\'s 16 KiB) is relayed and stored, not a 502', async () => {
    answers.set('/big-head', `HTTP/1.1 200 OK\r\nX-Big: ${'b'.repeat(20_000)}\r\nContent-Length: 2\r\n\r\nok`);
    const { text } = await rawThroughProxy(get('/big-head'));
    assert.match(text, /^HTTP\/1\.1 200 OK\r\n/);
    assert.ok(text.includes(`X-Big: ${'b'.repeat(20_000)}\r\n`) && text.endsWith('\r\n\r\nok'));
    const tx = await stored('/big-head');
    assert.equal(tx.response_status, '200 OK');
    assert.equal(tx.error, undefined);
    // past the 64 KiB the proxy reads: a 502 that says so, not that the answer was not HTTP
    answers.set('/huge-head', `HTTP/1.1 200 OK\r\nX-Big: ${'b'.repeat(70_000)}\r\nContent-Length: 2\r\n\r\nok`);
    const huge = await rawThroughProxy(get('/huge-head'));
    assert.match(huge.text, /^HTTP\/1\.1 502 Bad Gateway\r\n/);
    assert.match(huge.text, /invalid answer: 127\.0\.0\.1:\d+ sent headers over 64 KiB \(HPE_HEADER_OVERFLOW\)/);
  });

  test('a client that leaves while the target says nothing: stored as the client\'s leaving, not as a target failure', async () => {
    answers.set('/silent', []);
    const before = (await request(assessd.url, '/api/v1/proxy')).json.data.counts;
    const { ended } = await rawThroughProxy(get('/silent'), 500);
    assert.equal(ended, false, 'the target never answered');
    const tx = await stored('/silent');
    assert.equal(tx.error, 'the client closed its connection before the answer had ended');
    assert.equal(tx.response_status, '');
    const after = (await request(assessd.url, '/api/v1/proxy')).json.data.counts;
    assert.equal(after.upstreamErrors, before.upstreamErrors, 'not counted as the target\'s failure');
    await healthy();
  });
});

describe('requests the proxy cannot relay as they are', () => {
  test('a transfer coding other than chunked (gzip, chunked): 501, nothing sent to the target', async () => {
    answers.set('/coded', 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
    received.length = 0;
    const { text } = await rawThroughProxy(`POST http://127.0.0.1:${targetPort}/coded HTTP/1.1\r\nHost: 127.0.0.1:${targetPort}\r\nTransfer-Encoding: gzip, chunked\r\nConnection: close\r\n\r\n3\r\nabc\r\n0\r\n\r\n`);
    assert.match(text, /^HTTP\/1\.1 501 Not Implemented\r\n/);
    assert.match(text, /relays no transfer coding but chunked, not "gzip, chunked"/);
    assert.deepEqual(received, []);
    await healthy();
  });
});

describe('what is stored is what was sent', () => {
  test('Proxy-Authorization and the other hop-by-hop headers are neither forwarded nor stored, nor in the code made from the transaction', async () => {
    answers.set('/credentials', 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
    received.length = 0;
    const secret = Buffer.from('assessd:not-to-be-kept-0123456789').toString('base64');
    const { text } = await rawThroughProxy(get('/credentials', `Proxy-Authorization: Basic ${secret}\r\nProxy-Connection: keep-alive\r\nX-Kept: yes\r\n`));
    assert.match(text, /^HTTP\/1\.1 200 OK\r\n/);
    assert.equal(received.length, 1);
    assert.doesNotMatch(received[0]!, /proxy-/i, 'the target received no Proxy- header');
    const tx = await stored('/credentials');
    assert.doesNotMatch(tx.raw_request, /proxy-|connection:/i);
    assert.match(tx.raw_request, /\r\nX-Kept: yes\r\n/);
    assert.match(tx.raw_request, new RegExp(`\\r\\nHost: 127\\.0\\.0\\.1:${targetPort}\\r\\n`));
    const code = await request(assessd.url, `/api/v1/targets/${targetId}/transactions/hrt/${tx.id}`, { method: 'POST', form: { language: 'bash' } });
    assert.equal(code.status, 200, code.text);
    assert.match(code.text, /^#!\/usr\/bin\/env bash/);
    assert.match(code.text, /X-Kept/, 'the code carries the request\'s own headers');
    assert.doesNotMatch(code.text, new RegExp(`${secret}|Proxy-`, 'i'));
  });

  test('an HTTP/1.0 request goes to the target as HTTP/1.1 (node\'s client speaks no other), and is stored as it went (it said HTTP/1.0)', async () => {
    answers.set('/http10', 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok');
    received.length = 0;
    const { text } = await rawThroughProxy(`GET http://127.0.0.1:${targetPort}/http10 HTTP/1.0\r\nHost: 127.0.0.1:${targetPort}\r\n\r\n`);
    assert.match(text, /^HTTP\/1\.1 200 OK\r\n/);
    assert.match(received[0]!, /^GET \/http10 HTTP\/1\.1\r\n/);
    const tx = await stored('/http10');
    assert.match(tx.raw_request, /^GET http:\/\/127\.0\.0\.1:\d+\/http10 HTTP\/1\.1\r\n/, tx.raw_request);
  });

  test("assessd's login cookie (which the browser sends to every port of the host) goes neither to the target nor into the record; the page's own cookies do", async () => {
    // the login a browser holds for the server's API port, as the page got it
    const login = await request(assessd.url, '/api/v1/auth', { method: 'POST', form: { token: assessd.token! } });
    const cookie = /^(assessd-\d+=[^;]+)/.exec(login.headers['set-cookie']![0]!)![1]!;
    assert.equal((await request(assessd.url, '/api/v1/sessions/', { headers: { cookie }, auth: false })).status, 200, 'a working login');
    answers.set('/cookies', 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
    received.length = 0;
    const { text } = await rawThroughProxy(get('/cookies', `Cookie: theme=dark; ${cookie}; sid=abc\r\nCookie: assessd-1=other\r\n`));
    assert.match(text, /^HTTP\/1\.1 200 OK\r\n/);
    assert.equal(received.length, 1);
    assert.doesNotMatch(received[0]!, /assessd-/, 'the target received no login cookie');
    assert.match(received[0]!, /\r\nCookie: theme=dark; sid=abc\r\n/i);
    const tx = await stored('/cookies');
    assert.doesNotMatch(tx.raw_request, /assessd-/);
    assert.match(tx.raw_request, /\r\nCookie: theme=dark; sid=abc\r\n/);
  });

  test('Accept-Encoding goes without the codings the record cannot decode (zstd, as Chromium asks; *): the target answers in one the search reads; one naming only those is identity; one naming none of them goes as sent', async () => {
    for (const [path, sent, expected] of [
      ['/ae-chromium', 'gzip, deflate, br, zstd', 'gzip, deflate, br'],
      ['/ae-zstd-only', 'zstd', 'identity'],
      ['/ae-empty', '', ''],
      ['/ae-star', 'gzip;q=1.0, *;q=0.1', 'gzip;q=1.0'],
      ['/ae-kept', 'gzip;q=1.0 ,  identity; q=0.5', 'gzip;q=1.0 ,  identity; q=0.5'],
    ] as const) {
      answers.set(path, 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
      received.length = 0;
      const { text } = await rawThroughProxy(get(path, `Accept-Encoding: ${sent}\r\n`));
      assert.match(text, /^HTTP\/1\.1 200 OK\r\n/, path);
      const got = /\r\naccept-encoding: ([^\r]*)\r\n/i.exec(received[0]!)?.[1];
      assert.equal(got, expected, path);
      // the record holds what the target was sent
      assert.equal(/\r\naccept-encoding: ([^\r]*)\r\n/i.exec((await stored(path)).raw_request)?.[1], expected, path);
    }
  });

  test('header bytes past ASCII are stored as the text they spell (é, not Ã©), and a replay and the code send those very bytes again', async () => {
    // the target's and the client's bytes, written one character per byte as the raw sockets here carry them
    const bytes = (text: string) => Buffer.from(text, 'utf8').toString('latin1');
    answers.set('/utf8-headers', `HTTP/1.1 200 OK\r\nX-Reply: ${bytes('grüße')}\r\nContent-Length: 2\r\n\r\nok`);
    received.length = 0;
    const { text } = await rawThroughProxy(get('/utf8-headers', `X-W: ${bytes('é ✓')}\r\n`));
    assert.match(text, /^HTTP\/1\.1 200 OK\r\n/);
    assert.ok(text.includes(`X-Reply: ${bytes('grüße')}\r\n`), 'the client got the answer\'s bytes as they came');
    assert.ok(received[0]!.includes(`\r\nX-W: ${bytes('é ✓')}\r\n`), 'the target got the bytes as sent');
    const tx = await stored('/utf8-headers');
    assert.match(tx.raw_request, /\r\nX-W: é ✓\r\n/);
    assert.match(tx.response_headers, /(^|\r\n)X-Reply: grüße(\r\n|$)/);
    received.length = 0;
    const replay = await request(assessd.url, `/api/v1/targets/${targetId}/transactions/${tx.id}/replay`, { method: 'POST', form: {} });
    assert.equal(replay.status, 201, replay.text);
    assert.ok(received[0]!.includes(`\r\nX-W: ${bytes('é ✓')}\r\n`), `the replay sent ${JSON.stringify(received[0])}`);
    assert.match(replay.json.data.response_headers, /(^|\r\n)X-Reply: grüße(\r\n|$)/);
    const raw = await request(assessd.url, `/api/v1/targets/${targetId}/transactions/hrt/${tx.id}`, { method: 'POST', form: { language: 'raw' } });
    assert.ok(raw.raw.includes(Buffer.from('\r\nX-W: é ✓\r\n', 'utf8')), 'the raw code holds the bytes sent');
  });
});

describe('the request target as written', () => {
  test('the path and query reach the target as the client wrote them (`..`, `\\`, `<`, `%2e%2e` untouched), are stored so, and a replay sends them again', async () => {
    const paths = ['/as-written/../../etc/passwd', '/as-written/a\\..\\b?x=<script>"\'', '/as-written/%2e%2e/./x'];
    for (const path of paths) {
      answers.set(path, 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
      received.length = 0;
      const { text } = await rawThroughProxy(get(path));
      assert.match(text, /^HTTP\/1\.1 200 OK\r\n/, path);
      assert.equal(received[0]?.split(' ')[1], path, 'what the target received');
    }
    const urls = paths.map((path) => `http://127.0.0.1:${targetPort}${path}`);
    let list: any[] = [];
    for (const deadline = Date.now() + 10_000; Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 100))) {
      list = (await request(assessd.url, `/api/v1/targets/${targetId}/transactions/?limit=1000`)).json.data;
      if (urls.every((url) => list.some((t) => t.url === url))) break;
    }
    for (const url of urls) assert.ok(list.some((t) => t.url === url), `stored as ${url}`);
    const first = list.find((t) => t.url === urls[0]);
    received.length = 0;
    const replayed = await request(assessd.url, `/api/v1/targets/${targetId}/transactions/${first.id}/replay`, { method: 'POST', form: {} });
    assert.equal(replayed.status, 201, replayed.text);
    assert.equal(received[0]?.split(' ')[1], paths[0], 'what the replay sent');
    assert.equal(replayed.json.data.url, urls[0]);
  });
});

describe('a CONNECT whose host a URL parser refuses, to the server as npm start runs it', () => {
  test('CONNECT a%zz:443 is 400 and the server goes on answering (the request inside it crashed the process)', async () => {
    const { text, ended } = await rawThroughProxy('CONNECT a%zz:443 HTTP/1.1\r\nHost: a%zz:443\r\n\r\n');
    assert.ok(ended);
    assert.match(text, /^HTTP\/1\.1 400 Bad Request\r\n[^]*CONNECT needs host:port/);
    await healthy();
  });
});

describe('assessd itself, by a name the URL check does not know', () => {
  test('an IPv4-mapped IPv6 address of the API ([::ffff:127.0.0.1], which URLs write ::ffff:7f00:1) is refused, 403', async () => {
    const apiPort = new URL(assessd.url).port;
    const { text } = await rawThroughProxy(`GET http://[::ffff:127.0.0.1]:${apiPort}/debug/health HTTP/1.1\r\nHost: [::ffff:127.0.0.1]:${apiPort}\r\nConnection: close\r\n\r\n`);
    assert.match(text, /^HTTP\/1\.1 403 Forbidden\r\n/);
  });

  test('a CONNECT to the API by a name that resolves to it (2130706433 is 127.0.0.1 to the resolver): the request inside is refused once connected (403, loop), the API answers nothing', async () => {
    const apiPort = new URL(assessd.url).port;
    const { text } = await rawThroughProxy(`CONNECT 2130706433:${apiPort} HTTP/1.1\r\nHost: 2130706433:${apiPort}\r\n\r\nGET /debug/health HTTP/1.1\r\nHost: 127.0.0.1:${apiPort}\r\n\r\n`);
    assert.match(text, /^HTTP\/1\.1 200 Connection Established\r\n\r\n/);
    const inside = text.slice(text.indexOf('\r\n\r\n') + 4);
    // (a URL parser reads 2130706433 as 127.0.0.1)
    assert.match(inside, /^HTTP\/1\.1 403 Forbidden\r\n[^]*loop: 127\.0\.0\.1:\d+ is assessd itself/);
    assert.doesNotMatch(inside, /"status"/, 'the API answered nothing through the tunnel');
  });
  test('the same with bytes that are not HTTP: the tunnel is closed once connected, nothing relayed', async () => {
    const apiPort = new URL(assessd.url).port;
    const { text, ended } = await rawThroughProxy(`CONNECT 2130706433:${apiPort} HTTP/1.1\r\nHost: 2130706433:${apiPort}\r\n\r\nnot HTTP, nor TLS\r\n`);
    assert.ok(ended, 'the tunnel is closed');
    assert.equal(text, 'HTTP/1.1 200 Connection Established\r\n\r\n');
  });
});

describe('connections that stop saying anything', () => {
  test('a CONNECT followed by silence, a tunnel that goes quiet, a TLS handshake left half-way: each closed after the proxy\'s timeout; beside them, a client slow with its headers gets 408 and is closed', async () => {
    const dir = await tempDir();
    const ca = await openCa(dir);
    const proxy = await startProxy({ host: '127.0.0.1', port: 0, ca: async () => ca, ownPorts: () => [], upstreamTimeoutMs: 300, headersTimeoutMs: 400, log: () => {} });
    const quiet = createServer((socket) => socket.on('error', () => {}));
    await new Promise<void>((resolve) => quiet.listen(0, '127.0.0.1', resolve));
    const quietPort = (quiet.address() as AddressInfo).port;
    try {
      const connectLine = `CONNECT 127.0.0.1:${quietPort} HTTP/1.1\r\nHost: 127.0.0.1:${quietPort}\r\n\r\n`;
      const cases = {
        silence: connectLine,
        'a quiet tunnel': `${connectLine}hello, not TLS\r\n`,
        'half a handshake': `${connectLine}\x16\x03\x01`,
      };
      // beside them, plain connections: one that says nothing, one whose headers never end
      const plain = { nothing: '', 'headers that never end': `GET http://127.0.0.1:${quietPort}/ HTTP/1.1\r\nHost: 127.0.0.1\r\n` };
      const [tunnels, slow] = await Promise.all([
        Promise.all(Object.entries(cases).map(async ([name, bytes]) => [name, await rawThroughProxy(bytes, 5000, proxy.port)] as const)),
        Promise.all(Object.entries(plain).map(async ([name, bytes]) => [name, await rawThroughProxy(bytes, 5000, proxy.port)] as const)),
      ]);
      for (const [name, { ended, text }] of tunnels) {
        assert.ok(ended, `${name}: closed (got ${JSON.stringify(text)})`);
        assert.match(text, /^HTTP\/1\.1 200 Connection Established\r\n/);
      }
      for (const [name, { ended, text }] of slow) {
        assert.ok(ended, `${name}: closed by the proxy (got ${JSON.stringify(text)})`);
        assert.match(text, /^HTTP\/1\.1 408 Request Timeout\r\n/, name);
      }
    } finally {
      await proxy.close();
      quiet.close();
    }
  });
});

describe('quiet is not always idle', () => {
  test('inside an intercepted CONNECT: a TLS connection that never asks is closed after the timeout, a WebSocket quiet for longer still echoes', async () => {
    const dir = await tempDir();
    const ca = await openCa(dir);
    const proxy = await startProxy({ host: '127.0.0.1', port: 0, ca: async () => ca, ownPorts: () => [], upstreamTimeoutMs: 300, log: () => {} });
    const secureTarget = createHttpsServer(makeCertificates().selfSigned);
    echoWebSockets(secureTarget as unknown as import('node:http').Server);
    await new Promise<void>((resolve) => secureTarget.listen(0, '127.0.0.1', resolve));
    const port = (secureTarget.address() as AddressInfo).port;
    /** A TLS connection to the target through a CONNECT, read by the proxy. */
    const intercepted = () =>
      new Promise<import('node:tls').TLSSocket>((resolve, reject) => {
        const raw = connect(proxy.port, '127.0.0.1');
        raw.once('error', reject);
        raw.write(`CONNECT localhost:${port} HTTP/1.1\r\nHost: localhost:${port}\r\n\r\n`);
        raw.once('data', () => {
          const secure = connectTls({ socket: raw, servername: 'localhost', rejectUnauthorized: false, ALPNProtocols: ['http/1.1'] });
          secure.once('secureConnect', () => resolve(secure)).once('error', reject);
        });
      });
    try {
      const idle = await intercepted();
      const closed = await new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(false), 3000);
        idle.on('error', () => {});
        idle.once('close', () => {
          clearTimeout(timer);
          resolve(true);
        });
      });
      assert.ok(closed, 'a TLS connection that asks nothing is closed');

      const ws = await intercepted();
      let got = Buffer.alloc(0);
      ws.on('data', (chunk: Buffer) => (got = Buffer.concat([got, chunk])));
      ws.write(`GET /chat HTTP/1.1\r\nHost: localhost:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${Buffer.from('0123456789abcdef').toString('base64')}\r\nSec-WebSocket-Version: 13\r\n\r\n`);
      // three times the proxy's timeout without a frame
      await new Promise((resolve) => setTimeout(resolve, 1000));
      assert.match(got.toString('latin1'), /^HTTP\/1\.1 101 /);
      assert.ok(!ws.destroyed, 'the quiet WebSocket is still open');
      got = Buffer.alloc(0);
      ws.write(textFrame('still here', true));
      for (const deadline = Date.now() + 3000; readTextFrame(got) === undefined && Date.now() < deadline; ) await new Promise((resolve) => setTimeout(resolve, 20));
      assert.equal(readTextFrame(got), 'echo: still here');
      ws.destroy();
    } finally {
      await proxy.close();
      secureTarget.close();
    }
  });
});

describe('pipelined requests', () => {
  const pipelined = (path: string, n: number, last = '') =>
    Array.from({ length: n }, (_, i) => `GET http://127.0.0.1:${targetPort}${path} HTTP/1.1\r\nHost: 127.0.0.1:${targetPort}\r\n${i === n - 1 ? last : ''}\r\n`).join('');
  const reached = (path: string) => received.filter((head) => head.split(' ')[1] === path).length;

  test('to a silent target: one request at a time reaches it, none once the client has left; a client with more than 64 waiting is cut off', async () => {
    answers.set('/silent-pipelined', []);
    const client = connect(proxyPort, '127.0.0.1');
    client.on('error', () => {});
    client.write(pipelined('/silent-pipelined', 10));
    await new Promise((resolve) => setTimeout(resolve, 300));
    client.destroy();
    await new Promise((resolve) => setTimeout(resolve, 700));
    assert.equal(reached('/silent-pipelined'), 1, 'the nine behind the first were never sent');

    answers.set('/silent-flood', []);
    const flood = connect(proxyPort, '127.0.0.1');
    flood.on('error', () => {});
    const closed = new Promise((resolve) => flood.once('close', resolve));
    flood.write(pipelined('/silent-flood', 500));
    await closed;
    await new Promise((resolve) => setTimeout(resolve, 300));
    // the first may not have reached it yet when the client was cut
    assert.ok(reached('/silent-flood') <= 1, `${reached('/silent-flood')} reached the target`);
    await healthy();
  });

  test('to a kept-alive target: each goes on the connection the one before it used (the next was sent before the agent had that connection back, and opened another)', async () => {
    const { text } = await rawThroughProxy(pipelined('/which-connection', 3, 'Connection: close\r\n'));
    const used = [...text.matchAll(/\[(\d+)\]/g)].map((m) => m[1]);
    assert.equal(used.length, 3, JSON.stringify(text));
    assert.equal(new Set(used).size, 1, `the target's connections used: ${used.join(', ')}`);
  });

  test('to an answering target: each answered in order, each sent once the one before it was answered', async () => {
    for (const n of [1, 2, 3]) answers.set(`/in-order-${n}`, `HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nans${n}`);
    const bytes = [1, 2, 3].map((n) => pipelined(`/in-order-${n}`, 1, n === 3 ? 'Connection: close\r\n' : '')).join('');
    const { text, ended } = await rawThroughProxy(bytes);
    assert.ok(ended);
    assert.deepEqual([...text.matchAll(/ans\d/g)].map((m) => m[0]), ['ans1', 'ans2', 'ans3']);
    for (const n of [1, 2, 3]) assert.equal(reached(`/in-order-${n}`), 1);
  });
});

describe('a request body that is not HTTP', () => {
  test('a bad chunk in a request being forwarded: a 400 at once that says so, the target\'s request cut, nothing stored (it waited for the target\'s time limit, then a 502 blamed the target)', async () => {
    answers.set('/bad-chunk-body', []);
    const started = Date.now();
    const { text, ended } = await rawThroughProxy(
      `POST http://127.0.0.1:${targetPort}/bad-chunk-body HTTP/1.1\r\nHost: 127.0.0.1:${targetPort}\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcXX0\r\n\r\n`,
      10_000,
    );
    assert.ok(ended, 'the proxy ends the connection');
    assert.ok(Date.now() - started < 5000, `answered at once, not at the target's time limit (${Date.now() - started} ms)`);
    assert.match(text, /^HTTP\/1\.1 400 Bad Request\r\n/);
    assert.match(text, /400 the request's body is not valid HTTP \(HPE_[A-Z_]+\)\n$/);
    assert.doesNotMatch(text, /502/);
    await healthy();
    await new Promise((resolve) => setTimeout(resolve, 500));
    const list = (await request(assessd.url, `/api/v1/targets/${targetId}/transactions/?limit=1000`)).json.data;
    assert.equal(list.filter((t: any) => new URL(t.url).pathname === '/bad-chunk-body').length, 0);
  });
});

describe('an upgrade pipelined behind a request', () => {
  test('waits for the answer before it: that answer comes first, then the 101 and the upgraded bytes (the 101 came first, and the answer inside the upgraded stream)', async () => {
    answers.set('/before-upgrade', ['HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\n', 'BEFORE']);
    answers.set('/upgrade-after', 'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\nUPGRADED');
    const bytes =
      `GET http://127.0.0.1:${targetPort}/before-upgrade HTTP/1.1\r\nHost: 127.0.0.1:${targetPort}\r\n\r\n` +
      `GET http://127.0.0.1:${targetPort}/upgrade-after HTTP/1.1\r\nHost: 127.0.0.1:${targetPort}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n`;
    const { text } = await rawThroughProxy(bytes, 1500);
    const before = text.indexOf('BEFORE');
    const switched = text.indexOf('101 Switching Protocols');
    assert.ok(before !== -1 && switched !== -1, JSON.stringify(text));
    assert.ok(before < switched, `the answer before the upgrade comes first: ${JSON.stringify(text)}`);
    assert.ok(text.endsWith('UPGRADED'), JSON.stringify(text));
    await healthy();
  });
});

describe('a kept-alive connection the target closed as a request went out on it', () => {
  const reached = (path: string) => received.filter((head) => head.split(' ')[1] === path).length;
  const request = (method: string, path: string, extra = '') => `${method} http://127.0.0.1:${targetPort}${path} HTTP/1.1\r\nHost: 127.0.0.1:${targetPort}\r\nConnection: close\r\n${extra}\r\n`;
  /**
   * An exchange that leaves the target's connection in the proxy's pool, answered and let go (the
   * agent takes a socket back a moment after the answer's end): the pool's most recent, which the
   * next request takes. On a connection of the client's own, so that nothing is pipelined behind it.
   */
  const keptAlive = async () => {
    answers.set('/kept-alive', 'HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nkept');
    assert.match((await rawThroughProxy(get('/kept-alive'))).text, /kept$/);
    await new Promise((resolve) => setTimeout(resolve, 50));
  };

  for (const [mark, how] of [[STALE, 'closed (FIN)'], [STALE_RESET, 'reset (RST)']] as const) {
    test(`${how}: a GET is sent again on a new connection and answered, stored once (it was a 502)`, async () => {
      const path = `/stale-get-${mark === STALE ? 'fin' : 'rst'}`;
      answers.set(path, `${mark}HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nagain`);
      await keptAlive();
      const { text, ended } = await rawThroughProxy(request('GET', path));
      assert.ok(ended);
      assert.match(text, /^HTTP\/1\.1 200 OK\r\n[^]*again$/, JSON.stringify(text));
      // (2 or 3: the connection it went again on may be another kept one the target closes too)
      assert.ok([2, 3].includes(reached(path)), `sent on the closed connection, then on a new one (${reached(path)})`);
      const tx = await stored(path);
      assert.equal(tx.response_status, '200 OK');
      assert.equal(tx.error ?? null, null);
      assert.equal(tx.resent, reached(path) - 1, 'the record says it was sent again');
      await healthy();
    });
  }

  test('a POST (not idempotent: the target may have acted on it) and a request with a body (not kept to be sent again) are not sent again: 502, as before', async () => {
    answers.set('/stale-post', `${STALE}HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nagain`);
    answers.set('/stale-put', `${STALE}HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nagain`);
    for (const [path, bytes] of [['/stale-post', request('POST', '/stale-post')], ['/stale-put', `${request('PUT', '/stale-put', 'Content-Length: 2\r\n')}hi`]] as const) {
      await keptAlive();
      const { text, ended } = await rawThroughProxy(bytes);
      assert.ok(ended);
      assert.match(text, /HTTP\/1\.1 502 Bad Gateway\r\n[^]*reset: 127\.0\.0\.1:\d+ closed the connection/, JSON.stringify(text));
      assert.equal(reached(path), 1, `${path} was sent once`);
    }
    await healthy();
  });
});

describe('an answer that stops coming', () => {
  test('small (held back) or large (streamed): the client gets what came, then its connection ends; stored as cut short by the proxy\'s time limit, not as a target that closed', async () => {
    const recorded: any[] = [];
    const recorder = { targetOf: () => 1, record: (_target: number, exchange: unknown) => void recorded.push(exchange) };
    const dir = await tempDir();
    const ca = await openCa(dir);
    const proxy = await startProxy({ host: '127.0.0.1', port: 0, ca: async () => ca, ownPorts: () => [], upstreamTimeoutMs: 300, recorder, log: () => {} });
    // a head and part of the body, then nothing (the connection stays open)
    const stalling = createServer((socket) => {
      socket.on('error', () => {});
      socket.once('data', (chunk) => {
        const large = chunk.toString('latin1').startsWith('GET /large');
        socket.write(`HTTP/1.1 200 OK\r\nContent-Length: ${large ? 1_000_000 : 10}\r\n\r\npart`);
      });
    });
    await new Promise<void>((resolve) => stalling.listen(0, '127.0.0.1', resolve));
    const port = (stalling.address() as AddressInfo).port;
    try {
      for (const path of ['/small', '/large']) {
        const { text, ended } = await rawExchange(proxy.port, `GET http://127.0.0.1:${port}${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`, 5000);
        assert.ok(ended, `${path}: the client's connection ends`);
        assert.match(text, /^HTTP\/1\.1 200 OK\r\n[^]*part$/, `${path}: ${JSON.stringify(text)}`);
      }
      for (const deadline = Date.now() + 5000; recorded.length < 2 && Date.now() < deadline; ) await new Promise((resolve) => setTimeout(resolve, 50));
      assert.deepEqual(recorded.map((x) => x.error), [
        'the answer was cut short: no byte moved for 0.3 s (the proxy\'s time limit)',
        'the answer was cut short: no byte moved for 0.3 s (the proxy\'s time limit)',
      ]);
    } finally {
      await proxy.close();
      stalling.close();
    }
  });
});

describe('answers with bare LF line ends (as some embedded servers send; browsers and curl read them)', () => {
  const reached = (path: string) => received.filter((head) => head.split(' ')[1] === path).length;

  test('a GET: node\'s strict reading refuses it, so it is sent again on a connection of its own read leniently; relayed, stored once', async () => {
    answers.set('/bare-lf', 'HTTP/1.1 200 OK\nContent-Type: text/plain\nContent-Length: 5\n\nhello');
    answers.set('/bare-lf-mixed', 'HTTP/1.1 404 Not Here\r\nContent-Length: 4\n\r\ngone');
    for (const [path, status, body] of [['/bare-lf', '200 OK', 'hello'], ['/bare-lf-mixed', '404 Not Here', 'gone']] as const) {
      // an origin the proxy has not read leniently yet
      const origin = await anotherOrigin();
      const { text, ended } = await rawThroughProxy(get(path, '', origin.port));
      assert.ok(ended);
      assert.match(text, new RegExp(`^HTTP/1\\.1 ${status}\\r\\n[^]*\\r\\n\\r\\n${body}$`), JSON.stringify(text));
      assert.equal(reached(path), 2, `${path}: read strictly, then again leniently`);
      const tx = await stored(path, origin.id);
      assert.equal(tx.response_status, status);
      assert.equal(tx.error ?? null, null);
      assert.equal(tx.resent, 1, 'the record says it was sent again');
    }
    await healthy();
  });

  test('read leniently, both Content-Length and Transfer-Encoding are still refused: a 502 that says so, the server up', async () => {
    // (each test that has the proxy read leniently does it on an origin of its own: anotherOrigin)
    const origin = await anotherOrigin();
    answers.set('/bare-lf-framing', 'HTTP/1.1 200 OK\nContent-Length: 100\nTransfer-Encoding: chunked\n\n2\nok\n0\n\n');
    const { text, ended } = await rawThroughProxy(get('/bare-lf-framing', '', origin.port));
    assert.ok(ended);
    const failure = `invalid answer: 127.0.0.1:${origin.port} sent both Content-Length and Transfer-Encoding`;
    assert.ok(text.startsWith('HTTP/1.1 502 Bad Gateway\r\n') && text.includes(`502 Bad Gateway: ${failure}\n`), JSON.stringify(text));
    assert.equal((await stored('/bare-lf-framing', origin.id)).error, failure);
    await healthy();
  });

  test('an answer refused for its head (a coding the proxy does not relay) whose rest then fails to parse: one 502, the GET sent once (it was sent again, its answer dropped)', async () => {
    answers.set('/refused-then-garbage', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n5\nhello\r\n0\r\n\r\n');
    const { text } = await rawThroughProxy(get('/refused-then-garbage'));
    assert.match(text, /^HTTP\/1\.1 502 Bad Gateway\r\n[^]*a transfer coding the proxy does not relay/, JSON.stringify(text));
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(reached('/refused-then-garbage'), 1);
  });

  test('a POST is not sent twice: to an origin the proxy has not read leniently, a 502 that says the answer is not HTTP; to one it has (a GET before), sent once on a connection of its own read leniently, relayed', async () => {
    const origin = await anotherOrigin();
    const post = (path: string) => `POST http://127.0.0.1:${origin.port}${path} HTTP/1.1\r\nHost: 127.0.0.1:${origin.port}\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi`;
    answers.set('/bare-lf-post', 'HTTP/1.1 200 OK\nContent-Length: 2\n\nok');
    const { text } = await rawThroughProxy(post('/bare-lf-post'));
    assert.match(text, /^HTTP\/1\.1 502 Bad Gateway\r\n[^]*sent what is not HTTP \(HPE_CR_EXPECTED\)/, JSON.stringify(text));
    assert.equal(reached('/bare-lf-post'), 1);
    // a page first, as a browser loads one before it sends its form
    answers.set('/bare-lf-page', 'HTTP/1.1 200 OK\nContent-Length: 4\n\nform');
    assert.match((await rawThroughProxy(get('/bare-lf-page', '', origin.port))).text, /\r\n\r\nform$/);
    assert.equal(reached('/bare-lf-page'), 2);
    answers.set('/bare-lf-post-after', 'HTTP/1.1 201 Created\nContent-Length: 4\n\ndone');
    answers.set('/control-post-after', 'HTTP/1.1 200 OK\r\nX-Odd: a\x01b\r\nContent-Length: 2\r\n\r\nok');
    for (const [path, status, header, body] of [['/bare-lf-post-after', '201 Created', 'Content-Length: 4', 'done'], ['/control-post-after', '200 OK', 'X-Odd: a\x01b', 'ok']] as const) {
      const after = await rawThroughProxy(post(path));
      assert.ok(after.ended);
      assert.ok(after.text.startsWith(`HTTP/1.1 ${status}\r\n`) && after.text.includes(`\r\n${header}\r\n`) && after.text.endsWith(`\r\n\r\n${body}`), `${path}: ${JSON.stringify(after.text)}`);
      assert.equal(reached(path), 1, `${path}: sent once`);
      const tx = await stored(path, origin.id);
      assert.equal(tx.response_status, status);
      assert.equal(tx.resent ?? 0, 0);
      assert.equal(tx.data, 'hi', 'the body sent, stored');
    }
    // what the proxy learnt is the origin's alone: to another, the same POST is still a 502
    const other = await anotherOrigin();
    const elsewhere = await rawThroughProxy(post('/bare-lf-post-after').replaceAll(String(origin.port), String(other.port)));
    assert.match(elsewhere.text, /^HTTP\/1\.1 502 Bad Gateway\r\n[^]*\(HPE_CR_EXPECTED\)/, JSON.stringify(elsewhere.text));
    await healthy();
  });
});

describe('a control character in a header\'s value (Chromium and curl read \\x01-\\x1f and \\x7f there)', () => {
  const reached = (path: string) => received.filter((head) => head.split(' ')[1] === path).length;

  test('a GET: node\'s strict reading refuses it, so it is asked again and read leniently; node sends no such header, so the head goes on as it came, then the body, then the connection closes; stored once, the header as it came', async () => {
    const cases = [
      ['/control-01', 'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Odd: a\x01b\r\nContent-Length: 5\r\n\r\nhello', 'X-Odd: a\x01b', '200 OK', 'hello'],
      ['/control-7f', 'HTTP/1.1 404 Gone Away\r\nX-Odd: a\x7fb\r\nContent-Length: 4\r\n\r\ngone', 'X-Odd: a\x7fb', '404 Gone Away', 'gone'],
      // chunked: node takes the chunks off, and the body goes chunked again
      ['/control-chunked', 'HTTP/1.1 200 OK\r\nX-Odd: \x1f\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n', 'X-Odd: \x1f', '200 OK', 'abcde'],
      // read leniently with bare LF line ends too
      ['/control-bare-lf', 'HTTP/1.1 200 OK\nX-Odd: a\x01b\nContent-Length: 2\n\nok', 'X-Odd: a\x01b', '200 OK', 'ok'],
    ] as const;
    for (const [path, answer, header, status, body] of cases) {
      answers.set(path, answer);
      // an origin the proxy has not read leniently yet
      const origin = await anotherOrigin();
      // kept alive by the client: the proxy closes the connection itself after the body
      const { text, ended } = await rawThroughProxy(`GET http://127.0.0.1:${origin.port}${path} HTTP/1.1\r\nHost: 127.0.0.1:${origin.port}\r\n\r\n`);
      assert.ok(ended, `${path}: the connection ends with the answer`);
      const [head, rest] = [text.slice(0, text.indexOf('\r\n\r\n')), text.slice(text.indexOf('\r\n\r\n') + 4)];
      assert.ok(head.startsWith(`HTTP/1.1 ${status}\r\n`), `${path}: ${JSON.stringify(text)}`);
      assert.ok(head.split('\r\n').includes(header), `${path}: the header as it came: ${JSON.stringify(head)}`);
      assert.ok(head.split('\r\n').includes('Connection: close'), JSON.stringify(head));
      const chunked = path === '/control-chunked';
      assert.equal(head.split('\r\n').filter((line) => /^transfer-encoding:/i.test(line)).join(), chunked ? 'Transfer-Encoding: chunked' : '', `${path}: ${JSON.stringify(head)}`);
      assert.equal(chunked ? dechunked(rest) : rest, body, path);
      assert.equal(reached(path), 2, `${path}: read strictly, then again leniently`);
      const tx = await stored(path, origin.id);
      assert.equal(tx.response_status, status);
      assert.equal(tx.error ?? null, null);
      assert.equal(tx.resent, 1);
      assert.ok(tx.response_headers.split('\r\n').includes(header), JSON.stringify(tx.response_headers));
    }
    await healthy();
  });

  test('a large one to a client that reads slowly: held back while the client\'s connection is full, then whole, not cut', async () => {
    const origin = await anotherOrigin();
    const size = 16 * 1024 * 1024;
    answers.set('/control-large', `HTTP/1.1 200 OK\r\nX-Odd: \x01\r\nContent-Length: ${size}\r\n\r\n${'a'.repeat(size)}`);
    const socket = connect(proxyPort, '127.0.0.1');
    socket.write(get('/control-large', '', origin.port));
    // nothing read for a while: the proxy's writes fill the connection and wait for it
    socket.pause();
    await new Promise((resolve) => setTimeout(resolve, 500));
    let received = 0;
    socket.on('data', (chunk: Buffer) => (received += chunk.length));
    const ended = new Promise<boolean>((resolve) => {
      socket.on('end', () => resolve(true));
      socket.on('error', () => resolve(false));
      // a bound on the wait that keeps no process alive once the answer has ended
      setTimeout(() => resolve(false), 10_000).unref();
    });
    socket.resume();
    assert.ok(await ended, `the answer ends (${received} bytes came)`);
    socket.destroy();
    const head = `HTTP/1.1 200 OK\r\nX-Odd: \x01\r\nContent-Length: ${size}\r\nConnection: close\r\n\r\n`;
    assert.equal(received, head.length + size);
    await healthy();
  });

  test('on a pipelined connection, after a large answer the client was slow to read: both whole, in order', async () => {
    const size = 8 * 1024 * 1024;
    answers.set('/plain-first', `HTTP/1.1 200 OK\r\nContent-Length: ${size}\r\n\r\n${'f'.repeat(size)}`);
    answers.set('/control-second', 'HTTP/1.1 200 OK\r\nX-Odd: \x01\r\nContent-Length: 6\r\n\r\nsecond');
    const { port } = await anotherOrigin();
    const socket = connect(proxyPort, '127.0.0.1');
    socket.write(`GET http://127.0.0.1:${port}/plain-first HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n` +
      `GET http://127.0.0.1:${port}/control-second HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
    // the first answer fills the connection (node reads the second request once it has gone)
    socket.pause();
    await new Promise((resolve) => setTimeout(resolve, 500));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    const ended = new Promise<boolean>((resolve) => {
      socket.on('end', () => resolve(true));
      socket.on('error', () => resolve(false));
      // a bound on the wait that keeps no process alive once the answer has ended
      setTimeout(() => resolve(false), 10_000).unref();
    });
    socket.resume();
    assert.ok(await ended);
    socket.destroy();
    const text = Buffer.concat(chunks).toString('latin1');
    const second = 'HTTP/1.1 200 OK\r\nX-Odd: \x01\r\nContent-Length: 6\r\nConnection: close\r\n\r\nsecond';
    assert.ok(text.endsWith(`\r\n\r\n${'f'.repeat(size)}${second}`), `${text.length} bytes: ${JSON.stringify(text.slice(0, 200))} ... ${JSON.stringify(text.slice(-200))}`);
    await healthy();
  });

  test('cut short by the target, a body without a length (chunked again) is seen cut: no last chunk; stored as cut short', async () => {
    const origin = await anotherOrigin();
    answers.set('/control-cut', ['HTTP/1.1 200 OK\r\nX-Odd: \x01\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n', CUT]);
    const { text, ended } = await rawThroughProxy(get('/control-cut', '', origin.port));
    assert.ok(ended);
    assert.ok(text.includes('\r\nTransfer-Encoding: chunked\r\n') && text.endsWith('\r\n\r\n5\r\nhello\r\n'), JSON.stringify(text));
    assert.equal((await stored('/control-cut', origin.id)).error, 'the answer was cut short');
    await healthy();
  });

  test('a request body refused while its answer goes out raw (an origin read leniently, a bad chunk after the answer began): the connection is cut, no second answer written into the first', async () => {
    const origin = await anotherOrigin();
    answers.set('/bare-lf-first', 'HTTP/1.1 200 OK\nContent-Length: 2\n\nok');
    await rawThroughProxy(get('/bare-lf-first', '', origin.port));
    // ten more bytes 100 ms apart: still coming when the bad chunk does (300 ms on)
    answers.set('/control-early', ['HTTP/1.1 200 OK\r\nX-Odd: \x01\r\nContent-Length: 14\r\n\r\npart', ...'0123456789']);
    const head = `POST http://127.0.0.1:${origin.port}/control-early HTTP/1.1\r\nHost: 127.0.0.1:${origin.port}\r\nTransfer-Encoding: chunked\r\n\r\n`;
    // a first chunk takes the head to the target (node sends it with the body's first bytes); the target answers at once
    const { text, ended } = await rawExchange(proxyPort, [`${head}2\r\nhi\r\n`, 'zz\r\n'], 3000, 300);
    assert.ok(ended);
    assert.ok(text.startsWith('HTTP/1.1 200 OK\r\nX-Odd: \x01\r\n'), JSON.stringify(text));
    assert.ok(!text.includes('HTTP/1.1 400'), JSON.stringify(text));
    await healthy();
  });

  test('a space before a colon is read as browsers read it (`Transfer-Encoding : chunked`, beside a Content-Length): both framings, a 502 that says so, not a framing the body no longer has', async () => {
    const origin = await anotherOrigin();
    answers.set('/control-spaced-name', 'HTTP/1.1 200 OK\r\nX-Odd: \x01\r\nContent-Length: 100\r\nTransfer-Encoding : chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n');
    const { text } = await rawThroughProxy(get('/control-spaced-name', '', origin.port));
    assert.match(text, /^HTTP\/1\.1 502 Bad Gateway\r\n[^]*sent both Content-Length and Transfer-Encoding/, JSON.stringify(text));
    await healthy();
  });

  test('a POST to an origin the proxy has not read leniently is not sent twice: a 502 that says the answer is not HTTP; a NUL is relayed as it came (Chromium then fails the page, as without the proxy)', async () => {
    const origin = await anotherOrigin();
    answers.set('/control-post', 'HTTP/1.1 200 OK\r\nX-Odd: a\x01b\r\nContent-Length: 2\r\n\r\nok');
    const { text } = await rawThroughProxy(`POST http://127.0.0.1:${origin.port}/control-post HTTP/1.1\r\nHost: 127.0.0.1:${origin.port}\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi`);
    assert.match(text, /^HTTP\/1\.1 502 Bad Gateway\r\n[^]*sent what is not HTTP \(HPE_INVALID_HEADER_TOKEN\)/, JSON.stringify(text));
    assert.equal(reached('/control-post'), 1);
    answers.set('/control-nul', 'HTTP/1.1 200 OK\r\nX-Odd: a\x00b\r\nContent-Length: 2\r\n\r\nok');
    const nul = await rawThroughProxy(get('/control-nul', '', origin.port));
    assert.ok(nul.text.includes('\r\nX-Odd: a\x00b\r\n'), JSON.stringify(nul.text));
    await healthy();
  });

  test('a header line node refuses even read leniently is read as Chromium reads it (a space before the colon dropped, a name that is no token left out): relayed and stored, and the origin is then read leniently', async () => {
    const origin = await anotherOrigin();
    answers.set('/control-name', 'HTTP/1.1 200 OK\r\nX-O\x01dd: b\r\nBad Name: x\r\nX-Frame-Options : DENY\r\nContent-Length: 2\r\n\r\nok');
    const { text } = await rawThroughProxy(get('/control-name', '', origin.port));
    assert.match(text, /^HTTP\/1\.1 200 OK\r\nX-Frame-Options: DENY\r\nContent-Length: 2\r\n/, JSON.stringify(text));
    assert.ok(text.endsWith('\r\n\r\nok') && !text.includes('Bad Name') && !text.includes('X-O\x01dd'), JSON.stringify(text));
    assert.equal(reached('/control-name'), 2, 'read strictly, then again leniently');
    const tx = await stored('/control-name', origin.id);
    assert.deepEqual(tx.response_headers.split('\r\n').filter((line: string) => /frame|bad|x-o/i.test(line)), ['X-Frame-Options: DENY']);
    // read leniently since: a POST answered with bare LF goes on a lenient connection at once
    answers.set('/control-name-post', 'HTTP/1.1 200 OK\nContent-Length: 2\n\nok');
    const post = await rawThroughProxy(`POST http://127.0.0.1:${origin.port}/control-name-post HTTP/1.1\r\nHost: 127.0.0.1:${origin.port}\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi`);
    assert.match(post.text, /^HTTP\/1\.1 200 OK\r\n/, JSON.stringify(post.text));
    assert.equal(reached('/control-name-post'), 1);
    await healthy();
  });
});

describe('the origins the proxy reads leniently', () => {
  test('it remembers the latest 1,024: the first of 1,025 is forgotten (its POST refused again), the last is not', async () => {
    // 1,025 origins on one listener: 127.0.0.N on Linux are all this machine
    const answers = (head: string) => (head.startsWith('POST ') ? 'HTTP/1.1 201 Created\nContent-Length: 4\n\ndone' : 'HTTP/1.1 200 OK\nContent-Length: 2\n\nok');
    const server = createServer((socket) => {
      socket.on('error', () => {});
      let head = '';
      socket.on('data', (chunk: Buffer) => {
        head += chunk.toString('latin1');
        if (head.includes('\r\n\r\n')) socket.end(Buffer.from(answers(head), 'latin1'));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve));
    const port = (server.address() as AddressInfo).port;
    const host = (n: number) => `127.0.${(n >> 8) + 1}.${n & 255}`;
    const post = (n: number) => `POST http://${host(n)}:${port}/form HTTP/1.1\r\nHost: ${host(n)}:${port}\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi`;
    try {
      for (let n = 0; n < 1025; n++) {
        const { text } = await rawThroughProxy(`GET http://${host(n)}:${port}/ HTTP/1.1\r\nHost: ${host(n)}:${port}\r\nConnection: close\r\n\r\n`);
        assert.match(text, /^HTTP\/1\.1 200 OK\r\n/, `${host(n)}: ${JSON.stringify(text)}`);
      }
      assert.match((await rawThroughProxy(post(1024))).text, /^HTTP\/1\.1 201 Created\r\n/, 'the latest is remembered');
      assert.match((await rawThroughProxy(post(0))).text, /^HTTP\/1\.1 502 Bad Gateway\r\n[^]*\(HPE_CR_EXPECTED\)/, 'the first is forgotten');
    } finally {
      server.close();
    }
  });
});
