/**
 * Grep plugins through the worklist, over transactions built from real exchanges with a local site
 * (each request sent and its answer recorded as a HAR entry, then imported), over a real browser's
 * HAR, and over a tester's own rule file: each distinct value once, with the transactions that show
 * it; ranks; what is absent; a bundle carries the evidence to the new ids.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../../src/paths.ts';
import { addTarget, get, queue, waitFor, writePluginFile, type Api, type Output } from '../helpers/engine.ts';
import { request, startServer, tempDir, useToken, type TestServer } from '../helpers/server.ts';
import { entryOf, importHar, type EntrySpec } from '../evidence/helpers.ts';

const TOKEN = 'grep-plugins-test-token';
let server: TestServer;
let api: Api;
let site: Server;
let origin: string;

type GrepFinding = { rank: number; title: string; detail: string; transactions?: number[]; transactions_total?: number };
type GrepOutput = Omit<Output, 'findings'> & { findings: GrepFinding[] };

let counter = 0;
const PAGE = (token: string) => `<!doctype html><html><head><title>Shop</title><meta name="generator" content="WordPress 6.4.2"></head>
<body><!-- TODO: remove the debug login --><form method="post" action="/login"><input type="hidden" name="csrf" value="${token}">
<input name="user"><input type="password" name="pass"><button>Log in</button></form></body></html>`;

/** A site with something for every shipped grep plugin to find. */
function startSite(): Promise<Server> {
  const s = createServer((req, res) => {
    const path = new URL(req.url!, 'http://x').pathname;
    const common = { Server: 'Apache/2.4.49 (Unix)', 'X-Powered-By': 'Express' };
    if (path === '/') {
      res.writeHead(200, { ...common, 'Content-Type': 'text/html; charset=utf-8', 'Set-Cookie': [`SESSION=${++counter}abc; Path=/`, 'pref=1; Path=/; HttpOnly; SameSite=Lax'], 'Cache-Control': 'public, max-age=600', 'X-Frame-Options': 'ALLOW-FROM https://partner.example' });
      res.end(PAGE(`tok-${counter}`));
    } else if (path === '/about') {
      res.writeHead(200, { ...common, 'Content-Type': 'text/html', 'Content-Security-Policy': "default-src 'self' 'unsafe-inline'", 'Access-Control-Allow-Origin': 'null', 'Cache-Control': 'no-store' });
      res.end('<html><body><?php echo $secret; ?><!--#include virtual="/footer.html" --><p>About</p></body></html>');
    } else if (path === '/app.js') {
      res.writeHead(200, { 'Content-Type': 'application/javascript' });
      res.end('/* build 1.2.3, key in config.js */\nconsole.log(1);');
    } else if (path === '/slow') {
      setTimeout(() => {
        res.writeHead(200, { 'Content-Type': 'text/plain' });
        res.end('slow');
      }, 1100);
    } else {
      res.writeHead(404, { 'Content-Type': 'text/plain' });
      res.end('missing');
    }
  });
  return new Promise((resolve) => s.listen(0, '127.0.0.1', () => resolve(s)));
}

/** Sends a request to the site and records the exchange as a HAR entry. */
function exchange(path: string): Promise<EntrySpec> {
  const url = `${origin}${path}`;
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const headers: [string, string][] = [['Host', new URL(origin).host], ['User-Agent', 'grep-test']];
    httpRequest(url, { headers: Object.fromEntries(headers) }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const responseHeaders: [string, string][] = [];
        for (let i = 0; i < res.rawHeaders.length; i += 2) responseHeaders.push([res.rawHeaders[i], res.rawHeaders[i + 1]]);
        resolve({
          url, headers, status: res.statusCode, statusText: res.statusMessage, responseHeaders,
          responseBody: Buffer.concat(chunks), mimeType: String(res.headers['content-type'] ?? ''), startedDateTime: new Date(started).toISOString(), time: Date.now() - started,
        });
      });
    }).on('error', reject).end();
  });
}

const harOfEntries = (entries: object[]) => JSON.stringify({ log: { version: '1.2', creator: { name: 'test', version: '1' }, entries } });

async function runGrep(target: number, codes?: string[]): Promise<Map<string, GrepOutput>> {
  await queue(api, { id: String(target), group: 'web', type: 'grep', force_overwrite: 'true', ...(codes ? { code: codes } : {}) });
  await waitFor('the grep runs', async () => (await get(api, '/api/v1/plugins/progress')).left_count === 0, 30_000);
  const list: GrepOutput[] = await get(api, `/api/v1/targets/${target}/poutput/?plugin_type=grep`);
  return new Map(list.map((o) => [o.plugin_code, o]));
}

const find = (o: GrepOutput | undefined, title: string) => o?.findings.find((f) => f.title === title);

before(async () => {
  site = await startSite();
  origin = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
  const dataDir = await tempDir();
  // a tester's own rule, in a file of theirs
  await writePluginFile(dataDir, 'my-grep.json', {
    test_groups: [{ code: 'LOCAL-GREP-001', descrip: 'Debug leftovers' }],
    plugins: [{ code: 'LOCAL-GREP-001', group: 'web', type: 'grep', title: 'Debug leftovers', grep: [
      { title: 'Express named', header: 'X-Powered-By', matching: '^express$', rank: 2 },
      { title: 'TODO note', body: 'TODO:[^>]*-->', rank: 3 },
      { title: 'Debug header', header: 'X-Debug-Token', rank: 4, rank_when_absent: 0, absent_title: 'No debug header' },
    ] }],
  });
  server = await startServer({ dataDir, token: TOKEN, runTimeoutMs: 20_000 });
  useToken(server.port, TOKEN);
  api = { url: server.url };
});
after(async () => {
  await server?.close();
  await new Promise((resolve) => site?.close(resolve));
});

test('the shipped grep plugins over real exchanges with a site: each value once, with the transactions that show it', async () => {
  const target = await addTarget(api, `${origin}/`);
  // two visits of the home page (its cookie and token differ each time), the rest once
  const paths = ['/', '/about', '/', '/app.js', '/slow', '/missing'];
  const recorded: EntrySpec[] = [];
  for (const path of paths) recorded.push(await exchange(path));
  const res = await importHar(server.url, target, harOfEntries(recorded.map(entryOf)));
  assert.equal(res.status, 201, res.text);
  const ids = (await get(api, `/api/v1/targets/${target}/transactions/`)).map((t: { id: number }) => t.id);
  const [home1, about, home2, appJs, slow] = ids;

  const outputs = await runGrep(target);
  const shipped = JSON.parse(await readFile(join(PROJECT_ROOT, 'data', 'plugins', 'web-grep.json'), 'utf8')).plugins.map((p: { code: string }) => p.code);
  assert.equal(shipped.length, 13);
  for (const code of shipped) assert.equal(outputs.get(code)?.status, 'Successful', `${code}: ${JSON.stringify(outputs.get(code))}`);

  const fingerprint = outputs.get('OWTF-IG-004');
  assert.deepEqual(find(fingerprint, 'Version named by a header: Server: Apache/2.4.49 (Unix)')?.transactions, [home1, about, home2]);
  assert.equal(find(fingerprint, 'Version named by a header: Server: Apache/2.4.49 (Unix)')?.rank, 1);
  assert.deepEqual(find(fingerprint, 'Fingerprint header: X-Powered-By: Express')?.transactions, [home1, about, home2]);
  assert.deepEqual(find(fingerprint, 'Generator meta tag: <meta name="generator" content="WordPress 6.4.2">')?.transactions, [home1, home2]);
  assert.equal(fingerprint!.owtf_rank, 1);

  // one finding for the session cookie, whatever its value on each visit
  const cookies = outputs.get('OWTF-SM-002');
  assert.deepEqual(find(cookies, 'Cookie without HttpOnly: Set-Cookie: SESSION=…; Path=/')?.transactions, [home1, home2]);
  assert.deepEqual(find(cookies, 'Cookie without SameSite: Set-Cookie: SESSION=…; Path=/')?.transactions, [home1, home2]);
  assert.equal(cookies!.findings.filter((f) => f.title.includes('pref=')).length, 0, 'the cookie with its flags is not listed');
  assert.equal(cookies!.findings.filter((f) => f.title.includes('Secure')).length, 0, 'Secure is asked of https responses only');
  assert.equal(cookies!.owtf_rank, 2);

  const source = outputs.get('OWTF-CM-004');
  assert.deepEqual(find(source, 'HTML comment: <!-- TODO: remove the debug login -->')?.transactions, [home1, home2]);
  assert.deepEqual(find(source, 'Potential PHP source code: <?php echo $secret; ?>')?.transactions, [about]);
  assert.equal(find(source, 'Potential PHP source code: <?php echo $secret; ?>')?.rank, 3);
  assert.deepEqual(find(source, 'CSS or JavaScript comment: /* build 1.2.3, key in config.js */')?.transactions, [appJs]);
  assert.equal(source!.owtf_rank, 3);

  // the token differs on each page: one value, masked
  assert.deepEqual(find(outputs.get('OWTF-SM-005'), 'Hidden input: <input type="hidden" name="csrf" …>')?.transactions, [home1, home2]);
  assert.deepEqual(find(outputs.get('OWTF-AT-006'), 'Password field without autocomplete=off or new-password: <input type="password" name="pass">')?.transactions, [home1, home2]);
  assert.equal(find(outputs.get('OWTF-AT-006'), 'Password field on an http page: <input type="password" name="pass">')?.rank, 3);
  assert.deepEqual(find(outputs.get('OWTF-DV-009'), 'Server-side include directive: <!--#include virtual="/footer.html" -->')?.transactions, [about]);
  assert.deepEqual(find(outputs.get('OWTF-WGP-002'), 'CORS allows the null origin: Access-Control-Allow-Origin: null')?.transactions, [about]);
  assert.equal(find(outputs.get('OWTF-WGP-001'), 'X-Frame-Options ALLOW-FROM (ignored by browsers): X-Frame-Options: ALLOW-FROM https://partner.example')?.rank, 2);
  assert.deepEqual(find(outputs.get('OWTF-AT-007'), 'Cache-Control lets caches keep the page: Cache-Control: public, max-age=600')?.transactions, [home1, home2]);
  assert.deepEqual(find(outputs.get('OWTF-DV-001'), "CSP allows inline script or eval: Content-Security-Policy: default-src 'self' 'unsafe-inline'")?.transactions, [about]);
  // absent from every response read: one finding, listing them
  const nosniff = find(outputs.get('OWTF-DV-001'), 'No X-Content-Type-Options: nosniff on any response');
  assert.deepEqual(nosniff?.transactions, ids);
  assert.equal(nosniff?.rank, 1);

  const slowest = outputs.get('OWTF-DS-007')!;
  assert.equal(slowest.findings.length, 1, JSON.stringify(slowest.findings));
  assert.deepEqual(slowest.findings[0].transactions, [slow]);
  assert.match(slowest.findings[0].title, new RegExp(`^Slow response: GET ${origin}/slow took 1\\.\\d\\d s$`));

  // an http target: HSTS is asked of https responses only, and there are none
  const hsts = outputs.get('OWTF-CM-001')!;
  assert.deepEqual(hsts.findings, []);
  assert.equal(hsts.owtf_rank, 0);
  const [withText] = await get(api, `/api/v1/targets/${target}/poutput/web/grep/OWTF-CM-001`);
  assert.match(withText.output, /Strict-Transport-Security header: no transaction to read\./);

  // the tester's rule file
  const mine = (await runGrep(target, ['LOCAL-GREP-001'])).get('LOCAL-GREP-001')!;
  assert.deepEqual(mine.findings.map((f) => [f.rank, f.title, f.transactions]), [
    [2, 'Express named: X-Powered-By: Express', [home1, about, home2]],
    [3, 'TODO note: TODO: remove the debug login -->', [home1, home2]],
    [0, 'No debug header', ids],
  ]);
  assert.equal(mine.owtf_rank, 3);
});

test("a browser's HAR (Chromium's): the findings a tester expects, found by one filter expression too", async () => {
  const target = await addTarget(api, 'http://127.0.0.1:40575/');
  const har = await readFile(join(PROJECT_ROOT, 'test', 'evidence', 'fixtures', 'chromium.har'));
  assert.equal((await importHar(server.url, target, har)).status, 201);
  const outputs = await runGrep(target, ['OWTF-SM-002', 'OWTF-IG-004', 'OWTF-CM-004']);
  // every response that set a cookie without HttpOnly: the filter language says the same
  const search = await get(api, `/api/v1/targets/${target}/transactions/search/?limit=50&q=${encodeURIComponent('~hs "^set-cookie:(?!.*httponly)"')}`);
  const setting = search.data.map((t: { id: number }) => t.id);
  const cookies = outputs.get('OWTF-SM-002')!;
  const withoutHttpOnly = cookies.findings.filter((f) => f.title.startsWith('Cookie without HttpOnly'));
  assert.deepEqual(withoutHttpOnly.map((f) => f.title).sort(), ['Cookie without HttpOnly: Set-Cookie: auth=…; Path=/', 'Cookie without HttpOnly: Set-Cookie: session=…; Path=/']);
  assert.deepEqual([...new Set(withoutHttpOnly.flatMap((f) => f.transactions ?? []))].sort((a, b) => a - b), setting);
  assert.ok(find(outputs.get('OWTF-IG-004'), 'Version named by a header: X-Powered-By: PHP/7.4.3'));
  assert.ok(find(outputs.get('OWTF-CM-004'), 'HTML comment: <!-- TODO: remove the debug login -->'));
});

test('an https target without HSTS: the finding that it is absent, listing the responses read; one with it passes', async () => {
  const target = await addTarget(api, 'https://shop.example/');
  const entries = [0, 1, 2].map((i) => entryOf({ url: `https://shop.example/${i}`, responseBody: 'x', responseHeaders: [['Content-Type', 'text/html']] }));
  await importHar(server.url, target, harOfEntries(entries));
  const hsts = (await runGrep(target, ['OWTF-CM-001'])).get('OWTF-CM-001')!;
  assert.equal(hsts.owtf_rank, 2);
  const ids = (await get(api, `/api/v1/targets/${target}/transactions/`)).map((t: { id: number }) => t.id);
  assert.deepEqual(hsts.findings, [{
    rank: 2,
    title: 'No Strict-Transport-Security header on any https response',
    detail: 'None of the 3 responses read shows it.\n\nWithout HSTS, a browser that is sent to http:// (a typed address, an old link) can be kept on http by an attacker on the network.',
    transactions: ids,
  }]);
  await importHar(server.url, target, harOfEntries([entryOf({ url: 'https://shop.example/secure', responseHeaders: [['Strict-Transport-Security', 'max-age=600']] })]));
  const again = (await runGrep(target, ['OWTF-CM-001'])).get('OWTF-CM-001')!;
  assert.deepEqual(again.findings.map((f) => [f.rank, f.title]), [
    [0, 'Strict-Transport-Security header: Strict-Transport-Security: max-age=600'],
    [1, 'HSTS max-age under a year: Strict-Transport-Security: max-age=600'],
  ]);
});

test('HSTS with max-age=0 turns it off (RFC 6797): rank 2; a SameSite browsers ignore is as none, SameSite=None is ranked as the built-in check ranks it', async () => {
  const target = await addTarget(api, 'https://off.example/');
  await importHar(server.url, target, harOfEntries([entryOf({
    url: 'https://off.example/',
    responseHeaders: [['Strict-Transport-Security', 'max-age=0'], ['Set-Cookie', 'a=1; Path=/; Secure; HttpOnly; SameSite=Bogus'], ['Set-Cookie', 'b=1; Path=/; Secure; HttpOnly; SameSite=None'], ['Set-Cookie', 'c=1; Path=/; Secure; HttpOnly; SameSite=Lax']],
  })]));
  const outputs = await runGrep(target, ['OWTF-CM-001', 'OWTF-SM-002']);
  const hsts = outputs.get('OWTF-CM-001')!;
  assert.equal(hsts.owtf_rank, 2);
  assert.ok(find(hsts, 'HSTS turned off (max-age=0): Strict-Transport-Security: max-age=0'));
  const cookies = outputs.get('OWTF-SM-002')!;
  assert.deepEqual(cookies.findings.map((f) => [f.rank, f.title]).sort(), [
    [2, 'Cookie with SameSite=None: Set-Cookie: b=…; Path=/; Secure; HttpOnly; SameSite=None'],
    [2, 'Cookie without SameSite: Set-Cookie: a=…; Path=/; Secure; HttpOnly; SameSite=Bogus'],
  ]);
});

test('a target with no transactions: the grep run is skipped and says what to do', async () => {
  const target = await addTarget(api, 'https://nothing.example/');
  const out = (await runGrep(target, ['OWTF-IG-004'])).get('OWTF-IG-004')!;
  assert.equal(out.status, 'Skipped');
  assert.match(out.error!, /no transactions yet: import a HAR, or browse it through the proxy/);
});

test('a bundle carries the findings with their evidence: the ids become those of the same transactions on import', async () => {
  const target = await addTarget(api, 'https://bundle.example/');
  const entries = ['/a', '/b', '/c'].map((path, i) => entryOf({ url: `https://bundle.example${path}`, responseHeaders: [['Content-Type', 'text/html'], ...(i !== 1 ? [['Server', 'nginx/1.25.3'] as [string, string]] : [])] }));
  await importHar(server.url, target, harOfEntries(entries));
  await runGrep(target, ['OWTF-IG-004']);
  const session = (await get(api, '/api/v1/sessions/?active=true'))[0].id;
  const bundle = await request(server.url, `/api/v1/bundles/${session}`);
  assert.equal(bundle.status, 200);
  // another box: the transactions take its next ids
  const other = await startServer({ token: TOKEN });
  useToken(other.port, TOKEN);
  try {
    const otherApi = { url: other.url };
    await addTarget(otherApi, 'https://first.example/');
    await importHar(other.url, 1, harOfEntries([entryOf({ url: 'https://first.example/' }), entryOf({ url: 'https://first.example/2' })]));
    const res = await request(other.url, '/api/v1/bundles/?name=copy', { method: 'POST', body: bundle.raw, headers: { 'content-type': 'application/json' } });
    assert.equal(res.status, 201, res.text);
    const copies: { id: number; target_url: string }[] = await get(otherApi, `/api/v1/targets/?session_id=${res.json.data.id}`);
    const copy = copies.find((t) => t.target_url === 'https://bundle.example/')!;
    const finding = find((await get(otherApi, `/api/v1/targets/${copy.id}/poutput/?plugin_type=grep`))[0], 'Version named by a header: Server: nginx/1.25.3')!;
    assert.equal(finding.transactions!.length, 2);
    assert.ok(finding.transactions!.every((id) => id > 2), 'new ids');
    const shown = await Promise.all(finding.transactions!.map(async (id) => (await get(otherApi, `/api/v1/targets/${copy.id}/transactions/${id}`)).url));
    assert.deepEqual(shown, ['https://bundle.example/a', 'https://bundle.example/c']);
  } finally {
    await other.close();
  }
});

test('the report carries grep findings with the request line of each evidence transaction, every value escaped', async () => {
  const target = await addTarget(api, 'https://report.example/');
  const evil = 'https://report.example/<script>alert(1)</script>?a="b"&c=1';
  await importHar(server.url, target, harOfEntries([
    entryOf({ url: 'https://report.example/', responseHeaders: [['Content-Type', 'text/html'], ['Set-Cookie', 'sid=1; Path=/']] }),
    entryOf({ url: evil, method: 'POST', status: 500, statusText: 'Oops <b>', responseHeaders: [['Content-Type', 'text/html'], ['Set-Cookie', 'sid=2; Path=/']] }),
  ]));
  const [first, second] = (await get(api, `/api/v1/targets/${target}/transactions/`)).map((t: { id: number }) => t.id);
  await runGrep(target, ['OWTF-SM-002']);
  const session = (await get(api, '/api/v1/sessions/?active=true'))[0].id;
  const res = await request(server.url, `/api/v1/reports/${session}`);
  assert.equal(res.status, 200);
  assert.ok(!/<script/i.test(res.text), 'no script, the URL escaped');
  const finding = res.text.indexOf('Cookie without HttpOnly: Set-Cookie: sid=…; Path=/');
  assert.ok(finding !== -1);
  const evidence = res.text.slice(finding, res.text.indexOf('</ol>', finding));
  assert.ok(evidence.includes(`<li><code>#${first}</code> GET https://report.example/ → 200 OK</li>`), evidence);
  assert.ok(evidence.includes(`<li><code>#${second}</code> POST https://report.example/&lt;script&gt;alert(1)&lt;/script&gt;?a=&quot;b&quot;&amp;c=1 → 500 Oops &lt;b&gt;</li>`), evidence);
});
