#!/usr/bin/env node
// @ts-check
/**
 * The web application at engagement size (issue #10), in real Chromium against the compiled
 * server started as `npm start` starts it. Build first (`npm run build`), then:
 *
 *   node bench/web.mjs [--runs N] [--big N] [--transactions N] [--only transactions] [--out FILE] [--keep]
 *
 * --runs N   page loads per view (default 5): medians and worst
 * --big N    targets of the big session (default 65,536: a /16)
 * --transactions N  transactions of the evidence target (default 100,000, issue #22)
 * --only transactions  seed and measure the Transactions view alone
 * --out FILE also write the markdown report to FILE
 * --quiet-wait S  before each measurement, wait up to S seconds (default 30) for the machine to
 *            be under a third of a core busy (it is shared); how busy it was is reported
 *
 * Data, all made through the API (the server's token read from its start line; the page logs in
 * with it once): 300 sessions, one of them ("acme web", active) with 5,000 targets, one
 * ("acme /16") with 65,536, one ("acme small") with 10; for the engine's views (issue #16), 200
 * targets with 10,000 works queued while the workers are paused, and one target with an output of
 * each of ~170 plugins that send no request (the shipped checklists and links, and a grep checklist
 * per code from a user plugin file), 40 of them ranked by hand. Measured, each from a fresh page load:
 * - time from navigation start to each view's data on screen (the first animation frame after
 *   the rendered data is in the DOM), and the API requests the view made;
 * - the longest long task (PerformanceObserver `longtask`, over 50 ms by definition) while
 *   loading, scrolling, paging, filtering and selecting;
 * - the workers view left open for 10 s: its requests, the rows drawn again (none should be), and
 *   how soon a worker removed through the API leaves the page;
 * - the time to add 5,000 pasted URLs: from the click on "Add targets" to the summary on screen
 *   and the list updated.
 * Times of actions are taken inside the page: from just before the click (or after the last key)
 * to the first animation frame after the result is in the DOM.
 * Chromium is Debian's /usr/bin/chromium, headless; every request that is not to the server is
 * blocked and counted.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';
import { startEnv, startFlags } from './start-flags.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const CHROMIUM = '/usr/bin/chromium';

const { values: flags } = parseArgs({
  options: {
    runs: { type: 'string', default: '5' },
    big: { type: 'string', default: '65536' },
    out: { type: 'string' },
    keep: { type: 'boolean', default: false },
    'quiet-wait': { type: 'string', default: '30' },
    transactions: { type: 'string', default: '100000' },
    only: { type: 'string' },
  },
});
const TRANSACTIONS = Math.max(1, Number(flags.transactions));
const ONLY_TRANSACTIONS = flags.only === 'transactions';
const RUNS = Math.max(1, Number(flags.runs));
const BIG = Math.max(1, Number(flags.big));
const ENGAGEMENT = 5000;
const SESSIONS = 300;

if (!existsSync(join(ROOT, 'dist', 'assessd.cjs'))) throw new Error('build first: npm run build');
if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing (apt-get install chromium)`);

// ---------------------------------------------------------------------------------------------
// A shared machine: wait for a quiet moment before measuring, and say how busy it was

const QUIET_WAIT_MS = Number(flags['quiet-wait']) * 1000;

/** Busy CPU time of the whole machine in clock ticks, from /proc/stat. */
function machineBusyTicks() {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  return f.slice(0, 8).reduce((a, b) => a + b, 0) - f[3] - f[4];
}

/** Percent of one core the machine used over `ms` while this benchmark and its browser sat idle. */
async function busyPct(ms = 500) {
  const b0 = machineBusyTicks();
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, ms));
  return (100 * ((machineBusyTicks() - b0) * 10)) / (performance.now() - t0); // 100 ticks per second
}

/** @type {number[]} */
const busySamples = [];
async function waitForQuiet() {
  const t0 = performance.now();
  let pct = await busyPct();
  while (pct > 33 && performance.now() - t0 < QUIET_WAIT_MS) pct = await busyPct();
  busySamples.push(pct);
}

// ---------------------------------------------------------------------------------------------
// The server, as `npm start` runs it, on a fresh data directory

const dataDir = mkdtempSync(join(tmpdir(), 'assessd-web-bench-'));
/** The API token the server generated (every request needs it), read from its start line. */
/** @type {string | undefined} */
let token;

/** @returns {Promise<{ url: string, stop: () => Promise<void> }>} */
function startServer() {
  const child = spawn(process.execPath, [...startFlags(ROOT), join(ROOT, 'dist', 'assessd.cjs'), '--port', '0', '--data-dir', dataDir], { stdio: ['ignore', 'pipe', 'pipe'], env: startEnv(ROOT) });
  let output = '';
  return new Promise((resolvePromise, reject) => {
    child.stdout.on('data', (chunk) => {
      output += chunk;
      const m = /assessd listening on (http:\/\/\S+) .*?(?:token=(\S+))?$/m.exec(output);
      if (m) {
        token = m[2] ? decodeURIComponent(m[2]) : undefined;
        resolvePromise({
          url: m[1],
          stop: () => new Promise((done) => {
            child.once('exit', () => done());
            child.kill('SIGTERM');
          }),
        });
      }
    });
    child.stderr.on('data', (chunk) => (output += chunk));
    child.once('exit', (code) => reject(new Error(`server exited ${code}: ${output}`)));
  });
}

/** @param {string} base @param {string} path @param {[string, string][]} [form] */
async function api(base, path, form) {
  return call(base, path, form ? 'POST' : 'GET', form);
}

/** @param {string} base @param {string} path @param {string} method @param {[string, string][]} [form] */
async function call(base, path, method, form) {
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  const res = await fetch(base + path, { method, headers, body: form ? new URLSearchParams(form) : undefined });
  const body = /** @type {any} */ (await res.json());
  if (!res.ok || body.status !== 'success') throw new Error(`${path}: ${res.status} ${JSON.stringify(body).slice(0, 200)}`);
  return body.data;
}

/** @param {number} n @param {(i: number) => string} url */
const urls = (n, url) => Array.from({ length: n }, (_, i) => url(i));

/** @param {string} base @param {number} session @param {string[]} list */
async function addAll(base, session, list) {
  for (let i = 0; i < list.length; i += 10_000) {
    const data = await api(base, '/api/v1/targets/bulk', [['action', 'add'], ['session_id', String(session)], ...list.slice(i, i + 10_000).map((u) => /** @type {[string, string]} */ (['target_url', u]))]);
    if (data.failed.length > 0) throw new Error(`seeding: ${JSON.stringify(data.failed[0])}`);
  }
}

const ENGINE_TARGETS = 200;
const QUEUED = 10_000;
/** The web codes of the shipped checklists; the bench adds a second plugin (grep) for each, so one target can have ~150 outputs. */
const WEB_CODES = JSON.parse(readFileSync(join(ROOT, 'data', 'plugins', 'web-external.json'), 'utf8')).plugins.map((/** @type {{code: string}} */ p) => p.code);

/** The codes the shipped grep plugins have. */
const SHIPPED_GREP = new Set(JSON.parse(readFileSync(join(ROOT, 'data', 'plugins', 'web-grep.json'), 'utf8')).plugins.map((/** @type {{code: string}} */ p) => p.code));

/** A user plugin file: a grep rule for every web code the shipped grep plugins leave out (no request, no program). */
function writeBenchPlugins() {
  mkdirSync(join(dataDir, 'plugins'), { recursive: true });
  const plugins = WEB_CODES.filter((/** @type {string} */ code) => !SHIPPED_GREP.has(code)).map((/** @type {string} */ code) => ({
    code, group: 'web', type: 'grep', name: `Grep_notes_for_${code.replace(/-/g, '_')}`, title: `Grep notes for ${code}`, descrip: `Finds the X-Bench-Note header for ${code}`, grep: [{ title: `Notes for ${code}`, header: 'X-Bench-Note', rank: 1 }],
  }));
  writeFileSync(join(dataDir, 'plugins', 'bench-grep.json'), JSON.stringify({ plugins }));
}

/** @param {string} base */
async function waitIdle(base) {
  for (;;) {
    const { left_count: left } = await api(base, '/api/v1/plugins/progress');
    if (left === 0) return;
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * The engine's data: one target with an output of every web plugin (some ranked by the tester),
 * then 200 targets with 10,000 works queued while the workers are paused.
 * @param {string} base
 */
async function seedEngine(base) {
  await api(base, '/api/v1/sessions/', [['name', 'acme results']]);
  const resultsSession = (await api(base, '/api/v1/overview/sessions')).find((/** @type {{name: string}} */ s) => s.name === 'acme results').id;
  await addAll(base, resultsSession, ['https://results.acme.example/']);
  const [resultsTarget] = await api(base, `/api/v1/targets/?session_id=${resultsSession}`);
  // the plugins that send nothing and run nothing: checklists, links, the bench's grep checklists
  await api(base, '/api/v1/worklist/', [['id', String(resultsTarget.id)], ['group', 'web'], ['type', 'external'], ['type', 'passive'], ['type', 'grep']]);
  await waitIdle(base);
  const outputs = Object.values(await api(base, `/api/v1/targets/${resultsTarget.id}/poutput/names`)).flatMap((/** @type {{data: any[]}} */ g) => g.data);
  for (const [i, o] of outputs.slice(0, 40).entries()) {
    await call(base, `/api/v1/targets/${resultsTarget.id}/poutput/${o.plugin_group}/${o.plugin_type}/${o.plugin_code}`, 'PATCH', [['user_rank', String(i % 6)], ['user_notes', `Checked by hand (${i}).`]]);
  }
  await api(base, '/api/v1/sessions/', [['name', 'acme engine']]);
  const engineSession = (await api(base, '/api/v1/overview/sessions')).find((/** @type {{name: string}} */ s) => s.name === 'acme engine').id;
  await addAll(base, engineSession, urls(ENGINE_TARGETS, (i) => `https://app${i}.engine.example/`));
  const ids = (await api(base, `/api/v1/targets/?session_id=${engineSession}`)).map((/** @type {{id: number}} */ t) => String(t.id));
  await call(base, '/api/v1/workers/0/pause', 'PATCH');
  const perTarget = QUEUED / ENGINE_TARGETS;
  const queued = await api(base, '/api/v1/worklist/', [['id', ids.join(',')], ['group', 'web'], ['type', 'external'], ...WEB_CODES.slice(0, perTarget).map((/** @type {string} */ c) => /** @type {[string, string]} */ (['code', c]))]);
  if (queued.queued !== QUEUED) throw new Error(`seeding: queued ${queued.queued}, not ${QUEUED}`);
  return { resultsTarget: resultsTarget.id, outputs: outputs.length };
}

/**
 * The evidence: one target of "acme results" with TRANSACTIONS transactions, imported as HARs of
 * 20,000 entries (pages, scripts, images, a form; a tenth of them with a comment to grep).
 * @param {string} base
 */
async function seedTransactions(base) {
  await api(base, '/api/v1/sessions/', [['name', 'acme results']]).catch(() => {});
  const session = (await api(base, '/api/v1/overview/sessions')).find((/** @type {{name: string}} */ s) => s.name === 'acme results').id;
  await addAll(base, session, ['https://shop.acme.example/']);
  const target = (await api(base, `/api/v1/targets/?session_id=${session}`)).find((/** @type {{target_url: string}} */ t) => t.target_url === 'https://shop.acme.example/').id;
  const headers = token ? { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' } : { 'Content-Type': 'application/json' };
  for (let from = 0; from < TRANSACTIONS; from += 20_000) {
    const entries = [];
    for (let i = from; i < Math.min(TRANSACTIONS, from + 20_000); i++) {
      const kind = i % 10;
      const url = kind === 9 ? `https://shop.acme.example/static/app-${i}.js` : kind === 8 ? `https://shop.acme.example/img/${i}.png` : `https://shop.acme.example/product/${i}?ref=${i % 7}`;
      const type = kind === 9 ? 'text/javascript' : kind === 8 ? 'image/png' : 'text/html';
      const body = kind === 8 ? '' : `<html><body>${kind === 0 ? `<!-- build ${i} -->` : ''}<h1>Product ${i}</h1><form method="post"><input type="hidden" name="csrf" value="t${i}"></form></body></html>`;
      entries.push({
        startedDateTime: new Date(1_780_000_000_000 + i * 1000).toISOString(), time: 20 + (i % 300),
        request: { method: kind === 7 ? 'POST' : 'GET', url, httpVersion: 'HTTP/1.1', cookies: [], headers: [{ name: 'Host', value: 'shop.acme.example' }], queryString: [], headersSize: -1, bodySize: 0 },
        response: {
          status: i % 97 === 0 ? 404 : 200, statusText: i % 97 === 0 ? 'Not Found' : 'OK', httpVersion: 'HTTP/1.1', cookies: [],
          headers: [{ name: 'Content-Type', value: type }, { name: 'Server', value: 'nginx/1.25.3' }, ...(kind === 0 ? [{ name: 'Set-Cookie', value: `sid=${i}; Path=/` }] : [])],
          content: { size: body.length, mimeType: type, text: body }, redirectURL: '', headersSize: -1, bodySize: body.length,
        },
        cache: {}, timings: { send: 0, wait: 20, receive: 0 },
      });
    }
    const res = await fetch(`${base}/api/v1/targets/${target}/transactions/`, { method: 'POST', headers, body: JSON.stringify({ log: { version: '1.2', creator: { name: 'bench', version: '1' }, entries } }) });
    if (res.status !== 201) throw new Error(`seeding transactions: ${res.status} ${await res.text()}`);
  }
  return target;
}

/** @param {string} base */
async function seed(base) {
  if (ONLY_TRANSACTIONS) return { evidenceTarget: await seedTransactions(base), sessions: 0, resultsTarget: 0, outputs: 0, small: 0, big: 0, engagement: 0 };
  const engine = await seedEngine(base);
  const evidenceTarget = await seedTransactions(base);
  for (let i = 1; i <= SESSIONS - 4; i++) await api(base, '/api/v1/sessions/', [['name', `client ${String(i).padStart(3, '0')} retest`]]);
  await api(base, '/api/v1/sessions/', [['name', 'acme small']]);
  const small = (await api(base, '/api/v1/overview/sessions')).find((/** @type {{name: string}} */ s) => s.name === 'acme small').id;
  await addAll(base, small, urls(10, (i) => `https://small${i}.acme.example/`));
  await api(base, '/api/v1/sessions/', [['name', 'acme /16']]);
  const overview = /** @type {{id: number, name: string}[]} */ (await api(base, '/api/v1/overview/sessions'));
  const big = overview.find((s) => s.name === 'acme /16').id;
  await addAll(base, big, urls(BIG, (i) => `http://10.20.${(i >> 8) & 255}.${i & 255}:${8000 + (i >> 16)}/`));
  await api(base, '/api/v1/sessions/', [['name', 'acme web']]);
  const engagement = (await api(base, '/api/v1/overview/sessions')).find((/** @type {{name: string}} */ s) => s.name === 'acme web').id;
  await addAll(base, engagement, urls(ENGAGEMENT, (i) => `https://host${i}.acme.example/app/${i % 7 === 0 ? 'admin' : 'login'}`));
  return { small, big, engagement, evidenceTarget, ...engine, sessions: (await api(base, '/api/v1/overview/sessions')).length };
}

// ---------------------------------------------------------------------------------------------
// The page: long tasks and "data on screen" recorded inside it

/** Runs in the page before its own script: long tasks, and the frame the view's data shows in. */
function instrument() {
  const w = /** @type {any} */ (window);
  w.__longTasks = [];
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) w.__longTasks.push({ start: e.startTime, duration: e.duration });
  }).observe({ type: 'longtask', buffered: true });
  /** @type {Record<string, () => boolean>} */
  const ready = {
    sessions: () => document.querySelectorAll('.session-list > li').length > 0,
    targets: () => document.querySelectorAll('tbody tr.target').length > 0 && /\d/.test(document.getElementById('target-count')?.textContent ?? ''),
    configuration: () => document.querySelectorAll('.config-item').length > 0,
    plugins: () => document.querySelectorAll('.plugin').length > 0 && /\d/.test(document.getElementById('plugin-count')?.textContent ?? ''),
    worklist: () => document.querySelectorAll('tr.work').length > 0 && /\d/.test(document.getElementById('work-count')?.textContent ?? ''),
    workers: () => document.querySelectorAll('.worker').length > 0,
    /** the first page of rows, and the count */
    transactions: () => document.querySelectorAll('tr.tx').length >= 50 && /\d/.test(document.getElementById('tx-count')?.textContent ?? ''),
    /** every test group drawn (they are added over a few frames) */
    results: () => {
      const m = /(\d+) test groups?/.exec(document.querySelector('.result-summary h2')?.textContent ?? '');
      return m !== null && document.querySelectorAll('.test-group').length === Number(m[1]);
    },
  };
  w.__watch = (/** @type {string} */ view) => {
    w.__ready = undefined;
    const check = () => {
      if (w.__ready !== undefined || !ready[view]()) return;
      w.__ready = -1;
      requestAnimationFrame(() => (w.__ready = performance.now()));
    };
    new MutationObserver(check).observe(document, { childList: true, subtree: true, characterData: true });
    check();
  };
  const text = (/** @type {string} */ selector) => document.querySelector(selector)?.textContent ?? '';
  const idle = () => !document.querySelector('[aria-busy=true]');
  /** @type {Record<string, (arg: string) => boolean>} */
  const until = {
    range: (arg) => text('.page-range').startsWith(arg) && document.querySelectorAll('tbody tr.target').length > 0,
    sorted: (arg) => new URLSearchParams(location.search).get('sort') === arg && idle() && document.querySelectorAll('tbody tr.target').length > 0,
    count: (arg) => text('#target-count').includes(arg) && idle(),
    selection: (arg) => text('#selection-count').startsWith(arg),
    result: (arg) => text('.bulk-result').startsWith(arg) && idle(),
    txRange: (arg) => text('.page-range').startsWith(arg) && document.querySelectorAll('tr.tx').length > 0 && idle(),
    txCount: (arg) => text('#tx-count').includes(arg) && idle() && document.querySelectorAll('tr.tx').length > 0,
    txFirst: (arg) => document.querySelector('tr.tx')?.getAttribute('data-tx-id') === arg,
    /** `summary|heading`: the summary shown, and the heading's new count. */
    added: (arg) => text('.add-summary').startsWith(arg.split('|')[0]) && text('#targets-heading').includes(arg.split('|')[1]) && idle(),
  };
  /**
   * Starts a clock at the next user input (click, key, choice: the event's own time stamp, so
   * the driver's own delays are not counted); it stops at the first frame after
   * `until[name](arg)` holds.
   */
  w.__arm = (/** @type {string} */ name, /** @type {string} */ arg) => {
    w.__t0 = undefined;
    w.__t1 = undefined;
    const start = (/** @type {Event} */ e) => {
      w.__t0 ??= e.timeStamp;
      for (const type of ['click', 'keydown', 'change']) removeEventListener(type, start, true);
    };
    for (const type of ['click', 'keydown', 'change']) addEventListener(type, start, true);
    const check = () => {
      if (w.__t1 !== undefined || !until[name](arg)) return;
      w.__t1 = -1;
      observer.disconnect();
      requestAnimationFrame(() => (w.__t1 = performance.now()));
    };
    const observer = new MutationObserver(check);
    observer.observe(document, { childList: true, subtree: true, characterData: true, attributes: true });
  };
  const view = /^\/targets\/\d+\/transactions$/.test(location.pathname) ? 'transactions' : /^\/targets\/\d+/.test(location.pathname) ? 'results' : location.pathname.replace(/^\/+/, '').split('/')[0] || 'sessions';
  if (view in ready) w.__watch(view);
}

/** @param {number[]} xs */
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
/** @param {number} ms */
const fmt = (ms) => `${Math.round(ms)} ms`;

async function main() {
  writeBenchPlugins();
  const server = await startServer();
  const base = server.url;
  const t0 = Date.now();
  const data = await seed(base);
  const seedSeconds = (Date.now() - t0) / 1000;
  console.error(ONLY_TRANSACTIONS ? `seeded ${TRANSACTIONS} transactions in ${seedSeconds.toFixed(1)} s` : `seeded ${data.sessions} sessions, ${ENGAGEMENT} + ${BIG} targets and ${TRANSACTIONS} transactions in ${seedSeconds.toFixed(1)} s`);

  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
  const offBox = [];
  await context.route('**/*', (route) => {
    if (route.request().url().startsWith(`${base}/`)) return route.continue();
    offBox.push(route.request().url());
    return route.abort('blockedbyclient');
  });
  await context.addInitScript(instrument);
  const page = await context.newPage();
  page.setDefaultTimeout(30_000);
  /** @type {string[]} */
  let requests = [];
  page.on('request', (r) => {
    const path = r.url().slice(base.length);
    if (/^\/(api|debug)\//.test(path)) requests.push(`${r.method()} ${path}`);
  });
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));

  /** Longest long task since `since` (page clock), and how many. */
  const longest = async (/** @type {number} */ since) =>
    page.evaluate((since) => {
      const tasks = /** @type {any} */ (window).__longTasks.filter((/** @type {{start: number}} */ t) => t.start >= since);
      return { max: Math.max(0, ...tasks.map((/** @type {{duration: number}} */ t) => t.duration)), count: tasks.length };
    }, since);
  const now = () => page.evaluate(() => performance.now());
  /** Milliseconds from `arm` to the first frame showing the awaited result. */
  const timed = async (/** @type {string} */ name, /** @type {string} */ arg, /** @type {() => Promise<void>} */ trigger) => {
    await page.evaluate(([name, arg]) => /** @type {any} */ (window).__arm(name, arg), [name, arg]);
    await trigger();
    await page.waitForFunction(() => /** @type {any} */ (window).__t1 > 0);
    return page.evaluate(() => /** @type {any} */ (window).__t1 - /** @type {any} */ (window).__t0);
  };
  const waitReady = () => page.waitForFunction(() => /** @type {any} */ (window).__ready > 0).then(() => page.evaluate(() => /** @type {any} */ (window).__ready));

  // the page's login: the token once, a cookie after
  if (token) await page.goto(`${base}/?token=${encodeURIComponent(token)}`);

  /** @type {{ view: string, label: string, times: number[], requests: number, longest: number[] }[]} */
  const loads = [];
  const transactionsView = ['transactions', `/targets/${data.evidenceTarget}/transactions`, `A target’s transactions (${TRANSACTIONS.toLocaleString('en')}: the first page of 50, newest first)`];
  const views = ONLY_TRANSACTIONS ? [transactionsView] : [
    ['sessions', '/sessions', `Sessions (${data.sessions})`],
    ['targets', '/targets', `Targets of the ${ENGAGEMENT.toLocaleString('en')}-target session (active)`],
    ['targets', `/targets?session=${data.big}`, `Targets of the ${BIG.toLocaleString('en')}-target session`],
    ['targets', `/targets?session=${data.small}`, 'Targets of a 10-target session'],
    ['configuration', '/configuration', 'Configuration'],
    ['plugins', '/plugins', 'Plugins (the catalogue, the active session’s targets)'],
    ['worklist', '/worklist', `Worklist (${QUEUED.toLocaleString('en')} queued works on ${ENGINE_TARGETS} targets)`],
    ['workers', '/workers', 'Workers'],
    ['results', `/targets/${data.resultsTarget}`, `A target’s results (${data.outputs} outputs, every one drawn)`],
    transactionsView,
  ];
  for (const [view, path, label] of views) {
    const entry = { view, label, times: /** @type {number[]} */ ([]), requests: 0, longest: /** @type {number[]} */ ([]) };
    for (let i = 0; i < RUNS + 1; i++) {
      if (i > 0) await waitForQuiet();
      requests = [];
      await page.goto(base + path);
      const at = await waitReady();
      await page.waitForTimeout(300);
      const { max } = await longest(0);
      if (i === 0) continue; // the first load warms the browser's cache of the page's files
      entry.times.push(at);
      entry.requests = requests.length;
      entry.longest.push(max);
    }
    loads.push(entry);
    console.error(`${label}: ${entry.times.map(fmt).join(', ')}; ${entry.requests} requests; longest tasks ${entry.longest.map(fmt).join(', ')}`);
  }

  /** @type {{ what: string, time?: number, longest: number }[]} */
  const actions = [];
  const measure = async (/** @type {string} */ what, /** @type {() => Promise<number | void>} */ step) => {
    await waitForQuiet();
    const since = await now();
    const time = await step();
    await page.waitForTimeout(200);
    const { max } = await longest(since);
    actions.push({ what, time: typeof time === 'number' ? time : undefined, longest: max });
    console.error(`${what}: ${typeof time === 'number' ? fmt(time) : '-'}; longest task ${fmt(max)}`);
  };

  // The Transactions view at engagement size: paging, filters on the index and on bodies, and live
  // arrivals (a HAR of 100 imported through the API while the view is open)
  const txN = TRANSACTIONS.toLocaleString('en');
  await page.goto(`${base}/targets/${data.evidenceTarget}/transactions`);
  await waitReady();
  await measure(`transactions: next page, ${txN} (click to rows on screen)`, () =>
    timed('txRange', '51–100 of', () => page.getByRole('button', { name: 'Next ›' }).click()),
  );
  for (const [expr, label] of [['~u product/9999', 'a URL regex'], ['~c 404 & ~m GET', 'status and method'], ['~bs "build 9"', 'a response body substring (records read until the page is full)']]) {
    await measure(`transactions: filter by ${label} \`${expr}\`, ${txN} (Enter to rows on screen)`, async () => {
      const filter = page.getByLabel('Filter expression');
      await filter.fill(expr);
      return timed('txCount', 'match', () => filter.press('Enter'));
    });
  }
  await page.getByRole('button', { name: 'Clear' }).click();
  await page.waitForFunction(() => !/match/.test(document.getElementById('tx-count')?.textContent ?? ''));
  await waitForQuiet();
  requests = [];
  await page.waitForTimeout(10_000);
  const txLive = requests.filter((r) => r.includes('/transactions/search/')).length;
  const liveSince = await now();
  const newest = TRANSACTIONS + 100;
  const importedAt = Date.now();
  const liveHar = JSON.stringify({ log: { version: '1.2', creator: { name: 'bench', version: '1' }, entries: Array.from({ length: 100 }, (_, i) => ({
    startedDateTime: new Date().toISOString(), time: 5,
    request: { method: 'GET', url: `https://shop.acme.example/live/${i}`, httpVersion: 'HTTP/1.1', cookies: [], headers: [], queryString: [], headersSize: -1, bodySize: 0 },
    response: { status: 200, statusText: 'OK', httpVersion: 'HTTP/1.1', cookies: [], headers: [], content: { size: 0, mimeType: 'text/html' }, redirectURL: '', headersSize: -1, bodySize: 0 },
    cache: {}, timings: { send: 0, wait: 5, receive: 0 },
  })) } });
  const liveRes = await fetch(`${base}/api/v1/targets/${data.evidenceTarget}/transactions/`, { method: 'POST', headers: { ...(token ? { Authorization: `Bearer ${token}` } : {}), 'Content-Type': 'application/json' }, body: liveHar });
  if (liveRes.status !== 201) throw new Error(`live import: ${liveRes.status}`);
  const answeredAt = Date.now();
  await page.waitForFunction((id) => document.querySelector('tr.tx')?.getAttribute('data-tx-id') === String(id), newest, { polling: 20 });
  actions.push({
    what: `transactions view, live: ${txLive} look(s) for new transactions in 10 s; 100 transactions imported through the API shown after (from the import's answer to the rows on screen; the import took ${fmt(answeredAt - importedAt)})`,
    time: Date.now() - answeredAt,
    longest: (await longest(liveSince)).max,
  });
  console.error(`transactions live: ${txLive} looks in 10 s, new rows after ${fmt(Date.now() - answeredAt)}`);

  let addRequestsSeen = 0;
  if (!ONLY_TRANSACTIONS) await otherActions();

  async function otherActions() {
    for (const [session, size] of [[data.engagement, ENGAGEMENT], [data.big, BIG]]) {
      const n = size.toLocaleString('en');
      await page.goto(`${base}/targets?session=${session}`);
      await waitReady();
      await measure(`scroll a page of 100 rows, ${n}-target session`, async () => {
        for (let i = 0; i < 30; i++) {
          await page.mouse.wheel(0, i < 15 ? 500 : -500);
          await page.waitForTimeout(30);
        }
      });
      await measure(`next page, ${n}-target session (click to rows on screen)`, () =>
        timed('range', '101–200 of', () => page.getByRole('button', { name: 'Next ›' }).click()),
      );
      await measure(`sort by host, ${n}-target session (choice to rows on screen)`, () =>
        timed('sorted', 'host', () => page.getByLabel('Sort').selectOption('host')),
      );
      await measure(`filter as you type "${size === BIG ? '10.20.3' : 'admin'}", ${n}-target session (last key to rows on screen; 200 ms of it is the wait for the next key)`, async () => {
        const filter = page.getByLabel('Filter by URL, host or IP');
        await filter.click();
        const word = size === BIG ? '10.20.3' : 'admin';
        await page.keyboard.type(word.slice(0, -1), { delay: 60 });
        return timed('count', 'match', () => page.keyboard.press(word.slice(-1)));
      });
      await measure(`select: 10 checkboxes, a shift-click range, the page, all matching (${n})`, async () => {
        const boxes = page.locator('tbody .row-select');
        for (let i = 0; i < 10; i++) await boxes.nth(i).click();
        await boxes.nth(40).click({ modifiers: ['Shift'] });
        await page.getByLabel('Select all on this page').check();
        await page.getByRole('button', { name: /^Select all .* matching$/ }).click();
        await page.locator('#selection-count').getByText(/^All /).waitFor();
      });
      await page.getByRole('button', { name: 'Clear selection' }).click();
    }

    // Workers, live: the requests over 10 s, the rows drawn again while nothing changes, and how
    // soon a change made elsewhere shows (5 workers removed through the API, each at a random
    // moment of the page's 1.5 s cycle)
    const REMOVED = 5;
    for (let i = 0; i < REMOVED; i++) await call(base, '/api/v1/workers/', 'POST');
    await call(base, '/api/v1/workers/0/pause', 'PATCH');
    const workerIds = (await api(base, '/api/v1/workers/')).map((/** @type {{id: number}} */ w) => w.id);
    await page.goto(`${base}/workers`);
    await waitReady();
    await page.waitForFunction((n) => document.querySelectorAll('.worker').length === n, workerIds.length);
    await waitForQuiet();
    await page.evaluate(() => {
      const w = /** @type {any} */ (window);
      w.__redrawn = 0;
      new MutationObserver((list) => {
        for (const m of list) w.__redrawn += m.addedNodes.length;
      }).observe(/** @type {Node} */ (document.querySelector('.worker-list')), { childList: true });
    });
    requests = [];
    await page.waitForTimeout(10_000);
    const liveRequests = requests.length;
    const redrawn = await page.evaluate(() => /** @type {any} */ (window).__redrawn);
    /** @type {number[]} */
    const delays = [];
    for (const id of workerIds.slice(-REMOVED)) {
      await page.waitForTimeout(Math.random() * 1500);
      const removedAt = Date.now();
      await call(base, `/api/v1/workers/${id}`, 'DELETE');
      await page.waitForFunction((id) => !document.querySelector(`.worker[data-worker-id="${id}"]`), id, { polling: 20 });
      delays.push(Date.now() - removedAt);
    }
    actions.push({
      what: `workers view, live: ${liveRequests} requests in 10 s (${(liveRequests / 10).toFixed(1)} a second, health checks included); rows drawn again while nothing changed: ${redrawn}; a worker removed through the API gone from the page after (median of ${REMOVED}; worst ${fmt(Math.max(...delays))})`,
      time: median(delays),
      longest: (await longest(0)).max,
    });
    console.error(`workers live: ${liveRequests} requests in 10 s, ${redrawn} rows redrawn, changes shown after ${delays.map(fmt).join(', ')}`);

    // Attach every target of the /16 to another session: one request, whatever the count.
    await page.goto(`${base}/targets?session=${data.big}`);
    await waitReady();
    await measure(`select all ${BIG.toLocaleString('en')} and attach them to another session (click to summary)`, async () => {
      await page.getByLabel('Select all on this page').check();
      await page.getByRole('button', { name: /^Select all .* matching$/ }).click();
      await page.getByLabel('Attach selected to').selectOption({ index: 1 });
      return timed('result', 'Attached', () => page.getByRole('button', { name: 'Attach', exact: true }).click());
    });

    // 5,000 pasted URLs into the engagement session.
    await page.goto(`${base}/targets?session=${data.engagement}`);
    await waitReady();
    const pasted = urls(ENGAGEMENT, (i) => `https://pasted${i}.acme.example/`);
    await page.getByRole('button', { name: 'Add URLs' }).click();
    await page.evaluate((text) => navigator.clipboard.writeText(text), pasted.join('\n'));
    await page.getByLabel('Target URLs, one per line').press('Control+V');
    requests = [];
    await measure(`add ${ENGAGEMENT.toLocaleString('en')} pasted URLs (click to summary and list updated)`, () =>
      timed('added', `${ENGAGEMENT.toLocaleString('en')} targets added|(${(2 * ENGAGEMENT).toLocaleString('en')})`, () => page.getByRole('button', { name: 'Add targets' }).click()),
    );
    const addRequests = requests.filter((r) => !r.includes('/debug/')).length;
    addRequestsSeen = addRequests;
  }

  await browser.close();
  await server.stop();
  if (!flags.keep) rmSync(dataDir, { recursive: true, force: true });

  const lines = [
    `Machine: ${cpus().length} x ${cpus()[0]?.model ?? 'unknown CPU'}, shared with other agents; Node ${process.version}; ${(await chromiumVersion()) ?? 'Chromium'} headless.`,
    ONLY_TRANSACTIONS ? `Data: one target with ${TRANSACTIONS.toLocaleString('en')} transactions (HARs of 20,000 entries imported through the API). ${RUNS} page loads after one warm-up.` : `Data: ${data.sessions} sessions; "acme web" (active) ${ENGAGEMENT.toLocaleString('en')} targets; "acme /16" ${BIG.toLocaleString('en')} targets; "acme engine" ${ENGINE_TARGETS} targets with ${QUEUED.toLocaleString('en')} works queued (workers paused); one target with ${data.outputs} outputs, 40 of them ranked by hand (seeded through the API in ${seedSeconds.toFixed(1)} s). ${RUNS} page loads per view after one warm-up.`,
    '',
    '| View | Data on screen (median / worst) | API requests | Longest task while loading (each load; "–": none over 50 ms) |',
    '|---|---|---|---|',
    ...loads.map((l) => `| ${l.label} | ${fmt(median(l.times))} / ${fmt(Math.max(...l.times))} | ${l.requests} | ${l.longest.map((t) => (t ? Math.round(t) : '–')).join(' / ')} |`),
    '',
    '| Action | Time | Longest task |',
    '|---|---|---|',
    ...actions.map((a) => `| ${a.what} | ${a.time === undefined ? '–' : fmt(a.time)} | ${a.longest ? fmt(a.longest) : 'none'} |`),
    '',
    ...(ONLY_TRANSACTIONS ? [] : [`Adding ${ENGAGEMENT.toLocaleString('en')} URLs took ${addRequestsSeen} API requests in all (the batches, then the sessions and the first page again).`]),
    `Requests that left the box: ${offBox.length}. Page errors: ${errors.length}.`,
    `The machine (2 cores, shared with other agents) was ${Math.round(median(busySamples))}% of a core busy (median; worst ${Math.round(Math.max(...busySamples))}%) just before the measurements.`,
  ];
  const report = lines.join('\n');
  console.log(report);
  if (flags.out) writeFileSync(flags.out, `${report}\n`);
  if (offBox.length > 0 || errors.length > 0) process.exitCode = 1;
}

async function chromiumVersion() {
  return new Promise((done) => {
    const child = spawn(CHROMIUM, ['--version'], { stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    child.on('close', () => done(out.trim() || undefined));
    child.on('error', () => done(undefined));
  });
}

await main();
