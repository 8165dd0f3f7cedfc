/**
 * Moving an engagement between boxes in the web application, in headless Chromium: Export
 * downloads the bundle, Report opens the report, Copy targets fills the clipboard, and Import (a
 * picked file, a dropped one, a name in use, a refused file) makes the session on another server.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { CHROMIUM, launchChromium } from '../helpers/browser.ts';
import { request, startServer, tempDir, type TestServer } from '../helpers/server.ts';

const missing = !existsSync(CHROMIUM);
const skip = missing && !process.env.CI;
if (skip) console.warn(`\n!! SKIPPING the browser portability test: ${CHROMIUM} is missing (apt-get install chromium).\n`);

const URLS = ['https://app.acme.example/', 'http://10.0.0.5:8080/admin', 'https://api.acme.example/v2'];

let source: TestServer;
let target: TestServer;
let browser: Browser | undefined;
let context: BrowserContext;
const offBox: string[] = [];
const pageErrors: string[] = [];

before(async () => {
  if (missing) return;
  source = await startServer();
  target = await startServer();
  await request(source.url, '/api/v1/sessions/', { method: 'POST', form: { name: 'acme web' } });
  await request(source.url, '/api/v1/targets/', { method: 'POST', form: { target_url: URLS } });
  browser = await launchChromium();
  context = await browser.newContext({ acceptDownloads: true, viewport: { width: 1280, height: 800 } });
  context.setDefaultTimeout(5000);
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith(`${source.url}/`) || url.startsWith(`${target.url}/`)) return route.continue();
    offBox.push(url);
    return route.abort('blockedbyclient');
  });
});

after(async () => {
  await browser?.close();
  await source?.close();
  await target?.close();
});

async function open(server: TestServer, path: string): Promise<Page> {
  const page = await context.newPage();
  page.on('pageerror', (err) => pageErrors.push(err.message));
  await page.goto(`${server.url}${path}`);
  return page;
}

const card = (page: Page, name: string) => page.locator('li.session', { has: page.getByRole('heading', { name, exact: true }) });

let bundlePath: string;

test('Export downloads the session as a bundle named after it', { skip }, async () => {
  const page = await open(source, '/sessions');
  const acme = card(page, 'acme web');
  const [download] = await Promise.all([page.waitForEvent('download'), acme.getByRole('link', { name: 'Export acme web' }).click()]);
  assert.equal(download.suggestedFilename(), 'acme-web.assessd.json');
  bundlePath = join(await tempDir(), download.suggestedFilename());
  await download.saveAs(bundlePath);
  const bundle = JSON.parse(await readFile(bundlePath, 'utf8'));
  assert.equal(bundle.format, 'assessd-session');
  assert.equal(bundle.session.name, 'acme web');
  assert.deepEqual(bundle.targets.map((t: { target_url: string }) => t.target_url).sort(), [...URLS].sort());
  await page.close();
});

test('Report opens the session report in a new tab', { skip }, async () => {
  const page = await open(source, '/sessions');
  const [report] = await Promise.all([context.waitForEvent('page'), card(page, 'acme web').getByRole('link', { name: 'Report of acme web' }).click()]);
  await report.waitForLoadState();
  assert.equal(new URL(report.url()).pathname, '/api/v1/reports/2');
  const text = await report.locator('body').innerText();
  assert.match(text, /acme web/);
  for (const url of URLS) assert.ok(text.includes(new URL(url).hostname), `${url} in the report`);
  await report.close();
  await page.close();
});

test('Copy targets puts the URL list on the clipboard, one a line (sessions and targets views)', { skip }, async () => {
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: source.url });
  const page = await open(source, '/sessions');
  await card(page, 'acme web').getByRole('button', { name: 'Copy targets of acme web' }).click();
  await page.getByText('Copied 3 target URLs of “acme web”').waitFor();
  const copied = await page.evaluate(() => navigator.clipboard.readText());
  assert.deepEqual(copied.trim().split('\n').sort(), [...URLS].sort());
  await page.evaluate(() => navigator.clipboard.writeText(''));
  await page.goto(`${source.url}/targets?session=2`);
  await page.getByRole('button', { name: 'Copy targets of acme web' }).click();
  await page.getByText('Copied 3 target URLs').waitFor();
  assert.equal((await page.evaluate(() => navigator.clipboard.readText())).trim().split('\n').length, 3);
  await page.close();
});

test('Import: a picked bundle becomes a session on another box; a name in use asks for another; a bad file is refused inline', { skip }, async () => {
  const page = await open(target, '/sessions');
  await page.getByLabel('Import…').setInputFiles(bundlePath);
  await page.getByText('Imported “acme-web.assessd.json” as the session “acme web” with 3 targets.').waitFor();
  await card(page, 'acme web').waitFor();
  const sessions = (await request(target.url, '/api/v1/sessions/')).json.data;
  const imported = sessions.find((s: { name: string }) => s.name === 'acme web');
  assert.equal(imported.active, false, 'an import does not change the active session');
  const targets = (await request(target.url, `/api/v1/targets/?session_id=${imported.id}`)).json.data;
  assert.deepEqual(targets.map((t: { target_url: string }) => t.target_url).sort(), [...URLS].sort());

  // the same bundle again: the name is taken, so the page asks for another
  await page.getByLabel('Import…').setInputFiles(bundlePath);
  await page.getByText('A session with that name already exists').waitFor();
  await page.getByLabel('Import as').fill('acme web (retest)');
  await page.getByRole('button', { name: 'Import', exact: true }).click();
  await page.getByText('as the session “acme web (retest)” with 3 targets').waitFor();

  // not a bundle: refused, in the server's words, and nothing changes
  const before = (await request(target.url, '/api/v1/sessions/')).text;
  await page.getByLabel('Import…').setInputFiles({ name: 'notes.json', mimeType: 'application/json', buffer: Buffer.from('{"format":"something else"}') });
  await page.getByText('Nothing was imported from “notes.json”: Not an assessd session bundle').waitFor();
  assert.equal((await request(target.url, '/api/v1/sessions/')).text, before);
  await page.close();
});

test('Import: a bundle dropped on the sessions view is imported too', { skip }, async () => {
  const page = await open(target, '/sessions');
  await page.getByRole('heading', { name: 'All sessions' }).waitFor();
  const bundle = (await readFile(bundlePath, 'utf8')).replace('"name":"acme web"', '"name":"dropped acme"');
  const transfer = await page.evaluateHandle((text) => {
    const data = new DataTransfer();
    data.items.add(new File([text], 'dropped.assessd.json', { type: 'application/json' }));
    return data;
  }, bundle);
  await page.locator('main').dispatchEvent('dragover', { dataTransfer: transfer });
  await page.locator('main').dispatchEvent('drop', { dataTransfer: transfer });
  await page.getByText('as the session “dropped acme” with 3 targets').waitFor();
  await card(page, 'dropped acme').waitFor();
  await page.close();
});

test('nothing left the box, and no page error', { skip }, () => {
  assert.deepEqual(offBox, []);
  assert.deepEqual(pageErrors, []);
});
