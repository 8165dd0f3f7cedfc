/**
 * A target's transactions in the web application, driven as a tester drives them in headless
 * Chromium against the real server (with a token): the list (filter, paging, live arrivals), a
 * transaction as text (never rendered), copy as code, the repeater against a real site, HAR import
 * through the file picker and export, the URLs view, grep findings leading to their transactions.
 * Each new view is checked with axe, wide and narrow, light and dark; its requests are counted.
 */
import { after, before, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { CHROMIUM, missingBrowser, openBrowser, picture, problemsInEachLook, sidewaysScroll, type WatchedPage } from '../helpers/browser.ts';
import { eventually, shows } from '../helpers/page.ts';
import { request, startServer, tempDir, withToken, type TestServer } from '../helpers/server.ts';
import { entryToExchange } from '../../src/evidence/har.ts';
import { harOf, type EntrySpec } from '../evidence/helpers.ts';

const TOKEN = 'transactions-view-test-token-0123456789';
const skip = missingBrowser && !process.env.CI;
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');

let server: TestServer;
let site: Server;
let origin: string;
let w: WatchedPage;
let target: number;
/** What the site received from replays. */
const received: { method: string; url: string; headers: Record<string, string | string[] | undefined>; body: string }[] = [];

const { auth, api } = withToken(() => server.url, TOKEN);
const har = harOf;
const importEntries = (entries: EntrySpec[]) => api(`/api/v1/targets/${target}/transactions/`, { method: 'POST', body: har(entries), headers: { 'content-type': 'application/json' } });
const paths = (list: string[]) => list.map((c) => c.replace(/\?.*$/, '')).filter((c) => !c.startsWith('GET /debug/health'));

/** 120 transactions: pages, a form POST, an image, a page whose body is markup with a script. */
function engagement(): EntrySpec[] {
  const entries: EntrySpec[] = [];
  for (let i = 0; i < 120; i++) {
    if (i === 10) entries.push({ url: `${origin}/login`, method: 'POST', headers: [['Content-Type', 'application/x-www-form-urlencoded'], ['Cookie', 'sid=1']], body: 'user=alice&pass=x', status: 302, statusText: 'Found', responseHeaders: [['Location', '/'], ['Set-Cookie', 'auth=1; Path=/']] });
    else if (i === 20) entries.push({ url: `${origin}/logo.png`, responseBody: PNG, mimeType: 'image/png', responseHeaders: [['Content-Type', 'image/png']] });
    else if (i === 30) entries.push({ url: `${origin}/evil`, responseBody: '<html><body><script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2"><h1>EVIL-MARKER</h1><!-- a comment --></body></html>', responseHeaders: [['Content-Type', 'text/html'], ['Server', 'Apache/2.4.49']] });
    else entries.push({ url: `${origin}/page/${i}${i % 4 === 0 ? '?q=1' : ''}`, responseBody: `page ${i}`, responseHeaders: [['Content-Type', 'text/html'], ['Server', 'Apache/2.4.49']], status: i % 17 === 0 ? 404 : 200, statusText: i % 17 === 0 ? 'Not Found' : 'OK' });
  }
  return entries;
}

before(async () => {
  if (missingBrowser) return;
  site = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ method: req.method!, url: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString() });
      res.writeHead(200, { 'Content-Type': 'text/plain', 'X-Echo': 'yes' });
      res.end(`echo ${req.method} ${req.url} ${Buffer.concat(chunks).toString()}`);
    });
  });
  await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
  server = await startServer({ dataDir: await tempDir(), token: TOKEN, workers: 1 });
  await api('/api/v1/targets/', { method: 'POST', form: { target_url: `${origin}/` } });
  target = (await api<{ id: number }[]>('/api/v1/targets/'))[0].id;
  await importEntries(engagement());
  w = await openBrowser(server.url);
  await w.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
});

after(async () => {
  await w?.browser.close();
  await server?.close();
  await new Promise((resolve) => site?.close(resolve));
});

test('a target’s transactions in the web application: list, filter, live, detail, copy as code, repeater, HAR, URLs, findings', { skip: skip && `${CHROMIUM} is missing` }, async (t: TestContext) => {
  assert.ok(!missingBrowser, `${CHROMIUM} is missing, and CI must run the browser test`);
  const { page } = w;
  const base = server.url;
  const list = `${base}/targets/${target}/transactions`;

  await t.test('the list: newest first, five requests in all on a load, paging', async () => {
    await page.goto(`${base}/?token=${TOKEN}`);
    await shows(page.locator('h1'), 'Sessions');
    w.calls.take();
    await page.goto(list);
    await shows(page.locator('h1'), `Transactions of ${origin}/`);
    await shows(page.locator('#tx-count'), '120 transactions');
    await page.waitForTimeout(300);
    const made = w.calls.take();
    const firstLoad = made.filter((c) => !/after_id=/.test(c));
    assert.ok(firstLoad.length <= 5, `a load makes at most 5 requests: ${made.join(', ')}`);
    assert.deepEqual(paths(firstLoad).sort(), ['GET /api/v1/auth', 'GET /api/v1/sessions/', `GET /api/v1/targets/${target}`, `GET /api/v1/targets/${target}/transactions/search/`]);
    await eventually(async () => assert.equal(await page.locator('tr.tx').count(), 50));
    assert.equal(await page.locator('tr.tx').first().getAttribute('data-tx-id'), '120');
    await shows(page.locator('.page-range'), '1–50 of 120');
    assert.equal(await page.getByRole('navigation', { name: 'This target' }).getByRole('link', { name: 'Transactions' }).getAttribute('aria-current'), 'page');
    assert.equal(await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Targets' }).getAttribute('aria-current'), 'true');
    await page.getByRole('button', { name: 'Next ›' }).click();
    await shows(page.locator('.page-range'), '51–100 of 120');
    assert.equal(await page.locator('tr.tx').first().getAttribute('data-tx-id'), '70');
    assert.match(new URL(page.url()).search, /page=2/);
    w.assertClean();
  });

  await t.test('the filter language: matches counted, kept in the address; a bad expression marked where it goes wrong', async () => {
    const filter = page.getByLabel('Filter expression');
    await filter.fill('~m POST | ~c 404');
    await filter.press('Enter');
    await shows(page.locator('#tx-count'), '9 of 120 transactions match');
    assert.equal(new URL(page.url()).searchParams.get('q'), '~m POST | ~c 404');
    assert.match(await page.locator('#har-export').getAttribute('href') ?? '', /\/transactions\/har\?q=~m%20POST%20%7C%20~c%20404$/);
    await page.reload();
    await shows(page.locator('#tx-count'), '9 of 120 transactions match');
    await filter.fill('~m GET & ~c abc');
    await page.getByRole('button', { name: 'Filter', exact: true }).click();
    await shows(page.locator('#tx-filter-error'), 'Invalid filter expression: ~c needs a status code at position 12');
    assert.equal(await page.locator('#tx-filter-error mark').textContent(), 'abc');
    assert.equal(await filter.getAttribute('aria-invalid'), 'true');
    // an expression that cannot be read is not asked again every second by the live look
    w.calls.take();
    await page.waitForTimeout(2500);
    assert.deepEqual(w.calls.take().filter((c) => c.includes('/transactions/search/')), []);
    await page.getByRole('button', { name: 'Clear' }).click();
    await shows(page.locator('#tx-count'), '120 transactions');
    assert.equal(await page.locator('#tx-filter-error').textContent(), '');
    w.assertClean(/status of 400/);
  });

  await t.test('live: new transactions appear on the first page without a reload, at most a request a second; elsewhere a notice', async () => {
    w.calls.take();
    const started = Date.now();
    await importEntries([0, 1, 2].map((i) => ({ url: `${origin}/live/${i}`, responseBody: 'new' })));
    // a poll a second shows them within a few seconds; loose, for a busy box (the rate is held below)
    await eventually(async () => assert.equal(await page.locator('tr.tx').first().getAttribute('data-tx-id'), '123'), 6000);
    assert.ok(Date.now() - started < 6000);
    await shows(page.locator('#tx-count'), '123 transactions');
    assert.equal(await page.locator('tr.tx').count(), 50, 'the page keeps its length');
    await page.waitForTimeout(5000);
    const polls = w.calls.take().filter((c) => c.includes('/transactions/search/'));
    assert.ok(polls.length <= 7, `${polls.length} looks in about 6 s`);
    assert.ok(polls.every((c) => /after_id=\d+/.test(c)), 'each look asks only for what is new');
    await page.getByRole('button', { name: 'Next ›' }).click();
    await shows(page.locator('.page-range'), '51–100 of 123');
    await importEntries([{ url: `${origin}/live/3`, responseBody: 'newer' }, { url: `${origin}/live/4`, responseBody: 'newer' }]);
    await shows(page.locator('.notice'), '2 new transactions arrived.');
    assert.equal(await page.locator('tr.tx').first().getAttribute('data-tx-id'), '73', 'the page shown does not shift');
    await page.getByRole('button', { name: 'Show the newest' }).click();
    await eventually(async () => assert.equal(await page.locator('tr.tx').first().getAttribute('data-tx-id'), '125'));
    w.assertClean();
  });

  await t.test('a transaction: request and response as text, never rendered; an image as an image; copy as code', async () => {
    await page.getByLabel('Filter expression').fill('evil');
    await page.getByLabel('Filter expression').press('Enter');
    await shows(page.locator('#tx-count'), '1 of 125 transactions match');
    w.calls.take();
    await page.getByRole('link', { name: `${origin}/evil` }).click();
    await shows(page.locator('h1'), `#31 GET ${origin}/evil`);
    await shows(page.locator('pre[aria-label="Response of #31: body"]'), '<script>window.__pwned = 1</script>', 'EVIL-MARKER');
    assert.equal(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned), undefined, 'nothing of the body ran');
    assert.equal(await page.locator('main script, main h1:has-text("EVIL-MARKER"), main img[src="x"]').count(), 0, 'the body is text, not markup');
    await shows(page.locator('pre[aria-label="Request of #31"]'), `GET ${origin}/evil HTTP/1.1`);
    // the list's live look (once a second) may still go out before the detail is opened
    const opened = w.calls.take().filter((c) => !/\/transactions\/search\/\?.*after_id=\d+/.test(c));
    assert.deepEqual(paths(opened), [`GET /api/v1/targets/${target}/transactions/31`]);
    await page.getByLabel('Language').selectOption('python');
    await page.getByRole('button', { name: 'Show the code' }).click();
    await shows(page.locator('#code-text'), 'import base64, http.client', "path = '/evil'");
    await page.getByRole('button', { name: 'Copy', exact: true }).click();
    assert.match(await page.evaluate(() => navigator.clipboard.readText()), /^#!\/usr\/bin\/env python3\n/);
    await page.getByRole('link', { name: '← Back to the list' }).click();
    await shows(page.locator('#tx-count'), '1 of 125 transactions match');
    // the image, from the body route, as an image
    await page.goto(`${base}/targets/${target}/transactions/21`);
    const img = page.getByRole('img', { name: /The response body of #21 \(image\/png/ });
    await img.waitFor();
    assert.equal(await img.getAttribute('src'), `/api/v1/targets/${target}/transactions/21/body`);
    await eventually(async () => assert.equal(await img.evaluate((el) => (el as HTMLImageElement).naturalWidth), 1));
    w.assertClean();
  });

  await t.test('the repeater: the edited request lands on the site as edited, the answer beside the recorded one; another host refused', async () => {
    await page.goto(`${base}/targets/${target}/transactions/11`);
    await shows(page.locator('h1'), `#11 POST ${origin}/login`);
    assert.equal(await page.getByLabel('Body').inputValue(), 'user=alice&pass=x');
    assert.equal(await page.getByLabel('Headers, one “Name: value” a line').inputValue(), 'Content-Type: application/x-www-form-urlencoded\nCookie: sid=1');
    received.length = 0;
    await page.getByLabel('Method').fill('PUT');
    await page.getByLabel('URL', { exact: true }).fill(`${origin}/login?again=1`);
    await page.getByLabel('Headers, one “Name: value” a line').fill('Content-Type: text/plain\nX-Tester: yes');
    await page.getByLabel('Body').fill('edited body');
    await page.getByRole('button', { name: 'Send' }).click();
    await shows(page.locator('#rep-result'), 'Recorded response (#11)', '302 Found', 'Answer now (#126)', '200 OK', 'echo PUT /login?again=1 edited body');
    assert.equal(received.length, 1);
    assert.equal(received[0].method, 'PUT');
    assert.equal(received[0].url, '/login?again=1');
    assert.equal(received[0].headers['x-tester'], 'yes');
    assert.equal(received[0].headers.cookie, undefined, 'the headers as edited');
    assert.equal(received[0].body, 'edited body');
    await page.getByRole('link', { name: '#126', exact: true }).click();
    await shows(page.locator('h1'), `#126 PUT ${origin}/login?again=1`);
    await shows(page.locator('.tx-summary'), 'replay');
    await page.goBack();
    await shows(page.locator('h1'), `#11 POST ${origin}/login`);
    await page.getByLabel('URL', { exact: true }).fill('http://elsewhere.example/');
    await page.getByRole('button', { name: 'Send' }).click();
    await shows(page.locator('#rep-result'), "Invalid replay: a replay goes to the target's own host and port", 'not to elsewhere.example:80');
    assert.equal(await page.getByLabel('URL', { exact: true }).getAttribute('aria-invalid'), 'true');
    assert.equal(received.length, 1, 'nothing sent');
    // edits not sent are asked about before leaving (the payload was lost without a word)
    await page.getByLabel('Body').fill('a payload not sent yet');
    await page.getByRole('link', { name: '← Back to the list' }).click();
    const leave = page.getByRole('dialog', { name: 'Leave without saving?' });
    await shows(leave, 'Your edits of the request in the repeater are not sent.');
    await leave.getByRole('button', { name: 'Cancel' }).click();
    assert.equal(await page.getByLabel('Body').inputValue(), 'a payload not sent yet');
    assert.equal(await page.getByLabel('URL', { exact: true }).inputValue(), 'http://elsewhere.example/');
    // Forward (or Back) asks too, and Cancel keeps the history as it was: it pushed an entry in
    // place of the forward ones, so that a second Forward went nowhere
    const entries = await page.evaluate(() => history.length);
    await page.goForward();
    await shows(leave, 'Your edits of the request in the repeater are not sent.');
    await leave.getByRole('button', { name: 'Cancel' }).click();
    await eventually(async () => assert.equal(new URL(page.url()).pathname, `/targets/${target}/transactions/11`));
    assert.equal(await page.evaluate(() => history.length), entries, 'no entry added');
    assert.equal(await page.getByLabel('Body').inputValue(), 'a payload not sent yet');
    await page.goForward();
    await leave.getByRole('button', { name: 'Leave without saving' }).click();
    await shows(page.locator('h1'), `#126 PUT ${origin}/login?again=1`);
    await page.goBack();
    await shows(page.locator('h1'), `#11 POST ${origin}/login`);
    assert.equal(await page.getByLabel('Body').inputValue(), 'user=alice&pass=x', 'the view drawn again, as recorded');
    await page.getByLabel('Body').fill('a payload not sent yet');
    // back to the recorded request: nothing to ask
    await page.getByRole('button', { name: 'Reset to the recorded request' }).click();
    await page.getByRole('link', { name: '← Back to the list' }).click();
    await shows(page.locator('h1'), `Transactions of ${origin}/`);
    assert.equal(await leave.count(), 0);
    w.assertClean(/status of 400/);
  });

  await t.test('HAR import through the file picker, with its progress, then the list; export of what the filter finds', async () => {
    const file = join(await tempDir(), 'browser.har');
    await writeFile(file, har(Array.from({ length: 40 }, (_, i) => ({ url: `${origin}/imported/${i}`, responseBody: 'x'.repeat(50_000) }))));
    await page.goto(list);
    await shows(page.locator('#tx-count'), '126 transactions');
    await page.locator('#har-file').setInputFiles(file);
    await shows(page.locator('#har-status'), 'Imported 40 transactions from “browser.har”.');
    await shows(page.locator('#tx-count'), '166 transactions');
    assert.equal(await page.locator('tr.tx').first().getAttribute('data-tx-id'), '166');
    await page.getByLabel('Filter expression').fill('~u imported/3');
    await page.getByLabel('Filter expression').press('Enter');
    await shows(page.locator('#tx-count'), '11 of 166 transactions match');
    const href = await page.locator('#har-export').getAttribute('href');
    const exported = await request(base, href!, auth());
    assert.equal(exported.status, 200);
    assert.equal(JSON.parse(exported.text).log.entries.length, 11);
    w.assertClean();
  });

  await t.test('URLs: each URL once with its kind, filtered by kind and by text', async () => {
    w.calls.take();
    await page.goto(`${base}/targets/${target}/urls`);
    await shows(page.locator('h1'), `URLs of ${origin}/`);
    await shows(page.locator('#url-count'), '166 URLs');
    await page.getByLabel('Kind').selectOption('image');
    await shows(page.locator('#url-count'), '1 of 166 URLs match');
    await shows(page.locator('tr.url-row'), `${origin}/logo.png`, 'image', 'Yes', 'In scope');
    await page.getByLabel('Kind').selectOption('');
    await page.getByLabel('Filter by a part of the URL').fill('login');
    await shows(page.locator('#url-count'), '2 of 166 URLs match');
    assert.match(new URL(page.url()).search, /url=login/);
    w.assertClean();
  });

  await t.test('a refusal is said as it is: a bad address names the argument, a deleted target is a deleted target (each read "no such target" or "no such transaction")', async () => {
    await page.goto(`${base}/targets/${target}/urls?kind=nope`);
    await shows(page.locator('main'), 'Invalid parameter type provided');
    assert.equal(await page.getByText(`There is no target with id ${target}.`).count(), 0);
    await api('/api/v1/targets/', { method: 'POST', form: { target_url: 'http://gone.example/' } });
    const gone = (await api<{ id: number; target_url: string }[]>('/api/v1/targets/')).find((x) => x.target_url === 'http://gone.example/')!.id;
    await api(`/api/v1/targets/${gone}`, { method: 'DELETE' });
    await page.goto(`${base}/targets/${gone}/transactions/3`);
    await shows(page.locator('main'), `There is no target with id ${gone}.`);
    await page.goto(`${base}/targets/${target}/transactions/99999`);
    await shows(page.locator('main'), `Target ${target} has no transaction #99999.`);
    w.assertClean(/status of 400/);
  });

  await t.test('grep findings name their transactions: each a link to it', async () => {
    await api('/api/v1/worklist/', { method: 'POST', form: { id: String(target), group: 'web', type: 'grep', code: 'OWTF-IG-004' } });
    await eventually(async () => assert.equal((await api('/api/v1/plugins/progress')).left_count, 0), 20_000);
    await page.goto(`${base}/targets/${target}`);
    const output = page.locator('.test-group[data-code="OWTF-IG-004"] .output');
    await shows(output.locator('.findings'), 'Version named by a header: Server: Apache/2.4.49', 'Seen in 118 transactions (the first 100 listed):');
    await output.getByRole('link', { name: 'Transaction 1', exact: true }).click();
    await shows(page.locator('h1'), `#1 GET ${origin}/page/0?q=1`);
    w.assertClean();
  });

  await t.test('a request the proxy sent more than once says so in its detail', async () => {
    // as the proxy records one it sent again (a kept-alive connection the target had closed)
    const entry = JSON.parse(har([{ url: `${origin}/sent-again` }])).log.entries[0];
    const exchange = entryToExchange({ ...entry, _source: 'proxy', _resent: 2 }, 0, true)!;
    const imported = await server.evidence.importExchanges(target, (async function* () {
      yield exchange;
    })());
    assert.ok(imported.ok);
    await page.goto(`${base}/targets/${target}/transactions/${imported.first}`);
    await shows(page.locator('h1'), `#${imported.first} GET ${origin}/sent-again`);
    await shows(page.locator('main'), 'Sent', '3 times by the proxy: the target may have received each');
    // one sent once has no such row
    await page.goto(`${base}/targets/${target}/transactions/31`);
    await shows(page.locator('h1'), `#31 GET ${origin}/evil`);
    assert.doesNotMatch(await page.locator('main').innerText(), /times by the proxy/);
    w.assertClean();
  });

  await t.test('an answer the target cut short is marked in the list, not shown as a clean 200 (the detail says what failed)', async () => {
    const entry = JSON.parse(har([{ url: `${origin}/cut-mid-body` }])).log.entries[0];
    const exchange = entryToExchange({ ...entry, _source: 'proxy', _error: 'the answer was cut short' }, 0, true)!;
    const imported = await server.evidence.importExchanges(target, (async function* () {
      yield exchange;
    })());
    assert.ok(imported.ok);
    await page.goto(`${base}/targets/${target}/transactions?q=${encodeURIComponent('~u cut-mid-body')}`);
    const row = page.locator(`tr.tx[data-tx-id="${imported.first}"]`);
    await shows(row, 'incomplete');
    assert.equal(await row.locator('.tag', { hasText: 'incomplete' }).getAttribute('title'), 'the answer was cut short');
    await page.goto(`${base}/targets/${target}/transactions?q=${encodeURIComponent('~u sent-again')}`);
    await shows(page.locator('tr.tx').first(), 'sent-again');
    assert.doesNotMatch(await page.locator('tr.tx').first().innerText(), /incomplete/, 'a whole answer has no mark');
    w.assertClean();
  });

  await t.test('a request body of 9 million blanks: its first 256 KiB asked for and shown, the run as one mark (the page showed its heading alone), and said to be longer', async () => {
    const entry = JSON.parse(har([{ url: `${origin}/blanks`, method: 'POST', headers: [['Content-Type', 'text/plain']], body: `a${' '.repeat(9_000_000)}END` }])).log.entries[0];
    const imported = await server.evidence.importExchanges(target, (async function* () {
      yield entryToExchange(entry, 0, true)!;
    })());
    assert.ok(imported.ok);
    await page.goto(`${base}/targets/${target}/transactions/${imported.first}`);
    await shows(page.locator('h1'), `#${imported.first} POST ${origin}/blanks`);
    await shows(page.locator(`pre[aria-label="Request of #${imported.first}"]`), 'a⟨262,143 spaces⟩');
    await shows(page.locator('.tx-summary'), 'Request body', '9.0 MB sent, not shown whole here');
    w.assertClean();
  });

  await t.test('axe: no WCAG 2.1 A or AA violation on the new views, wide and narrow, light and dark; nothing scrolls sideways', async () => {
    const views: [string, string, () => Promise<void>][] = [
      ['transactions', `/targets/${target}/transactions`, () => shows(page.locator('#tx-count'), 'transactions')],
      ['transactions-error', `/targets/${target}/transactions?q=${encodeURIComponent('~c abc')}`, () => shows(page.locator('#tx-filter-error'), 'Invalid filter expression')],
      ['transaction', `/targets/${target}/transactions/31`, async () => {
        await shows(page.locator('pre[aria-label="Response of #31: body"]'), 'EVIL-MARKER');
        await page.getByRole('button', { name: 'Show the code' }).click();
        await shows(page.locator('#code-text'), 'curl');
        await page.getByRole('button', { name: 'Send' }).click();
        await shows(page.locator('#rep-result'), 'Answer now');
      }],
      ['transaction-image', `/targets/${target}/transactions/21`, () => page.getByRole('img', { name: /The response body of #21/ }).waitFor()],
      ['urls', `/targets/${target}/urls`, () => shows(page.locator('#url-count'), 'URLs')],
      ['results', `/targets/${target}`, () => shows(page.locator('.result-summary'), 'output')],
    ];
    const failures: string[] = [];
    for (const [name, path, ready] of views) {
      const problems = await problemsInEachLook(page, `${base}${path}`, ready, async ({ size, scheme }) => {
        // the README's pictures of these views (the results view's is the engine test's)
        if (scheme === 'light' && ['transactions', 'transaction', 'urls'].includes(name)) await picture(page, `${name}-${size}`);
        const sideways = await sidewaysScroll(page);
        return sideways ? [sideways] : [];
      });
      for (const problem of problems) failures.push(`${path} ${problem}`);
    }
    assert.deepEqual(failures, []);
    w.assertClean(/status of 400/);
  });
});
