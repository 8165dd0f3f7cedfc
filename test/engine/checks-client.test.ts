import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { join } from 'node:path';
import { DEFAULT_MAX_BYTES, failureReason, fetchPage, USER_AGENT } from '../../src/engine/checks/client.ts';
import { checkBanners } from '../../src/engine/checks/banners.ts';
import { checkCookies } from '../../src/engine/checks/cookies.ts';
import { inputFor, serveHttp, serveSilence, type Target } from './fixtures/targets.ts';

describe('fetchPage', () => {
  let target: Target;
  let otherHostUrl: string;
  const seen: Array<{ url: string; headers: Record<string, string | string[] | undefined> }> = [];
  before(async () => {
    target = await serveHttp((req, res) => {
      seen.push({ url: req.url!, headers: req.headers });
      const hop = /^\/hop\/(\d+)$/.exec(req.url!);
      if (hop) return void res.writeHead(302, { Location: `/hop/${Number(hop[1]) + 1}`, 'Set-Cookie': `hop${hop[1]}=1` }).end();
      if (req.url === '/drip') return void res.writeHead(200, { 'content-length': '100' }).write('the head, and never the rest');
      if (req.url === '/cut') {
        res.writeHead(200, { 'content-length': '100' }).write('half');
        return void setTimeout(() => res.socket?.destroy(), 10);
      }
      if (req.url === '/away') return void res.writeHead(302, { Location: otherHostUrl }).end();
      if (req.url === '/huge') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        const chunk = Buffer.alloc(64 * 1024, 'a');
        for (let i = 0; i < 48; i++) res.write(chunk); // 3 MiB
        return void res.end();
      }
      res.writeHead(200, { 'X-Twice': 'one', 'x-twice': 'two' }).end(`hello ${req.method}`);
    });
    // The same server under another host name: a real answer, so following it would show.
    otherHostUrl = `http://localhost:${target.port}/landed`;
  });
  after(() => target.close());

  test('one GET: status, headers as sent, body, a plain User-Agent, no cookie', async () => {
    const page = await fetchPage(target.url, { timeoutMs: 1000 });
    assert.equal(page.status, 200);
    assert.equal(page.body, 'hello GET');
    assert.deepEqual(page.headerLines.filter((l) => /^x-twice/i.test(l)), ['X-Twice: one', 'x-twice: two']);
    assert.equal(page.truncated, false);
    assert.equal(page.tls, undefined);
    assert.equal(seen.at(-1)!.headers['user-agent'], USER_AGENT);
    assert.equal(seen.at(-1)!.headers.cookie, undefined);
  });

  test('redirects on the same host are followed, at most 5, and none carries a cookie back', async () => {
    seen.length = 0;
    const page = await fetchPage(new URL('/hop/0', target.url).href, { timeoutMs: 1000 });
    assert.equal(page.redirects.length, 5);
    assert.equal(page.status, 302);
    assert.equal(page.url, new URL('/hop/5', target.url).href);
    assert.deepEqual(page.stoppedRedirect, { location: new URL('/hop/6', target.url).href, reason: 'more than 5 redirects' });
    assert.ok(seen.every((request) => request.headers.cookie === undefined));
    assert.equal(seen.length, 6);
  });

  test('the cookies check reads the Set-Cookie of every redirect on the way', async () => {
    const result = await checkCookies(inputFor(new URL('/hop/0', target.url).href, 1000));
    const findings = result.status === 'Successful' ? result.findings : [];
    // the sixth redirect is one too many: the page it leads to was not seen, and that is said (unranked)
    assert.deepEqual(findings.map((f) => f.title), [...[0, 1, 2, 3, 4, 5].map((n) => `Cookie hop${n} lacks HttpOnly, SameSite`), 'Redirect not followed: the page was not seen']);
    assert.equal(findings.at(-1)!.rank, -1);
    assert.match(findings[0]!.detail, /^Set-Cookie: hop0=1\nRule: a cookie needs HttpOnly/);
  });

  test('a redirect to another origin (here another host) is not followed, and that is said', async () => {
    seen.length = 0;
    const page = await fetchPage(new URL('/away', target.url).href, { timeoutMs: 1000 });
    assert.equal(page.status, 302);
    assert.deepEqual(page.stoppedRedirect, { location: otherHostUrl, reason: `another origin than ${new URL(target.url).origin}` });
    assert.deepEqual(seen.map((r) => r.url), ['/away']);
    const result = await checkBanners(inputFor(new URL('/away', target.url).href, 1000));
    assert.match(result.status === 'Successful' ? result.summary : '', /redirect to http:\/\/localhost:\d+\/landed not followed \(another origin than http:\/\/127\.0\.0\.1:\d+\)/);
  });

  test('a huge body is cut at the cap (default 1 MiB), and that is said', async () => {
    const page = await fetchPage(new URL('/huge', target.url).href, { timeoutMs: 2000 });
    assert.equal(page.body.length, DEFAULT_MAX_BYTES);
    assert.equal(page.truncated, true);
    const small = await fetchPage(new URL('/huge', target.url).href, { timeoutMs: 2000, maxBytes: 1000 });
    assert.equal(small.body.length, 1000);
    assert.equal(small.truncated, true);
  });

  test('a target that never answers ends with the time limit in the error, within it', async () => {
    const silent = await serveSilence();
    try {
      const started = performance.now();
      await assert.rejects(fetchPage(silent.url, { timeoutMs: 200 }), {
        name: 'NoAnswerError',
        message: `GET ${silent.url}: no complete answer within 200 ms`,
      });
      const took = performance.now() - started;
      assert.ok(took >= 190 && took < 700, `took ${took} ms`);
    } finally {
      await silent.close();
    }
  });

  test('a body that never ends is cut by the same time limit (connect to last byte)', async () => {
    const started = performance.now();
    await assert.rejects(fetchPage(new URL('/drip', target.url).href, { timeoutMs: 200 }), { name: 'NoAnswerError', message: /no complete answer within 200 ms/ });
    // far under what a limit that did not hold would take (the drip never ends); loose, for a busy box
    assert.ok(performance.now() - started < 5000);
  });

  test('a connection closed mid-answer is an error that says so', async () => {
    await assert.rejects(fetchPage(new URL('/cut', target.url).href, { timeoutMs: 2000 }), { name: 'NoAnswerError', message: /closed the connection mid-answer/ });
  });

  test('an abort rejects with an AbortError at once', async () => {
    const silent = await serveSilence();
    try {
      const controller = new AbortController();
      const pending = fetchPage(silent.url, { timeoutMs: 10_000, signal: controller.signal });
      setTimeout(() => controller.abort(), 20);
      const started = performance.now();
      await assert.rejects(pending, { name: 'AbortError' });
      // far under the 10 s time limit it would otherwise wait for; loose, for a busy box
      assert.ok(performance.now() - started < 5000);
    } finally {
      await silent.close();
    }
  });
});

test('an error message loses the source path OpenSSL puts in it, in linear time (a run of 40,000 "/" took 1.7 s, 100,000 ~10 s)', () => {
  const openssl = Object.assign(new Error('error:0A000098:SSL routines::excessive message size:../deps/openssl/openssl/ssl/statem/statem_clnt.c:1923:'), { code: 'ERR_SSL_EXCESSIVE_MESSAGE_SIZE' });
  assert.equal(failureReason(openssl).reason, 'the TLS handshake failed (ERR_SSL_EXCESSIVE_MESSAGE_SIZE: error:0A000098:SSL routines::excessive message size)');
  // in a child with a time limit: a freeze holds this process's own timers too
  const program = `import { failureReason } from './src/engine/checks/client.ts'; const m = 'no answer ' + '/'.repeat(400_000) + 'x'; process.stdout.write(String(failureReason(new Error(m)).reason === m));`;
  const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', program], { cwd: join(import.meta.dirname, '..', '..'), timeout: 15_000 });
  assert.equal(out.toString(), 'true');
});

test('an answer in 1-byte chunks is kept in blocks: 1 MiB of them read in a 64 MiB heap (kept as they came, each chunk an object: ~300 bytes of memory a byte)', async () => {
  // the target writes a million chunks of one byte at once: 6 MB on the wire
  const chunks = Buffer.from('1\r\nx\r\n'.repeat(DEFAULT_MAX_BYTES));
  const target = createServer((socket) => {
    socket.once('data', () => socket.end(Buffer.concat([Buffer.from('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n'), chunks, Buffer.from('0\r\n\r\n')])));
    socket.on('error', () => {});
  }).listen(0, '127.0.0.1');
  await new Promise((resolve) => target.once('listening', resolve));
  try {
    const url = `http://127.0.0.1:${(target.address() as AddressInfo).port}/`;
    const program = `import { fetchPage } from './src/engine/checks/client.ts'; const page = await fetchPage(${JSON.stringify(url)}, { timeoutMs: 20000 }); process.stdout.write(JSON.stringify([page.bodyBytes, page.truncated, page.body.slice(0, 3)]));`;
    const { stdout } = await promisify(execFile)(process.execPath, ['--max-old-space-size=64', '--import', 'tsx', '--input-type=module', '-e', program], { cwd: join(import.meta.dirname, '..', '..'), timeout: 30_000 });
    assert.deepEqual(JSON.parse(stdout), [DEFAULT_MAX_BYTES, false, 'xxx']);
  } finally {
    target.close();
  }
});
