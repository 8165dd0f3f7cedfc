/**
 * A target's hostile bytes as the web application shows them, in headless Chromium: blanks that
 * would make one header look like several, characters that show nothing, and values of megabytes.
 * The evidence is imported as a HAR, as a tester brings in another tool's traffic.
 */
import { after, before, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { CHROMIUM, missingBrowser, openBrowser, type WatchedPage } from '../helpers/browser.ts';
import { eventually, shows } from '../helpers/page.ts';
import { request, startServer, tempDir, withToken, type TestServer } from '../helpers/server.ts';
import { harOf } from '../evidence/helpers.ts';

const TOKEN = 'hostile-display-test-token-0123456789ab';
const skip = missingBrowser && !process.env.CI;
const ORIGIN = 'http://127.0.0.1:9';
const BLANKS = ' '.repeat(3000);
/** One Server header and one Set-Cookie, each padded to read as more headers once wrapped. */
const FAKE_HEADERS: [string, string][] = [
  ['Server', `nginx${BLANKS}Strict-Transport-Security: max-age=63072000${BLANKS}X-Frame-Options: DENY`],
  ['Set-Cookie', `sid=abc; Path=/${BLANKS}Set-Cookie: csrf=1; HttpOnly; Secure`],
  ['X-Padding', `${'p'.repeat(400)} Strict-Transport-Security: max-age=1`],
  ['Content-Type', 'text/plain'],
];
// as long as a URL may be (2 MiB, Chromium's bound), origin included
const LONG_PATH = `/${'a'.repeat(2 * 1024 * 1024 - 64)}`;

let server: TestServer;
let w: WatchedPage;
let target: number;

const { auth, api } = withToken(() => server.url, TOKEN);
const har = harOf;

before(async () => {
  if (missingBrowser) return;
  server = await startServer({ dataDir: await tempDir(), token: TOKEN, workers: 1 });
  await api('/api/v1/targets/', { method: 'POST', form: { target_url: `${ORIGIN}/` } });
  target = (await api<{ id: number }[]>('/api/v1/targets/'))[0].id;
  await api('/api/v1/targets/', { method: 'POST', form: { target_url: 'http://example.com/' } });
  await api('/api/v1/targets/', { method: 'POST', form: { target_url: 'http://example.com/\u200B\u200Badmin' } });
  await api(`/api/v1/targets/${target}/transactions/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: har([
      { url: `${ORIGIN}/padded`, responseHeaders: FAKE_HEADERS, responseBody: `[+] Target: x${BLANKS}\n[+] No vulnerabilities found.` },
      { url: `${ORIGIN}${LONG_PATH}`, responseBody: 'long' },
      // a hostile page's upload: control characters, six characters of JSON each
      { url: `${ORIGIN}/upload`, method: 'POST', headers: [['Content-Type', 'application/octet-stream']], body: Buffer.alloc(2 * 1024 * 1024, 1), responseBody: 'ok' },
      // a reason phrase of 1,000 characters without a space (a HAR's most), as a target may send
      { url: `${ORIGIN}/reason`, statusText: 'R'.repeat(1000), responseBody: 'ok' },
    ]),
  });
  w = await openBrowser(server.url);
});

after(async () => {
  await w?.browser.close();
  await server?.close();
});

/**
 * Each line the element's text is drawn in, by where it starts: its left edge, the text it begins
 * with, and whether a line end comes before it (a line of the text, not a wrap).
 */
async function drawnLines(selector: string) {
  // no function declared inside: the test's compiler would name it with a helper the page lacks
  return w.page.locator(selector).evaluate((el) => {
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    const lines: { left: number; text: string; afterLineEnd: boolean }[] = [];
    const range = document.createRange();
    let lastTop = -Infinity;
    let previous = '\n';
    for (let node = walker.nextNode() as Text | null; node; node = walker.nextNode() as Text | null) {
      for (let at = 0; at < node.data.length; at++) {
        const c = node.data[at];
        if (c === '\n' || c === '\r') {
          previous = '\n';
          continue;
        }
        range.setStart(node, at);
        range.setEnd(node, at + 1);
        const rect = range.getClientRects()[0];
        if (rect && rect.top > lastTop + 2) {
          lines.push({ left: rect.left, text: node.data.slice(at, at + 40), afterLineEnd: previous === '\n' });
          lastTop = rect.top;
        }
        previous = c;
      }
    }
    return lines;
  });
}

test('hostile text in the web application: no fake header line, hidden characters seen, megabyte values cut', { skip: skip && `${CHROMIUM} is missing` }, async (t: TestContext) => {
  assert.ok(!missingBrowser, `${CHROMIUM} is missing, and CI must run the browser test`);
  const { page } = w;
  await page.goto(`${server.url}/?token=${TOKEN}`);
  await shows(page.locator('h1'), 'Sessions');

  await t.test('a header padded with blanks reads as one line: its blanks counted, what wraps indented under it', async () => {
    await page.goto(`${server.url}/targets/${target}/transactions/1`);
    const headers = 'pre[aria-label="Response of #1: headers"]';
    await shows(page.locator(headers), 'Server: nginx');
    const text = (await page.locator(headers).textContent()) ?? '';
    assert.ok(text.includes('nginx⟨3,000 spaces⟩Strict-Transport-Security: max-age=63072000⟨3,000 spaces⟩X-Frame-Options: DENY'), text.slice(0, 300));
    assert.ok(text.includes('sid=abc; Path=/⟨3,000 spaces⟩Set-Cookie: csrf=1'), text.slice(0, 300));
    // a line of the text starts flush; a line drawn because one wrapped is indented under it
    const lines = await drawnLines(headers);
    const flush = Math.min(...lines.map((l) => l.left));
    const fake = lines.filter((l) => !l.afterLineEnd && Math.abs(l.left - flush) < 1);
    assert.deepEqual(fake.map((l) => l.text), [], 'wrapped lines drawn where a header starts');
    assert.ok(lines.some((l) => !l.afterLineEnd), 'a long header wraps (the test sees a wrap)');
    const body = (await page.locator('pre[aria-label="Response of #1: body"]').textContent()) ?? '';
    assert.equal(body, '[+] Target: x⟨3,000 spaces⟩\n[+] No vulnerabilities found.');
    w.assertClean();
  });

  await t.test('copy as code the browser refuses: the code itself is put in a field to copy by hand, not the block\'s marked text', async () => {
    await page.goto(`${server.url}/targets/${target}/transactions/1`);
    await page.getByLabel('Language').selectOption('bash');
    await page.getByRole('button', { name: 'Show the code' }).click();
    await page.locator('#code-text').waitFor();
    // no clipboard here, by either way the page tries
    await page.evaluate(() => {
      navigator.clipboard.writeText = () => Promise.reject(new Error('refused'));
      document.execCommand = () => false;
    });
    await page.getByRole('button', { name: 'Copy', exact: true }).click();
    const field = page.locator('textarea.code-raw');
    await field.waitFor();
    const code = await request(server.url, `/api/v1/targets/${target}/transactions/hrt/1`, auth({ method: 'POST', form: { language: 'bash' } }));
    assert.equal(code.status, 200);
    assert.equal(await field.inputValue(), code.text);
    assert.ok(await field.evaluate((el) => document.activeElement === el), 'the field has the focus, its text selected');
  });

  await t.test('a zero-width character in a target is seen in the targets list', async () => {
    await page.goto(`${server.url}/targets`);
    await shows(page.locator('main'), 'http://example.com/⟨U+200B⟩⟨U+200B⟩admin');
    w.assertClean();
  });

  await t.test('a URL of 2 MiB (the longest kept) is cut for display in the list, the URLs view, the detail, the title; the repeater is not handed it', async () => {
    await page.goto(`${server.url}/targets/${target}/transactions`);
    await eventually(async () => assert.equal(await page.locator('tr.tx').count(), 4));
    const cell = (await page.locator('tr.tx[data-tx-id="2"] .tx-url a').textContent()) ?? '';
    assert.ok(cell.length < 2100, `the list's cell holds ${cell.length} characters`);
    assert.ok(/… [\d,]+ characters more$/.test(cell), cell.slice(-60));
    assert.ok(cell.startsWith(`${ORIGIN}/aaaa`));
    assert.ok((await page.evaluate(() => document.body.textContent!.length)) < 50_000, 'the list page holds little text');

    await page.goto(`${server.url}/targets/${target}/urls`);
    await eventually(async () => assert.equal(await page.locator('tr.url-row').count(), 4));
    assert.ok((await page.evaluate(() => document.body.textContent!.length)) < 50_000, 'the URLs page holds little text');
    await shows(page.locator('main'), 'characters more');

    await page.goto(`${server.url}/targets/${target}/transactions/2`);
    await shows(page.locator('h1'), '#2 GET http://127.0.0.1:9/aaaa', 'characters more');
    const heading = (await page.locator('h1').textContent()) ?? '';
    assert.ok(heading.length < 2100, `the heading holds ${heading.length} characters`);
    assert.match(heading.slice(-60), /aaaa… [\d,]{9} characters more$/, 'cut, with millions left out');
    const title = await page.title();
    assert.ok(title.length < 200 && title.startsWith('#2 GET http://127.0.0.1:9/aaa') && title.endsWith('characters more · assessd'), title);
    const requestText = (await page.locator('pre[aria-label="Request of #2"]').textContent()) ?? '';
    assert.ok(requestText.startsWith('GET http://127.0.0.1:9/aaaa') || requestText.startsWith('GET /aaaa'), requestText.slice(0, 60));
    assert.ok(requestText.length < 20_000 && /characters more/.test(requestText), `the request block holds ${requestText.length} characters`);
    assert.equal(await page.getByLabel('URL', { exact: true }).inputValue(), '', 'the repeater’s URL is left empty');
    await shows(page.locator('form.repeater'), `The recorded URL (${(ORIGIN.length + LONG_PATH.length).toLocaleString('en')} characters) is too long to edit here`);
    assert.ok((await page.evaluate(() => document.body.textContent!.length)) < 50_000, 'the detail holds little text');
    w.assertClean();
  });

  await t.test('a request body of 2 MiB of control characters is asked for cut, as the response body is (its whole view was 25 MB of JSON); the repeater is not handed it', async () => {
    const [answer] = await Promise.all([page.waitForResponse((r) => r.url().includes(`/transactions/3?`)), page.goto(`${server.url}/targets/${target}/transactions/3`)]);
    await shows(page.locator('.tx-summary'), 'Request body', '2.1 MB sent, not shown whole here');
    // 256 KiB of it, twice (data, raw_request), six characters of JSON a byte: ~3 MB; whole, ~25 MB
    const bytes = (await answer.body()).length;
    assert.ok(bytes < 4 * 1000 * 1000, `the view's answer: ${bytes} bytes`);
    assert.equal(await page.getByLabel('Body', { exact: true }).inputValue(), '', 'the repeater’s body is left empty');
    await shows(page.locator('form.repeater'), 'The recorded body (2.1 MB) is too long to edit here: its field is left empty, and the recorded body is sent unless you type another.');
    w.assertClean();
  });

  await t.test('a reason phrase of 1,000 characters wraps within the page: the transaction view is no wider than the window', async () => {
    await page.goto(`${server.url}/targets/${target}/transactions/4`);
    await page.locator('.status-line').waitFor();
    const [width, window] = await page.evaluate(() => [document.documentElement.scrollWidth, innerWidth]);
    assert.ok(width <= window, `the page is ${width} px wide in a window of ${window}`);
    w.assertClean();
  });

  await t.test('an output of 300 findings (a bundle may hold 1,000 of 64 KiB each: all drawn at once held the view 8-12 s) shows the 100 most severe, the rest a click away', async () => {
    const findings = Array.from({ length: 300 }, (_, i) => ({ rank: i === 250 ? 4 : 1, title: `Finding ${i}`, detail: `detail ${i} ${'x'.repeat(1000)}` }));
    const output = {
      plugin_key: 'external@OWTF-IG-001', plugin_code: 'OWTF-IG-001', plugin_group: 'web', plugin_type: 'external', status: 'Successful', owtf_rank: 4, user_rank: -1,
      user_notes: '', findings, exit_code: 0, error: null, started_at: '2026-11-20T09:00:00.000Z', ended_at: '2026-11-20T09:00:01.500Z', output: 'the text',
    };
    const body = JSON.stringify({ format: 'assessd-session', version: 1, exported_at: '2026-11-21T10:00:00.000Z', session: { name: 'many findings' }, targets: [{ target_url: 'http://many-findings.example/', outputs: [output] }] });
    const { id: session } = await api<{ id: number }>('/api/v1/bundles/', { method: 'POST', body, headers: { 'content-type': 'application/json' } });
    const [many] = await api<{ id: number }[]>(`/api/v1/targets/?session_id=${session}`);
    await page.goto(`${server.url}/targets/${many!.id}`);
    const list = page.locator('ul.findings');
    await eventually(async () => assert.equal(await list.locator('li.finding').count(), 100));
    assert.equal(await list.locator('li.finding').first().locator('strong').textContent(), 'Finding 250', 'the most severe first');
    await page.getByRole('button', { name: 'Show the 200 other findings' }).click();
    await eventually(async () => assert.equal(await list.locator('li.finding').count(), 300));
    assert.equal(await page.getByRole('button', { name: /other finding/ }).count(), 0);
    w.assertClean();
  });
});
