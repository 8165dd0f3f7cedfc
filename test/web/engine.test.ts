/**
 * The assessment engine's views driven as a user drives them, in headless Chromium against the
 * real server with a token (the page's login): queue plugins on the targets selected in the
 * Targets view, follow the worklist and the workers, rank a target's results, and read the
 * session's report. Every view is checked with axe (WCAG 2.1 A and AA), wide and narrow, light
 * and dark; each view's requests are counted. Built-in checks run against a local HTTP server
 * that has something to find.
 */
import { after, before, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { request, startServer, tempDir, type RequestOptions, type TestServer } from '../helpers/server.ts';
import { CHROMIUM, keepOnBox, launchChromium, missingBrowser, NARROW, picture, problemsInEachLook, sidewaysScroll, WIDE } from '../helpers/browser.ts';
import { eventually, ofNewDocument, shows, text } from '../helpers/page.ts';

const TOKEN = 'engine-views-test-token-0123456789abcdef';

const skip = missingBrowser && !process.env.CI;

let server: TestServer;
let fixture: Server;
let fixtureUrl: string;
let browser: Browser | undefined;
let context: BrowserContext;
let page: Page;
const offBox: string[] = [];
const consoleErrors: string[] = [];
const pageErrors: string[] = [];
let calls: string[] = [];

/** A site with something for every built-in check to find. */
function startFixture(): Promise<Server> {
  const site = createServer((req, res) => {
    if (req.url === '/robots.txt') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      return res.end('User-agent: *\nDisallow: /admin/\nDisallow: /backup/\n');
    }
    if (req.method === 'TRACE') {
      res.writeHead(200, { 'content-type': 'message/http' });
      return res.end(`TRACE ${req.url} HTTP/1.1\r\nHost: ${req.headers.host}\r\n\r\n`);
    }
    if (req.method === 'OPTIONS') {
      res.writeHead(200, { Allow: 'GET, POST, PUT, DELETE, OPTIONS, TRACE' });
      return res.end();
    }
    res.writeHead(200, {
      'content-type': 'text/html',
      Server: 'Apache/2.4.49 (Unix)',
      'Set-Cookie': 'SESSION=abc123; Path=/',
      'Access-Control-Allow-Origin': req.headers.origin ?? '*',
      'Access-Control-Allow-Credentials': 'true',
    });
    res.end('<html><head><title>shop</title></head><body>shop</body></html>');
  });
  return new Promise((resolve) => site.listen(0, '127.0.0.1', () => resolve(site)));
}

/** The user's plugin file: a long run (sleep) to watch. */
const USER_PLUGINS = {
  plugins: [{ code: 'OWTF-IG-006', group: 'web', type: 'active', name: 'A_long_run_to_watch', title: 'A long run to watch', descrip: 'Sleeps 30 s', tool: 'TOOL_UA_TESTER', argv: ['30'] }],
};

interface CataloguePlugin {
  key: string;
  code: string;
  group: string;
  type: string;
  name: string;
  title: string;
}
/** The catalogue as the server has it (the shipped plugins and the user's). */
let catalogue: CataloguePlugin[] = [];
/** The plugins the view's filter keeps: code, name, title or key holding the words. */
const matching = (words: string) => catalogue.filter((p) => `${p.code} ${p.name} ${p.title} ${p.key}`.toLowerCase().includes(words.toLowerCase())).length;
const SEMI_PASSIVE = () => catalogue.filter((p) => p.type === 'semi_passive').length;

const auth = (options: RequestOptions = {}): RequestOptions => ({ ...options, headers: { authorization: `Bearer ${TOKEN}`, ...options.headers } });

async function api<T = any>(path: string, options: RequestOptions = {}): Promise<T> {
  const res = await request(server.url, path, auth(options));
  assert.ok(res.status < 300 && res.json.status === 'success', `${options.method ?? 'GET'} ${path}: ${res.text.slice(0, 300)}`);
  return res.json.data as T;
}

before(async () => {
  if (missingBrowser) return;
  fixture = await startFixture();
  fixtureUrl = `http://127.0.0.1:${(fixture.address() as AddressInfo).port}/`;
  const dataDir = await tempDir();
  await mkdir(join(dataDir, 'plugins'));
  await writeFile(join(dataDir, 'plugins', 'test-checks.json'), JSON.stringify(USER_PLUGINS));
  server = await startServer({ dataDir, token: TOKEN, workers: 2, checkTimeoutMs: 5000, proxy: true });
  browser = await launchChromium();
  // axe is put into the page by the test: the page's own policy would refuse an inline script
  context = await browser.newContext({ viewport: WIDE, colorScheme: 'light', reducedMotion: 'reduce', bypassCSP: true });
  context.setDefaultTimeout(5000);
  await keepOnBox(context, server.url, offBox);
  page = await context.newPage();
  page.on('console', (m) => {
    if (m.type() === 'error') consoleErrors.push(`${m.text()} (${m.location().url})`);
  });
  page.on('pageerror', (err) => pageErrors.push(err.stack ?? err.message));
  page.on('request', (r) => {
    const url = r.url();
    if (url.startsWith(`${server.url}/api/`) || url.startsWith(`${server.url}/debug/`)) calls.push(`${r.method()} ${url.slice(server.url.length)}`);
  });
});

after(async () => {
  await browser?.close();
  await server?.close();
  await new Promise((resolve) => fixture?.close(resolve));
});

function assertClean(): void {
  assert.deepEqual(offBox, [], 'requests to another host than the server');
  assert.deepEqual(pageErrors, [], 'uncaught errors in the page');
  assert.deepEqual(consoleErrors, [], 'console errors');
}


/** The requests a step makes (the health check only when it is a page load). */
async function apiCalls(step: () => Promise<void>, { pageLoad = false } = {}): Promise<string[]> {
  calls = [];
  await step();
  await page.waitForTimeout(300);
  return pageLoad ? ofNewDocument(calls) : calls.filter((c) => !c.startsWith('GET /debug/health'));
}

const paths = (list: string[]) => list.map((c) => c.replace(/\?.*$/, ''));

/** Waits until no run is queued or running. */
async function idle(): Promise<void> {
  await eventually(async () => assert.equal((await api('/api/v1/plugins/progress')).left_count, 0), 20_000);
}

const sessionId = async () => (await api<{ id: number }[]>('/api/v1/sessions/?active=true'))[0].id;
let targetA: number;
let targetB: number;
const TARGET_B_URL = () => fixtureUrl.replace('127.0.0.1', 'localhost') + 'shop/';

test('the assessment engine in the web application: plugins, worklist, workers, results, report', { skip: skip && `${CHROMIUM} is missing` }, async (t: TestContext) => {
  assert.ok(!missingBrowser, `${CHROMIUM} is missing, and CI must run the browser test`);

  await t.test('log in with the token, select a target, and carry the selection to the plugins', async () => {
    await api('/api/v1/targets/', { method: 'POST', form: { target_url: [fixtureUrl, TARGET_B_URL()] } });
    const targets = await api<{ id: number; target_url: string }[]>('/api/v1/targets/');
    targetA = targets.find((x) => x.target_url === fixtureUrl)!.id;
    targetB = targets.find((x) => x.target_url === TARGET_B_URL())!.id;
    catalogue = await api('/api/v1/plugins/');
    await page.goto(`${server.url}/targets?token=${TOKEN}`);
    assert.equal(new URL(page.url()).search, '', 'the token leaves the address bar');
    await shows(page.getByRole('heading', { level: 2 }), 'Targets in “default session” (2)');
    await page.getByRole('checkbox', { name: `Select ${fixtureUrl}` }).check();
    await page.getByRole('link', { name: 'Run plugins on 1 selected target' }).click();
    assert.equal(new URL(page.url()).pathname, '/plugins');
    await shows(page.locator('h1'), 'Plugins');
    assert.equal(await page.getByRole('radio', { name: 'The 1 target selected in the Targets view' }).isChecked(), true);
    await shows(page.locator('.target-sample'), fixtureUrl);
    assertClean();
  });

  await t.test('plugins: a full load is four requests; the catalogue by group and type, filtered by code or name', async () => {
    const made = await apiCalls(async () => {
      await page.reload();
      await shows(page.locator('#plugin-count'), `${catalogue.length} plugins`);
    }, { pageLoad: true });
    assert.deepEqual(paths(made).sort(), ['GET /api/v1/auth', 'GET /api/v1/overview/sessions', 'GET /api/v1/plugins/', 'GET /debug/health']);
    assert.equal(await page.getByRole('radio', { name: 'The 1 target selected in the Targets view' }).isChecked(), true, 'the selection survives a reload');
    const types = [...new Set(catalogue.map((p) => `${p.group} ${p.type}`))];
    assert.equal(await page.locator('.plugin-type').count(), types.length, 'a box per group and type');
    const legends = await page.locator('.plugin-type legend label').allTextContents();
    assert.equal(legends[0], 'All of Web · External (manual checklists)');
    assert.ok(
      legends.includes('All of Web · Semi-passive (ordinary requests)') && legends.includes('All of Web · Active (tools on this box)') && legends.includes('All of Web · Grep (stored transactions, no request)'),
      legends.join(', '),
    );
    await page.getByLabel('Filter by code or name').fill('wgp-00');
    await shows(page.locator('#plugin-count'), `Showing ${matching('wgp-00')} of ${catalogue.length} plugins`);
    assert.match(new URL(page.url()).search, /q=wgp-00/);
    await page.getByLabel('Filter by code or name').fill('long run');
    await shows(page.locator('#plugin-count'), `Showing 1 of ${catalogue.length} plugins`);
    await shows(page.locator('.plugin:not([hidden])'), 'OWTF-IG-006 A long run to watch');
    await page.getByLabel('Filter by code or name').fill('');
    // a whole group, and back
    await page.getByRole('checkbox', { name: 'All Web plugins' }).check();
    await shows(page.locator('#queue-count'), `${catalogue.filter((p) => p.group === 'web').length} plugins ticked, 1 target.`);
    await page.getByRole('checkbox', { name: 'All Web plugins' }).uncheck();
    await shows(page.locator('#queue-count'), 'No plugin ticked.');
    assertClean();
  });

  await t.test('plugins: tick a whole type and one plugin, queue them: the answer inline, then again (skipped), then forced', async () => {
    await page.getByRole('checkbox', { name: 'All of Web · Semi-passive (ordinary requests)' }).check();
    await page.getByRole('checkbox', { name: 'OWTF-IG-001 Spiders Robots and Crawlers (external)' }).check();
    const n = SEMI_PASSIVE() + 1;
    await shows(page.locator('#queue-count'), `${n} plugins ticked, 1 target.`);
    const queue = page.getByRole('button', { name: `Queue ${n} plugins on 1 target` });
    const made = await apiCalls(async () => {
      await queue.click();
      await shows(page.locator('#queue-result'), `Queued ${n}.`);
    });
    assert.deepEqual(paths(made), ['POST /api/v1/worklist/', 'POST /api/v1/worklist/'], 'one request per type');
    await idle();
    await queue.click();
    await shows(page.locator('#queue-result'), `Queued 0, skipped ${n} (already queued or already run; tick “Run again” to run those too).`);
    await page.getByLabel('Run again where it already ran (replaces that output)').check();
    await queue.click();
    await shows(page.locator('#queue-result'), `Queued ${n}.`);
    await idle();
    const names = await api<Record<string, { data: { plugin_key: string }[] }>>(`/api/v1/targets/${targetA}/poutput/names`);
    assert.equal(Object.values(names).flatMap((g) => g.data).length, n);
    // the other radio: every target of the active session
    await page.getByRole('radio', { name: 'Every target of the active session “default session” (2 targets)' }).check();
    await shows(page.getByRole('button', { name: `Queue ${n} plugins on 2 targets` }), `Queue ${n} plugins on 2 targets`);

    // a selection kept in the tab whose target was deleted since: said plainly, nothing queued
    await page.evaluate(() => sessionStorage.setItem('assessd.target-selection', JSON.stringify({ ids: [[999999, 'https://gone.example/']] })));
    await page.reload();
    await page.getByRole('checkbox', { name: 'OWTF-IG-001 Spiders Robots and Crawlers (external)' }).check();
    await page.getByRole('button', { name: 'Queue 1 plugin on 1 target' }).click();
    await shows(page.locator('#queue-result'), 'Nothing was queued: a selected target no longer exists. Select the targets again in the Targets view.');
    const refused = consoleErrors.filter((e) => /status of 400/.test(e));
    assert.equal(refused.length, 1, 'the refusal Chromium logs');
    consoleErrors.splice(0, consoleErrors.length, ...consoleErrors.filter((e) => !/status of 400/.test(e)));
    await page.evaluate(() => sessionStorage.removeItem('assessd.target-selection'));
    assertClean();
  });

  await t.test('results: two requests; test groups in the guide’s order; ranks as words; findings with their evidence', async () => {
    const made = await apiCalls(async () => {
      await page.goto(`${server.url}/targets/${targetA}`);
      await shows(page.locator('h1'), `Results of ${fixtureUrl}`);
      await eventually(async () => assert.equal(await page.locator('.test-group').count(), 7));
    }, { pageLoad: true });
    assert.deepEqual(paths(made).sort(), ['GET /api/v1/auth', 'GET /api/v1/sessions/', `GET /api/v1/targets/${targetA}`, `GET /api/v1/targets/${targetA}/poutput/names`, 'GET /debug/health']);
    assert.equal(await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Targets' }).getAttribute('aria-current'), 'true', 'within Targets');
    assert.equal(await page.title(), `Results of ${fixtureUrl} · assessd`);
    assert.deepEqual(await page.locator('.test-group').evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.code)), [
      'OWTF-IG-001', 'OWTF-IG-004', 'OWTF-CM-001', 'OWTF-CM-008', 'OWTF-SM-002', 'OWTF-WGP-001', 'OWTF-WGP-002',
    ]);
    const cors = page.locator('.test-group[data-code="OWTF-WGP-002"] .output');
    await shows(cors.locator('.output-head'), 'Successful', 'High');
    await shows(cors.locator('.findings'), 'High', "A foreign origin may read the page with the user's credentials");
    const methods = page.locator('.test-group[data-code="OWTF-CM-008"] .output');
    await shows(methods.locator('.output-head'), 'Medium');
    await shows(methods.locator('.findings'), 'TRACE echoes the request');
    await shows(page.locator('.test-group[data-code="OWTF-CM-001"] .output-head'), 'Skipped', 'Unranked');
    await shows(page.locator('.result-summary'), '8 outputs in 7 test groups');
    await shows(page.locator('.test-group[data-code="OWTF-IG-001"] .findings'), 'robots.txt lists 2 paths', 'Disallow: /admin/');
    assertClean();
  });

  await t.test('results: the output text on demand; the tester’s rank and notes saved with clear feedback', async () => {
    const robots = page.locator('.test-group[data-code="OWTF-IG-001"] .output').filter({ hasText: 'semi_passive@OWTF-IG-001' });
    const made = await apiCalls(async () => {
      await robots.getByText('Output text').click();
      await shows(robots.locator('.output-text'), '/admin/');
    });
    assert.deepEqual(paths(made), [`GET /api/v1/targets/${targetA}/poutput/web/semi_passive/OWTF-IG-001`]);
    const methods = page.locator('.test-group[data-code="OWTF-CM-008"] .output');
    await methods.getByLabel('Your rank').selectOption({ label: '5 · Critical' });
    await methods.getByLabel('Notes').fill('TRACE is on: <script>alert("xss")</script> & more');
    await shows(methods.locator('.save-status'), 'Not saved yet.');
    // leaving with them unsaved asks first (a link followed lost them without a word)
    await page.getByRole('link', { name: 'Sessions', exact: true }).click();
    const leave = page.getByRole('dialog', { name: 'Leave without saving?' });
    await shows(leave, 'Your rank or notes on 1 output are not saved.');
    await leave.getByRole('button', { name: 'Cancel' }).click();
    assert.equal(new URL(page.url()).pathname, `/targets/${targetA}`);
    assert.equal(await methods.getByLabel('Notes').inputValue(), 'TRACE is on: <script>alert("xss")</script> & more');
    const rankCounts = () => page.locator('.result-summary .rank-counts li').evaluateAll((els) => els.map((e) => (e as HTMLElement).innerText.replace(/\s+/g, ' ').trim()));
    const countsBefore = await rankCounts();
    assert.ok(countsBefore.includes('Critical 0') && countsBefore.includes('Medium 1'), countsBefore.join(', '));
    await methods.getByRole('button', { name: 'Save' }).click();
    await shows(methods.locator('.save-status'), 'Saved: ranked Critical, with your notes.');
    await shows(methods.locator('.output-head'), 'Critical');
    // the group's highest and the summary's counts say it at once (they waited for a reload)
    await shows(page.locator('.test-group[data-code="OWTF-CM-008"] .test-group-head'), 'Highest: Critical');
    const countsAfter = await rankCounts();
    assert.ok(countsAfter.includes('Critical 1') && countsAfter.includes('Medium 0'), countsAfter.join(', '));
    // saved: nothing to ask any more
    await page.getByRole('link', { name: 'Sessions', exact: true }).click();
    await shows(page.locator('h1'), 'Sessions');
    assert.equal(await page.getByRole('dialog', { name: 'Leave without saving?' }).count(), 0);
    await page.goBack();
    const [saved] = await api(`/api/v1/targets/${targetA}/poutput/web/semi_passive/OWTF-CM-008`);
    assert.equal(saved.user_rank, 5);
    assert.equal(saved.user_notes, 'TRACE is on: <script>alert("xss")</script> & more');
    await page.reload();
    await eventually(async () => assert.equal(await page.locator('.test-group[data-code="OWTF-CM-008"] .output').getByLabel('Your rank').inputValue(), '5'));
    assert.equal(await page.locator('.test-group[data-code="OWTF-CM-008"] .output').getByLabel('Notes').inputValue(), saved.user_notes);
    // another tab saves other notes; a rank changed here alone leaves them (both were sent: this
    // tab's notes, as it had loaded them, wiped the other's without a word)
    const output = `/api/v1/targets/${targetA}/poutput/web/semi_passive/OWTF-CM-008`;
    await api(output, { method: 'PATCH', form: { user_notes: 'from another tab' } });
    const again = page.locator('.test-group[data-code="OWTF-CM-008"] .output');
    await again.getByLabel('Your rank').selectOption({ label: '4 · High' });
    await again.getByRole('button', { name: 'Save' }).click();
    await shows(again.locator('.save-status'), 'Saved: ranked High');
    const [both] = await api(output);
    assert.deepEqual([both.user_rank, both.user_notes], [4, 'from another tab']);
    // the output deleted meanwhile (as the server answers then): said plainly, and leaving no
    // longer asks about edits nothing can keep (it said "Invalid ... (HTTP 400)" and asked on)
    const deleted = { status: 400, contentType: 'application/json', body: JSON.stringify({ status: 'fail', message: 'Invalid plugin output reference provided', code: 400 }) };
    await page.route(`${server.url}${output}`, (route) => (route.request().method() === 'PATCH' ? route.fulfill(deleted) : route.fallback()), { times: 1 });
    await again.getByLabel('Notes').fill('nowhere to go');
    await again.getByRole('button', { name: 'Save' }).click();
    await shows(again.locator('.save-status'), 'Not saved: this output (or its target) was deleted meanwhile, in another tab or by another client.');
    await page.getByRole('link', { name: 'Sessions', exact: true }).click();
    await shows(page.locator('h1'), 'Sessions');
    assert.equal(await page.getByRole('dialog', { name: 'Leave without saving?' }).count(), 0);
    consoleErrors.splice(0, consoleErrors.length, ...consoleErrors.filter((e) => !/status of 400/.test(e)));
    // as the views after this one expect it
    await api(output, { method: 'PATCH', form: { user_rank: '5', user_notes: saved.user_notes } });
    assertClean();
  });

  await t.test('sessions: the severity panel counts the active session’s outputs by rank, with the progress', async () => {
    const made = await apiCalls(async () => {
      await page.goto(`${server.url}/sessions`);
      await shows(page.locator('#severity-panel'), 'Findings in “default session” (active)', '8 runs complete, 0 left');
    }, { pageLoad: true });
    assert.deepEqual(paths(made).sort(), ['GET /api/v1/auth', 'GET /api/v1/dashboard/severitypanel', 'GET /api/v1/overview/sessions', 'GET /api/v1/plugins/progress', 'GET /debug/health']);
    const rows = await page.locator('.severity-table tbody tr').allInnerTexts();
    assert.deepEqual(rows.map((r) => r.replace(/\s+/g, ' ').trim()), ['Critical 1', 'High 1', 'Medium 0', 'Low 2', 'Info 2', 'Passing 0']);
    assert.equal(await page.locator('svg.severity-chart rect.chart-bar').count(), 6);
    assertClean();
  });

  await t.test('the report: the severity counts on top, each target’s findings by effective rank, notes escaped', async () => {
    const res = await request(server.url, `/api/v1/reports/${await sessionId()}`, auth());
    assert.equal(res.status, 200);
    const html = res.text;
    assert.ok(!/<script/i.test(html), 'no script in the report');
    assert.ok(html.includes('TRACE is on: &lt;script&gt;alert(&quot;xss&quot;)&lt;/script&gt; &amp; more'), 'the note, escaped');
    const severity = html.indexOf('id="severity"');
    const findings = html.indexOf('id="findings"');
    assert.ok(severity !== -1 && findings > severity, 'the counts come before the findings');
    const order = ['OWTF-CM-008', 'OWTF-WGP-002', 'OWTF-SM-002', 'OWTF-WGP-001'].map((code) => html.indexOf(code, findings));
    assert.ok(order.every((at, i) => at > findings && (i === 0 || at > order[i - 1])), `findings by rank: ${order}`);
    assert.match(html, /Critical<\/span>[^]*?OWTF-CM-008/);
    assert.ok(html.includes('A foreign origin may read the page'), 'a finding with its evidence');
  });

  await t.test('worklist: the queue at any size, a page at a time, filtered, paused, resumed and deleted', async () => {
    await api('/api/v1/workers/0/pause', { method: 'PATCH' });
    const queued = await api('/api/v1/worklist/', { method: 'POST', form: { id: `${targetA},${targetB}`, group: 'web', type: 'external', force_overwrite: 'true' } });
    assert.equal(queued.queued, 154);
    const made = await apiCalls(async () => {
      await page.goto(`${server.url}/worklist`);
      await shows(page.locator('#work-count'), '154 queued works');
      await eventually(async () => assert.equal(await page.locator('tr.work').count(), 100));
    }, { pageLoad: true });
    assert.deepEqual(paths(made).sort(), ['GET /api/v1/auth', 'GET /api/v1/plugins/', 'GET /api/v1/sessions/', 'GET /api/v1/worklist/search', 'GET /debug/health']);
    await shows(page.locator('.page-range'), '1–100 of 154');
    await page.getByRole('button', { name: 'Next ›' }).click();
    await shows(page.locator('.page-range'), '101–154 of 154');
    await page.getByLabel('Plugin').selectOption({ value: 'OWTF-IG-001' });
    await shows(page.locator('#work-count'), '2 of 154 queued works match');
    await page.getByLabel('Filter by target URL (any part)').fill(fixtureUrl);
    await shows(page.locator('#work-count'), '1 of 154 queued works match');
    assert.match(new URL(page.url()).search, /code=OWTF-IG-001/);
    await page.reload();
    await shows(page.locator('#work-count'), '1 of 154 queued works match');
    const row = page.locator('tr.work').first();
    await row.getByRole('button', { name: /^Pause / }).click();
    await shows(row, 'Paused');
    const workId = Number(await row.getAttribute('data-work-id'));
    assert.equal((await api(`/api/v1/worklist/${workId}`)).active, false);
    await page.getByRole('button', { name: 'Resume all 154' }).click();
    await shows(row, 'Queued');
    assert.equal((await api('/api/v1/worklist/?active=false')).length, 0);
    await row.getByRole('button', { name: /^Delete / }).click();
    await shows(page.locator('#work-count'), '0 of 153 queued works match');
    await page.getByLabel('Filter by target URL (any part)').fill('');
    await page.getByLabel('Plugin').selectOption({ value: '' });
    await shows(page.locator('#work-count'), '153 queued works');
    assertClean();
  });

  await t.test('workers: live, within 2 s of a change, at most a request a second, unchanged rows left alone', async () => {
    await api('/api/v1/worklist/0', { method: 'DELETE' });
    await api('/api/v1/configuration/', { method: 'PATCH', form: { TOOL_UA_TESTER: '/bin/sleep' } });
    await api('/api/v1/worklist/', { method: 'POST', form: { id: String(targetA), group: 'web', type: 'active', code: 'OWTF-IG-006' } });
    // the worklist view's last filter request, still on its way, is not this page's
    await page.goto('about:blank');
    const made = await apiCalls(async () => {
      await page.goto(`${server.url}/workers`);
      await shows(page.getByRole('heading', { level: 2 }), 'Workers (2)');
    }, { pageLoad: true });
    assert.deepEqual(paths(made).sort(), ['GET /api/v1/auth', 'GET /api/v1/plugins/progress', 'GET /api/v1/sessions/', 'GET /api/v1/workers/', 'GET /debug/health']);
    await shows(page.locator('.worker').first(), 'Paused');
    await api('/api/v1/workers/1/resume', { method: 'PATCH' });
    const one = page.locator('.worker[data-worker-id="1"]');
    const two = page.locator('.worker[data-worker-id="2"]');
    const started = Date.now();
    // the view's poll (at most one a second) shows it within about that; loose, for a busy box (the rate is held below)
    await eventually(() => shows(one, 'Running', 'OWTF-IG-006', fixtureUrl), 5000);
    assert.ok(Date.now() - started <= 5000, 'shown within a few seconds of the change (and the run’s start)');
    await two.evaluate((el) => ((el as HTMLElement & { mark?: boolean }).mark = true));
    // the run's time counts up as it is shown (on a busy box the view may first show it at 2 s or at 9)
    const shownFor = async () => Number(/For (\d+) s/.exec(await text(one))?.[1]);
    let first = NaN;
    await eventually(async () => assert.ok(Number.isInteger((first = await shownFor())), await text(one)));
    await eventually(async () => assert.ok((await shownFor()) > first, `still "For ${first} s": ${await text(one)}`));
    calls = [];
    await page.waitForTimeout(9000);
    const polls = calls.length;
    assert.ok(polls <= 9, `${polls} requests in 9 s`);
    assert.equal(await two.evaluate((el) => (el as HTMLElement & { mark?: boolean }).mark), true, 'the unchanged row was not drawn again');

    await one.getByRole('button', { name: 'Pause Worker-1' }).click();
    await shows(one, 'Paused');
    assert.equal((await api('/api/v1/workers/1')).paused, true);
    await one.getByRole('button', { name: 'Resume Worker-1' }).click();
    await shows(one, 'Running');
    await page.getByRole('button', { name: 'Add a worker' }).click();
    await shows(page.getByRole('heading', { level: 2 }), 'Workers (3)');
    await page.getByRole('button', { name: 'Remove Worker-3' }).click();
    await shows(page.getByRole('heading', { level: 2 }), 'Workers (2)');
    assertClean();
  });

  await t.test('results: a run\'s files listed when opened, each a link to the files API (plain text) and a download; an aborted run says so', async () => {
    await page.goto(`${server.url}/targets/${targetA}`);
    const run = page.locator('.test-group[data-code="OWTF-IG-006"] .output');
    await shows(run.locator('.output-head'), 'Running');
    await run.locator('summary', { hasText: 'Files' }).click();
    await shows(run.locator('.files'), 'stderr.txt', 'stdout.txt', 'download');
    const href = await run.getByRole('link', { name: 'stdout.txt', exact: true }).getAttribute('href');
    assert.equal(href, `/api/v1/targets/${targetA}/poutput/web/active/OWTF-IG-006/files/stdout.txt`);
    assert.equal(await run.getByRole('link', { name: 'download stdout.txt' }).getAttribute('href'), `${href}?download=true`);
    await api('/api/v1/workers/1/abort', { method: 'PATCH' });
    await eventually(async () => assert.equal((await api(`/api/v1/targets/${targetA}/poutput/web/active/OWTF-IG-006`))[0].status, 'Aborted'), 10_000);
    await page.reload();
    await shows(page.locator('.test-group[data-code="OWTF-IG-006"] .output-head'), 'Aborted');
    assertClean();
  });

  await t.test('logged out on the workers view: it stops asking, the login form asks for the token, the view comes back', async () => {
    await page.goto(`${server.url}/workers`);
    await shows(page.getByRole('heading', { level: 2 }), 'Workers (2)');
    await page.getByRole('button', { name: 'Log out' }).click();
    const dialog = page.getByRole('dialog', { name: 'Log in to assessd' });
    await dialog.waitFor();
    calls = [];
    await page.waitForTimeout(4000);
    assert.ok(calls.filter((c) => c.startsWith('GET /api/v1/workers/')).length <= 1, `polls while logged out: ${calls.join(', ')}`);
    await dialog.getByLabel('Access token').fill(TOKEN);
    await dialog.getByRole('button', { name: 'Log in' }).click();
    await shows(page.getByRole('heading', { level: 2 }), 'Workers (2)');
    await shows(page.locator('.worker').first(), 'Worker-1');
    // the keyboard lands on the view's heading, as after a navigation (it was left on the page's body)
    await eventually(async () => assert.equal(await page.evaluate(() => document.activeElement?.tagName), 'H1'));
    // Chromium logs each refused request (401) as a console error: those are this step's doing
    const refused = consoleErrors.filter((e) => /status of 401/.test(e));
    consoleErrors.splice(0, consoleErrors.length, ...consoleErrors.filter((e) => !/status of 401/.test(e)));
    assert.ok(refused.length <= 2, refused.join('\n'));
    assertClean();
  });

  await t.test('axe: no WCAG 2.1 A or AA violation on any view, wide and narrow, light and dark', async () => {
    await api('/api/v1/workers/0/pause', { method: 'PATCH' });
    await api('/api/v1/worklist/', { method: 'POST', form: { id: `${targetA},${targetB}`, group: 'web', type: 'semi_passive', force_overwrite: 'true' } });
    const views: [string, () => Promise<void>][] = [
      ['/sessions', () => shows(page.locator('#severity-panel'), 'Progress')],
      ['/targets', () => shows(page.locator('#target-count'), '2 targets')],
      ['/plugins', () => shows(page.locator('#plugin-count'), `${catalogue.length} plugins`)],
      ['/worklist', () => shows(page.locator('#work-count'), `${2 * SEMI_PASSIVE()} queued works`)],
      ['/workers', () => shows(page.getByRole('heading', { level: 2 }), 'Workers (2)')],
      [`/targets/${targetA}`, () => shows(page.locator('.result-summary'), 'outputs')],
      ['/configuration', () => shows(page.locator('#config-count'), 'items')],
      ['/proxy', () => shows(page.locator('.fingerprint'), ':')],
    ];
    const failures: string[] = [];
    for (const [path, ready] of views) {
      for (const problem of await problemsInEachLook(page, `${server.url}${path}`, ready)) failures.push(`${path} ${problem}`);
    }
    assert.deepEqual(failures, []);
    assertClean();
  });

  await t.test('screenshots of the engine’s views, wide and narrow; nothing scrolls sideways at 390 px', async () => {
    await api('/api/v1/workers/0/resume', { method: 'PATCH' });
    await idle();
    await api('/api/v1/workers/0/pause', { method: 'PATCH' });
    await api('/api/v1/worklist/', { method: 'POST', form: { id: String(targetB), group: 'web', type: 'active', code: 'OWTF-IG-006' } });
    await api('/api/v1/workers/1/resume', { method: 'PATCH' });
    await eventually(async () => assert.equal((await api('/api/v1/workers/1')).busy, true));
    await api('/api/v1/worklist/', { method: 'POST', form: { id: `${targetA},${targetB}`, group: 'web', type: 'external', force_overwrite: 'true' } });
    const shots: [string, string, () => Promise<void>][] = [
      ['plugins', '/plugins', async () => {
        await shows(page.locator('#plugin-count'), `${catalogue.length} plugins`);
        await page.getByRole('checkbox', { name: 'All of Web · Semi-passive (ordinary requests)' }).check();
      }],
      ['worklist', '/worklist', () => shows(page.locator('#work-count'), 'queued works')],
      ['workers', '/workers', () => shows(page.locator('.worker').first(), 'Running')],
      ['results', `/targets/${targetA}`, () => shows(page.locator('.test-group[data-code="OWTF-CM-008"]'), 'Critical')],
      ['sessions-severity', '/sessions', () => shows(page.locator('#severity-panel'), 'Progress')],
    ];
    for (const [size, viewport] of [['wide', WIDE], ['narrow', NARROW]] as const) {
      await page.setViewportSize(viewport);
      for (const [name, path, ready] of shots) {
        await page.goto(`${server.url}${path}`);
        await ready();
        await page.waitForTimeout(200);
        assert.equal(await sidewaysScroll(page), undefined, `${name} ${size}`);
        await page.mouse.move(0, 0);
        await picture(page, `${name}-${size}`);
      }
    }
    await api('/api/v1/workers/0/abort', { method: 'PATCH' });
    assertClean();
  });
});
