/**
 * Copy as code, run: each language's code (from POST .../hrt/<id>) is run by its interpreter
 * against a local server, which records what it received; the bytes must be the recorded
 * request's, whatever the transaction holds, and a canary command planted in it must never run.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { connect, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { request, startServer, type TestServer } from '../helpers/server.ts';
import { makeCertificates } from '../engine/fixtures/certs.ts';
import { entryOf, harOf, importHar } from './helpers.ts';

const execFileAsync = promisify(execFile);
/** An interpreter run without c8's coverage variable: a node child would write a profile for nothing, slowly. */
const run = (file: string, args: string[], options: { maxBuffer?: number; timeout?: number } = {}) =>
  execFileAsync(file, args, { ...options, env: { ...process.env, NODE_V8_COVERAGE: undefined } });

interface Received {
  method: string;
  target: string;
  headers: [string, Buffer][];
  body: Buffer;
}

let assessd: TestServer;
let site: Server;
let origin: string;
/** The same site over https, with a self-signed certificate (a lab's). */
let secureSite: Server;
let secureOrigin: string;
let work: string;
const received: Received[] = [];
let canary: string;

before(async () => {
  work = await mkdtemp(join(tmpdir(), 'assessd-code-'));
  canary = join(work, 'CANARY');
  const answer = (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      // a HEAD's answer announces a body on a kept-alive connection, as servers do: a client that
      // waits for it (curl --request HEAD) hangs until the server closes
      if (req.method === 'HEAD') res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': '5' });
      const headers: [string, Buffer][] = [];
      // header values as the bytes that came (Node reads them as latin1)
      for (let i = 0; i < req.rawHeaders.length; i += 2) headers.push([req.rawHeaders[i], Buffer.from(req.rawHeaders[i + 1], 'latin1')]);
      received.push({ method: req.method!, target: req.url!, headers, body: Buffer.concat(chunks) });
      if (req.method === 'HEAD') return void res.end();
      res.writeHead(200, { 'Content-Type': 'text/plain', Connection: 'close' });
      res.end('the answer\nsecond line NEEDLE here\n');
    });
  };
  // heads of any size: a recorded request may carry a 200 KB header
  site = createServer({ maxHeaderSize: 1024 * 1024 }, answer);
  await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
  secureSite = createHttpsServer(makeCertificates().selfSigned, answer);
  await new Promise<void>((resolve) => secureSite.listen(0, '127.0.0.1', resolve));
  secureOrigin = `https://127.0.0.1:${(secureSite.address() as AddressInfo).port}`;
  origin = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
  assessd = await startServer();
  await request(assessd.url, '/api/v1/targets/', { method: 'POST', form: { target_url: `${origin}/` } });
});
after(async () => {
  await assessd.close();
  site.close();
  secureSite.close();
  await rm(work, { recursive: true, force: true });
});

/** Every way a value could break out of a literal, each trying to create the canary file. */
const hostile = () => [
  `$(touch ${canary})`,
  `\`touch ${canary}\``,
  `'; touch ${canary}; '`,
  `"; touch ${canary}; "`,
  `#{system('touch ${canary}')}`,
  `\${system('touch ${canary}')}`,
  `{$x}\\'\\"\\\\ %s %n`,
].join(' ');

interface Case {
  name: string;
  method: string;
  path: string;
  headers: [string, string][];
  body?: Buffer;
}

const BIG = randomBytes(1024 * 1024);

const cases = (): Case[] => [
  {
    name: 'quotes, $(...), backticks and interpolations in the URL and headers',
    method: 'GET',
    path: `/a'b"c/$(touch%20x)/\`x\`?q=${encodeURIComponent(hostile())}&r='$(id)'&s=#{x}`,
    headers: [['X-Hostile', hostile()], ['Cookie', `session="a'b"; other=$(x)`], ['Accept', '*/*'], ['User-Agent', 'agent "x" $(y)']],
  },
  {
    name: 'a text body with newlines, quotes and non-ASCII characters',
    method: 'POST',
    path: '/submit',
    headers: [['Content-Type', 'text/plain; charset=utf-8'], ['X-Empty', ''], ['X-Repeat', 'one'], ['X-Repeat', 'two'], ['X-Name', 'café ✓']],
    body: Buffer.from(`line 1\nline 2\r\n${hostile()}\n\ttabbed é ✓ 😀 \\ end\n\n`),
  },
  {
    name: 'a binary body with NUL and bytes that are not UTF-8',
    method: 'PATCH',
    path: '/binary',
    headers: [['Content-Type', 'application/octet-stream']],
    body: Buffer.from([0, 255, 254, 10, 13, 39, 34, 36, 40, 96, 0, 0, 0xc3, 0x28, 0x80, 92, 37]),
  },
  {
    name: 'a 1 MB body',
    method: 'PUT',
    path: '/big',
    headers: [['Content-Type', 'application/octet-stream']],
    body: BIG,
  },
  {
    name: 'an HTTP/2 capture (lower-case names, pseudo-headers)',
    method: 'DELETE',
    path: '/h2?x=1',
    headers: [[':method', 'DELETE'], [':authority', 'example'], [':scheme', 'http'], [':path', '/h2?x=1'], ['accept', 'application/json'], ['x-token', 'abc']],
  },
  {
    // a header past what Linux lets one argument hold (128 KiB): curl reads the headers from a file instead
    name: 'a 100 KB URL and a 200 KB header holding quotes, backslashes and $(...)',
    method: 'GET',
    path: `/long?x=${'a'.repeat(100 * 1024)}&q="\\"`,
    headers: [['X-Big', `${'b'.repeat(200 * 1024)} "quoted" \\back\\ ${hostile()}`], ['X-Small', 'one']],
  },  {
    // whitespace is no part of a header's value (RFC 9110 5.5): `X-Ws:   ` is an empty X-Ws, which curl's `X-Ws:` would remove
    name: 'HEAD, and headers whose values are only whitespace',
    method: 'HEAD',
    path: '/head',
    // a no-break space is a value (curl counts only ASCII whitespace): sent as recorded
    headers: [['X-Ws', '   '], ['X-Tab-Only', '\t'], ['X-Nbsp', '\u00a0'], ['X-After', 'kept']],
  },
  {
    // past 1 MiB a text body goes as base64 (as text each byte past ASCII took four)
    name: 'a text body over 1 MiB',
    method: 'POST',
    path: '/big-text',
    headers: [['Content-Type', 'text/plain; charset=utf-8']],
    body: Buffer.from(`${'café ✓ '.repeat(120_000)}${hostile()}`),
  },
  {
    // for the shell, a text body with over 4,096 single quotes goes as base64 (bash reads each '\'' slower the more there are)
    name: "a text body of 5,000 single quotes",
    method: 'POST',
    path: '/quotes',
    headers: [['Content-Type', 'text/plain']],
    body: Buffer.from(`${"it's ".repeat(5000)}${hostile()}`),
  },
];

/** What each language's client adds of its own when the recorded request lacks it. */
const EXTRAS: Record<string, Set<string>> = {
  bash: new Set(['host', 'content-length']),
  python: new Set(['host', 'content-length']),
  php: new Set(['host', 'content-length']),
  ruby: new Set(['host', 'content-length']),
  fetch: new Set(['host', 'connection', 'content-length', 'accept', 'accept-language', 'sec-fetch-mode', 'user-agent', 'accept-encoding']),
  raw: new Set(['host', 'content-length']),
};
/** What each language does not send as recorded: framing (worked out from the body), pseudo-headers, and fetch's forbidden names. */
const dropped = (language: string, name: string) =>
  name.startsWith(':') || ['content-length', 'transfer-encoding'].includes(name) || (language === 'fetch' && ['host', 'connection'].includes(name));

function folded(headers: [string, string][]): [string, string][] {
  const byName = new Map<string, [string, string]>();
  for (const [name, value] of headers) {
    const seen = byName.get(name.toLowerCase());
    if (seen) seen[1] += `, ${value}`;
    else byName.set(name.toLowerCase(), [name, value]);
  }
  return [...byName.values()];
}

async function runCode(language: string, code: Buffer): Promise<void> {
  const file = join(work, `code.${{ bash: 'sh', python: 'py', php: 'php', ruby: 'rb', fetch: 'mjs', raw: 'http' }[language]}`);
  await writeFile(file, code);
  const options = { maxBuffer: 64 * 1024 * 1024, timeout: 60_000 };
  if (language === 'raw') return sendRaw(code);
  const interpreter = { bash: 'bash', python: 'python3', php: 'php', ruby: 'ruby', fetch: process.execPath }[language]!;
  await run(interpreter, [file], options);
}

function sendRaw(bytes: Buffer): Promise<void> {
  const { port } = new URL(origin);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1', () => socket.end(bytes));
    socket.on('data', () => {});
    socket.on('close', () => resolve());
    socket.on('error', reject);
  });
}

function checkReceived(language: string, c: Case, got: Received): void {
  assert.equal(got.method, c.method);
  // the path and query as the HAR has them, without the fragment; fetch parses the URL (the
  // WHATWG parser's writing: quotes and backticks encoded), and its code says so
  const url = new URL(`${origin}${c.path}`);
  assert.equal(got.target, language === 'fetch' ? `${url.pathname}${url.search}` : c.path.replace(/#.*$/, ''), 'the request target');
  assert.ok(got.body.equals(c.body ?? Buffer.alloc(0)), `the body (${got.body.length} bytes received, ${c.body?.length ?? 0} recorded)`);
  let expected = c.headers.filter(([name]) => !dropped(language, name.toLowerCase()));
  // fetch sends a repeated header once, its values joined by ", " (the same field, RFC 9110 5.3)
  if (language === 'fetch') expected = folded(expected);
  // the names as recorded, in their case, but for fetch (which writes them in lower case)
  const exactCase = language !== 'fetch';
  const gotByName = got.headers.map(([name, value]) => [exactCase ? name : name.toLowerCase(), value] as const);
  for (const [name, value] of expected) {
    // (a value's leading and trailing whitespace is no part of it: servers drop it)
    const index = gotByName.findIndex(([n, v]) => n === (exactCase ? name : name.toLowerCase()) && v.equals(Buffer.from(value.replace(/^[ \t]+|[ \t]+$/g, ''))));
    assert.ok(index !== -1, `header ${name}: ${JSON.stringify(value)} not received as recorded; got ${JSON.stringify(got.headers.map(([n, v]) => `${n}: ${v.toString('utf8')}`))}`);
    gotByName.splice(index, 1);
  }
  // an HTTP/2 capture's :authority is its Host (fetch sets its own from the URL, and says so)
  const authority = c.headers.find(([name]) => name === ':authority')?.[1];
  if (authority !== undefined && language !== 'fetch') assert.equal(got.headers.find(([name]) => name.toLowerCase() === 'host')?.[1].toString(), authority, 'Host from :authority');
  const extras = gotByName.filter(([name]) => !EXTRAS[language].has(name.toLowerCase())).map(([name, value]) => `${name}: ${value}`);
  assert.deepEqual(extras, [], `headers the recorded request did not have`);
  if (c.body && c.body.length > 0) {
    const length = got.headers.find(([n]) => n.toLowerCase() === 'content-length');
    assert.equal(length?.[1].toString(), String(c.body.length));
  }
}

let ids: number[] = [];

test('the transactions to copy are imported from a HAR (bodies not UTF-8 as base64)', async () => {
  const entries = cases().map((c) => ({
    url: `${origin}${c.path}`,
    method: c.method,
    headers: c.headers,
    body: c.body,
  }));
  const result = await importHar(assessd.url, 1, harOf(entries));
  assert.equal(result.status, 201, result.text);
  ids = (await request(assessd.url, '/api/v1/targets/1/transactions/')).json.data.map((t: { id: number }) => t.id);
  assert.equal(ids.length, cases().length);
});

for (const language of ['bash', 'python', 'php', 'ruby', 'fetch', 'raw']) {
  test(`${language}: running the code sends exactly the recorded request, and runs nothing planted in it`, async () => {
    const all = cases();
    for (const [i, c] of all.entries()) {
      const res = await request(assessd.url, `/api/v1/targets/1/transactions/hrt/${ids[i]}/`, { method: 'POST', form: { language } });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.headers['content-type'], 'text/plain; charset=utf-8');
      received.length = 0;
      await runCode(language, res.raw);
      assert.equal(received.length, 1, `${c.name}: one request received`);
      checkReceived(language, c, received[0]);
      assert.equal(existsSync(canary), false, `${c.name}: the canary ran`);
    }
  });
}

test('search_string (and searchstring, as the upstream web client sends it) shows the lines of the answer that hold it', async () => {
  for (const name of ['search_string', 'searchstring']) {
    for (const language of ['bash', 'python', 'php', 'ruby', 'fetch']) {
      const res = await request(assessd.url, `/api/v1/targets/1/transactions/hrt/${ids[0]}/`, { method: 'POST', form: { language, [name]: 'needle' } });
      const file = join(work, `search.${{ bash: 'sh', python: 'py', php: 'php', ruby: 'rb', fetch: 'mjs' }[language]}`);
      await writeFile(file, res.raw);
      const interpreter = { bash: 'bash', python: 'python3', php: 'php', ruby: 'ruby', fetch: process.execPath }[language]!;
      const { stdout } = await run(interpreter, [file]);
      assert.match(stdout, /second line NEEDLE here/, `${language} with ${name}`);
      assert.doesNotMatch(stdout, /the answer/, `${language} with ${name}: only the matching lines`);
    }
  }
});

test('a URL past the 128 KiB one argument may hold: the curl code says curl cannot be given it, the python code sends it', async () => {
  const url = `${origin}/longer?x=${'a'.repeat(140 * 1024)}`;
  const result = await importHar(assessd.url, 1, harOf([{ url, method: 'GET', headers: [['X-Case', 'longer']] }]));
  assert.equal(result.status, 201, result.text);
  const rows = (await request(assessd.url, '/api/v1/targets/1/transactions/?limit=100')).json.data as { id: number; url: string }[];
  const id = rows.find((t) => t.url === url)!.id;
  const bash = await request(assessd.url, `/api/v1/targets/1/transactions/hrt/${id}/`, { method: 'POST', form: { language: 'bash' } });
  assert.match(bash.text, /^# The URL is 143\d{3} bytes: past the 128 KiB Linux passes a program as one argument, curl cannot be given it \(the python code sends it\)$/m);
  const python = await request(assessd.url, `/api/v1/targets/1/transactions/hrt/${id}/`, { method: 'POST', form: { language: 'python' } });
  received.length = 0;
  await runCode('python', python.raw);
  assert.equal(received[0]?.target, new URL(url).pathname + new URL(url).search);
});

test('data replaces the body; several languages come one after another; an unknown one is 400', async () => {
  received.length = 0;
  const res = await request(assessd.url, `/api/v1/targets/1/transactions/hrt/${ids[1]}/`, { method: 'POST', form: { language: 'python', data: "new 'body' $(x)" } });
  await runCode('python', res.raw);
  assert.equal(received[0].body.toString(), "new 'body' $(x)");
  const both = await request(assessd.url, `/api/v1/targets/1/transactions/hrt/${ids[1]}/`, { method: 'POST', form: { language: ['bash', 'ruby'] } });
  assert.match(both.text, /^#!\/usr\/bin\/env bash[\s\S]*require 'net\/http'/);
  // a language named again is written once (a 16 MiB body's code was written again for each: 22-35 s held)
  const again = await request(assessd.url, `/api/v1/targets/1/transactions/hrt/${ids[1]}/`, { method: 'POST', form: { language: ['bash', 'ruby', 'bash', 'ruby', 'ruby'] } });
  assert.equal(again.text, both.text);
  const plain = await request(assessd.url, `/api/v1/targets/1/transactions/hrt/${ids[1]}/`, { method: 'POST' });
  assert.match(plain.text, /^#!\/usr\/bin\/env bash\n/, 'bash by default');
  const bad = await request(assessd.url, `/api/v1/targets/1/transactions/hrt/${ids[1]}/`, { method: 'POST', form: { language: 'cobol' } });
  assert.equal(bad.status, 400);
  assert.equal(bad.json.message, 'Invalid parameter type provided');
});

// in a child with a time limit: a freeze holds this process's own timers too
test('a literal of bytes is written in linear time (a string grown a byte at a time held the server 2-10 s a language for a body of 16 MiB), each byte as a byte-at-a-time escaping wrote it; a body over 1 MiB goes as base64 in every language', () => {
  const program = `import { requestAsCode, pythonBytes, rubyBytes, phpBytes } from './src/evidence/code.ts';
    const body = Buffer.from('\u00e9'.repeat(8 * 1024 * 1024));
    const code = (languages) => requestAsCode({ method: 'POST', url: 'http://h/', headers: [['Content-Type', 'text/plain']], body }, languages).toString('latin1');
    const every = Buffer.from(Array.from({ length: 256 }, (_, b) => b));
    const big = Buffer.alloc(16 * 1024 * 1024, 0xe9);
    process.stdout.write(JSON.stringify({
      sizes: [pythonBytes(big).length, rubyBytes(big).length, phpBytes(big).length],
      base64: [code(['bash']).includes('| base64 --decode |'), code(['python']).includes('base64.b64decode('), code(['php']).includes('base64_decode('), code(['ruby']).includes(".unpack1('m0')"), code(['fetch']).includes('atob(')],
      literals: [pythonBytes(every), rubyBytes(every), phpBytes(every)],
    }));`;
  const out = JSON.parse(execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', program], { cwd: join(import.meta.dirname, '..', '..'), timeout: 30_000, maxBuffer: 1 << 20 }).toString());
  assert.deepEqual(out.sizes, [16 * 1024 * 1024 * 4 + 3, 16 * 1024 * 1024 * 4 + 4, 16 * 1024 * 1024 * 4 + 2]);
  assert.deepEqual(out.base64, [true, true, true, true, true]);
  const byteAtATime = (escaped: string) => Array.from({ length: 256 }, (_, b) => (b >= 0x20 && b < 0x7f && !escaped.includes(String.fromCharCode(b)) ? String.fromCharCode(b) : `\\x${b.toString(16).padStart(2, '0')}`)).join('');
  assert.deepEqual(out.literals, [`b'${byteAtATime("\\'")}'`, `"${byteAtATime('\\"#')}".b`, `"${byteAtATime('\\"$')}"`]);
});

test('proxy sends the request through the proxy given (curl, python, ruby, php), as http://host:port or host:port (upstream\'s form)', async () => {
  // the site itself acts as the proxy: a request through a proxy has the absolute URL as its target
  for (const [language, proxy] of [['bash', origin.slice('http://'.length)], ['python', origin], ['ruby', origin.slice('http://'.length)], ['php', origin]]) {
    received.length = 0;
    const res = await request(assessd.url, `/api/v1/targets/1/transactions/hrt/${ids[4]}/`, { method: 'POST', form: { language: language!, proxy: proxy! } });
    assert.equal(res.status, 200, res.text);
    await runCode(language, res.raw);
    assert.equal(received[0].target, `${origin}/h2?x=1`, language);
    // nothing of the client's own for the proxy (curl adds Proxy-Connection), nor credentials none were given
    assert.deepEqual(received[0].headers.filter(([name]) => /^proxy-/i.test(name)), [], language);
  }
});

test('a proxy with credentials (http://user:password@host:port): each language sends them as Basic, in the request the proxy reads or in the CONNECT for https; curl too goes to 8080 when no port is named', async () => {
  // percent escapes in the user info stand for their characters: "us@er" and "p:ss"
  const basic = `Basic ${Buffer.from('us@er:p:ss').toString('base64')}`;
  for (const language of ['bash', 'python', 'php', 'ruby', 'raw']) {
    received.length = 0;
    const res = await request(assessd.url, `/api/v1/targets/1/transactions/hrt/${ids[4]}/`, { method: 'POST', form: { language, proxy: `http://us%40er:p%3Ass@${origin.slice('http://'.length)}` } });
    assert.equal(res.status, 200, res.text);
    await runCode(language, res.raw);
    assert.equal(received[0].target, `${origin}/h2?x=1`, language);
    assert.deepEqual(received[0].headers.filter(([name]) => /^proxy-/i.test(name)).map(([name, value]) => [name.toLowerCase(), value.toString('latin1')]), [['proxy-authorization', basic]], language);
  }

  // https: a proxy that tunnels to the lab site, and notes each CONNECT's headers
  const connects: Record<string, string | string[] | undefined>[] = [];
  const tunnels = createServer();
  tunnels.on('connect', (req: IncomingMessage, client, head: Buffer) => {
    connects.push(req.headers);
    const upstream = connect(Number(new URL(secureOrigin).port), '127.0.0.1', () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
  });
  await new Promise<void>((resolve) => tunnels.listen(0, '127.0.0.1', resolve));
  try {
    const entry = { ...entryOf({ url: `${secureOrigin}/through-tunnel`, method: 'GET', headers: [['X-Lab', '1']] }), _source: 'proxy', _tls_problem: 'DEPTH_ZERO_SELF_SIGNED_CERT' };
    const bundle = { format: 'assessd-session', version: 1, session: { name: 'tunnelled' }, targets: [{ target_url: `${secureOrigin}/tunnelled/`, transactions: [entry] }] };
    const imported = await request(assessd.url, '/api/v1/bundles/', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(bundle) });
    assert.equal(imported.status, 201, imported.text);
    const target = (await request(assessd.url, `/api/v1/targets/?session_id=${imported.json.data.id}`)).json.data[0].id;
    const [tx] = (await request(assessd.url, `/api/v1/targets/${target}/transactions/`)).json.data as { id: number }[];
    for (const language of ['bash', 'python', 'php', 'ruby']) {
      received.length = 0;
      connects.length = 0;
      const proxy = `http://us%40er:p%3Ass@127.0.0.1:${(tunnels.address() as AddressInfo).port}`;
      const res = await request(assessd.url, `/api/v1/targets/${target}/transactions/hrt/${tx!.id}/`, { method: 'POST', form: { language, proxy } });
      assert.equal(res.status, 200, res.text);
      await runCode(language, res.raw);
      assert.equal(connects.length, 1, `${language}: one CONNECT`);
      assert.equal(connects[0]!['proxy-authorization'], basic, language);
      assert.equal(received[0]!.target, '/through-tunnel', language);
      assert.deepEqual(received[0]!.headers.filter(([name]) => /^proxy-/i.test(name)), [], `${language}: the credentials stay with the proxy`);
    }
  } finally {
    tunnels.close();
  }

  const code = (await request(assessd.url, `/api/v1/targets/1/transactions/hrt/${ids[4]}/`, { method: 'POST', form: { language: 'bash', proxy: '127.0.0.1' } })).text;
  assert.match(code, /--proxy 'http:\/\/127\.0\.0\.1:8080'/, "curl's own default would be 1080");
});

test('proxy credentials: each %HH the byte it stands for, as curl reads them, in every language; a recorded Proxy-Authorization left out for them; a control character in them refused (curl would not use the proxy at all)', async () => {
  const imported = await importHar(assessd.url, 1, harOf([{ url: `${origin}/old-proxy`, headers: [['Proxy-Authorization', 'Basic b2xkOm9sZA=='], ['X-Kept', '1']] }]));
  assert.equal(imported.status, 201, imported.text);
  const id = (await request(assessd.url, '/api/v1/targets/1/transactions/')).json.data.find((t: { url: string }) => t.url.endsWith('/old-proxy')).id;
  // a line separator's UTF-8, then bytes that are no UTF-8, then an invalid escape left as written
  const basic = `Basic ${Buffer.concat([Buffer.from('\u2028x:'), Buffer.from([0xff, 0xfe]), Buffer.from('%zz')]).toString('base64')}`;
  for (const language of ['bash', 'python', 'php', 'ruby', 'raw']) {
    received.length = 0;
    const res = await request(assessd.url, `/api/v1/targets/1/transactions/hrt/${id}/`, { method: 'POST', form: { language, proxy: `http://%E2%80%A8x:%FF%fe%zz@${origin.slice('http://'.length)}` } });
    assert.equal(res.status, 200, res.text);
    await runCode(language, res.raw);
    assert.deepEqual(received[0]!.headers.filter(([name]) => /^proxy-auth/i.test(name)).map(([, value]) => value.toString('latin1')), [basic], language);
    assert.ok(received[0]!.headers.some(([name]) => name === 'X-Kept'), language);
  }
  // without credentials of its own, the recorded header is sent as recorded
  received.length = 0;
  await runCode('python', (await request(assessd.url, `/api/v1/targets/1/transactions/hrt/${id}/`, { method: 'POST', form: { language: 'python', proxy: origin } })).raw);
  assert.deepEqual(received[0]!.headers.filter(([name]) => /^proxy-auth/i.test(name)).map(([, value]) => value.toString('latin1')), ['Basic b2xkOm9sZA==']);
  for (const proxy of ['http://u:%0aX@127.0.0.1:3128', 'http://%00@127.0.0.1:3128', 'http://u:p%7F@127.0.0.1:3128']) {
    const refused = await request(assessd.url, `/api/v1/targets/1/transactions/hrt/${id}/`, { method: 'POST', form: { language: 'bash', proxy } });
    assert.equal(refused.status, 400, proxy);
    assert.deepEqual(refused.json.data, { proxy: 'credentials with a control character (%00-%1F, %7F)' });
  }
});

test('a proxy value is data in every language: a line separator and code after it in a fetch comment run nothing; an IPv6 proxy is an address, not a name in brackets', async () => {
  const planted = join(work, 'planted-by-proxy');
  const proxy = `${origin}/\u2028(await import('node:fs')).writeFileSync(${JSON.stringify(planted)}, 'x')//`;
  const res = await request(assessd.url, `/api/v1/targets/1/transactions/hrt/${ids[4]}/`, { method: 'POST', form: { language: 'fetch', proxy } });
  assert.equal(res.status, 200, res.text);
  assert.doesNotMatch(res.raw.toString('utf8'), /writeFileSync|\u2028/);
  received.length = 0;
  await runCode('fetch', res.raw);
  assert.equal(received.length, 1, 'the request itself was sent');
  await assert.rejects(stat(planted), { code: 'ENOENT' });
  for (const [language, expected] of [['python', "'::1'"], ['ruby', '"::1".b']] as const) {
    const code = (await request(assessd.url, `/api/v1/targets/1/transactions/hrt/${ids[4]}/`, { method: 'POST', form: { language, proxy: 'http://[::1]:8080' } })).raw.toString('utf8');
    assert.ok(code.includes(`${expected}, 8080`), `${language}: ${code}`);
  }
});

test('a recorded header name HTTP cannot carry (a HAR may hold any; curl reads -H @file as a file): 400 saying so, except for raw, which writes it as recorded', async () => {
  for (const name of ['@/etc/hostname', 'X Y']) {
    const imported = await importHar(assessd.url, 1, harOf([{ url: `${origin}/odd-header-name`, headers: [[name, '1']] }]));
    assert.equal(imported.status, 201, imported.text);
    const id = Math.max(...(await request(assessd.url, '/api/v1/targets/1/transactions/')).json.data.map((t: { id: number }) => t.id));
    for (const language of ['bash', 'python', 'php', 'ruby', 'fetch']) {
      const res = await request(assessd.url, `/api/v1/targets/1/transactions/hrt/${id}/`, { method: 'POST', form: { language } });
      assert.equal(res.status, 400, `${language}: ${res.text}`);
      assert.equal(res.json.message, `Cannot write this request as code: ${JSON.stringify(name)} is not a header name HTTP can carry (the raw language writes it as recorded)`);
    }
    const raw = await request(assessd.url, `/api/v1/targets/1/transactions/hrt/${id}/`, { method: 'POST', form: { language: 'raw' } });
    assert.equal(raw.status, 200);
    assert.ok(raw.raw.toString('latin1').includes(`\r\n${name}: 1\r\n`));
  }
});

test("a request recorded with the target's certificate not trusted (a lab's self-signed one): the code checks it no more than the replay does, and says so; one recorded without keeps the check", async () => {
  // the proxy's record of a lab target, as a bundle carries it (its _tls_problem is read back from assessd's own files only)
  const entry = (path: string, problem?: string) => ({ ...entryOf({ url: `${secureOrigin}${path}`, method: 'GET', headers: [['X-Lab', '1']] }), _source: 'proxy', ...(problem ? { _tls_problem: problem } : {}) });
  const bundle = { format: 'assessd-session', version: 1, session: { name: 'lab' }, targets: [{ target_url: `${secureOrigin}/`, transactions: [entry('/lab?self=signed', 'DEPTH_ZERO_SELF_SIGNED_CERT'), entry('/trusted')] }] };
  const imported = await request(assessd.url, '/api/v1/bundles/', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(bundle) });
  assert.equal(imported.status, 201, imported.text);
  const target = (await request(assessd.url, `/api/v1/targets/?session_id=${imported.json.data.id}`)).json.data[0].id;
  const list = (await request(assessd.url, `/api/v1/targets/${target}/transactions/`)).json.data as { id: number; url: string; tls_problem?: string }[];
  const lab = list.find((t) => t.url.endsWith('/lab?self=signed'))!;
  assert.equal(lab.tls_problem, 'DEPTH_ZERO_SELF_SIGNED_CERT');
  const trusted = list.find((t) => t.url.endsWith('/trusted'))!;
  const unchecked = /--insecure|_create_unverified_context|'verify_peer' => false|VERIFY_NONE|NODE_TLS_REJECT_UNAUTHORIZED/;
  for (const language of ['bash', 'python', 'php', 'ruby', 'fetch']) {
    const code = await request(assessd.url, `/api/v1/targets/${target}/transactions/hrt/${lab.id}/`, { method: 'POST', form: { language } });
    assert.equal(code.status, 200, code.text);
    assert.match(code.text, /certificate was not trusted when this request was recorded/, language);
    received.length = 0;
    await runCode(language, code.raw);
    assert.equal(received.length, 1, `${language}: the lab target got the request`);
    assert.equal(received[0]!.target, '/lab?self=signed');
    const kept = await request(assessd.url, `/api/v1/targets/${target}/transactions/hrt/${trusted.id}/`, { method: 'POST', form: { language } });
    assert.doesNotMatch(kept.text, unchecked, `${language}: the check stays for a request recorded without a problem`);
  }
});

test('a proxy named on its scheme\'s default port is reached on that port (http://proxy:80 or proxy:80), 8080 only when none is named', async () => {
  const code = async (language: string, proxy: string) => (await request(assessd.url, `/api/v1/targets/1/transactions/hrt/${ids[4]}/`, { method: 'POST', form: { language, proxy } })).text;
  for (const proxy of ['http://127.0.0.1:80', '127.0.0.1:80']) {
    assert.match(await code('python', proxy), /HTTPConnection\('127\.0\.0\.1', 80\)/, proxy);
    assert.match(await code('ruby', proxy), /"127\.0\.0\.1"\.b, 80\)/, proxy);
    assert.match(await code('php', proxy), /tcp:\/\/127\.0\.0\.1:80"/, proxy);
  }
  assert.match(await code('python', 'http://127.0.0.1'), /HTTPConnection\('127\.0\.0\.1', 8080\)/);
  // digits in a password are no port
  assert.match(await code('python', 'http://user:1234@127.0.0.1'), /HTTPConnection\('127\.0\.0\.1', 8080\)/);
  assert.match(await code('python', 'http://user:1234@127.0.0.1:3128'), /HTTPConnection\('127\.0\.0\.1', 3128\)/);
  // the code speaks plain HTTP to a proxy: an https one is refused, not talked to in the clear
  const https = await request(assessd.url, `/api/v1/targets/1/transactions/hrt/${ids[4]}/`, { method: 'POST', form: { language: 'python', proxy: 'https://127.0.0.1:443' } });
  assert.equal(https.status, 400);
  assert.equal(https.json.message, 'Invalid parameter type provided');
});

test('fetch code says where fetch cannot send the recorded request as it was (a body on GET, a lower-case method, merged repeats, trimmed values, its own headers, a control character, TRACE), and runs', async () => {
  const before = (await request(assessd.url, '/api/v1/targets/1/transactions/')).json.data.length;
  const entries = [
    { url: `${origin}/odd`, method: 'GET', headers: [['X-D', '1'], ['X-D', '2'], ['X-Pad', ' padded '], ['X-Ctl', 'a\u0001b'], ['Accept', '*/*']] as [string, string][], body: Buffer.from('a body on a GET') },
    { url: `${origin}/traced`, method: 'TRACE', headers: [] as [string, string][] },
    { url: `${origin}/lower`, method: 'post', headers: [] as [string, string][], body: Buffer.from('x') },
  ];
  assert.equal((await importHar(assessd.url, 1, harOf(entries))).status, 201);
  const all: number[] = (await request(assessd.url, '/api/v1/targets/1/transactions/')).json.data.map((t: { id: number }) => t.id);
  const [odd, traced, lower] = all.slice(before);
  const code = async (id: number) => (await request(assessd.url, `/api/v1/targets/1/transactions/hrt/${id}/`, { method: 'POST', form: { language: 'fetch' } })).raw;
  const oddCode = (await code(odd!)).toString('utf8');
  for (const note of [
    '// fetch sends no body with GET: the recorded body (15 bytes) is left out',
    '// fetch refuses a header value with a control character (it throws): X-Ctl left out',
    '// fetch trims the spaces around the values of X-Pad',
    '// fetch sends X-D once, the values joined by ", "',
    '// fetch adds accept-language, sec-fetch-mode, user-agent, accept-encoding where the recorded request had none',
  ]) assert.ok(oddCode.includes(`${note}\n`), `${note}\n${oddCode}`);
  // it runs (the control character would have made it throw), and sends what it said
  received.length = 0;
  await runCode('fetch', Buffer.from(oddCode));
  assert.equal(received.length, 1);
  assert.equal(received[0]!.headers.find(([n]) => n.toLowerCase() === 'x-d')?.[1].toString(), '1, 2');
  assert.equal(received[0]!.headers.some(([n]) => n.toLowerCase() === 'x-ctl'), false);
  assert.match((await code(traced!)).toString('utf8'), /^\/\/ fetch refuses the method TRACE \(it throws a TypeError\): the other languages send it$/m);
  assert.match((await code(lower!)).toString('utf8'), /^\/\/ fetch sends the method POST, not the recorded post$/m);
});
