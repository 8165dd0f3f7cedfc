// @ts-check
// The transaction store's figures (docs/PERFORMANCE.md, "Transactions"): a 200 MB HAR of 20,000
// entries imported into the compiled server (time, RSS growth, the health probe's worst answer
// meanwhile); then 100,000 stored transactions: a page of the list and of searches on URL, method
// and status, a search over bodies and headers (MB/s), RSS per transaction, start-up with them
// against without. Run: npm run bench:transactions (QUICK=1 for a tenth of the sizes).
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createReadStream, createWriteStream, readFileSync, statSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startEnv, startFlags } from './start-flags.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const QUICK = process.env.QUICK === '1';
const BIG_ENTRIES = QUICK ? 2000 : 20_000;
const BIG_BODY = 10_000;
const STORED = QUICK ? 10_000 : 100_000;
const STORED_BODY = 2000;
const TOKEN = 'bench-transactions-token';

/** @param {number} pid */
const rssOf = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024;
const median = (/** @type {number[]} */ xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const mb = (/** @type {number} */ bytes) => (bytes / 1024 / 1024).toFixed(1);

/** @param {string} dataDir */
async function spawnServer(dataDir) {
  const started = performance.now();
  const proc = spawn(process.execPath, [...startFlags(root), join(root, 'dist', 'assessd.cjs'), '--port', '0', '--data-dir', dataDir, '--token', TOKEN, '--workers', '0'], { stdio: ['ignore', 'pipe', 'pipe'], env: startEnv(root) });
  let out = '';
  const url = await new Promise((resolve, reject) => {
    proc.stdout.on('data', (c) => {
      out += c;
      const m = /listening on (http:\/\/\S+) /.exec(out);
      if (m) resolve(m[1]);
    });
    proc.stderr.on('data', (c) => (out += c));
    proc.on('exit', (code) => reject(new Error(`server exited ${code}: ${out}`)));
  });
  return { proc, url: /** @type {string} */ (url), startMs: performance.now() - started, pid: /** @type {number} */ (proc.pid) };
}

/** @param {{ proc: import('node:child_process').ChildProcess }} server */
async function stop(server) {
  server.proc.kill('SIGTERM');
  await once(server.proc, 'exit');
}

/**
 * @param {string} url
 * @param {{ method?: string, body?: import('node:stream').Readable | string, headers?: Record<string, string> }} [options]
 * @returns {Promise<{ status: number, text: string, ms: number }>}
 */
function call(url, options = {}) {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(url, { method: options.method ?? 'GET', headers: { authorization: `Bearer ${TOKEN}`, ...options.headers } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text, ms: performance.now() - started }));
    });
    req.on('error', reject);
    if (typeof options.body === 'string') req.end(options.body);
    else if (options.body) options.body.pipe(req);
    else req.end();
  });
}

/** Writes a HAR of `count` entries, each with a body of `size` bytes, without holding it. */
async function writeHar(/** @type {string} */ file, /** @type {number} */ count, /** @type {number} */ size, /** @type {string} */ host) {
  const out = createWriteStream(file);
  const write = (/** @type {string} */ s) => (out.write(s) ? undefined : once(out, 'drain'));
  await write('{"log":{"version":"1.2","creator":{"name":"bench","version":"1"},"pages":[],"entries":[');
  const filler = 'lorem ipsum dolor sit amet '.repeat(Math.ceil(size / 27)).slice(0, size);
  for (let i = 0; i < count; i++) {
    const status = i % 10 === 0 ? 404 : 200;
    const entry = {
      startedDateTime: new Date(1_700_000_000_000 + i * 1000).toISOString(),
      time: 12,
      request: { method: i % 7 === 0 ? 'POST' : 'GET', url: `https://${host}/page/${i}?q=${i % 100}`, httpVersion: 'HTTP/1.1', headers: [{ name: 'User-Agent', value: 'bench' }, { name: 'Cookie', value: `sid=${i}` }], queryString: [], cookies: [], headersSize: -1, bodySize: 0 },
      response: { status, statusText: status === 200 ? 'OK' : 'Not Found', httpVersion: 'HTTP/1.1', headers: [{ name: 'Content-Type', value: 'text/html' }, { name: 'X-Request', value: String(i) }], cookies: [], content: { size, mimeType: 'text/html', text: `<p>${i}</p>${filler}` }, redirectURL: '', headersSize: -1, bodySize: size },
      cache: {},
      timings: { send: 0, wait: 12, receive: 0 },
    };
    const p = write(`${i === 0 ? '' : ','}${JSON.stringify(entry)}`);
    if (p) await p;
  }
  out.end(']}}');
  await once(out, 'finish');
}

/**
 * Imports the HAR `file` into target 1 while the server's RSS is sampled every 20 ms and its health
 * probe asked every 10 ms: the answer, and how much RSS grew and the worst health answer meanwhile.
 * @param {{ url: string, pid: number }} server @param {string} file
 */
async function importWatched(server, file) {
  const rssBefore = rssOf(server.pid);
  let rssPeak = rssBefore;
  let healthWorst = 0;
  let importing = true;
  const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, rssOf(server.pid))), 20);
  const probe = (async () => {
    while (importing) {
      const { ms } = await call(`${server.url}/debug/health`);
      healthWorst = Math.max(healthWorst, ms);
      await new Promise((r) => setTimeout(r, 10));
    }
  })();
  const answer = await call(`${server.url}/api/v1/targets/1/transactions/`, { method: 'POST', body: createReadStream(file), headers: { 'content-type': 'application/json', 'content-length': String(statSync(file).size) } });
  importing = false;
  await probe;
  clearInterval(sampler);
  return { ...answer, rssGrowth: rssPeak - rssBefore, healthWorst };
}

async function main() {
  const work = await mkdtemp(join(tmpdir(), 'assessd-bench-tx-'));
  const figures = /** @type {Record<string, string | number>} */ ({});
  try {
    // 1. the big HAR, imported while the health probe is asked every 10 ms
    const big = join(work, 'big.har');
    await writeHar(big, BIG_ENTRIES, BIG_BODY, 'big.example');
    figures['HAR size (MB)'] = mb(statSync(big).size);
    const dataDir = join(work, 'data');
    let server = await spawnServer(dataDir);
    await call(`${server.url}/api/v1/targets/`, { method: 'POST', body: 'target_url=https://big.example/', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    await call(`${server.url}/debug/health`);
    const imported = await importWatched(server, big);
    if (imported.status !== 201) throw new Error(`import: ${imported.status} ${imported.text}`);
    figures[`import of ${BIG_ENTRIES} entries (s)`] = (imported.ms / 1000).toFixed(2);
    figures['import rate (MB/s)'] = (statSync(big).size / 1024 / 1024 / (imported.ms / 1000)).toFixed(0);
    figures['RSS growth during the import (MB)'] = mb(imported.rssGrowth);
    figures['health probe, worst answer during the import (ms)'] = imported.healthWorst.toFixed(1);
    await rm(big);

    // 1b. a HAR of escapes: one entry whose 16 MiB body is written `\"` (a JSON body, a hostile target's)
    const escapes = join(work, 'escapes.har');
    await writeFile(escapes, `{"log":{"entries":[{"startedDateTime":"2024-01-01T00:00:00Z","request":{"method":"GET","url":"https://big.example/escapes"},"response":{"status":200,"content":{"mimeType":"application/json","text":"${'\\"'.repeat(16 * 1024 * 1024)}"}}}]}}`);
    const escaped = await importWatched(server, escapes);
    if (escaped.status !== 201) throw new Error(`import of escapes: ${escaped.status} ${escaped.text}`);
    figures[`import of a ${mb(statSync(escapes).size)} MB HAR of escapes (s)`] = (escaped.ms / 1000).toFixed(2);
    figures['RSS growth during it (MB)'] = mb(escaped.rssGrowth);
    figures['health probe, worst answer during it (ms)'] = escaped.healthWorst.toFixed(1);
    await rm(escapes);
    await stop(server);

    // 2. 100,000 stored transactions for one target
    const stored = join(work, 'stored');
    const empty = join(work, 'empty');
    server = await spawnServer(stored);
    await call(`${server.url}/api/v1/targets/`, { method: 'POST', body: 'target_url=https://shop.example/', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    const part = join(work, 'part.har');
    const parts = 5;
    await writeHar(part, STORED / parts, STORED_BODY, 'shop.example');
    for (let i = 0; i < parts; i++) {
      const res = await call(`${server.url}/api/v1/targets/1/transactions/`, { method: 'POST', body: createReadStream(part), headers: { 'content-type': 'application/json' } });
      if (res.status !== 201) throw new Error(`import: ${res.text}`);
    }
    await stop(server);
    const emptyServer = await spawnServer(empty);
    await stop(emptyServer);

    // start-up, with and without, alternated
    const withStarts = [];
    const withoutStarts = [];
    for (let i = 0; i < 7; i++) {
      const a = await spawnServer(stored);
      withStarts.push(a.startMs);
      await stop(a);
      const b = await spawnServer(empty);
      withoutStarts.push(b.startMs);
      await stop(b);
    }
    figures['start-up without transactions, median of 7 (ms)'] = median(withoutStarts).toFixed(0);
    figures[`start-up with ${STORED} stored, median of 7 (ms)`] = median(withStarts).toFixed(0);

    server = await spawnServer(stored);
    const idleRss = rssOf(server.pid);
    const first = await call(`${server.url}/api/v1/targets/1/transactions/?limit=50`);
    figures['first list page, index loaded from the footers (ms)'] = first.ms.toFixed(0);
    // the footers read to load it are garbage by now: RSS once the collector has had idle time, the least of a few samples
    let settled = Infinity;
    for (let i = 0; i < 6; i++) {
      await new Promise((r) => setTimeout(r, 500));
      await call(`${server.url}/debug/health`);
      settled = Math.min(settled, rssOf(server.pid));
    }
    figures['RSS per stored transaction, index loaded (bytes)'] = ((settled - idleRss) / STORED).toFixed(0);

    /** @param {string} path */
    const timed = async (path, runs = 15) => {
      const times = [];
      let last;
      for (let i = 0; i < runs; i++) {
        last = await call(`${server.url}${path}`);
        if (last.status !== 200) throw new Error(`${path}: ${last.text.slice(0, 200)}`);
        times.push(last.ms);
      }
      return { ms: median(times), body: last ? JSON.parse(last.text) : undefined };
    };
    figures['list page (limit 50, offset 50,000), median (ms)'] = (await timed(`/api/v1/targets/1/transactions/?limit=50&offset=${STORED / 2}`)).ms.toFixed(1);
    figures['search page, url substring, median (ms)'] = (await timed('/api/v1/targets/1/transactions/search/?url=page%2F9999')).ms.toFixed(1);
    figures['search page, method, median (ms)'] = (await timed('/api/v1/targets/1/transactions/search/?method=POST&offset=5000')).ms.toFixed(1);
    figures['search page, status (q=~c 404), median (ms)'] = (await timed('/api/v1/targets/1/transactions/search/?q=~c%20404&offset=5000')).ms.toFixed(1);
    const bodyBytes = STORED * (STORED_BODY + 12);
    const full = await timed('/api/v1/targets/1/transactions/search/?response_body=no-such-needle&exact=true', 5);
    figures['body search over every body (MB/s)'] = (bodyBytes / 1024 / 1024 / (full.ms / 1000)).toFixed(0);
    const headers = await timed(`/api/v1/targets/1/transactions/search/?q=${encodeURIComponent('~hs "x-request: 99999x"')}&exact=true`, 5);
    figures['header search (~hs, per line) over every transaction (s)'] = (headers.ms / 1000).toFixed(2);
    const early = await timed('/api/v1/targets/1/transactions/search/?response_body=lorem&exact=false', 15);
    figures['body search whose page fills at once (ms)'] = early.ms.toFixed(1);
    figures['  records_filtered_exact'] = String(early.body?.data.records_filtered_exact);
    figures['URL list (all, cached after first), median (ms)'] = (await timed('/api/v1/targets/1/urls/?limit=50')).ms.toFixed(1);
    // a term of 300,000 letters past ASCII (600 KB): too long for the automaton, found natively
    // (600 KB as UTF-8 in the form, unescaped as curl --data-binary sends it: under the body's limit)
    const longTerm = `url=${'ä'.repeat(300_000)}&limit=1`;
    const longTimes = [];
    for (let i = 0; i < 5; i++) {
      const answer = await call(`${server.url}/api/v1/targets/1/transactions/search/`, { method: 'GET', body: longTerm, headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-length': String(Buffer.byteLength(longTerm)) } });
      if (answer.status !== 200) throw new Error(`the long term's search: ${answer.status} ${answer.text.slice(0, 200)}`);
      longTimes.push(answer.ms);
    }
    figures['search page, a 300,000-letter term past ASCII (url, in the body), median (ms)'] = median(longTimes).toFixed(1);
    await stop(server);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  const width = Math.max(...Object.keys(figures).map((k) => k.length));
  for (const [k, v] of Object.entries(figures)) console.log(`${k.padEnd(width)}  ${v}`);
}

await main();
