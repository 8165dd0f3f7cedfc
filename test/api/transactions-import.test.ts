/** HAR import: real exports (Chromium, mitmproxy's savehar shape), hostile documents refused whole, the size limit, the CLI. */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import { request, runCli, spawnServer, startServer, tempDir, type TestServer } from '../helpers/server.ts';
import { entryOf, harOf, importHar } from '../evidence/helpers.ts';

const FIXTURES = join(import.meta.dirname, '..', 'evidence', 'fixtures');
let server: TestServer;

before(async () => {
  server = await startServer({ maxBody: 1024, maxHarBody: 16 * 1024 * 1024 });
  for (const url of ['http://127.0.0.1/', 'https://a.example/', 'https://b.example/']) {
    await request(server.url, '/api/v1/targets/', { method: 'POST', form: { target_url: url } });
  }
});
after(() => server.close());

const list = async (target: number) => (await request(server.url, `/api/v1/targets/${target}/transactions/`)).json.data;
const segments = () => {
  try {
    return readdirSync(join(server.dataDir, 'transactions')).sort();
  } catch {
    return [];
  }
};

test("a HAR Chromium wrote (playwright's recordHar) imports, bodies and cookies as the browser saw them", async () => {
  const har = await readFile(join(FIXTURES, 'chromium.har'));
  // the fixture's site listened on a port of its own: the target is its host, so every entry is out of its scope (port)
  const res = await importHar(server.url, 1, har);
  assert.equal(res.status, 201, res.text);
  const doc = JSON.parse(har.toString());
  assert.deepEqual(res.json.data, { imported: doc.log.entries.length, out_of_scope: doc.log.entries.length, skipped: 0 });
  const rows = await list(1);
  assert.equal(rows.length, doc.log.entries.length);
  const logo = rows.find((t: { url: string }) => t.url.endsWith('/logo.png'));
  assert.equal(logo.binary_response, true);
  const png = await request(server.url, `/api/v1/targets/1/transactions/${logo.id}/body`);
  assert.deepEqual(png.raw.subarray(0, 8), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
  const cart = rows.find((t: { method: string }) => t.method === 'POST');
  assert.equal(JSON.parse(cart.data).note, 'a "quoted" $(note)');
  const noHttpOnly = await request(server.url, `/api/v1/targets/1/transactions/search/?q=${encodeURIComponent('~hs "^set-cookie:(?!.*httponly)"')}&limit=50`);
  assert.ok(noHttpOnly.json.data.data.length >= 2, 'the session cookie set without HttpOnly');
  for (const t of noHttpOnly.json.data.data) assert.match(t.response_headers, /Set-Cookie: (session|auth)=/);
  const login = rows.find((t: { url: string; method: string }) => t.url.endsWith('/login') && t.method === 'POST');
  assert.equal(login.data, 'csrf=abc123&user=alice&pass=hunter2');
});

test("a HAR Firefox's developer tools exported (its network panel's own export) imports, bodies, cookies and form as the browser saw them", async () => {
  const har = await readFile(join(FIXTURES, 'firefox.har'));
  const doc = JSON.parse(har.toString());
  assert.equal(doc.log.creator.name, 'Firefox', 'a HAR Firefox wrote');
  const res = await importHar(server.url, 1, har);
  assert.equal(res.status, 201, res.text);
  assert.deepEqual(res.json.data, { imported: doc.log.entries.length, out_of_scope: doc.log.entries.length, skipped: 0 });
  const rows = (await list(1)).filter((t: { url: string }) => t.url.startsWith(new URL(doc.log.entries[0].request.url).origin));
  assert.equal(rows.length, doc.log.entries.length);
  const logo = rows.find((t: { url: string }) => t.url.endsWith('/logo.png'));
  assert.equal(logo.binary_response, true);
  const png = await request(server.url, `/api/v1/targets/1/transactions/${logo.id}/body`);
  assert.deepEqual(png.raw.subarray(0, 8), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), 'the base64 body kept as bytes');
  const cart = rows.find((t: { url: string }) => t.url.includes('/api/cart'));
  assert.equal(JSON.parse(cart.data).note, 'a "quoted" $(note)');
  const login = rows.find((t: { url: string; method: string }) => t.url.endsWith('/login') && t.method === 'POST');
  assert.equal(login.data, 'csrf=abc123&user=alice&pass=hunter2');
  assert.equal(login.response_status, '302 Found');
  // Firefox repeats Set-Cookie as headers of their own: each is a line, and the filter finds the one without HttpOnly
  const page = rows.find((t: { url: string; method: string }) => t.method === 'GET' && new URL(t.url).pathname === '/');
  const full = (await request(server.url, `/api/v1/targets/1/transactions/${page.id}/`)).json.data;
  assert.match(full.response_headers, /Set-Cookie: session=s3cr3t; Path=\/\r?\n/);
  assert.match(full.response_headers, /Set-Cookie: theme=dark; Path=\/; HttpOnly; SameSite=Lax/);
  const noHttpOnly = await request(server.url, `/api/v1/targets/1/transactions/search/?q=${encodeURIComponent(`~hs "^set-cookie:(?!.*httponly)" & ~u ${new URL(page.url).port}`)}&limit=50`);
  assert.deepEqual(noHttpOnly.json.data.data.map((t: { id: number }) => t.id).sort(), [login.id, page.id].sort());
});

test("a HAR in mitmproxy's savehar shape (pretty-printed, null timings, base64 bodies) imports", async () => {
  const har = await readFile(join(FIXTURES, 'mitmproxy.har'));
  const res = await importHar(server.url, 1, har);
  assert.equal(res.status, 201, res.text);
  const doc = JSON.parse(har.toString());
  assert.equal(res.json.data.imported, doc.log.entries.length);
  const rows = await list(1);
  // the path and query as the HAR has them (a URL parser would escape the quote: %27)
  const missing = rows.find((t: { url: string }) => t.url.includes("/missing?id=1'"));
  assert.equal(missing.response_status, '404 Not Found');
  const post = rows.filter((t: { data: string }) => t.data === 'user=bob&pass=p%40ss');
  assert.equal(post.length, 1);
});

test('scope_only keeps the entries of the target\'s host and port only; entries with no answer or not http(s) are skipped', async () => {
  const har = harOf([{ url: 'https://a.example/1' }, { url: 'https://a.example:8443/2' }, { url: 'https://b.example/3' }, { url: 'http://a.example/4' }, { url: 'https://a.example/5', status: 0 }]);
  const doc = JSON.parse(har);
  doc.log.entries.push({ ...entryOf({ url: 'https://a.example/x' }), request: { ...entryOf({ url: 'x' }).request as object, url: 'data:text/plain,hi' } });
  const res = await importHar(server.url, 2, JSON.stringify(doc), '?scope_only=true');
  assert.equal(res.status, 201, res.text);
  assert.deepEqual(res.json.data, { imported: 1, out_of_scope: 3, skipped: 2 });
  assert.deepEqual((await list(2)).map((t: { url: string }) => t.url), ['https://a.example/1']);
});

/** Each hostile document, and the field its refusal must name. */
const HOSTILE: [string, string | Buffer, RegExp][] = [
  ['truncated', harOf([{ url: 'https://a.example/' }]).slice(0, -20), /log\.entries\[0\]/],
  ['not JSON', 'this is not json at all', /\(document\)/],
  ['a JSON array', '[1,2,3]', /\(document\)/],
  ['no entries', '{"log":{"version":"1.2"}}', /log\.entries/],
  ['a 10 MB header', harOf([{ url: 'https://a.example/' }, { url: 'https://a.example/', headers: [['X-Big', 'x'.repeat(10 * 1024 * 1024)]] }]), /log\.entries\[1\]\.request\.headers\[0\]\.value/],
  ['nesting 1000 deep', `{"log":{"entries":[{"request":${'['.repeat(1000)}${']'.repeat(1000)}}]}}`, /log\.entries\[0\]\.request/],
  ['invalid base64', JSON.stringify({ log: { entries: [entryOf({ url: 'https://a.example/' }), { ...entryOf({ url: 'https://a.example/' }), response: { status: 200, headers: [], content: { text: 'not*base64!', encoding: 'base64' } } }] } }), /log\.entries\[1\]\.response\.content\.text/],
  ['bytes that are not UTF-8', Buffer.concat([Buffer.from('{"log":{"entries":[{"request":{"url":"https://a.example/'), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from('"}}]}}')]), /log\.entries\[0\]\.request\.url/],
  ['a status that is no number', JSON.stringify({ log: { entries: [{ ...entryOf({ url: 'https://a.example/' }), response: { status: '200', headers: [], content: {} } }] } }), /log\.entries\[0\]\.response\.status/],
  ['a method that is no token', JSON.stringify({ log: { entries: [{ ...entryOf({ url: 'https://a.example/' }), request: { method: 'GET /x', url: 'https://a.example/', headers: [] } }] } }), /log\.entries\[0\]\.request\.method/],
  ['a header name with a line break', harOf([{ url: 'https://a.example/', headers: [['X-A\r\nInjected', 'v']] }]), /log\.entries\[0\]\.request\.headers\[0\]\.name/],
  // the parser's body texts were known by their shape: this one was taken for one, and a 500
  ['a body text that is an object shaped as the parser\'s own', JSON.stringify({ log: { entries: [{ ...entryOf({ url: 'https://a.example/' }), response: { status: 200, headers: [], content: { text: { bodyText: true, bytes: 'x' } } } }] } }), /log\.entries\[0\]\.response\.content\.text/],
  ['a bad date', JSON.stringify({ log: { entries: [{ ...entryOf({ url: 'https://a.example/' }), startedDateTime: 'yesterday' }] } }), /startedDateTime/],
  ['a day the month does not have (Date.parse reads it as March 1st)', JSON.stringify({ log: { entries: [{ ...entryOf({ url: 'https://a.example/' }), startedDateTime: '2024-02-30T10:00:00Z' }] } }), /startedDateTime/],
];

for (const [name, body, field] of HOSTILE) {
  test(`a hostile HAR (${name}) is a 400 naming the entry and the field, and nothing is stored`, async () => {
    const before = { rows: (await list(3)).length, files: segments(), seq: server.store.stats.acknowledged };
    const res = await importHar(server.url, 3, body);
    assert.equal(res.status, 400, `${name}: ${res.text.slice(0, 200)}`);
    assert.equal(res.json.status, 'fail');
    assert.match(res.json.message, /^Invalid HAR/, name);
    assert.match(res.json.message, field, name);
    assert.equal(Object.keys(res.json.data).length, 1, 'data names the field');
    assert.match(Object.keys(res.json.data)[0], field);
    assert.equal((await list(3)).length, before.rows, 'no transaction stored');
    assert.deepEqual(segments(), before.files, 'no file left behind');
    assert.equal(server.store.stats.acknowledged, before.seq, 'no change made');
  });
}

test('a HAR over --max-har-body is a 413, whether it says its length or not; --max-body does not bound this route', async () => {
  const big = harOf(Array.from({ length: 8 }, (_, i) => ({ url: `https://c.example/${i}`, responseBody: 'x'.repeat(100 * 1024) })));
  assert.ok(big.length > 1024, 'over --max-body (1 KiB here)');
  const ok = await importHar(server.url, 3, big);
  assert.equal(ok.status, 201, 'under --max-har-body');
  const over = Buffer.alloc(17 * 1024 * 1024, ' ');
  const declared = await importHar(server.url, 3, over);
  assert.equal(declared.status, 413);
  assert.equal(declared.json.message, 'Request body too large');
  // chunked: no length said, refused once the bytes go past the limit
  const chunked = await new Promise<{ status: number }>((resolve, reject) => {
    const url = new URL(`${server.url}/api/v1/targets/3/transactions/`);
    import('node:http').then(({ request: r }) => {
      const req = r({ hostname: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' } }, (res) => {
        res.resume();
        resolve({ status: res.statusCode! });
      });
      req.on('error', () => {});
      req.write(`{"log":{"entries":[${JSON.stringify(entryOf({ url: 'https://b.example/' }))},`);
      const filler = Buffer.alloc(1024 * 1024, ' ');
      let sent = 0;
      const more = () => {
        while (sent < 18 && req.write(filler)) sent++;
        if (sent < 18) req.once('drain', () => (sent++, more()));
        else req.end(']}}');
      };
      more();
    }, reject);
  });
  assert.equal(chunked.status, 413);
});

test('a program embedding the server exits once close() resolves, after a HAR refused mid-body (its request time limit held the process 30 s: the request never closed)', { timeout: 60_000 }, async () => {
  const dir = await tempDir();
  const program = `
    import { start } from './src/index.ts';
    const server = await start({ host: '127.0.0.1', port: 0, dataDir: ${JSON.stringify(dir)}, noToken: true, noProxy: true, log: () => {} });
    const post = (path, body, type) => fetch(server.url + path, { method: 'POST', body, headers: { 'content-type': type } });
    await post('/api/v1/targets/', 'target_url=https://a.example/', 'application/x-www-form-urlencoded');
    // a header of 10 MB is refused while the body still comes: the client sends it whole all the same
    const har = JSON.stringify({ log: { entries: [{ startedDateTime: '2026-01-01T00:00:00Z', request: { method: 'GET', url: 'https://a.example/', headers: [{ name: 'X-Big', value: 'x'.repeat(10 * 1024 * 1024) }] } }] } });
    const res = await post('/api/v1/targets/1/transactions/', har, 'application/json');
    await res.text();
    await server.close();
    console.log(res.status, JSON.stringify(process.getActiveResourcesInfo().filter((r) => r === 'Timeout')));
  `;
  // the time limit only catches the 30 s hold: the program takes ~2 s
  const { stdout } = await new Promise<{ stdout: string }>((resolve, reject) => {
    execFile(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', program], { cwd: join(import.meta.dirname, '..', '..'), timeout: 20_000 }, (err, out, errOut) => {
      if (err) reject(new Error(`${err.message}: ${errOut}`));
      else resolve({ stdout: out });
    });
  });
  assert.equal(stdout.trim(), '400 []', 'the HAR refused, and no timer left once closed');
});

test('an invalid HAR refused at its first byte: a client sending its whole body first still reads the 400 (the rest is read and dropped, never a reset)', async () => {
  const body = Buffer.alloc(12 * 1024 * 1024, ' ');
  body.write('not json');
  const { written, answer } = await new Promise<{ written: Error | null | undefined; answer: string }>((resolve) => {
    const socket = connect(server.port, '127.0.0.1');
    let answer = '';
    let written: Error | null | undefined;
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')));
    socket.on('error', (err) => (written ??= err));
    socket.on('close', () => resolve({ written, answer }));
    // as Python's http.client does: the whole body written before the answer is read
    socket.write(`POST /api/v1/targets/1/transactions/ HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`);
    socket.write(body, (err) => (written ??= err ?? null));
  });
  assert.equal(written, null, `the body was written whole: ${written}`);
  assert.match(answer, /^HTTP\/1\.1 400 /);
  assert.match(answer, /"message":"Invalid HAR: \(document\): /);
});

test("Firefox's way of repeating Set-Cookie (one value, lines joined by newlines) becomes one header per line; NUL and CR become spaces", async () => {
  await request(server.url, '/api/v1/targets/', { method: 'POST', form: { target_url: 'https://ff.example/' } });
  const res = await importHar(server.url, 4, harOf([{ url: 'https://ff.example/', responseHeaders: [['Set-Cookie', 'a=1; HttpOnly\nb=2; Path=/'], ['X-Odd', 'one\u0000two\rthree']] }]));
  assert.equal(res.status, 201, res.text);
  const [row] = await list(4);
  const t = (await request(server.url, `/api/v1/targets/4/transactions/${row.id}`)).json.data;
  assert.equal(t.response_headers, 'Set-Cookie: a=1; HttpOnly\r\nSet-Cookie: b=2; Path=/\r\nX-Odd: one two three');
  assert.deepEqual(JSON.parse(t.session_tokens).map((c: { name: string }) => c.name), ['a', 'b']);
});

// the time limit catches only a freeze: the import takes well under a second, and took ~2 min when
// a regex trimmed the URL (quadratic over a run of spaces inside it)
test('a value\'s lines count as headers against the bound of 16,384 (262,144 line breaks in one value filled the memory); a URL with a long run of spaces inside it imports', { timeout: 30_000 }, async () => {
  await request(server.url, '/api/v1/targets/', { method: 'POST', form: { target_url: 'https://lines.example/' } });
  const id = (await request(server.url, '/api/v1/targets/')).json.data.find((t: { target_url: string }) => t.target_url === 'https://lines.example/').id as number;
  const tooMany = await importHar(server.url, id, harOf([{ url: 'https://lines.example/', responseHeaders: [['X-Lines', 'a\n'.repeat(16_384)]] }]));
  assert.equal(tooMany.status, 400, tooMany.text);
  assert.match(tooMany.json.message, /entries\[0\]\.response\.headers: has more than 16384 headers \(each line of a value is one\)/);
  const spaced = `https://lines.example/a${' '.repeat(400_000)}b`;
  const fine = await importHar(server.url, id, harOf([{ url: spaced, responseHeaders: [['X-Lines', 'a\nb']] }]));
  assert.equal(fine.status, 201, fine.text);
  const [row] = await list(id);
  assert.ok(row.url === new URL(spaced).href, `${row.url.slice(0, 60)}... (${row.url.length} characters)`);
});

test('a HAR must come as application/json: anything else is a 415', async () => {
  const res = await request(server.url, '/api/v1/targets/3/transactions/', { method: 'POST', body: harOf([{ url: 'https://b.example/' }]), headers: { 'content-type': 'text/plain' } });
  assert.equal(res.status, 415);
  const form = await request(server.url, '/api/v1/targets/3/transactions/', { method: 'POST', form: { a: 'b' } });
  assert.equal(form.status, 415);
});

test('an import for a target deleted meanwhile, or unknown, is refused and leaves no file', async () => {
  const res = await importHar(server.url, 99, harOf([{ url: 'https://b.example/' }]));
  assert.equal(res.status, 400);
  assert.equal(res.json.message, 'Invalid target reference provided');
});

test('assessd import-har: offline into a data directory; refused with the equivalent curl while a server holds it', async () => {
  const dir = await tempDir();
  const first = await spawnServer(['--port', '0', '--data-dir', dir]);
  const headers = { authorization: `Bearer ${first.token}` };
  await fetch(`${first.url}/api/v1/targets/`, { method: 'POST', headers, body: new URLSearchParams({ target_url: 'https://a.example/' }) });
  const file = join(dir, '..', `har-${Date.now()}.har`);
  await writeFile(file, harOf([{ url: 'https://a.example/1' }, { url: 'https://other.example/2' }]));
  const refused = await runCli(['import-har', file, '--target', '1', '--data-dir', dir]);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /in use by a running server.*curl -H "Authorization: Bearer \$\(cat .*token\)" -H 'Content-Type: application\/json' --data-binary @.*\/api\/v1\/targets\/1\/transactions\//);
  first.proc.kill('SIGTERM');
  await first.exited;

  const done = await runCli(['import-har', file, '--target', '1', '--data-dir', dir, '--scope-only']);
  assert.equal(done.code, 0, done.stderr);
  assert.match(done.stdout, /imported 1 transaction \(1 out of scope, left out, 0 skipped\) into target 1/);
  const bad = await runCli(['import-har', join(FIXTURES, 'make-fixtures.mjs'), '--target', '1', '--data-dir', dir]);
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /^assessd: import-har: .*Invalid HAR/);
  const noTarget = await runCli(['import-har', file, '--target', '7', '--data-dir', dir]);
  assert.match(noTarget.stderr, /no target 7/);
  // an input that cannot be read is the input's problem, not the data directory's
  const unreadable = await runCli(['import-har', FIXTURES, '--target', '1', '--data-dir', dir]);
  assert.equal(unreadable.code, 1);
  assert.equal(unreadable.stderr, 'assessd: import-har: EISDIR: illegal operation on a directory, read\n');
  assert.equal((await runCli(['import-har', file, '--target', '1', '--data-dir', ''])).stderr, 'assessd: import-har: --data-dir must name a directory, not ""\n');

  const again = await spawnServer(['--port', '0', '--data-dir', dir]);
  const rows = (await (await fetch(`${again.url}/api/v1/targets/1/transactions/`, { headers: { authorization: `Bearer ${again.token}` } })).json()) as { data: { url: string }[] };
  assert.deepEqual(rows.data.map((t) => t.url), ['https://a.example/1']);
  again.proc.kill('SIGTERM');
  await again.exited;
});

test('a base64 body written as MIME writes it (lines of 76, CRLF, a trailing blank) imports as its bytes', async () => {
  await request(server.url, '/api/v1/targets/', { method: 'POST', form: { target_url: 'https://mime.example/' } });
  const target = (await request(server.url, '/api/v1/targets/')).json.data.find((t: { target_url: string }) => t.target_url === 'https://mime.example/').id;
  const bytes = Buffer.from(Array.from({ length: 300 }, (_, i) => (i * 7) % 256));
  const wrapped = `${bytes.toString('base64').replace(/.{76}/g, '$&\r\n')} \n`;
  const entry = entryOf({ url: 'https://mime.example/blob' }) as { response: Record<string, unknown> };
  const res = await importHar(server.url, target, JSON.stringify({ log: { entries: [{ ...entry, response: { ...entry.response, content: { size: bytes.length, mimeType: 'application/octet-stream', text: wrapped, encoding: 'base64' } } }] } }));
  assert.equal(res.status, 201, res.text);
  const [row] = await list(target);
  const body = await request(server.url, `/api/v1/targets/${target}/transactions/${row.id}/body`);
  assert.ok(body.raw.equals(bytes), `${body.raw.length} bytes`);
});

test('a target of 300 segments (300 imports) exports whole through the API, and leaves at most 128 of them open (a descriptor each, kept for good, once used up every descriptor)', { skip: process.platform !== 'linux' && 'reads /proc' }, async () => {
  const { readdirSync: fds } = await import('node:fs');
  await request(server.url, '/api/v1/targets/', { method: 'POST', form: { target_url: 'https://many.example/' } });
  const target = (await request(server.url, '/api/v1/targets/')).json.data.find((t: { target_url: string }) => t.target_url === 'https://many.example/').id;
  for (let i = 0; i < 300; i++) assert.equal((await importHar(server.url, target, harOf([{ url: `https://many.example/${i}` }]))).status, 201);
  const before = fds('/proc/self/fd').length;
  const exported = await request(server.url, `/api/v1/targets/${target}/transactions/har`);
  assert.equal(exported.status, 200);
  assert.equal(JSON.parse(exported.text).log.entries.length, 300);
  const opened = fds('/proc/self/fd').length - before;
  assert.ok(opened <= 128, `${opened} descriptors left open by the export`);
});

test('a HAR whose bodies are written as escapes (\\" \\\\ \\u00e9, megabytes of them, as a JSON answer is; a lone surrogate) imports as their bytes over HTTP (it took a Buffer per character and seconds; a lone surrogate before an escape gained a U+FFFF)', async () => {
  const escaped = (body: string) => JSON.stringify(body);
  // the last: a lone surrogate (stored as U+FFFD, as JSON.parse's text would be as UTF-8), then an escape and text
  const bodies = ['"'.repeat(1024 * 1024), '\\'.repeat(1024 * 1024), `{"k":"v\\n"}${'é'.repeat(200_000)}`, '\ud800\n\ud800x'];
  // JSON.stringify writes é as is: write it as \u00e9, as some tools do
  const entries = bodies.map((body, i) => JSON.stringify(entryOf({ url: `https://b.example/escapes/${i}`, responseBody: 'PLACEHOLDER' })).replace('"PLACEHOLDER"', escaped(body).replace(/é/g, '\\u00e9')));
  const res = await importHar(server.url, 3, `{"log":{"entries":[${entries.join(',')}]}}`);
  assert.equal(res.status, 201, res.text);
  const stored = (await list(3)).filter((t: { url: string }) => t.url.includes('/escapes/'));
  assert.equal(stored.length, bodies.length);
  for (const [i, t] of stored.entries()) {
    const body = await request(server.url, `/api/v1/targets/3/transactions/${t.id}/body`);
    assert.equal(body.status, 200);
    const expected = Buffer.from(bodies[i]!, 'utf8').toString('utf8');
    assert.ok(body.text === expected, `body ${i}: ${body.text.length} characters, ${JSON.stringify(body.text.slice(0, 40))}`);
  }
});

test('what the server records imports again: an answer of 10,000 header lines and a header name of 2 KB (a target\'s, through the proxy) come back from the HAR export and from the session\'s bundle (both were refused: more than 1,000 headers, a name over 1,024 characters)', async () => {
  await request(server.url, '/api/v1/targets/', { method: 'POST', form: { target_url: 'https://heads.example/' } });
  const targets = (await request(server.url, '/api/v1/targets/')).json.data as { id: number; target_url: string }[];
  const id = targets.find((t) => t.target_url === 'https://heads.example/')!.id;
  const responseHeaders: [string, string][] = [...Array.from({ length: 10_000 }, (_, i): [string, string] => [`X-H${i}`, 'v']), [`X-${'n'.repeat(2048)}`, 'long name']];
  const imported = await server.evidence.importExchanges(id, (async function* () {
    yield {
      url: 'https://heads.example/many', method: 'GET', httpVersion: 'HTTP/1.1', requestHeaders: [['Host', 'heads.example'], [`X-${'q'.repeat(2048)}`, 'sent']], requestBody: Buffer.alloc(0),
      status: 200, statusText: 'OK', responseHttpVersion: 'HTTP/1.1', responseHeaders, responseBody: Buffer.from('ok'), responseSize: 2, truncated: false,
      mimeType: 'text/plain', startedAt: 1_700_000_000_000, time: 5, source: 'proxy' as const,
    };
  })());
  assert.ok(imported.ok);
  const har = await request(server.url, `/api/v1/targets/${id}/transactions/har`);
  assert.equal(har.status, 200);
  await request(server.url, '/api/v1/targets/', { method: 'POST', form: { target_url: 'https://heads-again.example/' } });
  const again = ((await request(server.url, '/api/v1/targets/')).json.data as { id: number; target_url: string }[]).find((t) => t.target_url === 'https://heads-again.example/')!.id;
  const back = await request(server.url, `/api/v1/targets/${again}/transactions/`, { method: 'POST', body: har.raw, headers: { 'content-type': 'application/json' } });
  assert.equal(back.status, 201, back.text.slice(0, 300));
  const [row] = await list(again);
  const whole = (await request(server.url, `/api/v1/targets/${again}/transactions/${row.id}`)).json.data;
  assert.equal(whole.response_headers.split('\r\n').length, 10_001);
  assert.ok(whole.response_headers.endsWith(`X-${'n'.repeat(2048)}: long name`));
  assert.ok(whole.raw_request.includes(`X-${'q'.repeat(2048)}: sent`));
  const bundle = await request(server.url, '/api/v1/bundles/1');
  assert.equal(bundle.status, 200);
  const copied = await request(server.url, '/api/v1/bundles/?name=heads-copy', { method: 'POST', body: bundle.raw, headers: { 'content-type': 'application/json' } });
  assert.equal(copied.status, 201, copied.text.slice(0, 300));
});
