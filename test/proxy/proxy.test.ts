/**
 * The intercepting proxy, as `npm start` runs it, driven by real clients: curl (-x, --cacert),
 * openssl s_client (-proxy), raw sockets for CONNECT tunnels and WebSockets, and Chromium with the
 * CA in its NSS database. Its targets are local servers: http, https with a self-signed certificate,
 * a TCP echo, WebSocket echoes.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { createHash, generateKeyPairSync, X509Certificate } from 'node:crypto';
import { chmod, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { Agent as HttpAgent, createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { connect, createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { connect as connectTls } from 'node:tls';
import { promisify } from 'node:util';
import { launchChromium } from '../helpers/browser.ts';
import { always, serveHostile } from '../helpers/hostile-target.ts';
import { makeCertificates } from '../engine/fixtures/certs.ts';
import { openCa } from '../../src/proxy/ca.ts';
import { request, runCli, spawnServer, tempDir, type ChildServer } from '../helpers/server.ts';
import { acceptFor, echoWebSockets, readTextFrame, textFrame } from '../helpers/websocket.ts';

const run = promisify(execFile);
const GiB = 1024 * 1024 * 1024;

interface Seen {
  method: string;
  url: string;
  headers: Record<string, string | string[] | undefined>;
  rawHeaders: string[];
  bytes: number;
  sha256: string;
  body: string;
  remotePort: number;
}

/** When each `/slow` request reached the target (answered 1.5 s later). */
const slowCame: number[] = [];

/** A target that says what it received; `/big?bytes=N` streams N bytes; `/slow` answers after 1.5 s; `/endless` never ends. */
function recordingTarget(seen: Seen[]) {
  return (req: IncomingMessage, res: import('node:http').ServerResponse) => {
    const url = new URL(req.url!, 'http://x');
    if (url.pathname === '/big') {
      const total = Number(url.searchParams.get('bytes'));
      const block = Buffer.alloc(1024 * 1024, 'a');
      let sent = 0;
      res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': String(total) });
      Readable.from((function* () {
        while (sent < total) {
          const n = Math.min(block.length, total - sent);
          sent += n;
          yield block.subarray(0, n);
        }
      })()).pipe(res);
      return;
    }
    if (url.pathname === '/slow') {
      slowCame.push(Date.now());
      setTimeout(() => res.end('the slow answer'), 1500);
      return;
    }
    if (url.pathname === '/endless') {
      res.writeHead(200, { 'Content-Type': 'application/octet-stream' });
      const block = Buffer.alloc(64 * 1024, 'e');
      const timer = setInterval(() => res.write(block), 5);
      res.on('close', () => clearInterval(timer));
      return;
    }
    const hash = createHash('sha256');
    let bytes = 0;
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      hash.update(chunk);
      if (bytes < 64 * 1024) chunks.push(chunk);
    });
    req.on('end', () => {
      const entry: Seen = { method: req.method!, url: req.url!, headers: req.headers, rawHeaders: req.rawHeaders, bytes, sha256: hash.digest('hex'), body: Buffer.concat(chunks).toString(), remotePort: req.socket.remotePort! };
      seen.push(entry);
      res.setHeader('X-Seen', String(seen.length));
      res.end(JSON.stringify({ method: entry.method, url: entry.url, bytes }));
    });
  };
}

function listen(server: Server | import('node:net').Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}

let dir: string;
let assessd: ChildServer;
let proxyUrl: string;
let proxyPort: number;
let caFile: string;
const httpSeen: Seen[] = [];
const httpsSeen: Seen[] = [];
let httpPort: number;
let httpsPort: number;
let echoPort: number;
const servers: Array<Server | import('node:net').Server> = [];

function proxyOf(server: ChildServer): string {
  const match = /proxy on (http:\/\/\S+);/.exec(server.output());
  assert.ok(match, server.output());
  return match[1]!;
}

async function curl(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run('curl', ['-sS', '--max-time', '60', ...args], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** Status and headers of a response written raw on `socket` (its head), once it has arrived. */
function readHead(socket: Socket | import('node:tls').TLSSocket): Promise<{ head: string; rest: Buffer }> {
  return new Promise((resolve, reject) => {
    let buffered = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      const end = buffered.indexOf('\r\n\r\n');
      if (end < 0) return;
      socket.off('data', onData);
      resolve({ head: buffered.subarray(0, end).toString('latin1'), rest: buffered.subarray(end + 4) });
    };
    socket.on('data', onData);
    socket.once('error', reject);
  });
}

/** A CONNECT through the proxy: the socket once the proxy answered, and its answer's head. */
async function tunnel(authority: string, headers = ''): Promise<{ socket: Socket; head: string }> {
  const socket = connect(proxyPort, '127.0.0.1');
  socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n${headers}\r\n`);
  const { head } = await readHead(socket);
  return { socket, head };
}

/** A WebSocket handshake on `socket` (`path` as sent), then one text frame: its echo. */
async function webSocketEcho(socket: Socket | import('node:tls').TLSSocket, path: string, host: string): Promise<{ head: string; echo: string }> {
  const key = Buffer.from('0123456789abcdef').toString('base64');
  socket.write(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`);
  const { head, rest } = await readHead(socket);
  assert.match(head, /^HTTP\/1\.1 101/);
  assert.match(head, new RegExp(`Sec-WebSocket-Accept: ${acceptFor(key).replace(/[+/]/g, '\\$&')}`, 'i'));
  socket.write(textFrame('hello through the proxy', true));
  const echo = await new Promise<string>((resolve) => {
    let buffered = rest;
    const check = () => {
      const text = readTextFrame(buffered);
      if (text !== undefined) resolve(text);
    };
    check();
    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      check();
    });
  });
  socket.destroy();
  return { head, echo };
}

before(async () => {
  const certs = makeCertificates();
  const http = createServer(recordingTarget(httpSeen));
  echoWebSockets(http);
  const https = createHttpsServer(certs.selfSigned, recordingTarget(httpsSeen));
  echoWebSockets(https as unknown as Server);
  const echo = createTcpServer((socket) => socket.pipe(socket));
  servers.push(http, https, echo);
  [httpPort, httpsPort, echoPort] = await Promise.all([listen(http), listen(https), listen(echo)]);
  dir = await tempDir();
  assessd = await spawnServer(['--port', '0', '--data-dir', dir]);
  proxyUrl = proxyOf(assessd);
  proxyPort = Number(new URL(proxyUrl).port);
  const ca = await request(assessd.url, '/api/v1/proxy/ca.pem');
  assert.equal(ca.status, 200);
  caFile = join(dir, 'served-ca.pem');
  await writeFile(caFile, ca.text);
});

after(async () => {
  assessd?.proc.kill('SIGTERM');
  await assessd?.exited;
  for (const server of servers) server.close();
});

describe('the CA and its leaves', () => {
  test('GET /api/v1/proxy says where the proxy listens and the CA\'s fingerprint; ca.pem is the certificate only, as a download', async () => {
    const info = (await request(assessd.url, '/api/v1/proxy')).json.data;
    assert.equal(info.enabled, true);
    assert.equal(info.url, proxyUrl);
    assert.equal(info.port, proxyPort);
    const pem = await readFile(caFile, 'utf8');
    const ca = new X509Certificate(pem);
    assert.equal(info.ca.fingerprint256, ca.fingerprint256);
    assert.ok(ca.ca, 'a CA certificate');
    assert.match(ca.subject, /assessd proxy CA on /);
    assert.doesNotMatch(pem, /PRIVATE KEY/);
    const res = await request(assessd.url, '/api/v1/proxy/ca.pem');
    assert.match(String(res.headers['content-disposition']), /attachment; filename="assessd-proxy-ca\.pem"/);
    assert.equal((await request(assessd.url, '/api/v1/proxy/ca.pem', { auth: false })).status, 401);
  });

  test('the CA\'s key lives in DATA_DIR/proxy/ca.pem, mode 0600; openssl reads the CA as a CA', async () => {
    const file = join(dir, 'proxy', 'ca.pem');
    assert.equal((await stat(file)).mode & 0o777, 0o600);
    assert.match(await readFile(file, 'utf8'), /BEGIN PRIVATE KEY/);
    const { stdout } = await run('openssl', ['x509', '-in', caFile, '-noout', '-text']);
    assert.match(stdout, /CA:TRUE/);
    assert.match(stdout, /Certificate Sign/);
    assert.match(stdout, /ecdsa-with-SHA256/);
  });

  test('a CA file left readable by others (copied back, restored) is made 0600 again when read; the CA is the same, its subject without an escaped comma', async () => {
    const dataDir = await tempDir();
    const made = await openCa(dataDir);
    const file = join(dataDir, 'proxy', 'ca.pem');
    await chmod(file, 0o644);
    const read = await openCa(dataDir);
    assert.equal((await stat(file)).mode & 0o777, 0o600);
    assert.equal(read.fingerprint256, made.fingerprint256);
    assert.match(read.subject, /OU=data directory [0-9a-f]{12}$/);
  });

  test('a leaf for a DNS name and one for an IP address: openssl verifies each against the CA (s_client through the proxy)', async () => {
    for (const [connectTo, verify] of [[`localhost:${httpsPort}`, ['-verify_hostname', 'localhost', '-servername', 'localhost']], [`127.0.0.1:${httpsPort}`, ['-verify_ip', '127.0.0.1']]] as const) {
      const { stdout } = await new Promise<{ stdout: string }>((resolve) => {
        const child = spawn('openssl', ['s_client', '-proxy', `127.0.0.1:${proxyPort}`, '-connect', connectTo, '-CAfile', caFile, '-verify_return_error', '-showcerts', ...verify], { stdio: ['pipe', 'pipe', 'pipe'] });
        let out = '';
        child.stdout.on('data', (c) => (out += c));
        child.stdin.end('');
        child.on('close', () => resolve({ stdout: out }));
      });
      assert.match(stdout, /Verify return code: 0 \(ok\)/, stdout.slice(-500));
      const leaf = new X509Certificate(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/.exec(stdout)![0]);
      assert.equal(leaf.subjectAltName, connectTo.startsWith('localhost') ? 'DNS:localhost' : 'IP Address:127.0.0.1');
      const days = (Date.parse(leaf.validTo) - Date.parse(leaf.validFrom)) / 86_400_000;
      assert.ok(days <= 397, `valid ${days} days`);
      assert.ok(leaf.checkIssued(new X509Certificate(await readFile(caFile))));
      assert.equal(leaf.ca, false);
    }
  });

  test('the CA is made once: a restart keeps it; a file that is not a CA stops the start, naming it', async () => {
    const other = await tempDir();
    const first = await spawnServer(['--port', '0', '--data-dir', other]);
    const fingerprint = (await request(first.url, '/api/v1/proxy')).json.data.ca.fingerprint256;
    first.proc.kill('SIGTERM');
    await first.exited;
    const second = await spawnServer(['--port', '0', '--data-dir', other]);
    assert.equal((await request(second.url, '/api/v1/proxy')).json.data.ca.fingerprint256, fingerprint);
    second.proc.kill('SIGTERM');
    await second.exited;
    await writeFile(join(other, 'proxy', 'ca.pem'), 'not a CA\n');
    const refused = await runCli(['--port', '0', '--data-dir', other]);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, new RegExp(`${join(other, 'proxy', 'ca.pem').replace(/[/.]/g, '\\$&')}.*not the proxy's CA`));
    assert.equal(await readFile(join(other, 'proxy', 'ca.pem'), 'utf8'), 'not a CA\n', 'never overwritten');
  });

  test('a restart loads no cryptography before its first answer (the CA is read when first needed); a CA file whose key and certificate disagree is said at the first CONNECT', async () => {
    const other = await tempDir();
    const first = await spawnServer(['--port', '0', '--data-dir', other]);
    first.proc.kill('SIGTERM');
    await first.exited;
    // a preload that says, as the API starts listening, which of node's TLS modules are loaded
    const hook = join(other, 'loaded-at-listen.cjs');
    await writeFile(hook, `const listen = require('node:http').Server.prototype.listen;
let said = false;
require('node:http').Server.prototype.listen = function (...args) {
  this.once('listening', () => { if (said) return; said = true; const loaded = process.moduleLoadList.filter((m) => /^NativeModule (crypto|tls|https)$/.test(m)); process.stderr.write('LOADED AT LISTEN: ' + loaded.join(',') + '\\n'); });
  return listen.apply(this, args);
};
`);
    const second = await spawnServer(['--port', '0', '--data-dir', other], {}, ['--require', hook]);
    try {
      for (let i = 0; i < 100 && !/LOADED AT LISTEN/.test(second.output()); i++) await new Promise((r) => setTimeout(r, 20));
      assert.equal(/LOADED AT LISTEN: (.*)\n/.exec(second.output())?.[1], '', second.output());
      // the Proxy page reads the CA then
      assert.match((await request(second.url, '/api/v1/proxy')).json.data.ca.fingerprint256, /^([0-9A-F]{2}:){31}[0-9A-F]{2}$/);
    } finally {
      second.proc.kill('SIGTERM');
      await second.exited;
    }
    // a key and a certificate that are not each other's: the start goes on, the first CONNECT says why
    const text = await readFile(join(other, 'proxy', 'ca.pem'), 'utf8');
    const otherKey = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
    await writeFile(join(other, 'proxy', 'ca.pem'), `${otherKey}${/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\n/.exec(text)![0]}`);
    const third = await spawnServer(['--port', '0', '--data-dir', other, '--proxy-port', '0']);
    try {
      const port = Number(/proxy on http:\/\/127\.0\.0\.1:(\d+)/.exec(third.output())![1]);
      const answer = await new Promise<string>((resolve, reject) => {
        const socket = connect(port, '127.0.0.1', () => socket.write('CONNECT example.test:443 HTTP/1.1\r\nHost: example.test:443\r\n\r\n'));
        let got = '';
        socket.on('data', (c: Buffer) => (got += c.toString()));
        socket.on('close', () => resolve(got));
        socket.on('error', reject);
      });
      assert.match(answer, /^HTTP\/1\.1 502 [\s\S]*cannot intercept TLS: .*ca\.pem.*not the proxy's CA/);
      assert.match(third.output(), /the proxy cannot intercept TLS: .*not the proxy's CA/);
    } finally {
      third.proc.kill('SIGTERM');
      await third.exited;
    }
  });

  test('the CA\'s key never leaves the data directory: not in a session bundle, not in the API', async () => {
    await request(assessd.url, '/api/v1/targets/', { method: 'POST', form: { target_url: `http://127.0.0.1:${httpPort}/bundled` } });
    const sessions = (await request(assessd.url, '/api/v1/sessions/')).json.data;
    for (const session of sessions) {
      const bundle = await request(assessd.url, `/api/v1/bundles/${session.id}`);
      assert.equal(bundle.status, 200);
      assert.doesNotMatch(bundle.text, /PRIVATE KEY/);
    }
    for (const path of ['/api/v1/proxy', '/api/v1/proxy/ca.pem', '/api/v1/configuration']) assert.doesNotMatch((await request(assessd.url, path)).text, /PRIVATE KEY/);
  });

  test('--no-proxy: no listener, no CA; the API says so', async () => {
    const other = await tempDir();
    const server = await spawnServer(['--port', '0', '--data-dir', other, '--no-proxy']);
    try {
      assert.doesNotMatch(server.output(), /proxy on/);
      assert.deepEqual((await request(server.url, '/api/v1/proxy')).json.data, { enabled: false });
      assert.equal((await request(server.url, '/api/v1/proxy/ca.pem')).status, 404);
      await assert.rejects(stat(join(other, 'proxy')));
    } finally {
      server.proc.kill('SIGTERM');
      await server.exited;
    }
  });
});

describe('HTTP through the proxy', () => {
  test('every method, PATCH included, reaches the target with its body; the answer comes back whole', async () => {
    for (const method of ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']) {
      httpSeen.length = 0;
      const body = method === 'GET' || method === 'HEAD' ? [] : ['--data-binary', `payload of ${method}`];
      const { code, stdout } = await curl('-x', proxyUrl, '-X', method, ...(method === 'HEAD' ? ['-I'] : []), ...body, `http://127.0.0.1:${httpPort}/m?x=${method}`);
      assert.equal(code, 0, method);
      assert.equal(httpSeen.length, 1, method);
      assert.equal(httpSeen[0]!.method, method);
      assert.equal(httpSeen[0]!.url, `/m?x=${method}`);
      if (body.length) assert.equal(httpSeen[0]!.body, `payload of ${method}`);
      if (method !== 'HEAD') assert.equal(JSON.parse(stdout).method, method);
    }
  });

  test('hop-by-hop headers (Connection and what it names, Keep-Alive, Proxy-Authorization, TE) stop at the proxy; Host is the URL\'s', async () => {
    httpSeen.length = 0;
    await curl('-x', proxyUrl, '-H', 'Connection: keep-alive, X-Hop', '-H', 'X-Hop: secret', '-H', 'Keep-Alive: timeout=5', '-H', 'Proxy-Authorization: Basic dTpw', '-H', 'TE: trailers', '-H', 'X-End: kept', '-H', 'Host: other.example', `http://127.0.0.1:${httpPort}/h`);
    const { headers } = httpSeen[0]!;
    for (const name of ['x-hop', 'keep-alive', 'proxy-authorization', 'te']) assert.equal(headers[name], undefined, name);
    assert.equal(headers['x-end'], 'kept');
    assert.equal(headers.host, `127.0.0.1:${httpPort}`);
  });

  test('nothing is answered from a cache: a repeated identical request reaches the target each time, on a kept-alive connection', async () => {
    httpSeen.length = 0;
    const url = `http://127.0.0.1:${httpPort}/same`;
    const { stderr } = await curl('-v', '-x', proxyUrl, url, url, url);
    assert.equal(httpSeen.length, 3);
    assert.match(stderr, /Re-using existing connection/);
    // the proxy kept its own connection to the target alive too
    assert.equal(new Set(httpSeen.map((s) => s.remotePort)).size, 1);
  });

  test('a chunked upload of 8 MiB streams through byte for byte', async () => {
    httpsSeen.length = 0;
    httpSeen.length = 0;
    const payload = Buffer.alloc(8 * 1024 * 1024, 'u');
    const child = spawn('curl', ['-sS', '-x', proxyUrl, '-H', 'Transfer-Encoding: chunked', '-T', '-', `http://127.0.0.1:${httpPort}/upload`]);
    child.stdin.end(payload);
    await new Promise((resolve) => child.on('close', resolve));
    assert.equal(httpSeen[0]!.bytes, payload.length);
    assert.equal(httpSeen[0]!.sha256, createHash('sha256').update(payload).digest('hex'));
  });

  test('a target that fails gets a 502 that says what failed: refused, DNS', async () => {
    const refused = await curl('-i', '-x', proxyUrl, 'http://127.0.0.1:1/');
    assert.match(refused.stdout, /^HTTP\/1\.1 502/);
    assert.match(refused.stdout, /refused: 127\.0\.0\.1:1 refused the connection/);
    const dns = await curl('-i', '-x', proxyUrl, 'http://no-such-host.invalid/');
    assert.match(dns.stdout, /^HTTP\/1\.1 502/);
    assert.match(dns.stdout, /DNS: no-such-host\.invalid could not be resolved/);
  });

  test('a request to assessd itself through its own proxy is refused, not looped: the proxy\'s port and the API\'s, by any of the box\'s names', async () => {
    const apiPort = new URL(assessd.url).port;
    const urls = [`http://127.0.0.1:${proxyPort}/`, `http://localhost:${proxyPort}/x`, `http://127.0.0.1:${apiPort}/debug/health`, `http://[::1]:${apiPort}/debug/health`, `http://${hostname()}:${apiPort}/debug/health`];
    for (const url of urls) {
      const { stdout } = await curl('-i', '-x', proxyUrl, url);
      assert.match(stdout, /^HTTP\/1\.1 403/, url);
      assert.match(stdout, /is assessd itself/, url);
    }
    for (const authority of [`127.0.0.1:${apiPort}`, `[::1]:${apiPort}`]) {
      const { head, socket } = await tunnel(authority);
      socket.destroy();
      assert.match(head, /^HTTP\/1\.1 403/, authority);
    }
  });

  test('an NTLM (or Negotiate) login beside another request to the same site: its last message goes on the connection that got the challenge, as the target requires (it failed every time)', async () => {
    // a target that authenticates connections, as IIS does: the last message answers the challenge of its own connection
    const challenges = new WeakMap<Socket, string>();
    let made = 0;
    const site = createServer((req, res) => {
      const auth = req.headers.authorization ?? '';
      if (req.url === '/asset') return void setTimeout(() => res.end('asset'), 400);
      if (auth === 'NTLM type1') {
        const challenge = `c${++made}`;
        challenges.set(req.socket, challenge);
        res.writeHead(401, { 'WWW-Authenticate': `NTLM ${challenge}`, 'Content-Length': '0' });
        return void res.end();
      }
      if (auth.startsWith('NTLM type3-') && auth.slice('NTLM type3-'.length) === challenges.get(req.socket)) return void res.end('logged in');
      res.writeHead(401, { 'Content-Type': 'text/plain' });
      res.end('the challenge was for another connection');
    });
    await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
    const port = (site.address() as AddressInfo).port;
    // two browser connections to the proxy: the login on one, a page's asset on the other
    const login = new HttpAgent({ keepAlive: true, maxSockets: 1 });
    const assets = new HttpAgent({ keepAlive: true, maxSockets: 1 });
    const viaProxy = (agent: HttpAgent, path: string, authorization?: string) =>
      new Promise<{ status: number; body: string; challenge?: string }>((resolve, reject) => {
        const req = httpRequest({ host: '127.0.0.1', port: proxyPort, path: `http://127.0.0.1:${port}${path}`, agent, headers: authorization ? { authorization } : {} }, (res) => {
          let body = '';
          res.on('data', (chunk: Buffer) => (body += chunk));
          res.on('end', () => resolve({ status: res.statusCode!, body, challenge: res.headers['www-authenticate'] }));
        });
        req.on('error', reject);
        req.end();
      });
    try {
      for (let round = 0; round < 5; round++) {
        const first = await viaProxy(login, '/login', 'NTLM type1');
        assert.equal(first.status, 401);
        const asset = viaProxy(assets, '/asset');
        // the asset's request has taken the connection the challenge came on, were it the pool's
        await new Promise((resolve) => setTimeout(resolve, 100));
        const last = await viaProxy(login, '/login', `NTLM type3-${first.challenge!.slice('NTLM '.length)}`);
        assert.deepEqual([last.status, last.body], [200, 'logged in'], `round ${round}`);
        assert.equal((await asset).body, 'asset');
      }
    } finally {
      login.destroy();
      assets.destroy();
      site.close();
    }
  });

  test('a request not meant for a proxy (origin form) is a 400 that says what the port is', async () => {
    const { stdout } = await curl('-i', `${proxyUrl}/`);
    assert.match(stdout, /^HTTP\/1\.1 400/);
    assert.match(stdout, /this is assessd's proxy/);
  });
});

describe('HTTPS through the proxy', () => {
  test('with the CA trusted, curl reaches an https target through CONNECT, every method, no certificate error; the target\'s self-signed certificate is no obstacle', async () => {
    for (const method of ['GET', 'POST', 'PATCH', 'DELETE']) {
      httpsSeen.length = 0;
      const { code, stdout, stderr } = await curl('-x', proxyUrl, '--cacert', caFile, '-X', method, ...(method === 'GET' ? [] : ['--data-binary', 'secret']), `https://localhost:${httpsPort}/s?m=${method}`);
      assert.equal(code, 0, stderr);
      assert.equal(JSON.parse(stdout).method, method);
      assert.equal(httpsSeen[0]!.method, method);
    }
    // the same name by its address: a leaf for the IP
    const ip = await curl('-x', proxyUrl, '--cacert', caFile, `https://127.0.0.1:${httpsPort}/ip`);
    assert.equal(ip.code, 0, ip.stderr);
  });

  test('without the CA, the client refuses the proxy\'s certificate (it is not a CA the box trusts)', async () => {
    const { code, stderr } = await curl('-x', proxyUrl, `https://localhost:${httpsPort}/`);
    assert.equal(code, 60, stderr);
  });

  test('a CONNECT whose client sends no TLS is tunnelled untouched', async () => {
    const { socket, head } = await tunnel(`127.0.0.1:${echoPort}`);
    assert.match(head, /^HTTP\/1\.1 200/);
    socket.write('plain bytes, no TLS\n');
    const echoed = await new Promise<string>((resolve) => socket.once('data', (chunk: Buffer) => resolve(chunk.toString())));
    socket.destroy();
    assert.equal(echoed, 'plain bytes, no TLS\n');
  });
});

describe('WebSocket through the proxy', () => {
  test('ws://: the upgrade is relayed and frames pass both ways', async () => {
    const socket = connect(proxyPort, '127.0.0.1');
    const { echo } = await webSocketEcho(socket, `http://127.0.0.1:${httpPort}/chat`, `127.0.0.1:${httpPort}`);
    assert.equal(echo, 'echo: hello through the proxy');
  });

  test('wss://: inside an intercepted CONNECT, the upgrade is relayed and frames pass both ways', async () => {
    const { socket } = await tunnel(`localhost:${httpsPort}`);
    const secure = connectTls({ socket, servername: 'localhost', ca: await readFile(caFile), ALPNProtocols: ['http/1.1'] });
    await new Promise((resolve, reject) => secure.once('secureConnect', resolve).once('error', reject));
    const { echo } = await webSocketEcho(secure, '/chat', `localhost:${httpsPort}`);
    assert.equal(echo, 'echo: hello through the proxy');
  });
});

describe('big and cut downloads', () => {
  test('a 1 GiB download streams through; the server\'s memory stays flat (not a copy of the body: bench:proxy measures the figure)', async () => {
    const peak = async () => Number(/VmHWM:\s+(\d+) kB/.exec(await readFile(`/proc/${assessd.proc.pid}/status`, 'utf8'))![1]) * 1024;
    const before = await peak();
    const { code, stdout, stderr } = await curl('-x', proxyUrl, '-o', '/dev/null', '-w', '%{size_download}', `http://127.0.0.1:${httpPort}/big?bytes=${GiB}`);
    assert.equal(code, 0, stderr);
    assert.equal(Number(stdout), GiB);
    const grew = (await peak()) - before;
    // a proxy that buffered would grow by the body; this one by what the allocator keeps of freed reads
    assert.ok(grew <= 128 * 1024 * 1024, `the server's peak RSS grew ${Math.round(grew / 1048576)} MiB`);
  });

  test("a large answer streams with the young generation collected every 4 MiB: the socket reads' buffers are freed as it goes, not when V8 next happens to collect", async () => {
    const other = await tempDir();
    // the server's minor collections, one line each
    const hook = join(other, 'minor-gcs.cjs');
    await writeFile(hook, `const { PerformanceObserver, constants } = require('node:perf_hooks');
new PerformanceObserver((list) => { for (const e of list.getEntries()) if (e.detail.kind === constants.NODE_PERFORMANCE_GC_MINOR) process.stderr.write('MINOR GC\\n'); }).observe({ entryTypes: ['gc'] });
`);
    const server = await spawnServer(['--port', '0', '--data-dir', other], {}, ['--require', hook]);
    try {
      const minorGcs = () => server.output().split('MINOR GC').length - 1;
      // first a warm-up, under the size that counts: what the server collects as it starts is not counted
      const small = await curl('-x', proxyOf(server), '-o', '/dev/null', `http://127.0.0.1:${httpPort}/big?bytes=${4 * 1024 * 1024 - 1}`);
      assert.equal(small.code, 0, small.stderr);
      const before = minorGcs();
      const { code, stderr } = await curl('-x', proxyOf(server), '-o', '/dev/null', `http://127.0.0.1:${httpPort}/big?bytes=${64 * 1024 * 1024}`);
      assert.equal(code, 0, stderr);
      await new Promise((resolve) => setTimeout(resolve, 100));
      // 64 MiB: sixteen of its own, one fewer if a count ran over a chunk's end (V8 alone made 9 here)
      assert.ok(minorGcs() - before >= 15, `${minorGcs() - before} minor collections while 64 MiB streamed`);
    } finally {
      server.proc.kill('SIGTERM');
      await server.exited;
    }
  });

  test('the server killed mid-download: the client sees its connection end', async () => {
    const other = await tempDir();
    const server = await spawnServer(['--port', '0', '--data-dir', other]);
    const child = spawn('curl', ['-sS', '-x', proxyOf(server), `http://127.0.0.1:${httpPort}/endless`]);
    const ended = new Promise<number | null>((resolve) => child.on('close', resolve));
    // killed once the download is under way (a busy machine may take a while to start it)
    await new Promise((resolve) => child.stdout.once('data', resolve));
    child.stdout.resume();
    server.proc.kill('SIGKILL');
    const code = await ended;
    assert.ok(code === 18 || code === 56, `curl ended with ${code}`);
  });
});

describe('recording: exchanges with a target\'s host and port become its transactions', () => {
  /** The target's id, added to the active session. */
  async function targetId(url: string): Promise<number> {
    const created = await request(assessd.url, '/api/v1/targets/', { method: 'POST', form: { target_url: url } });
    assert.ok(created.status === 201 || created.status === 409, created.text);
    const list = (await request(assessd.url, `/api/v1/targets/?target_url=${encodeURIComponent(url)}`)).json.data;
    return list[0].id;
  }
  /** The target's proxy transactions, once `count` of them are stored (the proxy writes in batches). */
  async function stored(id: number, count: number, path = ''): Promise<any[]> {
    for (const deadline = Date.now() + 10_000; ; ) {
      const list = (await request(assessd.url, `/api/v1/targets/${id}/transactions/?limit=1000`)).json.data.filter((t: any) => t.source === 'proxy' && t.url.includes(path));
      if (list.length >= count || Date.now() > deadline) return list;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  test('plain and intercepted requests to a target are stored as its transactions (source proxy), each repeat its own; the certificate the box does not trust is said', async () => {
    const plain = await targetId(`http://127.0.0.1:${httpPort}/`);
    const secure = await targetId(`https://localhost:${httpsPort}/`);
    const url = `http://127.0.0.1:${httpPort}/recorded?q=1`;
    await curl('-x', proxyUrl, url);
    await curl('-x', proxyUrl, url);
    await curl('-x', proxyUrl, '-X', 'PATCH', '--data-binary', 'edited=1', `http://127.0.0.1:${httpPort}/recorded-patch`);
    await curl('-x', proxyUrl, '--cacert', caFile, `https://localhost:${httpsPort}/recorded-secure`);
    const plainOnes = await stored(plain, 3, '/recorded');
    assert.equal(plainOnes.filter((t) => t.url === url).length, 2, JSON.stringify(plainOnes));
    const patch = plainOnes.find((t) => t.method === 'PATCH')!;
    assert.equal(patch.data, 'edited=1');
    assert.equal(patch.response_status, '200 OK');
    const [one] = await stored(secure, 1, '/recorded-secure');
    assert.equal(one.url, `https://localhost:${httpsPort}/recorded-secure`);
    assert.equal(one.tls_problem, 'DEPTH_ZERO_SELF_SIGNED_CERT');
    const full = (await request(assessd.url, `/api/v1/targets/${secure}/transactions/${one.id}`)).json.data;
    assert.match(full.raw_request, /^GET https:\/\/localhost:\d+\/recorded-secure HTTP\/1\.1\r\n/);
    assert.match(full.response_body, /recorded-secure/);
  });

  test('traffic to what is no target is forwarded and counted, not stored', async () => {
    const before = (await request(assessd.url, '/api/v1/proxy')).json.data.counts.unrecorded;
    const { code } = await curl('-x', proxyUrl, `http://localhost:${httpPort}/not-a-target`);
    assert.equal(code, 0);
    const after = (await request(assessd.url, '/api/v1/proxy')).json.data.counts.unrecorded;
    assert.ok(after > before);
  });

  test('a body past the storage cap (16 MiB) is forwarded whole and stored cut, saying so', async () => {
    const plain = await targetId(`http://127.0.0.1:${httpPort}/`);
    const bytes = 20 * 1024 * 1024;
    const { stdout } = await curl('-x', proxyUrl, '-o', '/dev/null', '-w', '%{size_download}', `http://127.0.0.1:${httpPort}/big?bytes=${bytes}`);
    assert.equal(Number(stdout), bytes);
    const [big] = await stored(plain, 1, `/big?bytes=${bytes}`);
    assert.equal(big.response_size, bytes);
    assert.equal(big.response_body_truncated, true);
  });

  test('a request body past the storage cap is forwarded whole and stored cut, saying so everywhere; its replay and its code need a body of one\'s own', async () => {
    const plain = await targetId(`http://127.0.0.1:${httpPort}/`);
    const payload = Buffer.alloc(17 * 1024 * 1024, 'u');
    httpSeen.length = 0;
    const child = spawn('curl', ['-sS', '-o', '/dev/null', '-x', proxyUrl, '--data-binary', '@-', `http://127.0.0.1:${httpPort}/upload?cut`]);
    child.stdin.end(payload);
    await new Promise((resolve) => child.on('close', resolve));
    assert.equal(httpSeen[0]!.bytes, payload.length, 'forwarded whole');
    const [up] = await stored(plain, 1, '/upload?cut');
    assert.equal(up.request_body_truncated, true, 'the list says so');
    const base = `/api/v1/targets/${plain}/transactions`;
    const full = (await request(assessd.url, `${base}/${up.id}`)).json.data;
    assert.equal(full.request_body_truncated, true, 'the transaction says so');
    assert.equal(full.data.length, 16 * 1024 * 1024);
    const entry = JSON.parse((await request(assessd.url, `${base}/har`)).text).log.entries.find((e: any) => e._id === up.id);
    assert.equal(entry.request.bodySize, payload.length, 'the HAR gives the size sent');
    assert.equal(entry._request_truncated, true);
    const code = await request(assessd.url, `${base}/hrt/${up.id}`, { method: 'POST', form: { language: 'bash' } });
    assert.equal(code.status, 400);
    assert.match(code.json.message, /stored cut \(16777216 of the 17825792 bytes sent\)/);
    const replay = await request(assessd.url, `${base}/${up.id}/replay`, { method: 'POST', form: {} });
    assert.equal(replay.status, 400);
    assert.match(replay.json.message, /stored cut/);
    httpSeen.length = 0;
    const edited = await request(assessd.url, `${base}/${up.id}/replay`, { method: 'POST', form: { body: 'mine' } });
    assert.equal(edited.status, 201, edited.text);
    assert.equal(httpSeen[0]!.bytes, 4);
  });

  test('eight 12 MiB downloads at once (each under the 16 MiB cap, together past the 64 MiB kept for records): each forwarded whole and stored, cut only where the room ran out; the room comes back', async () => {
    const plain = await targetId(`http://127.0.0.1:${httpPort}/`);
    const bytes = 12 * 1024 * 1024;
    const before = (await request(assessd.url, '/api/v1/proxy')).json.data.counts;
    const paths = Array.from({ length: 8 }, (_, i) => `/big?bytes=${bytes}&at-once=${i}`);
    const sizes = await Promise.all(paths.map((path) => curl('-x', proxyUrl, '-o', '/dev/null', '-w', '%{size_download}', `http://127.0.0.1:${httpPort}${path}`)));
    assert.deepEqual(sizes.map(({ stdout }) => Number(stdout)), paths.map(() => bytes));
    const list = await stored(plain, 8, 'at-once=');
    assert.equal(list.length, 8, JSON.stringify(list.map((t) => t.url)));
    for (const t of list) assert.equal(t.response_size, bytes);
    const after = (await request(assessd.url, '/api/v1/proxy')).json.data.counts;
    assert.equal(after.recorded - before.recorded, 8);
    assert.equal(after.dropped, 0);
    // every capture gave its bytes back: a body under the cap, alone, is stored whole again
    await curl('-x', proxyUrl, '-o', '/dev/null', `http://127.0.0.1:${httpPort}/big?bytes=${bytes}&alone`);
    const [alone] = await stored(plain, 1, '&alone');
    assert.equal(alone.response_body_truncated, undefined, 'a 12 MiB body alone is kept whole');
    const body = await request(assessd.url, `/api/v1/targets/${plain}/transactions/${alone.id}/body`);
    assert.equal(body.raw.length, bytes);
  });

  test('a WebSocket handshake is stored (101); its frames pass, not stored', async () => {
    const plain = await targetId(`http://127.0.0.1:${httpPort}/`);
    const socket = connect(proxyPort, '127.0.0.1');
    await webSocketEcho(socket, `http://127.0.0.1:${httpPort}/recorded-chat`, `127.0.0.1:${httpPort}`);
    const [handshake] = await stored(plain, 1, '/recorded-chat');
    assert.equal(handshake.response_status, '101 Switching Protocols');
  });

  test('SIGTERM to the compiled server while a request is in flight through it: curl gets the whole answer, the server exits 0, and the restarted one holds the exchange', async () => {
    const other = await tempDir();
    const first = await spawnServer(['--port', '0', '--data-dir', other]);
    const created = await request(first.url, '/api/v1/targets/', { method: 'POST', form: { target_url: `http://127.0.0.1:${httpPort}/` } });
    assert.equal(created.status, 201);
    const before = slowCame.length;
    const answered = curl('-x', proxyOf(first), `http://127.0.0.1:${httpPort}/slow`);
    for (const deadline = Date.now() + 10_000; slowCame.length === before && Date.now() < deadline; ) await new Promise((resolve) => setTimeout(resolve, 20));
    assert.ok(slowCame.length > before, 'the request reached the target');
    first.proc.kill('SIGTERM');
    const { code, stdout } = await answered;
    assert.deepEqual([code, stdout], [0, 'the slow answer']);
    assert.equal(await first.exited, 0);
    const second = await spawnServer(['--port', '0', '--data-dir', other]);
    try {
      const id = (await request(second.url, '/api/v1/targets/')).json.data[0].id;
      const stored = (await request(second.url, `/api/v1/targets/${id}/transactions/`)).json.data.map((t: any) => [new URL(t.url).pathname, t.response_status]);
      assert.deepEqual(stored, [['/slow', '200 OK']]);
    } finally {
      second.proc.kill('SIGTERM');
      await second.exited;
    }
  });

  test('a download cut by a kill -9 of the server leaves no half transaction', async () => {
    const other = await tempDir();
    const first = await spawnServer(['--port', '0', '--data-dir', other]);
    const created = await request(first.url, '/api/v1/targets/', { method: 'POST', form: { target_url: `http://127.0.0.1:${httpPort}/` } });
    assert.equal(created.status, 201);
    await curl('-x', proxyOf(first), `http://127.0.0.1:${httpPort}/whole-before`);
    await new Promise((resolve) => setTimeout(resolve, 600));
    const child = spawn('curl', ['-sS', '-x', proxyOf(first), '-o', '/dev/null', `http://127.0.0.1:${httpPort}/endless`]);
    await new Promise((resolve) => setTimeout(resolve, 400));
    first.proc.kill('SIGKILL');
    await new Promise((resolve) => child.on('close', resolve));
    const second = await spawnServer(['--port', '0', '--data-dir', other]);
    try {
      const id = (await request(second.url, '/api/v1/targets/')).json.data[0].id;
      const urls = (await request(second.url, `/api/v1/targets/${id}/transactions/`)).json.data.map((t: any) => new URL(t.url).pathname);
      assert.deepEqual(urls, ['/whole-before']);
    } finally {
      second.proc.kill('SIGTERM');
      await second.exited;
    }
  });
});

describe('beyond loopback', () => {
  test('the proxy needs the token as its Basic password: 407 without it (plain and CONNECT), forwarded with it', async () => {
    const other = await tempDir();
    const server = await spawnServer(['--port', '0', '--data-dir', other, '--proxy-host', '0.0.0.0']);
    try {
      const proxy = proxyOf(server);
      const token = (await readFile(join(other, 'token'), 'utf8')).trim();
      const bare = await curl('-i', '-x', proxy, `http://127.0.0.1:${httpPort}/t`);
      assert.match(bare.stdout, /^HTTP\/1\.1 407/);
      assert.match(bare.stdout, /Proxy-Authenticate: Basic realm="assessd proxy"/i);
      const wrong = await curl('-i', '-x', proxy, '-U', 'tester:wrong', `http://127.0.0.1:${httpPort}/t`);
      assert.match(wrong.stdout, /^HTTP\/1\.1 407/);
      const ok = await curl('-x', proxy, '-U', `tester:${token}`, `http://127.0.0.1:${httpPort}/t`);
      assert.equal(JSON.parse(ok.stdout).url, '/t');
      const connectRefused = await curl('-x', proxy, '--cacert', caFile, `https://localhost:${httpsPort}/`);
      assert.notEqual(connectRefused.code, 0);
      assert.match(connectRefused.stderr, /407/);
      const info = (await request(server.url, '/api/v1/proxy')).json.data;
      assert.equal(info.needs_token, true);
    } finally {
      server.proc.kill('SIGTERM');
      await server.exited;
    }
  });
});

describe('Chromium through the proxy', () => {
  test('with the CA in its NSS database (the README\'s commands, on a HOME where Chromium never ran), Chromium browses an https site through the proxy without a certificate error; without it, the error', async () => {
    const home = await tempDir('assessd-chromium-home-');
    const inHome = { cwd: home, env: { ...process.env, HOME: home } };
    const launch = (env: NodeJS.ProcessEnv) =>
      launchChromium({ env, args: [`--proxy-server=${proxyUrl}`, '--proxy-bypass-list=<-loopback>'] });
    const untrusting = await launch({ ...process.env, HOME: home });
    try {
      const page = await untrusting.newPage();
      await assert.rejects(page.goto(`https://localhost:${httpsPort}/untrusted`), /ERR_CERT_AUTHORITY_INVALID/);
    } finally {
      await untrusting.close();
    }
    // as the README writes them, after the download: the database made, then the CA trusted
    const readme = await readFile(join(import.meta.dirname, '..', '..', 'README.md'), 'utf8');
    const from = readme.indexOf('  mkdir -p $HOME/.pki/nssdb');
    const trust = readme.slice(from, readme.indexOf('\n', readme.indexOf('-i assessd-proxy-ca.pem', from)));
    assert.ok(from > 0 && trust.includes('certutil -d sql:$HOME/.pki/nssdb -A'), trust);
    await writeFile(join(home, 'assessd-proxy-ca.pem'), await readFile(caFile));
    await run('sh', ['-c', trust], inHome);
    const browser = await launch({ ...process.env, HOME: home });
    try {
      httpsSeen.length = 0;
      const page = await browser.newPage();
      const response = await page.goto(`https://localhost:${httpsPort}/through-chromium`);
      assert.equal(response!.status(), 200);
      assert.equal(JSON.parse(await page.innerText('body')).url, '/through-chromium');
      const security = await response!.securityDetails();
      assert.match(security!.issuer ?? '', /assessd proxy CA/);
      assert.ok(httpsSeen.some((s) => s.url === '/through-chromium'));
      // a control character in a header's value, which node's server would not send: Chromium reads
      // it from the target, and through the proxy the same
      const odd = await serveHostile(always(Buffer.from('HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Odd: a\x01b\r\nContent-Length: 5\r\n\r\nhello', 'latin1')));
      try {
        const answer = await page.goto(`${odd.url}odd`);
        assert.equal(answer!.status(), 200);
        assert.equal(await answer!.headerValue('x-odd'), 'a\x01b');
        assert.equal(await page.innerText('body'), 'hello');
      } finally {
        await odd.close();
      }
      // a device that answers with bare LF line ends: its page, then its form posted (a POST the
      // proxy cannot send twice, relayed since the page's answer was read leniently)
      const device = await serveHostile((socket, head) => {
        const page = head.startsWith('POST /submit ')
          ? 'submitted'
          : '<!doctype html><title>device</title><form method="post" action="/submit"><input name="pin" value="1234"><button>Log in</button></form>';
        socket.end(Buffer.from(`HTTP/1.1 200 OK\nContent-Type: text/html\nContent-Length: ${page.length}\n\n${page}`, 'latin1'));
      });
      try {
        const loaded = await page.goto(device.url);
        assert.equal(loaded!.status(), 200);
        const [posted] = await Promise.all([page.waitForNavigation(), page.click('button')]);
        assert.equal(posted!.request().method(), 'POST');
        assert.equal(posted!.status(), 200);
        assert.equal(await page.innerText('body'), 'submitted');
      } finally {
        await device.close();
      }
    } finally {
      await browser.close();
    }
  });

  test('a CA made again for a data directory (ca.pem deleted) is trusted by the same commands beside the old one, and docs/SECURITY.md\'s removal removes both', async () => {
    const home = await tempDir('assessd-nss-home-');
    const inHome = { cwd: home, env: { ...process.env, HOME: home } };
    const readme = await readFile(join(import.meta.dirname, '..', '..', 'README.md'), 'utf8');
    const from = readme.indexOf('  mkdir -p $HOME/.pki/nssdb');
    const trust = readme.slice(from, readme.indexOf('\n', readme.indexOf('-i assessd-proxy-ca.pem', from)));
    const dataDir = await tempDir();
    const first = await openCa(dataDir);
    await rm(join(dataDir, 'proxy', 'ca.pem'));
    const second = await openCa(dataDir);
    assert.notEqual(second.fingerprint256, first.fingerprint256);
    for (const ca of [first, second]) {
      await writeFile(join(home, 'assessd-proxy-ca.pem'), ca.certPem);
      await run('sh', ['-c', trust], inHome);
    }
    const nss = join(home, '.pki', 'nssdb');
    const listed = async () => (await run('certutil', ['-L', '-d', `sql:${nss}`])).stdout.split('\n').filter((line) => line.startsWith('assessd proxy CA')).length;
    assert.equal(await listed(), 2);
    const security = await readFile(join(import.meta.dirname, '..', '..', 'docs', 'SECURITY.md'), 'utf8');
    const removal = /`(while certutil [^`]+)`/.exec(security)![1]!;
    await run('sh', ['-c', removal], inHome);
    assert.equal(await listed(), 0);
  });
});
