/**
 * What a transaction's view shows of evidence a tester needs, in Chromium against the real server
 * and its proxy: why a request got no answer, a body that is not UTF-8 (a download, its bytes as
 * recorded), and a target's hostile reason phrase kept inside its cell of the list.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer as createNet, type Server as NetServer } from 'node:net';
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CHROMIUM, missingBrowser, openBrowser, sidewaysScroll, type WatchedPage } from '../helpers/browser.ts';
import { eventually, shows } from '../helpers/page.ts';
import { startServer, tempDir, withToken, type TestServer } from '../helpers/server.ts';

const TOKEN = 'transaction-evidence-test-token-0123456789';
const skip = missingBrowser && !process.env.CI;
/** Latin-1 HTML: not UTF-8, so stored as bytes (binary_response), with a secret a grep would find. */
const LATIN1 = Buffer.from('<html><!-- admin password: hunter2 --><p>caf\xe9</p></html>', 'latin1');
/** A reason phrase that would print a fake URL over the list's next cell. */
const REASON = `OK${'\u00a0'.repeat(60)}https://fake.example/looks-like-the-url ${'x'.repeat(400)}`;

let server: TestServer;
let site: NetServer;
let closedPort: number;
let sitePort: number;
let proxyPort: number;
let w: WatchedPage;
const { api } = withToken(() => server.url, TOKEN);

/** A request sent through the proxy, as a browser configured to use it sends it; resolves when answered. */
function viaProxy(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port: proxyPort, path: url, headers: { host: new URL(url).host } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode!));
    });
    req.on('error', reject);
    req.end();
  });
}

before(async () => {
  if (missingBrowser) return;
  // a raw site: its reason phrase and its bytes exactly as written
  site = createNet((socket) => {
    socket.once('data', (chunk) => {
      const path = chunk.toString('latin1').split(' ')[1];
      const [reason, body, type] = path === '/latin1' ? ['OK', LATIN1, 'text/html'] : [REASON, Buffer.from('hello'), 'text/plain'];
      socket.end(Buffer.concat([Buffer.from(`HTTP/1.1 200 ${reason}\r\nContent-Type: ${type}\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`, 'latin1'), body]));
    });
  });
  await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
  sitePort = (site.address() as AddressInfo).port;
  // a port nobody listens on
  const probe = createNet();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  closedPort = (probe.address() as AddressInfo).port;
  await new Promise((resolve) => probe.close(resolve));
  server = await startServer({ dataDir: await tempDir(), token: TOKEN, workers: 1, proxy: true });
  proxyPort = (await api<{ port: number }>('/api/v1/proxy')).port;
  await api('/api/v1/targets/', { method: 'POST', form: { target_url: `http://127.0.0.1:${sitePort}/` } });
  await api('/api/v1/targets/', { method: 'POST', form: { target_url: `http://127.0.0.1:${closedPort}/` } });
  w = await openBrowser(server.url);
});

after(async () => {
  await w?.browser.close();
  await server?.close();
  await new Promise((resolve) => site?.close(resolve));
});

test('a transaction shows why it got no answer, offers a body that is not UTF-8 as a download, and keeps a hostile reason phrase in its cell', { skip: skip && `${CHROMIUM} is missing` }, async () => {
  assert.ok(!missingBrowser, `${CHROMIUM} is missing, and CI must run the browser test`);
  assert.equal(await viaProxy(`http://127.0.0.1:${sitePort}/latin1`), 200);
  assert.equal(await viaProxy(`http://127.0.0.1:${sitePort}/reason`), 200);
  assert.equal(await viaProxy(`http://127.0.0.1:${closedPort}/gone`), 502);
  const targets = await api<{ id: number; target_url: string }[]>('/api/v1/targets/');
  const siteTarget = targets.find((t) => t.target_url.includes(String(sitePort)))!.id;
  const closedTarget = targets.find((t) => t.target_url.includes(String(closedPort)))!.id;
  const txs = async (target: number, count: number) => {
    let list: { id: number; url: string }[] = [];
    await eventually(async () => {
      list = await api<{ id: number; url: string }[]>(`/api/v1/targets/${target}/transactions/`);
      assert.equal(list.length, count);
    });
    return list;
  };
  const [latin1, reason] = await txs(siteTarget, 2);
  const [refused] = await txs(closedTarget, 1);
  const { page } = w;
  await page.goto(`${server.url}/?token=${TOKEN}`);
  await shows(page.locator('h1'), 'Sessions');

  // no answer: what failed, in the summary
  await page.goto(`${server.url}/targets/${closedTarget}/transactions/${refused!.id}`);
  await shows(page.locator('.tx-summary'), `Error`);
  await shows(page.locator('.tx-summary'), `refused: 127.0.0.1:${closedPort} refused the connection`);

  // not UTF-8: said, and a download of the bytes as they came
  await page.goto(`${server.url}/targets/${siteTarget}/transactions/${latin1!.id}`);
  await shows(page.locator('.response'), 'that is not UTF-8 text');
  const link = page.getByRole('link', { name: `Download the body of #${latin1!.id}` });
  const href = await link.getAttribute('href');
  assert.equal(href, `/api/v1/targets/${siteTarget}/transactions/${latin1!.id}/body`);
  const bytes = await page.evaluate(async (url) => Array.from(new Uint8Array(await (await fetch(url)).arrayBuffer())), href!);
  assert.deepEqual(Buffer.from(bytes), LATIN1);

  // the list: the reason phrase marked and cut in its own cell, nothing drawn over the URL beside it
  await page.goto(`${server.url}/targets/${siteTarget}/transactions`);
  const cell = page.locator(`tr.tx[data-tx-id="${reason!.id}"] td.col-status`);
  await shows(cell, '⟨60 blank characters⟩');
  await shows(cell, 'characters more');
  assert.ok(await cell.evaluate((el) => el.scrollWidth <= el.clientWidth + 1), 'the status stays inside its cell');
  assert.equal(await sidewaysScroll(page), undefined);
  w.assertClean(/status of 50[02]/);
});
