/**
 * The replay route (the repeater) against real servers: a stored request sent again lands on the
 * target as recorded, or as edited; another host or port is refused and nothing is sent; the answer
 * is a new transaction; a self-signed https target answers; a silent one is a 502 saying why.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { request, startServer, useToken, type TestServer } from '../helpers/server.ts';
import { entryOf, importHar, type EntrySpec } from '../evidence/helpers.ts';

const TOKEN = 'replay-test-token';
let server: TestServer;
let site: Server;
let tls: Server;
let silent: Server;
let port: number;
/** What the site received, in order. */
const received: { method: string; url: string; headers: [string, string][]; body: string }[] = [];

function record(req: IncomingMessage, done: (body: string) => void): void {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const headers: [string, string][] = [];
    for (let i = 0; i < req.rawHeaders.length; i += 2) headers.push([req.rawHeaders[i], req.rawHeaders[i + 1]]);
    const body = Buffer.concat(chunks).toString();
    received.push({ method: req.method!, url: req.url!, headers, body });
    done(body);
  });
}

function selfSigned(): { key: string; cert: string } {
  const dir = mkdtempSync(join(tmpdir(), 'assessd-replay-cert-'));
  try {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'),
      '-days', '2', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
    return { key: readFileSync(join(dir, 'key.pem'), 'utf8'), cert: readFileSync(join(dir, 'cert.pem'), 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const listen = (s: Server) => new Promise<number>((resolve) => s.listen(0, '127.0.0.1', () => resolve((s.address() as AddressInfo).port)));
const harOf = (entries: EntrySpec[]) => JSON.stringify({ log: { version: '1.2', creator: { name: 't', version: '1' }, entries: entries.map(entryOf) } });
const transactions = async (target: number) => (await request(server.url, `/api/v1/targets/${target}/transactions/`)).json.data as { id: number; url: string; source: string }[];
const replay = (target: number, id: number, form: Record<string, string> = {}) =>
  request(server.url, `/api/v1/targets/${target}/transactions/${id}/replay`, { method: 'POST', form });

let target: number;
let tlsTarget: number;
let silentTarget: number;

before(async () => {
  site = createServer((req, res) => record(req, (body) => {
    if (req.url === '/many-headers') {
      res.writeHead(200, Array.from({ length: 17_000 }, (_, i) => [`x${i}`, '1']).flat());
      return res.end('many');
    }
    if (req.url === '/interim-flood') {
      return void req.socket.end(`${'HTTP/1.1 102 Processing\r\n\r\n'.repeat(1001)}HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok`);
    }
    if (req.url === '/odd-head') {
      // as nginx sends `add_header "X-Frame-Options " DENY`, beside a name that is no token: node's parser refuses both
      return void req.socket.end('HTTP/1.1 200 OK\r\nX-Frame-Options : DENY\r\nBad Name: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok');
    }
    if (req.url === '/zipped') {
      res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Encoding': 'gzip' });
      return res.end(gzipSync('decoded answer'));
    }
    res.writeHead(req.method === 'PUT' ? 202 : 200, { 'Content-Type': 'application/json', 'Set-Cookie': 'seen=1' });
    res.end(JSON.stringify({ method: req.method, url: req.url, body }));
  }));
  port = await listen(site);
  tls = createHttpsServer(selfSigned(), (req, res) => record(req, () => {
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    res.end('over tls');
  }));
  const tlsPort = await listen(tls);
  // accepts, never answers
  silent = createServer(() => {});
  const silentPort = await listen(silent);

  server = await startServer({ token: TOKEN, replayTimeoutMs: 1000 });
  useToken(server.port, TOKEN);
  for (const url of [`http://127.0.0.1:${port}/`, `https://127.0.0.1:${tlsPort}/`, `http://127.0.0.1:${silentPort}/`]) {
    await request(server.url, '/api/v1/targets/', { method: 'POST', form: { target_url: url } });
  }
  [target, tlsTarget, silentTarget] = [1, 2, 3];
  const base = `http://127.0.0.1:${port}`;
  const imported = await importHar(server.url, target, harOf([
    {
      url: `${base}/api/cart?item=7`, method: 'POST', body: '{"qty":2,"note":"a \\"quoted\\" $(note)"}',
      // as Chromium records an HTTP/2 request, with the connection's own headers beside
      headers: [[':authority', 'elsewhere.example'], ['Content-Type', 'application/json'], ['Cookie', 'session=s3cr3t'], ['Connection', 'keep-alive'], ['Content-Length', '999'], ['Host', 'wrong.example']],
      status: 201, responseBody: '{"ok":true}', mimeType: 'application/json',
    },
    { url: 'https://cdn.other.example/lib.js', responseBody: 'x' },
    { url: `${base}/zipped`, responseBody: 'old' },
  ]));
  assert.equal(imported.status, 201, imported.text);
  await importHar(server.url, tlsTarget, harOf([{ url: `https://127.0.0.1:${tlsPort}/secure`, headers: [['Accept', '*/*']] }]));
  await importHar(server.url, silentTarget, harOf([{ url: `http://127.0.0.1:${silentPort}/`, responseBody: 'x' }]));
});

after(async () => {
  await server?.close();
  for (const s of [site, tls, silent]) {
    s?.closeAllConnections();
    await new Promise((resolve) => s?.close(resolve));
  }
});

test('a replay as recorded: the request lands on the target with its method, path, headers and body; the answer is a new transaction', async () => {
  received.length = 0;
  const res = await replay(target, 1);
  assert.equal(res.status, 201, res.text);
  const fresh = res.json.data;
  assert.equal(fresh.id, 6, 'the next id (targets 2 and 3 took 4 and 5)');
  assert.equal(fresh.source, 'replay');
  assert.equal(fresh.method, 'POST');
  assert.equal(fresh.url, `http://127.0.0.1:${port}/api/cart?item=7`);
  assert.equal(fresh.response_status, '200 OK');
  assert.deepEqual(JSON.parse(fresh.response_body), { method: 'POST', url: '/api/cart?item=7', body: '{"qty":2,"note":"a \\"quoted\\" $(note)"}' });
  assert.deepEqual(JSON.parse(fresh.session_tokens), [{ name: 'seen', value: '1' }]);
  assert.equal(received.length, 1);
  const got = received[0];
  assert.equal(got.method, 'POST');
  assert.equal(got.url, '/api/cart?item=7');
  assert.equal(got.body, '{"qty":2,"note":"a \\"quoted\\" $(note)"}');
  assert.deepEqual(got.headers, [
    ['Host', `127.0.0.1:${port}`], ['Content-Type', 'application/json'], ['Cookie', 'session=s3cr3t'], ['Content-Length', String(Buffer.byteLength(got.body))], ['Connection', 'close'],
  ]);
  // stored and listed like any other
  const list = await transactions(target);
  assert.deepEqual(list.map((t) => [t.id, t.source]), [[1, 'har'], [2, 'har'], [3, 'har'], [6, 'replay']]);
  const stored = (await request(server.url, `/api/v1/targets/${target}/transactions/6`)).json.data;
  assert.match(stored.raw_request, new RegExp(`^POST http://127\\.0\\.0\\.1:${port}/api/cart\\?item=7 HTTP/1\\.1\\r\\nHost: 127\\.0\\.0\\.1:${port}\\r\\nContent-Type: application/json\\r\\nCookie: session=s3cr3t\\r\\nContent-Length: \\d+\\r\\n\\r\\n\\{"qty"`));
});

test('a replay with edits lands on the target as edited: method, URL, headers, body', async () => {
  received.length = 0;
  const res = await replay(target, 1, { method: 'PUT', url: `http://127.0.0.1:${port}/api/cart?item=9&x=%27`, headers: 'X-Test: one\r\nCookie: a=b\nContent-Type: text/plain', body: 'edited ✓ body' });
  assert.equal(res.status, 201, res.text);
  assert.equal(received.length, 1);
  assert.deepEqual(received[0], {
    method: 'PUT',
    url: '/api/cart?item=9&x=%27',
    headers: [['Host', `127.0.0.1:${port}`], ['X-Test', 'one'], ['Cookie', 'a=b'], ['Content-Type', 'text/plain'], ['Content-Length', String(Buffer.byteLength('edited ✓ body'))], ['Connection', 'close']],
    body: 'edited ✓ body',
  });
  assert.equal(res.json.data.response_status, '202 Accepted');
  assert.equal(res.json.data.method, 'PUT');
  assert.equal(res.json.data.data, 'edited ✓ body');
});

test('another host or port, another scheme, a bad header line or method: 400 saying so, nothing sent, nothing stored', async () => {
  received.length = 0;
  const before = (await transactions(target)).length;
  const refused: [Record<string, string>, string][] = [
    [{ url: `http://localhost:${port}/` }, `Invalid replay: a replay goes to the target's own host and port (127.0.0.1:${port}), not to localhost:${port}`],
    [{ url: `http://127.0.0.1:${port + 1}/api` }, `Invalid replay: a replay goes to the target's own host and port (127.0.0.1:${port}), not to 127.0.0.1:${port + 1}`],
    [{ url: 'http://[::1]/' }, `Invalid replay: a replay goes to the target's own host and port (127.0.0.1:${port}), not to [::1]:80`],
    [{ url: `ftp://127.0.0.1:${port}/` }, 'Invalid replay: a replay is sent over http or https, not ftp'],
    [{ url: '/relative' }, 'Invalid replay: "/relative" is not an absolute URL'],
    // 1 MiB of é is 6 MiB once percent-encoded: past Chromium's 2 MiB (its encoding held the server ~1 s a MiB)
    [{ url: `http://127.0.0.1:${port}/${'é'.repeat(1024 * 1024)}` }, 'Invalid replay: a URL is at most 2097152 characters once percent-encoded (a browser sends none longer)'],
    [{ headers: 'X-Ok: 1\nnot a header' }, 'Invalid replay: line 2 of the headers is not "Name: value": "not a header"'],
    // as many as a transaction may hold: its HAR and bundle would not import again
    [{ headers: 'X-A: 1\n'.repeat(16_385) }, 'Invalid replay: at most 16,384 header lines, not 16,385'],
    // whitespace between the name and its colon (RFC 9112 5.1: a server refuses it), or before the name (a folded line)
    [{ headers: 'X-V : x' }, 'Invalid replay: line 1 of the headers is not "Name: value": "X-V : x"'],
    [{ headers: 'X-Ok: 1\n X-Folded: x' }, 'Invalid replay: line 2 of the headers is not "Name: value": " X-Folded: x"'],
    [{ method: 'GET /x' }, 'Invalid replay: "GET /x" is not an HTTP method'],
    // what a HAR may hold and HTTP cannot carry (node would throw when sending it)
    [{ headers: 'X-Control: a\u0001b' }, 'Invalid replay: the value of X-Control holds a control character (CR, LF, NUL, ...), which a header cannot carry'],
  ];
  for (const [form, message] of refused) {
    const res = await replay(target, 1, form);
    assert.equal(res.status, 400, `${JSON.stringify(form)}: ${res.text}`);
    assert.equal(res.json.message, message);
  }
  // a stored transaction of another host: replayed as it is, it would leave the target
  const outside = await replay(target, 2);
  assert.equal(outside.status, 400);
  assert.match(outside.json.message, /not to cdn\.other\.example:443$/);
  assert.deepEqual(received, []);
  assert.equal((await transactions(target)).length, before);
  assert.equal((await replay(target, 999)).json.message, 'Invalid transaction referenced');
  assert.equal((await replay(99, 1)).json.message, 'Invalid target reference provided');
});

test('an answer with a header line node refuses is stored as Chromium reads it (a space before the colon dropped, a name that is no token left out), not a 502', async () => {
  const res = await replay(target, 1, { url: `http://127.0.0.1:${port}/odd-head`, method: 'GET', body: '' });
  assert.equal(res.status, 201, res.text);
  assert.equal(res.json.data.response_status, '200 OK');
  assert.match(res.json.data.response_headers, /^X-Frame-Options: DENY$/m);
  assert.doesNotMatch(res.json.data.response_headers, /Bad Name/);
});

test('an answer of more header lines than a transaction may hold (17,000): a 502 saying so, nothing stored (its HAR and bundle would not import again)', async () => {
  const before = (await transactions(target)).length;
  const res = await replay(target, 1, { url: `http://127.0.0.1:${port}/many-headers`, method: 'GET', body: '' });
  assert.equal(res.status, 502, res.text);
  assert.match(res.json.message, /the answer has more header lines than the 16,384 a replay reads$/);
  assert.equal((await transactions(target)).length, before);
});

test('an answer after more than 1,000 interim (1xx) answers: a 502 saying what it was, nothing stored', async () => {
  const before = (await transactions(target)).length;
  const res = await replay(target, 1, { url: `http://127.0.0.1:${port}/interim-flood`, method: 'GET', body: '' });
  assert.equal(res.status, 502, res.text);
  assert.match(res.json.message, /^The target did not answer: GET http:\/\/127\.0\.0\.1:\d+\/interim-flood: the answer is not valid HTTP \(over 1000 interim \(1xx\) answers\)$/);
  assert.equal((await transactions(target)).length, before);
});

test('a compressed answer is stored decoded; a self-signed https target answers; a silent one is a 502 saying why, nothing stored', async () => {
  const zipped = await replay(target, 3);
  assert.equal(zipped.status, 201);
  assert.equal(zipped.json.data.response_body, 'decoded answer');
  assert.match(zipped.json.data.response_headers, /Content-Encoding: gzip/);

  received.length = 0;
  const secure = await replay(tlsTarget, 4);
  assert.equal(secure.status, 201, secure.text);
  assert.equal(secure.json.data.response_body, 'over tls');
  assert.equal(received[0].url, '/secure');

  const before = (await transactions(silentTarget)).length;
  const res = await replay(silentTarget, 5);
  assert.equal(res.status, 502);
  assert.equal(res.json.status, 'error');
  assert.match(res.json.message, /^The target did not answer: GET http:\/\/127\.0\.0\.1:\d+\/: no complete answer within 1 s$/);
  assert.equal((await transactions(silentTarget)).length, before);
});

test('a recorded header name HTTP cannot carry (a HAR may hold any): 400 saying so, nothing sent', async () => {
  const base = `http://127.0.0.1:${port}`;
  for (const name of ['X Y', '@/etc/hostname']) {
    const imported = await importHar(server.url, target, harOf([{ url: `${base}/odd-name`, headers: [[name, '1']] }]));
    assert.equal(imported.status, 201, imported.text);
    const id = Math.max(...(await transactions(target)).map((t: any) => t.id));
    received.length = 0;
    const res = await replay(target, id);
    assert.equal(res.status, 400, res.text);
    assert.equal(res.json.message, `Invalid replay: ${JSON.stringify(name)} is not a header name (letters, digits and !#$%&'*+.^_\`|~- only)`);
    assert.deepEqual(received, []);
  }
});

test('a header value keeps what is not HTTP\'s whitespace at its ends (a no-break space, U+FEFF, U+3000): only spaces and tabs are trimmed', async () => {
  received.length = 0;
  const value = '\u00a0nbsp\u00a0\ufeff\u3000';
  const res = await replay(target, 1, { headers: `X-V: \t ${value} \t` });
  assert.equal(res.status, 201, res.text);
  const sent = received[0]!.headers.find(([name]) => name === 'X-V')!;
  assert.equal(Buffer.from(sent[1], 'latin1').toString('utf8'), value);
});

test('a header value past ASCII is sent as its UTF-8 bytes, as stored (not as Latin-1, not a 500)', async () => {
  received.length = 0;
  const res = await replay(target, 1, { headers: 'X-Name: José ☃' });
  assert.equal(res.status, 201, res.text);
  const sent = received[0]!.headers.find(([name]) => name === 'X-Name')!;
  // node reads header bytes one to a character
  assert.equal(Buffer.from(sent[1], 'latin1').toString('utf8'), 'José ☃');
  assert.match(res.json.data.raw_request, /\r\nX-Name: José ☃\r\n/);
});
