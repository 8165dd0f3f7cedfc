import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { MESSAGES } from '../../src/api/messages.ts';
import { turnsDuring } from '../helpers/event-loop.ts';
import { assertFail } from '../helpers/jsend.ts';
import { request, startServer, tempDir, type TestServer } from '../helpers/server.ts';

let server: TestServer;
const HOSTILE = `<script>alert(1)</script>"'&amp;`;

before(async () => {
  server = await startServer();
  const post = (path: string, form: Record<string, string | string[]>, method = 'POST') => request(server.url, path, { method, form });
  assert.equal((await post('/api/v1/sessions/', { name: HOSTILE })).status, 201);
  const urls = [
    'https://app.acme.example/login',
    'http://app.acme.example:8080/',
    'https://10.0.0.5/x',
    `http://evil.example/<img/src=x/onerror=alert(1)>"'`,
  ];
  assert.equal((await post('/api/v1/targets/', { target_url: urls })).status, 201);
  // changed and different, changed back to the default, and a hostile value
  assert.equal((await post('/api/v1/configuration/', { TOOL_NMAP: '/opt/nmap/bin/nmap', THREADS: '1', TOOL_NIKTO_BIN: '</td><script>x()</script>' }, 'PATCH')).status, 200);
});
after(() => server.close());

const report = (id = 2) => request(server.url, `/api/v1/reports/${id}`);

test('GET /api/v1/reports/<id> is one HTML page, served with a policy that allows no script and no request', async () => {
  const res = await report();
  assert.equal(res.status, 200);
  assert.equal(res.headers['content-type'], 'text/html; charset=utf-8');
  assert.equal(res.headers['cache-control'], 'no-store');
  assert.equal(res.headers['x-frame-options'], 'DENY');
  const csp = res.headers['content-security-policy'] as string;
  const style = /<style>([\s\S]*?)<\/style>/.exec(res.text)![1];
  const hash = createHash('sha256').update(style).digest('base64');
  assert.equal(csp, `default-src 'none'; style-src 'sha256-${hash}'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`);
  assert.doesNotMatch(csp, /script-src|unsafe/);
  assert.match(res.headers['content-disposition'] as string, /^inline; filename="script-alert-1-script-amp\.report\.html"$/);
});

test('the page is self-contained: no script, no event handler, nothing fetched, one inline style sheet', async () => {
  const html = (await report()).text;
  assert.doesNotMatch(html, /<script/i);
  assert.doesNotMatch(html, /<img|<iframe|<object|<embed|<form|<link rel="stylesheet"/i);
  assert.doesNotMatch(html, /\son[a-z]+\s*=/i, 'no event handler attribute');
  assert.doesNotMatch(html, /\ssrc\s*=/i);
  assert.deepEqual([...html.matchAll(/href="([^"]*)"/g)].map((m) => m[1]), ['data:'.concat(',')], 'only the empty icon');
  assert.doesNotMatch(html, /url\(|@import/i, 'the style sheet fetches nothing');
  assert.equal(html.match(/<style>/g)?.length, 1);
  assert.match(html, /<meta http-equiv="Content-Security-Policy" content="default-src &#39;none&#39;; style-src &#39;sha256-/);
});

test('every value from the store is escaped: a hostile session name, URL and setting show as text', async () => {
  const html = (await report()).text;
  const escaped = '&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;amp;';
  assert.ok(html.includes(`<title>Assessment report: ${escaped}</title>`));
  assert.ok(html.includes(`<h1>${escaped}</h1>`));
  assert.ok(html.includes('http://evil.example/&lt;img/src=x/onerror=alert(1)&gt;&quot;&#39;'));
  assert.ok(html.includes('&lt;/td&gt;&lt;script&gt;x()&lt;/script&gt;'));
  assert.ok(!html.includes(HOSTILE));
});

test('a bidirectional control in a value is shown as a mark: it does not turn the report\'s own words around', async () => {
  assert.equal((await request(server.url, '/api/v1/sessions/', { method: 'POST', form: { name: 'evil\u202Eeman' } })).status, 201);
  const id = (await request(server.url, '/api/v1/sessions/')).json.data.find((s: { name: string }) => s.name === 'evil\u202Eeman').id;
  const html = (await report(id)).text;
  assert.ok(html.includes('<h1>evil⟨U+202E⟩eman</h1>'));
  assert.ok(!html.includes('\u202E'));
});

test('it prints on A4: a page size, a print style sheet, table heads repeated, rows kept whole', async () => {
  const html = (await report()).text;
  assert.match(html, /@page\{size:A4;/);
  assert.match(html, /@media print\{/);
  assert.match(html, /thead\{display:table-header-group\}/);
  assert.match(html, /tr,dl,\.counts\{break-inside:avoid\}/);
});

test('it shows the session, when it was made, the counts, and the targets grouped by host with scheme, port and IP', async () => {
  const html = (await report()).text;
  assert.match(html, /<dt>Session<\/dt><dd>2<\/dd>/);
  const created = /<dt>Created<\/dt><dd>(\d{4}-\d\d-\d\d \d\d:\d\d) UTC<\/dd>/.exec(html);
  assert.ok(created, 'a creation time');
  assert.ok(Math.abs(Date.parse(`${created[1].replace(' ', 'T')}:00Z`) - Date.now()) < 5 * 60_000);
  const count = (label: string) => new RegExp(`<th scope="row">${label}</th><td class="num">(\\d+)</td>`).exec(html)?.[1];
  assert.equal(count('Targets'), '4');
  assert.equal(count('Hosts'), '3');
  assert.equal(count('IP addresses'), '1');
  assert.equal(count('HTTPS targets'), '2');
  assert.equal(count('HTTP targets'), '2');
  assert.equal(count('In scope'), '4');
  const hosts = [...html.matchAll(/<h3>([^<]*) <span class="ip">\(([^)]*)\)<\/span><\/h3>/g)].map((m) => [m[1], m[2]]);
  assert.deepEqual(hosts, [['10.0.0.5', '10.0.0.5'], ['app.acme.example', 'IP not resolved'], ['evil.example', 'IP not resolved']]);
  const app = html.slice(html.indexOf('<h3>app.acme.example'), html.indexOf('<h3>evil.example'));
  const rows = [...app.matchAll(/<tr><td><code>([^<]*)<\/code><\/td><td>(\w+)<\/td><td class="num">(\d+)<\/td><td>([^<]*)<\/td>/g)].map((m) => m.slice(1));
  assert.deepEqual(rows, [['http://app.acme.example:8080/', 'http', '8080', '—'], ['https://app.acme.example/login', 'https', '443', '—']]);
  assert.match(html, /<td><code>https:\/\/10\.0\.0\.5\/x<\/code><\/td><td>https<\/td><td class="num">443<\/td><td>10\.0\.0\.5<\/td>/);
});

test('the configuration section lists the settings whose value differs from the default, with both values', async () => {
  const html = (await report()).text;
  const section = html.slice(html.indexOf('<h2>Configuration changed from the defaults</h2>'));
  const rows = [...section.matchAll(/<tr><td>([^<]*)<\/td><td><code>([^<]*)<\/code><\/td><td><code>([^<]*)<\/code><\/td><td><code>([^<]*)<\/code><\/td><\/tr>/g)].map((m) => m.slice(1));
  assert.deepEqual(rows.map((r) => r[1]), ['TOOL_NIKTO_BIN', 'TOOL_NMAP'], 'THREADS was set to its default value: not a change');
  const nmap = rows.find((r) => r[1] === 'TOOL_NMAP')!;
  assert.deepEqual(nmap, ['TOOLS', 'TOOL_NMAP', '/opt/nmap/bin/nmap', '/usr/bin/nmap']);
});

test('with no change from the defaults and no target, the report says so', async () => {
  const fresh = await startServer();
  try {
    const html = (await request(fresh.url, '/api/v1/reports/1')).text;
    assert.match(html, /This session has no targets\./);
    assert.match(html, /Every setting has its default value\./);
    assert.match(html, /<th scope="row">Targets<\/th><td class="num">0<\/td>/);
  } finally {
    await fresh.close();
  }
});

test('an unknown session is 400 Invalid session id provided, as JSON', async () => {
  assertFail(await report(999), 400, MESSAGES.invalidSessionId);
  assert.equal((await request(server.url, '/api/v1/reports/x')).status, 404);
  assert.equal((await request(server.url, '/api/v1/reports/2', { method: 'POST' })).status, 405);
});

test('a session from a store made before creation times were kept: "not recorded"', async () => {
  const dir = await tempDir();
  const sessions = { version: 1, seq: 0, nextSessionId: 2, activeSessionId: 1, nextTargetId: 1, sessions: [{ id: 1, name: 'old', targets: [] }], targets: [] };
  await writeFile(join(dir, 'sessions.json'), JSON.stringify(sessions));
  const old = await startServer({ dataDir: dir });
  try {
    assert.match((await request(old.url, '/api/v1/reports/1')).text, /<dt>Created<\/dt><dd><span class="none">not recorded/);
    assert.deepEqual((await request(old.url, '/api/v1/sessions/1')).json.data, { id: 1, name: 'old', active: true });
  } finally {
    await old.close();
  }
});

test('session objects keep exactly id, name and active: the creation time stays inside', async () => {
  for (const path of ['/api/v1/sessions/', '/api/v1/sessions/2', '/api/v1/sessions/?active=true']) {
    const data = (await request(server.url, path)).json.data;
    for (const s of [data].flat()) assert.deepEqual(Object.keys(s), ['id', 'name', 'active'], path);
  }
});

test('the findings: the severity counts on top, then each target’s outputs by effective rank, the tester’s notes escaped', async () => {
  const url = 'https://app.acme.example/login';
  const [target] = (await request(server.url, `/api/v1/targets/?session_id=2&target_url=${encodeURIComponent(url)}`)).json.data;
  const queued = await request(server.url, '/api/v1/worklist/', { method: 'POST', form: [['id', String(target.id)], ['type', 'external'], ['code', 'OWTF-IG-001'], ['code', 'OWTF-CM-008'], ['code', 'OWTF-SM-002']] });
  assert.equal(queued.status, 201, queued.text);
  for (let i = 0; (await request(server.url, '/api/v1/plugins/progress')).json.data.left_count > 0; i++) {
    assert.ok(i < 200, 'the checklists ran');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  const rank = (code: string, form: Record<string, string>) => request(server.url, `/api/v1/targets/${target.id}/poutput/web/external/${code}`, { method: 'PATCH', form });
  assert.equal((await rank('OWTF-SM-002', { user_rank: '4', user_notes: HOSTILE })).status, 200);
  assert.equal((await rank('OWTF-IG-001', { user_rank: '1' })).status, 200);

  const html = (await report()).text;
  const severity = html.indexOf('<section id="severity">');
  const findings = html.indexOf('<section id="findings">');
  assert.ok(severity !== -1 && findings > severity, 'the counts, then the findings');
  const counts = html.slice(severity, findings);
  assert.match(counts, /High<\/span><\/th><td class="num">1</);
  assert.match(counts, /Info<\/span><\/th><td class="num">1</);
  assert.match(counts, /Critical<\/span><\/th><td class="num">0</);
  const listed = html.slice(findings, html.indexOf('</section>\n<section>', findings));
  assert.ok(listed.includes(`<code>${url}</code>`), 'the target, by its URL');
  const high = listed.indexOf('OWTF-SM-002');
  const info = listed.indexOf('OWTF-IG-001');
  assert.ok(high !== -1 && info > high, 'the higher rank first');
  assert.ok(!listed.includes('OWTF-CM-008'), 'an unranked output without findings or notes is left out');
  assert.match(listed, /<span class="rank r4">High<\/span> <code>OWTF-SM-002<\/code>/);
  assert.ok(listed.includes('ranked by the tester'));
  assert.ok(listed.includes('Tester’s notes:</strong> &lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;amp;'), 'the notes, escaped');
  assert.ok(!/<script/i.test(html));
});

test('a finding\'s title wraps inside the page, as every other value does (a 733-character cookie name ran 5,000 px off an A4 page)', async () => {
  const html = (await report()).text;
  assert.match(html, /\.findings li\{[^}]*overflow-wrap:anywhere/);
});

test('the findings past the page\'s budget are counted, not shown, and the page is rendered a slice at a time (a 260 MB report froze the server 22 s; three, a 500)', async () => {
  const { renderReport, reportPolicy, FINDINGS_BUDGET } = await import('../../src/api/report-page.ts');
  assert.equal(FINDINGS_BUDGET, 32 * 1024 * 1024);
  const { deriveTarget } = await import('../../src/store/targets.ts');
  const target = deriveTarget(1, 'https://app.example/')!;
  const output = (code: string, rank: number, n: number) => ({
    rank, code, type: 'active', title: `Title ${code}`, status: 'Successful', notes: '', byTester: false,
    findings: Array.from({ length: n }, (_, i) => ({ rank, title: `finding ${code}-${i}`, detail: '<'.repeat(10_000) })),
  });
  const outputs = [output('A-1', 4, 2), output('B-2', 3, 5), output('C-3', 2, 7)];
  const input = { session: { id: 1, name: 's' }, targets: [target], changed: [], generatedAt: new Date(), ranked: () => outputs };
  // each finding's detail is 40,000 bytes escaped: one fits in 50,000, the budget
  const html = await renderReport(input, await reportPolicy(), 50_000);
  assert.match(html, /finding A-1-0/);
  assert.doesNotMatch(html, /finding A-1-1|finding B-2-0|finding C-3-0/);
  assert.match(html, /<li class="none">1 more finding of this output not shown: the page holds 0\.0\d+ MiB of findings\.<\/li>/);
  assert.match(html, /<code>B-2<\/code>/, 'an output whose findings did not fit is still named');
  assert.match(html, /Not shown: 0 more outputs and 13 more findings; the page holds 0\.0\d+ MiB of findings\. The web application and the API show them all\./);
  // one output of 1,000 findings of 65,000 `<` (a legal bundle, 260 MB of page once escaped): cut
  // inside it at the full budget, and the event loop gets its turns meanwhile (an immediate
  // queued before the render runs during it)
  const huge = { ...output('H-1', 4, 0), findings: Array.from({ length: 1000 }, (_, i) => ({ rank: 4, title: `h${i}`, detail: '<'.repeat(65_000) })) };
  const policy = await reportPolicy();
  const { result: big, turns } = await turnsDuring(() => renderReport({ ...input, ranked: () => [huge] }, policy));
  assert.ok(Buffer.byteLength(big) < FINDINGS_BUDGET + 1024 * 1024, `${Buffer.byteLength(big)} bytes`);
  assert.match(big, /\d+ more findings of this output not shown: the page holds 32 MiB of findings/);
  assert.match(big, /Not shown: 0 more outputs and \d+ more findings; the page holds 32 MiB/);
  assert.ok(turns > 1, `the event loop had ${turns} turn(s) while the page was rendered`);
  // and many targets' headings count too: 2,000 targets of 2,000-character URLs in a 1 MiB budget
  const many = Array.from({ length: 2000 }, (_, i) => deriveTarget(i + 2, `https://app.example/${i}?${'a=1&'.repeat(500)}`)!);
  const headings = await renderReport({ ...input, targets: many, ranked: () => [output('T-1', 1, 0)] }, await reportPolicy(), 1024 * 1024);
  const section = headings.slice(headings.indexOf('<section id="findings">'), headings.indexOf('<h2>Summary</h2>'));
  assert.ok(Buffer.byteLength(section) < 1.1 * 1024 * 1024, `${Buffer.byteLength(section)} bytes of findings`);
  assert.match(section, /Not shown: \d+ more outputs and 0 more findings/);
});
