/**
 * Access control seen from a real browser: pages of other origins (another port, another site, a
 * rebound DNS name) try to change or read the server's data in headless Chromium, and fail; the
 * login URL logs a browser in and leaves the address bar.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { CHROMIUM, launchChromium } from '../helpers/browser.ts';
import { request, spawnServer, startServer, tempDir, type TestServer } from '../helpers/server.ts';

const missing = !existsSync(CHROMIUM);
const skip = missing && !process.env.CI;
if (skip) console.warn(`\n!! SKIPPING the browser security test: ${CHROMIUM} is missing (apt-get install chromium).\n`);

let server: TestServer;
let attacker: Server;
let attackerPort: number;
let browser: Browser | undefined;

/** The attacker's page: a plain form and fetch() calls against the server, as any web site could send. */
function attackPage(target: string): string {
  return `<!doctype html><html><body>
<iframe name="sink" id="sink"></iframe>
<form id="f" method="POST" action="${target}/api/v1/sessions/" target="sink"><input name="name" value="form-csrf"></form>
<iframe name="sink2" id="sink2"></iframe>
<form id="g" method="POST" action="${target}/api/v1/configuration/" target="sink2"><input name="THREADS" value="666"></form>
<script>
window.results = {};
const loaded = (id) => new Promise((r) => document.getElementById(id).addEventListener('load', r, { once: true }));
const sinkLoaded = Promise.all([loaded('sink'), loaded('sink2')]);
document.getElementById('f').submit();
document.getElementById('g').submit();
window.done = (async () => {
  await sinkLoaded;
  const attempt = async (name, run) => { try { const res = await run(); window.results[name] = res.type + ':' + res.status; } catch (e) { window.results[name] = 'error:' + e.message; } };
  await attempt('post', () => fetch('${target}/api/v1/sessions/', { method: 'POST', mode: 'no-cors', body: new URLSearchParams({ name: 'fetch-csrf' }) }));
  await attempt('activate', () => fetch('${target}/api/v1/sessions/2/activate', { method: 'PATCH' }));
  await attempt('delete', () => fetch('${target}/api/v1/sessions/1', { method: 'DELETE' }));
  await attempt('read', async () => { const res = await fetch('${target}/api/v1/sessions/'); window.results.readBody = await res.text(); return res; });
})();
</script></body></html>`;
}

before(async () => {
  if (missing) return;
  server = await startServer();
  attacker = createServer((req, res) => {
    const target = new URL(req.url ?? '/', 'http://x').searchParams.get('target') ?? server.url;
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(attackPage(target));
  });
  await new Promise<void>((resolve) => attacker.listen(0, '127.0.0.1', resolve));
  attackerPort = (attacker.address() as AddressInfo).port;
  browser = await launchChromium({
    // DNS rebinding, without DNS: the attacker's name resolves to the server's address
    args: ['--host-resolver-rules=MAP rebound.example 127.0.0.1'],
    // Chromium's own Local Network Access checks would stop a public page first: the test is of the server's defence
    disabledFeatures: ['LocalNetworkAccessChecks', 'BlockInsecurePrivateNetworkRequests', 'PrivateNetworkAccessSendPreflights'],
  });
});

after(async () => {
  await browser?.close();
  attacker?.close();
  await server?.close();
});

async function state(): Promise<string> {
  const sessions = (await request(server.url, '/api/v1/sessions/')).json.data;
  const threads = (await request(server.url, '/api/v1/configuration?key=THREADS')).json.data[0];
  return JSON.stringify({ sessions, threads });
}

/** Opens the attacker's page at `origin` and waits for its attempts; returns what its scripts saw and what the server answered. */
async function attackFrom(origin: string, target = server.url): Promise<{ results: Record<string, string>; statuses: Map<string, number[]>; page: Page }> {
  const context = await browser!.newContext();
  const page = await context.newPage();
  const statuses = new Map<string, number[]>();
  page.on('response', (res) => {
    if (!res.url().startsWith(target)) return;
    const key = `${res.request().method()} ${new URL(res.url()).pathname}`;
    statuses.set(key, [...(statuses.get(key) ?? []), res.status()]);
  });
  await page.goto(`${origin}/?target=${encodeURIComponent(target)}`);
  await page.waitForFunction(() => (window as unknown as { done?: Promise<void> }).done !== undefined);
  await page.evaluate(() => (window as unknown as { done: Promise<void> }).done);
  await page.waitForLoadState('networkidle');
  const results = await page.evaluate(() => (window as unknown as { results: Record<string, string> }).results);
  return { results, statuses, page };
}

test('a page on another port of localhost (cross-site) can change nothing: form POST and fetch are refused 403', { skip }, async () => {
  await request(server.url, '/api/v1/sessions/', { method: 'POST', form: { name: 'second' } });
  const before = await state();
  const { statuses, page } = await attackFrom(`http://localhost:${attackerPort}`);
  assert.deepEqual(statuses.get('POST /api/v1/sessions/'), [403, 403], 'the form and the fetch reached the server and were refused');
  assert.match(await page.frame('sink')!.content(), /Cross-origin request refused/);
  assert.equal(await state(), before, 'nothing changed');
  await page.context().close();
});

test('a page on another port of the same address (same-site) can change nothing either', { skip }, async () => {
  const before = await state();
  const { statuses, page } = await attackFrom(`http://127.0.0.1:${attackerPort}`);
  assert.deepEqual(statuses.get('POST /api/v1/sessions/'), [403, 403]);
  assert.deepEqual(statuses.get('POST /api/v1/configuration/'), [403]);
  assert.equal(await state(), before);
  await page.context().close();
});

test('DNS rebinding: under a rebound name the page and every API call are 403, so its same-origin script reads and changes nothing', { skip }, async () => {
  const before = await state();
  const rebound = `http://rebound.example:${new URL(server.url).port}`;
  const context = await browser!.newContext();
  const direct = await context.newPage();
  const response = await direct.goto(`${rebound}/`);
  assert.equal(response?.status(), 403);
  assert.match(await direct.content(), /Host not allowed/);
  // The attacker's page first came from the attacker's own address under that name; its requests
  // now reach the server (the name re-pointed at 127.0.0.1), same-origin in the browser's eyes.
  const page = await context.newPage();
  await page.route(`${rebound}/`, (route) => route.fulfill({ contentType: 'text/html', body: attackPage(rebound) }));
  const statuses: string[] = [];
  page.on('response', (res) => statuses.push(`${res.request().method()} ${new URL(res.url()).pathname} ${res.status()}`));
  await page.goto(`${rebound}/`);
  await page.waitForFunction(() => (window as unknown as { done?: Promise<void> }).done !== undefined);
  await page.evaluate(() => (window as unknown as { done: Promise<void> }).done);
  const results = await page.evaluate(() => (window as unknown as { results: Record<string, string> }).results);
  assert.equal(results.read, 'basic:403', 'the same-origin read reached the server and was refused');
  assert.match(results.readBody, /Host not allowed/);
  assert.doesNotMatch(JSON.stringify(results), /default session/);
  for (const call of ['POST /api/v1/sessions/', 'PATCH /api/v1/sessions/2/activate', 'DELETE /api/v1/sessions/1', 'GET /api/v1/sessions/']) {
    assert.ok(statuses.includes(`${call} 403`), `${call}: ${statuses.join(', ')}`);
  }
  assert.equal(await state(), before);
  await context.close();
});

test('bidirectional controls in a name are shown as marks: they do not turn the page\'s own words around', { skip }, async () => {
  const name = 'evil\u202Eeman';
  assert.equal((await request(server.url, '/api/v1/sessions/', { method: 'POST', form: { name } })).status, 201);
  const context = await browser!.newContext();
  try {
    const page = await context.newPage();
    await page.goto(`${server.url}/sessions`);
    await page.getByText('evil⟨U+202E⟩eman').first().waitFor();
    assert.ok(!(await page.locator('body').innerText()).includes('\u202E'), 'no control reaches the page\'s text');
  } finally {
    await context.close();
  }
});

test('the login URL the server prints logs the browser in and leaves the address bar; without it, the page asks for the token; log out', { skip }, async () => {
  // as a user runs it: the compiled server beyond loopback, its generated token, the URL it prints
  const dataDir = await tempDir();
  const server = await spawnServer(['--host', '0.0.0.0', '--port', '0', '--data-dir', dataDir]);
  const loginUrl = /log in at (http:\/\/\S+)/.exec(server.output())![1];
  const token = (await readFile(join(dataDir, 'token'), 'utf8')).trim();
  const base = new URL(loginUrl).origin;
  const port = new URL(loginUrl).port;
  const context = await browser!.newContext();
  try {
    const page = await context.newPage();
    const requests: string[] = [];
    page.on('request', (req) => requests.push(req.url()));
    await page.goto(loginUrl);
    await page.getByText('default session').first().waitFor();
    assert.equal(page.url(), `${base}/`, 'the token left the address bar');
    assert.ok(!requests.slice(1).some((url) => url.includes(token)), 'no later request carries the token in its URL');
    const [cookie] = await context.cookies();
    assert.equal(cookie.name, `assessd-${port}`);
    assert.equal(cookie.httpOnly, true);
    assert.equal(cookie.sameSite, 'Strict');
    assert.notEqual(cookie.value, token);
    await page.getByText('Token required').waitFor();

    // a fresh browser: the page asks, refuses a wrong token, takes the right one
    const other = await browser!.newContext();
    const fresh = await other.newPage();
    await fresh.goto(`${base}/sessions`);
    const dialog = fresh.getByRole('dialog', { name: 'Log in to assessd' });
    await dialog.waitFor();
    await dialog.getByLabel('Access token').fill('wrong');
    await dialog.getByRole('button', { name: 'Log in' }).click();
    await dialog.getByText('That is not the token of this server.').waitFor();
    await dialog.getByLabel('Access token').fill(token);
    await dialog.getByRole('button', { name: 'Log in' }).click();
    await fresh.getByText('default session').first().waitFor();
    assert.equal(await dialog.count(), 0);

    // log out: the cookie no longer works, not even where a copy of it went, and the page asks again
    const [held] = await other.cookies();
    assert.equal((await request(base, '/api/v1/sessions/', { headers: { cookie: `${held!.name}=${held!.value}` }, auth: false })).status, 200);
    await fresh.getByRole('button', { name: 'Log out' }).click();
    await fresh.getByRole('dialog', { name: 'Log in to assessd' }).waitFor();
    // nothing the page showed stays readable behind the form, and no Log out is offered
    assert.equal(await fresh.locator('#main').getByText('default session').count(), 0);
    await fresh.locator('#main').getByText('Logged out.').waitFor();
    assert.equal(await fresh.getByText('Logged out.', { exact: true }).count(), 1, 'said once, not again in the flash');
    assert.equal(await fresh.getByRole('button', { name: 'Log out' }).isVisible(), false);
    assert.equal((await other.cookies()).length, 0);
    assert.equal((await request(base, '/api/v1/sessions/', { headers: { cookie: `${held!.name}=${held!.value}` }, auth: false })).status, 401, 'the value the browser held is dead');
    await other.close();
  } finally {
    await context.close();
    server.proc.kill('SIGTERM');
    await server.exited;
  }
});
