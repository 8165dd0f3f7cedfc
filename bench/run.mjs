#!/usr/bin/env node
// @ts-check
/**
 * The benchmark of assessd (issue #5): the compiled server against a bare `node:http` server (the
 * ceiling of this machine), both driven by the same keep-alive load generator from 127.0.0.1,
 * interleaved A B A B over the rounds. Build first (`npm run build`), then:
 *
 *   node bench/run.mjs [--quick] [--rounds N] [--duration S] [--scale] [--growth-only] [--out FILE]
 *                      [--connections N] [--workers N] [--startups N] [--tmp DIR] [--keep]
 *                      [--startup-only [--compare DIR]]
 *
 * --quick      smoke test: 1 round, 0.5 s per scenario per server, 2 start-ups (< 20 s in all)
 * --rounds N   rounds of A B (default 3)
 * --duration S seconds of measured load per scenario per server per round (default 5)
 * --scale      also 10,000 and 100,000 sessions, and 100,000 targets
 * --growth-only  only the growth scenario (every run has it: 32 clients write until the store
 *              holds 400,000 sessions, a health prober beside them; quick: 5,000 sessions)
 * --startup-only  only the start-up measure (default 15 start-ups), and with --compare DIR another
 *              build's (a copy of its dist/) side by side: bare, this build and that one started in
 *              turn, each on a fresh copy of the primed 1,000-session data directory (a build older
 *              than dist/assessd.cjs: its dist/main.js, with this build's node flags and environment)
 * --out FILE   also write the markdown report to FILE
 * --dist DIR   measure the compiled server in DIR instead of ./dist (a copy of an earlier build; still
 *              started with the node flags of this package.json's start script)
 * --env-as-is  start the servers with this environment's NODE_EXTRA_CA_CERTS (left out by default:
 *              node reads that bundle at every start, ~50 ms, which no server pays unless its user sets it)
 * --quiet-wait S  before each measurement, wait up to S seconds (default 30; quick: 0) for other
 *              processes to use less than a fifth of a core; how busy they were is reported anyway
 *
 * The compiled server is copied first (dist/, the default configuration, package.json) into the
 * temp dir and run from there, so a rebuild during the run changes nothing.
 * Every server runs on a fresh copy of its data directory (under the system temp dir, which must
 * be on disk: tmpfs would hide the cost of fsync) and is stopped after its scenario. Exits 1 if any
 * request failed or answered other than 2xx.
 */
import { spawn, execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync, statSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { availableParallelism, cpus, release, tmpdir, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { BENCH_TOKEN, createLoadPool } from './load.mjs';
import { startEnv, startFlags } from './start-flags.mjs';
import { writeDataDir } from './dataset.mjs';
import { runGrowth } from './growth.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const BARE = join(ROOT, 'bench', 'bare-server.mjs');
const HOST = '127.0.0.1';

// ---------------------------------------------------------------------------------------------
// Options

const { values: flags } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    rounds: { type: 'string' },
    duration: { type: 'string' },
    scale: { type: 'boolean', default: false },
    'growth-only': { type: 'boolean', default: false },
    'startup-only': { type: 'boolean', default: false },
    compare: { type: 'string' },
    out: { type: 'string' },
    dist: { type: 'string' },
    connections: { type: 'string', default: '32' },
    workers: { type: 'string' },
    startups: { type: 'string' },
    tmp: { type: 'string' },
    keep: { type: 'boolean', default: false },
    'quiet-wait': { type: 'string' },
    'env-as-is': { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (flags.help) {
  console.log(readFileSync(fileURLToPath(import.meta.url), 'utf8').split('*/')[0].replace(/^[^]*?\/\*\*/, '').replace(/^ \* ?/gm, ''));
  process.exit(0);
}

/** @param {string | undefined} raw @param {number} fallback @param {string} name */
function positive(raw, fallback, name) {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!(n > 0) || !Number.isFinite(n)) throw new Error(`--${name} must be a positive number`);
  return n;
}

const quick = flags.quick;
const opts = {
  rounds: Math.round(positive(flags.rounds, quick ? 1 : 3, 'rounds')),
  durationMs: Math.round(positive(flags.duration, quick ? 0.5 : 5, 'duration') * 1000),
  connections: Math.round(positive(flags.connections, 32, 'connections')),
  // On 2 cores, one generator thread leaves the other core to the server; more threads only contend.
  workers: Math.round(positive(flags.workers, Math.max(1, Math.min(4, Math.floor(availableParallelism() / 2))), 'workers')),
  startups: Math.round(positive(flags.startups, quick ? 2 : flags['startup-only'] ? 15 : 5, 'startups')),
  quietWaitMs: flags['quiet-wait'] === '0' ? 0 : Math.round(positive(flags['quiet-wait'], quick ? 0 : 30, 'quiet-wait') * 1000),
};
/**
 * NODE_EXTRA_CA_CERTS: node reads the bundle it names at every start, before the first line of
 * JavaScript (~50 ms for Debian's ca-certificates.crt on the project's machine, 2026-11-28: `node -e
 * 0` in 80 ms instead of 30), the same for every server. An environment that sets it (the project's
 * sandbox does) gave the bare server and the build those 50 ms alike, which made their start-up
 * ratio look better than a user's `npm start` without it. The servers the bench starts go without
 * it unless --env-as-is.
 */
const caBundleNote = process.env.NODE_EXTRA_CA_CERTS === undefined
  ? 'NODE_EXTRA_CA_CERTS not set'
  : flags['env-as-is']
    ? `NODE_EXTRA_CA_CERTS=${process.env.NODE_EXTRA_CA_CERTS} kept (--env-as-is): node reads that bundle at every start of every server, ~50 ms each here`
    : `NODE_EXTRA_CA_CERTS=${process.env.NODE_EXTRA_CA_CERTS} left out of the servers' environment (node would read it at every start, ~50 ms each here; --env-as-is keeps it)`;
if (!flags['env-as-is']) delete process.env.NODE_EXTRA_CA_CERTS;
const warmupMs = Math.min(1000, Math.max(100, Math.round(opts.durationMs / 5)));
/** Writes warm up by count, so the store barely grows before the measurement. */
const writeWarmupRequests = quick ? 50 : 200;

const BASE = { name: '1k', label: '1,000 sessions', spec: { sessions: 1000 } };
const SCALE = quick
  ? [
      { name: '5k', label: '5,000 sessions', spec: { sessions: 5000 } },
      { name: '5k-targets', label: '5,000 targets (50 sessions x 100)', spec: { sessions: 50, targetsPerSession: 100 } },
    ]
  : [
      { name: '10k', label: '10,000 sessions', spec: { sessions: 10_000 } },
      { name: '100k', label: '100,000 sessions', spec: { sessions: 100_000 } },
      { name: '100k-targets', label: '100,000 targets (1,000 sessions x 100)', spec: { sessions: 1000, targetsPerSession: 100 } },
    ];

// ---------------------------------------------------------------------------------------------
// Scenarios

const FORM = { 'Content-Type': 'application/x-www-form-urlencoded' };
const configKey = (() => {
  const doc = JSON.parse(readFileSync(join(ROOT, 'data', 'default-configuration.json'), 'utf8'));
  return /** @type {string} */ (doc.items[0].key);
})();
const C = opts.connections;

/**
 * @typedef {object} Scenario
 * @property {string} id
 * @property {string} label
 * @property {number} connections
 * @property {import('./load.mjs').RequestSpec} request
 * @property {boolean} [write] a durable write: warm up by count, report fsyncs per acknowledged write
 * @property {boolean} [grows] each request adds to the store (RSS after it is not comparable)
 * @property {(res: ProbeResult) => string | undefined} [check] what is wrong with assessd's answer, if anything
 */

/** @type {Scenario[]} */
const SCENARIOS = [
  { id: 'health', label: 'GET /debug/health', connections: C, request: { method: 'GET', path: '/debug/health' } },
  {
    id: 'sessions-list',
    label: 'GET /api/v1/sessions/',
    connections: C,
    request: { method: 'GET', path: '/api/v1/sessions/' },
  },
  { id: 'config-get', label: 'GET /api/v1/configuration', connections: C, request: { method: 'GET', path: '/api/v1/configuration' } },
  {
    id: 'page-gzip',
    label: 'GET / (gzip)',
    connections: C,
    request: { method: 'GET', path: '/', headers: { 'Accept-Encoding': 'gzip, deflate, br' } },
    check: (res) => (res.headers['content-encoding'] === 'gzip' ? undefined : 'the page is not gzip-encoded'),
  },
  {
    id: 'create-1',
    label: 'POST /api/v1/sessions/ (durable)',
    connections: 1,
    write: true,
    grows: true,
    request: { method: 'POST', path: '/api/v1/sessions/', headers: FORM, body: 'name=bench-{id}' },
  },
  {
    id: 'create-32',
    label: 'POST /api/v1/sessions/ (durable)',
    connections: C,
    write: true,
    grows: true,
    request: { method: 'POST', path: '/api/v1/sessions/', headers: FORM, body: 'name=bench-{id}' },
  },
  {
    id: 'config-patch',
    label: 'PATCH /api/v1/configuration/ (durable)',
    connections: C,
    write: true,
    request: { method: 'PATCH', path: '/api/v1/configuration/', headers: FORM, body: `${encodeURIComponent(configKey)}=bench-{id}` },
  },
];
const byId = (/** @type {string} */ id) => /** @type {Scenario} */ (SCENARIOS.find((s) => s.id === id));

/** At scale: the list, writes at 1 and at 32 clients, and (with targets) the targets list. */
const SCALE_SCENARIOS = [
  byId('sessions-list'),
  byId('create-1'),
  byId('create-32'),
  { id: 'targets-list', label: 'GET /api/v1/targets/ (active session)', connections: C, request: { method: 'GET', path: '/api/v1/targets/' } },
];

/** Growth: writes until the store holds `target` sessions (bounded in time), RSS noted at `marks`. */
const GROWTH = quick
  ? // compacting every 64 KiB of journal, so that the smoke run goes through the compaction worker
    { target: 5000, marks: [2000, 5000], maxMs: 5000, env: { ASSESSD_COMPACT_AFTER: '65536' } }
  : { target: 400_000, marks: [100_000, 400_000], maxMs: 120_000, env: {} };

// ---------------------------------------------------------------------------------------------
// Processes

const CLK_TCK = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** @param {number} pid CPU time (user + system) in ms */
function cpuMs(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLK_TCK;
}

/** CPU time in ms, all cores, busy (not idle, not iowait), from /proc/stat. */
function machineBusyMs() {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const total = f.slice(0, 8).reduce((a, b) => a + b, 0);
  return ((total - f[3] - f[4]) * 1000) / CLK_TCK;
}

/** This process's CPU time in ms, the generator's threads included. */
function selfMs() {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

/** Other processes' CPU (% of one core) over `ms`, while this benchmark sits idle. */
async function othersPct(ms = 500) {
  const b0 = machineBusyMs(), s0 = selfMs(), t0 = performance.now();
  await sleep(ms);
  return (100 * (machineBusyMs() - b0 - (selfMs() - s0))) / (performance.now() - t0);
}

let quietWaitedMs = 0;
/** Waits (bounded) until other processes use under 20% of a core: a shared machine skews results. */
async function waitForQuiet() {
  if (opts.quietWaitMs === 0) return;
  const t0 = performance.now();
  while (performance.now() - t0 < opts.quietWaitMs && (await othersPct()) > 20) {}
  quietWaitedMs += performance.now() - t0;
}

/** @param {number} pid resident set size in bytes */
function rss(pid) {
  const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : NaN;
}

function freePort() {
  return new Promise((res, rej) => {
    const srv = createNetServer();
    srv.once('error', rej);
    srv.listen(0, HOST, () => {
      const { port } = /** @type {import('node:net').AddressInfo} */ (srv.address());
      srv.close(() => res(port));
    });
  });
}

/**
 * @typedef {{ status: number, headers: import('node:http').IncomingHttpHeaders, body: Buffer }} ProbeResult
 * @param {number} port @param {string} path @param {Record<string, string>} [headers]
 * @returns {Promise<ProbeResult>}
 */
function probe(port, path, headers = {}) {
  return new Promise((res, rej) => {
    const req = httpRequest({ host: HOST, port, path, headers: { authorization: `Bearer ${BENCH_TOKEN}`, ...headers }, agent: false, timeout: 5000 }, (r) => {
      /** @type {Buffer[]} */
      const chunks = [];
      r.on('data', (c) => chunks.push(c));
      r.on('end', () => res({ status: r.statusCode ?? 0, headers: r.headers, body: Buffer.concat(chunks) }));
      r.on('error', rej);
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', rej);
    req.end();
  });
}

/** @type {Set<import('node:child_process').ChildProcess>} */
const children = new Set();
process.on('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});

/**
 * @typedef {{ kind: 'bare' | 'assessd', pid: number, port: number, startupMs: number, stop(): Promise<void>, stderr(): string }} Running
 * Starts a server on a free port and polls `/debug/health` until the first 200.
 * @param {'bare' | 'assessd'} kind @param {string} [dataDir] @param {NodeJS.ProcessEnv} [env] added to the environment
 * @returns {Promise<Running>}
 */
async function startServer(kind, dataDir, env = {}, main = MAIN) {
  const port = await freePort();
  const args =
    kind === 'bare'
      ? [BARE, '--host', HOST, '--port', String(port)]
      : [...START_FLAGS, main, '--host', HOST, '--port', String(port), '--data-dir', /** @type {string} */ (dataDir)];
  const t0 = performance.now();
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...(kind === 'bare' ? process.env : START_ENV), ASSESSD_TOKEN: BENCH_TOKEN, ...env } });
  children.add(child);
  let stderr = '';
  child.stderr?.on('data', (d) => (stderr = (stderr + d).slice(-4000)));
  child.stdout?.resume();
  /** @type {number | null} */
  let exitCode = null;
  const exited = new Promise((res) => child.once('exit', (code, signal) => {
    exitCode = code ?? (signal ? 128 : 1);
    children.delete(child);
    res(undefined);
  }));
  let startupMs = NaN;
  for (let attempt = 0; attempt < 10_000 && performance.now() - t0 < 20_000; attempt++) {
    if (exitCode !== null) throw new Error(`${kind} exited with ${exitCode} at start: ${stderr.trim()}`);
    const ok = await probe(port, '/debug/health').then((r) => r.status === 200, () => false);
    if (ok) {
      startupMs = performance.now() - t0;
      break;
    }
    await sleep(2);
  }
  if (Number.isNaN(startupMs)) {
    child.kill('SIGKILL');
    throw new Error(`${kind} did not answer /debug/health within 20 s: ${stderr.trim()}`);
  }
  return {
    kind,
    pid: /** @type {number} */ (child.pid),
    port,
    startupMs,
    stderr: () => stderr,
    async stop() {
      if (exitCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Data directories

const tmpRoot = flags.tmp ? resolve(flags.tmp) : tmpdir();
/** @param {string} path the file system type of the mount that holds `path` */
function fsTypeOf(path) {
  try {
    let best = { mount: '', type: 'unknown', device: '' };
    for (const line of readFileSync('/proc/mounts', 'utf8').split('\n')) {
      const [device, mount, type] = line.split(' ');
      if (!mount) continue;
      const m = mount.replace(/\\040/g, ' ');
      if ((path === m || path.startsWith(m.endsWith('/') ? m : `${m}/`)) && m.length >= best.mount.length) best = { mount: m, type, device };
    }
    return best;
  } catch {
    return { mount: '', type: 'unknown', device: '' };
  }
}
const tmpFs = fsTypeOf(tmpRoot);
if (tmpFs.type === 'tmpfs' || tmpFs.type === 'ramfs') {
  const problem = `${tmpRoot} is on ${tmpFs.type}: fsync would cost nothing there; pass --tmp DIR on a disk`;
  // a smoke run checks that the bench works, not what it measures
  if (!quick) throw new Error(problem);
  console.warn(`warning: ${problem}`);
}
const DIST = flags.dist ? resolve(flags.dist) : join(ROOT, 'dist');
if (!existsSync(join(DIST, 'assessd.cjs'))) throw new Error(`${join(DIST, 'assessd.cjs')} is missing: run npm run build first`);

const work = mkdtempSync(join(tmpRoot, 'assessd-bench-'));
let copies = 0;
process.on('exit', () => {
  if (!flags.keep) rmSync(work, { recursive: true, force: true });
});

/** The build under test, frozen: the server's own paths resolve from its dist/.. (here, `app`). */
const APP = join(work, 'app');
for (const file of ['package.json', join('data', 'default-configuration.json')]) cpSync(join(ROOT, file), join(APP, file));
cpSync(DIST, join(APP, 'dist'), { recursive: true });
const MAIN = join(APP, 'dist', 'assessd.cjs');
/** --compare: another build, frozen the same way, for the side-by-side start-up measure. */
const COMPARE_MAIN = flags.compare ? freezeBuild(resolve(flags.compare), join(work, 'compare')) : undefined;

/**
 * Copies a dist/ (and what its server reads beside it) into `app`; answers its entry point:
 * assessd.cjs, or main.js for a build made before assessd.cjs (2026-11-26), which its `npm start` ran.
 * Either is started with this build's node flags and environment.
 */
function freezeBuild(/** @type {string} */ dist, /** @type {string} */ app) {
  const entry = ['assessd.cjs', 'main.js'].find((name) => existsSync(join(dist, name)));
  if (!entry) throw new Error(`neither ${join(dist, 'assessd.cjs')} nor ${join(dist, 'main.js')} is there`);
  for (const file of ['package.json', join('data', 'default-configuration.json')]) cpSync(join(ROOT, file), join(app, file));
  cpSync(dist, join(app, 'dist'), { recursive: true });
  return join(app, 'dist', entry);
}
/** The node flags the build's `npm start` gives its server (its package.json's start script): measured as users run it. */
const START_FLAGS = startFlags(APP);
/** The environment it gives it (glibc's allocator setting). */
const START_ENV = startEnv(APP);
const build = (() => {
  const git = (/** @type {string[]} */ ...args) => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  if (flags.dist) return `the copy in ${DIST}, built ${statSync(join(DIST, 'assessd.cjs')).mtime.toISOString()}`;
  try {
    const dirty = git('status', '--porcelain', '--', 'src', 'data', 'package.json') !== '';
    return `${git('rev-parse', '--short', 'HEAD')}${dirty ? ' + uncommitted changes in src/' : ''}, dist/ built ${statSync(join(ROOT, 'dist', 'assessd.cjs')).mtime.toISOString()}`;
  } catch {
    return 'unknown (not a git checkout)';
  }
})();
for (const signal of /** @type {const} */ (['SIGINT', 'SIGTERM'])) process.on(signal, () => process.exit(130));

/**
 * A template data directory for a dataset, primed by one start of the server so that the
 * configuration file exists (a restart, not a first start, is what start-up time measures).
 * @param {{ name: string, spec: import('./dataset.mjs').DatasetSpec }} dataset
 * @param {string} [main] the build's entry point  @param {string} [suffix] of the directory's name
 */
async function prepareTemplate(dataset, main = MAIN, suffix = '') {
  const dir = join(work, `template-${dataset.name}${suffix}`);
  const { files } = writeDataDir(dir, dataset.spec);
  const server = await startServer('assessd', dir, {}, main);
  await server.stop();
  return { dir, sessionsBytes: files['sessions.json'] };
}

/** @param {string} template */
function freshCopy(template) {
  const dir = join(work, `run-${++copies}`);
  cpSync(template, dir, { recursive: true });
  rmSync(join(dir, 'assessd.lock'), { force: true });
  return dir;
}

// ---------------------------------------------------------------------------------------------
// Measurement

/**
 * @typedef {object} Sample
 * @property {number} rps
 * @property {number} p50Ms
 * @property {number} p99Ms
 * @property {number} cpuUsPerReq
 * @property {number} fsyncsPerAck
 * @property {number} acksPerBatch
 * @property {number} acks
 * @property {number} acksTotal acknowledged writes since the server started (warm-up included)
 * @property {number} completed
 * @property {number} errors
 * @property {number} non2xx
 * @property {number} rssAfter
 * @property {number} rssIdle
 * @property {number} startupMs
 * @property {number} bodyBytes bytes per response, head included
 * @property {number} backgroundPct CPU used by other processes during the measurement, % of one core
 * @property {number} serverCpuPct the server's CPU during the measurement, % of one core
 */

let failures = 0;
/** @type {string[]} */
const problems = [];

/** @param {string} what @param {import('./load.mjs').LoadResult} r */
function noteFailures(what, r) {
  if (r.errors === 0 && r.non2xx === 0) return;
  failures += r.errors + r.non2xx;
  problems.push(`${what}: ${r.errors} errors, ${r.non2xx} non-2xx ${JSON.stringify(r.statuses)} ${r.errorSamples.join('; ')}`);
}

/** @param {number} port */
async function storeStats(port) {
  const r = await probe(port, '/debug/stats');
  return JSON.parse(r.body.toString()).data.store;
}

/**
 * One scenario on one fresh server: start, warm up, measure, stop.
 * @param {Awaited<ReturnType<typeof createLoadPool>>} pool
 * @param {'bare' | 'assessd'} kind
 * @param {Scenario} scenario
 * @param {string} template
 * @param {string} what
 * @returns {Promise<Sample>}
 */
async function runOne(pool, kind, scenario, template, what) {
  const dir = kind === 'assessd' ? freshCopy(template) : undefined;
  await waitForQuiet();
  const server = await startServer(kind, dir);
  try {
    const rssIdle = rss(server.pid);
    const first = await probe(server.port, scenario.request.path, scenario.request.headers);
    if (kind === 'assessd' && scenario.request.method === 'GET') {
      const wrong = first.status !== 200 ? `status ${first.status}` : scenario.check?.(first);
      if (wrong) {
        failures++;
        problems.push(`${what}: ${wrong}`);
      }
    }
    const request = scenario.request;
    const warm = await pool.run({
      port: server.port,
      connections: scenario.connections,
      durationMs: warmupMs,
      maxRequests: scenario.write ? writeWarmupRequests : undefined,
      request,
    });
    noteFailures(`${what} (warm-up)`, warm);
    const s0 = kind === 'assessd' ? await storeStats(server.port) : undefined;
    const cpu0 = cpuMs(server.pid), busy0 = machineBusyMs(), self0 = selfMs(), t0 = performance.now();
    const r = await pool.run({ port: server.port, connections: scenario.connections, durationMs: opts.durationMs, request });
    const cpu1 = cpuMs(server.pid), busy1 = machineBusyMs(), self1 = selfMs(), t1 = performance.now();
    // What neither the server nor the generator used: other processes competing for the cores.
    const backgroundPct = (100 * (busy1 - busy0 - (cpu1 - cpu0) - (self1 - self0))) / (t1 - t0);
    const s1 = kind === 'assessd' ? await storeStats(server.port) : undefined;
    noteFailures(what, r);
    const bodyBytes = r.completed > 0 ? r.bytes / r.completed : NaN;
    const acks = s0 && s1 ? s1.acknowledged - s0.acknowledged : NaN;
    const batches = s0 && s1 ? s1.batches - s0.batches : NaN;
    const fsyncs = s0 && s1 ? s1.fsyncs - s0.fsyncs : NaN;
    if (s1 && s1.failedBatches > 0) {
      failures += s1.failedBatches;
      problems.push(`${what}: ${s1.failedBatches} failed batches`);
    }
    return {
      rps: r.rps,
      p50Ms: r.p50Ms,
      p99Ms: r.p99Ms,
      cpuUsPerReq: r.completed > 0 ? ((cpu1 - cpu0) * 1000) / r.completed : NaN,
      fsyncsPerAck: scenario.write && acks > 0 ? fsyncs / acks : NaN,
      acksPerBatch: scenario.write && batches > 0 ? acks / batches : NaN,
      acks,
      acksTotal: s1 ? s1.acknowledged : NaN,
      completed: r.completed,
      errors: r.errors + warm.errors,
      non2xx: r.non2xx + warm.non2xx,
      rssAfter: rss(server.pid),
      rssIdle,
      startupMs: server.startupMs,
      bodyBytes,
      backgroundPct,
      serverCpuPct: (100 * (cpu1 - cpu0)) / (t1 - t0),
    };
  } finally {
    await server.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Start-up: spawn to the first 200 on /debug/health, `opts.startups` times, interleaved with the
 * bare server when `withBare`; RSS idle half a second after each start.
 * @param {string} template @param {boolean} withBare
 */
async function measureStartups(template, withBare) {
  /** @type {Record<'bare' | 'assessd', { startupMs: number[], rssIdle: number[] }>} */
  const out = { bare: { startupMs: [], rssIdle: [] }, assessd: { startupMs: [], rssIdle: [] } };
  for (let i = 0; i < opts.startups; i++) {
    for (const kind of /** @type {const} */ (['bare', 'assessd'])) {
      if (kind === 'bare' && !withBare) continue;
      const dir = kind === 'assessd' ? freshCopy(template) : undefined;
      await waitForQuiet();
      const server = await startServer(kind, dir);
      await sleep(500);
      out[kind].startupMs.push(server.startupMs);
      out[kind].rssIdle.push(rss(server.pid));
      await server.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Statistics and formatting

/** @param {number[]} xs */
function median(xs) {
  const v = xs.filter((x) => !Number.isNaN(x)).sort((a, b) => a - b);
  if (v.length === 0) return NaN;
  const m = v.length >> 1;
  return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}
/** @param {Sample[]} samples @param {keyof Sample} key */
const med = (samples, key) => median(samples.map((s) => s[key]));
/** @param {Sample[]} samples @param {keyof Sample} key */
const sum = (samples, key) => samples.reduce((a, s) => a + s[key], 0);

/** @param {number} x @param {number} [digits] */
function num(x, digits = 0) {
  if (Number.isNaN(x)) return '–';
  return x.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}
/** @param {number} ms */
const ms = (ms) => (Number.isNaN(ms) ? '–' : ms < 10 ? ms.toFixed(2) : ms < 100 ? ms.toFixed(1) : ms.toFixed(0));
/** @param {number} bytes */
const mb = (bytes) => (Number.isNaN(bytes) ? '–' : (bytes / 2 ** 20).toFixed(1));
/** @param {number} bytes */
const size = (bytes) => (bytes >= 2 ** 20 ? `${(bytes / 2 ** 20).toFixed(1)} MB` : bytes >= 1024 ? `${(bytes / 1024).toFixed(1)} KB` : `${bytes} B`);

/** @param {string[]} head @param {string[][]} rows */
function table(head, rows) {
  return [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

const RESULT_HEAD = [
  'Scenario', 'Conns', 'Response', 'req/s', 'bare req/s', 'Ratio', 'p50 ms', 'p99 ms', 'bare p50 / p99 ms',
  'CPU µs/req', 'bare CPU µs/req', 'fsyncs/ack', 'acks/batch', 'Errors', 'RSS after MB (bare)', 'Others %',
];

/**
 * @param {Scenario} s @param {Sample[]} a assessd samples @param {Sample[] | undefined} b bare samples
 */
function resultRow(s, a, b) {
  const rps = med(a, 'rps');
  const bareRps = b ? med(b, 'rps') : NaN;
  return [
    s.label,
    String(s.connections),
    size(Math.round(med(a, 'bodyBytes'))),
    num(rps),
    num(bareRps),
    Number.isNaN(bareRps) ? '–' : `${(rps / bareRps).toFixed(2)}x`,
    ms(med(a, 'p50Ms')),
    ms(med(a, 'p99Ms')),
    b ? `${ms(med(b, 'p50Ms'))} / ${ms(med(b, 'p99Ms'))}` : '–',
    num(med(a, 'cpuUsPerReq')),
    b ? num(med(b, 'cpuUsPerReq')) : '–',
    s.write ? num(med(a, 'fsyncsPerAck'), 3) : '–',
    s.write ? num(med(a, 'acksPerBatch'), 1) : '–',
    String(sum(a, 'errors') + sum(a, 'non2xx')),
    `${mb(med(a, 'rssAfter'))} (${b ? mb(med(b, 'rssAfter')) : '–'})`,
    Math.max(0, med(a, 'backgroundPct')).toFixed(0),
  ];
}

// ---------------------------------------------------------------------------------------------
// The run

/** @param {string} line */
const progress = (line) => process.stderr.write(`${line}\n`);

/** @param {number[]} background other processes' CPU in each measured window */
function machine(background) {
  const model = cpus()[0]?.model ?? 'unknown';
  let disk = tmpFs.device;
  try {
    const dev = tmpFs.device.replace('/dev/', '').replace(/\d+$/, '').replace(/p$/, '');
    const rot = readFileSync(`/sys/block/${dev}/queue/rotational`, 'utf8').trim();
    disk += rot === '1' ? ' (rotational)' : ' (non-rotational)';
  } catch {}
  return [
    `- CPU: ${availableParallelism()} x ${model}`,
    `- Memory: ${(totalmem() / 2 ** 30).toFixed(1)} GiB`,
    `- Node ${process.version}, Linux ${release()}`,
    `- Data directories: ${tmpRoot} on ${tmpFs.type} (${disk})`,
    `- Environment: ${caBundleNote}`,
    `- Build: ${build}; run as its \`npm start\` runs it: \`node ${[...START_FLAGS, 'dist/assessd.cjs'].join(' ')}\``,
    `- Other processes' CPU during the measured windows: median ${median(background).toFixed(0)}%, ` +
      `max ${Math.max(...background).toFixed(0)}% of one core; waited ${Math.round(quietWaitedMs / 1000)} s in all for them to quieten ` +
      `(load average at the end: ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')})`,
    `- Load: ${opts.workers} generator thread(s), ${opts.connections} keep-alive connections, ${opts.rounds} round(s) of ` +
      `${opts.durationMs / 1000} s per scenario per server (after ${warmupMs / 1000} s of warm-up; writes warm up with ` +
      `${writeWarmupRequests} requests), a fresh server process per scenario`,
  ].join('\n');
}

/**
 * The growth scenario, once per round, each on a fresh copy of `template` (`sessions` sessions).
 * @param {Awaited<ReturnType<typeof createLoadPool>>} pool @param {string} template @param {number} sessions
 */
async function measureGrowth(pool, template, sessions) {
  /** @type {(import('./growth.mjs').GrowthSample & { backgroundPct: number })[]} */
  const samples = [];
  for (let round = 1; round <= opts.rounds; round++) {
    const dir = freshCopy(template);
    await waitForQuiet();
    const server = await startServer('assessd', dir, GROWTH.env);
    try {
      const cpu0 = cpuMs(server.pid), busy0 = machineBusyMs(), self0 = selfMs(), t0 = performance.now();
      const sample = await runGrowth({
        pool, server, dataDir: dir, sessionsStart: sessions, targetSessions: GROWTH.target, marks: GROWTH.marks, maxMs: GROWTH.maxMs,
        connections: C, warmupRequests: writeWarmupRequests, configKey, rss, storeStats,
      });
      const cpu1 = cpuMs(server.pid), busy1 = machineBusyMs(), self1 = selfMs(), t1 = performance.now();
      const backgroundPct = (100 * (busy1 - busy0 - (cpu1 - cpu0) - (self1 - self0))) / (t1 - t0);
      samples.push({ ...sample, backgroundPct });
      failures += sample.errors;
      problems.push(...sample.problems.map((p) => `round ${round} ${p}`));
      progress(`round ${round} growth: ${num(sample.sessionsStart)} -> ${num(sample.sessionsEnd)} sessions in ${sample.seconds.toFixed(1)} s, ` +
        `${num(sample.rps)} writes/s; create p50 ${ms(sample.create.p50Ms)} p99 ${ms(sample.create.p99Ms)} ms; ` +
        `patch p50 ${ms(sample.patch.p50Ms)} p99 ${ms(sample.patch.p99Ms)} ms; health median ${ms(sample.health.p50Ms)} worst ${ms(sample.health.maxMs)} ms; ` +
        `${sample.compactions} compactions, others ${backgroundPct.toFixed(0)}%`);
    } finally {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }
  return samples;
}

/**
 * The growth scenario's report: its tables, and its rows of the targets table.
 * @param {Awaited<ReturnType<typeof measureGrowth>>} g
 * @returns {{ text: string, targets: [string, string, boolean | undefined][] }}
 */
function growthReport(g) {
  const m = (/** @type {(x: typeof g[number]) => number} */ f) => median(g.map(f));
  const kb = (/** @type {number} */ bytes) => (Number.isNaN(bytes) ? '–' : (bytes / 1024).toFixed(2));
  const at = (/** @type {typeof g[number]} */ x, /** @type {number} */ i) => x.rssAt[i] ?? { sessions: NaN, rss: NaN, compacting: false };
  const ratio = (/** @type {{ p50Ms: number, p99Ms: number }} */ l) => l.p99Ms / l.p50Ms;
  const lat = (/** @type {{ p50Ms: number, p99Ms: number, maxMs: number }} */ l) => `${ms(l.p50Ms)} / ${ms(l.p99Ms)} / ${ms(l.maxMs)} (${ratio(l).toFixed(1)}x)`;
  const text = [
    `\n## Growth (${C} clients: three in four create sessions, one in four patches the configuration; a health probe every 20 ms on its own connection)\n`,
    `Each round starts from ${num(BASE.spec.sessions)} sessions and writes until the store holds ${num(GROWTH.target)} (at most ${GROWTH.maxMs / 1000} s); ` +
      'latencies in ms as p50 / p99 / max (p99 over p50); the RSS of the server process (`VmRSS`), sampled every 100 ms, ' +
      'at the first sample past each mark, per stored session; "compacting" marks samples taken while a compaction was under way.\n',
    table(
      ['Round', 'Sessions', 'Seconds', 'writes/s', 'create ms', 'patch ms', 'health median / p99 / worst ms', 'Compactions', 'fsyncs/ack', 'Errors', 'Others %'],
      g.map((x, i) => [
        String(i + 1), `${num(x.sessionsStart)} -> ${num(x.sessionsEnd)}`, x.seconds.toFixed(1), num(x.rps), lat(x.create), lat(x.patch),
        `${ms(x.health.p50Ms)} / ${ms(x.health.p99Ms)} / ${ms(x.health.maxMs)} (${num(x.health.count)} probes)`, String(x.compactions),
        num(x.fsyncsPerAck, 3), String(x.errors), Math.max(0, x.backgroundPct).toFixed(0),
      ]),
    ),
    '',
    table(
      ['Round', ...GROWTH.marks.map((mark) => `RSS at ${num(mark)} sessions: MB (KB per session)`), 'RSS peak MB (sessions then)', 'RSS at the end MB (KB per session)'],
      g.map((x, i) => [
        String(i + 1),
        ...GROWTH.marks.map((_, k) => `${mb(at(x, k).rss)} (${kb(at(x, k).rss / at(x, k).sessions)})${at(x, k).compacting ? ', compacting' : ''}`),
        `${mb(x.rssPeak.rss)} (${num(x.rssPeak.sessions)})`,
        `${mb(x.rssEnd)} (${kb(x.rssEnd / x.sessionsEnd)})`,
      ]),
    ),
    '',
    'Compactions as the sampler saw them (a sealed segment or a temp file in the data directory), the one that started nearest each mark: ' +
      'the RSS just before it, at its largest while it ran, and just after it.\n',
    table(
      ['Round', 'Compactions seen', ...GROWTH.marks.map((mark) => `Near ${num(mark)} sessions: started at; RSS before / during / after MB`)],
      g.map((x, i) => [
        String(i + 1),
        String(x.compactionsSeen.length),
        ...GROWTH.marks.map((mark) => {
          const c = [...x.compactionsSeen].sort((a, b) => Math.abs(a.sessions - mark) - Math.abs(b.sessions - mark))[0];
          return c ? `${num(c.sessions)}; ${mb(c.rssBefore)} / ${mb(c.rssPeak)} / ${mb(c.rssAfter ?? NaN)}` : '–';
        }),
      ]),
    ),
  ].join('\n');
  const last = GROWTH.marks.length - 1;
  const grown = m((x) => x.sessionsEnd);
  /** @type {[string, string, boolean | undefined][]} */
  const targets = [
    [`Growth to ${num(GROWTH.target)} sessions: create p99 <= 10x its p50`, `${m((x) => ratio(x.create)).toFixed(1)}x (${ms(m((x) => x.create.p99Ms))} vs ${ms(m((x) => x.create.p50Ms))} ms)`, m((x) => ratio(x.create)) <= 10],
    ['Growth: configuration patch p99 <= 10x its p50', `${m((x) => ratio(x.patch)).toFixed(1)}x (${ms(m((x) => x.patch.p99Ms))} vs ${ms(m((x) => x.patch.p50Ms))} ms)`, m((x) => ratio(x.patch)) <= 10],
    ['Growth: worst health answer <= 100 ms', `${ms(m((x) => x.health.maxMs))} ms (median ${ms(m((x) => x.health.p50Ms))} ms; worst of the rounds ${ms(Math.max(...g.map((x) => x.health.maxMs)))} ms)`, m((x) => x.health.maxMs) <= 100],
    ['Growth: the store grew past 300,000 sessions', `${num(grown)} sessions in ${m((x) => x.seconds).toFixed(1)} s, ${num(m((x) => x.rps))} writes/s`, quick ? undefined : grown > 300_000],
    [`Growth: RSS per session at ${num(GROWTH.marks[last])} sessions`, `${kb(m((x) => at(x, last).rss / at(x, last).sessions))} KB (${num(GROWTH.marks[0])}: ${kb(m((x) => at(x, 0).rss / at(x, 0).sessions))} KB)`, undefined],
  ];
  return { text, targets };
}

/**
 * --startup-only: start-ups side by side, bare, this build and (--compare) another, each round in
 * a rotating order; the speed ratio is the bare server's start-up over the build's (1 = as fast).
 */
async function startupOnly() {
  // A template per build: the default configuration names the build's own directory (its
  // wordlists), so a build started on another's files would rewrite them, fsyncs included.
  const base = await prepareTemplate(BASE);
  const compared = COMPARE_MAIN ? await prepareTemplate(BASE, COMPARE_MAIN, '-compare') : undefined;
  /** @type {[string, string | undefined, string | undefined][]} */
  const kinds = [['bare', undefined, undefined], ['this build', MAIN, base.dir], ...(COMPARE_MAIN && compared ? /** @type {[string, string, string][]} */ ([[`--compare ${flags.compare}`, COMPARE_MAIN, compared.dir]]) : [])];
  /** @type {Map<string, number[]>} */
  const times = new Map(kinds.map(([name]) => [name, []]));
  progress(`start-up x ${opts.startups}: ${kinds.map(([name]) => name).join(', ')}, with ${BASE.label}`);
  for (let i = 0; i < opts.startups; i++) {
    for (let k = 0; k < kinds.length; k++) {
      const [name, main, template] = kinds[(i + k) % kinds.length];
      const dir = template ? freshCopy(template) : undefined;
      await waitForQuiet();
      const server = await startServer(main ? 'assessd' : 'bare', dir, {}, main);
      times.get(name)?.push(server.startupMs);
      await server.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    }
  }
  const bareTimes = times.get('bare') ?? [];
  const bare = median(bareTimes);
  const rows = kinds.map(([name]) => {
    const own = times.get(name) ?? [];
    const m = median(own);
    // each round starts every server once, minutes apart at most: the machine's drift between rounds
    // (a third, from minute to minute) cancels out of a round's difference
    const extra = median(own.map((t, i) => t - bareTimes[i]));
    return [name, ms(m), `${(bare / m).toFixed(2)}`, `${(m / bare).toFixed(2)}x`, ms(extra), `${(bare / (bare + extra)).toFixed(2)}`];
  });
  const report = [`## Start-up side by side\n\n- Build: ${build}; run as its \`npm start\` runs it: \`node ${[...START_FLAGS, 'dist/assessd.cjs'].join(' ')}\``,
    `- Spawn to the first 200 on /debug/health, median of ${opts.startups}, ${BASE.label} in the data directory (a restart)`,
    `- Environment: ${caBundleNote}`,
    '- Paired: the median over the rounds of its start-up minus the bare server\'s in the same round, and the speed that gives (bare / (bare + that))\n',
    table(['Server', 'Start-up ms', 'Speed vs bare (bare ms / its ms)', 'Time vs bare', 'Paired: ms more than bare', 'Paired speed vs bare'], rows)].join('\n');
  console.log(report);
  if (flags.out) writeFileSync(flags.out, `${report}\n`);
}

async function main() {
  if (flags['startup-only']) return startupOnly();
  const started = performance.now();
  progress(`assessd bench: ${quick ? 'quick, ' : ''}${opts.rounds} round(s) x ${opts.durationMs / 1000} s, ${opts.connections} connections, ${opts.workers} generator thread(s); temp ${work} (${tmpFs.type})`);
  const pool = await createLoadPool(opts.workers);
  const base = await prepareTemplate(BASE);
  /** @type {string[]} */
  const sections = [];
  /** @type {[string, string, boolean | undefined][]} */
  const targets = [];
  const background = flags['growth-only'] ? [] : await baseRun(pool, base, sections, targets);
  progress(`growth to ${num(GROWTH.target)} sessions x ${opts.rounds}`);
  const growth = await measureGrowth(pool, base.dir, BASE.spec.sessions);
  await pool.close();
  const g = growthReport(growth);
  sections.push(g.text);
  targets.push(...g.targets);

  const out = [`## Machine\n\n${machine([...background, ...growth.map((x) => x.backgroundPct)])}\n`, ...sections];
  out.push('\n## Targets\n');
  out.push(table(['Target', 'Measured', 'Met'], targets.map(([t, m, okay]) => [t, m, okay === undefined ? 'no number set' : okay ? 'yes' : '**missed**'])));
  if (problems.length > 0) out.push(`\n## Failures\n\n${problems.map((p) => `- ${p}`).join('\n')}`);
  out.push(`\n_Run took ${Math.round((performance.now() - started) / 1000)} s: \`node bench/run.mjs ${process.argv.slice(2).join(' ')}\`._`);

  const report = out.join('\n') + '\n';
  console.log(report);
  if (flags.out) writeFileSync(flags.out, report);
  if (failures > 0) {
    progress(`bench: ${failures} failed or non-2xx requests:\n${problems.join('\n')}`);
    process.exitCode = 1;
  }
}

/**
 * The scenarios against the bare server, start-up and (with --scale) the larger datasets; their
 * sections go to `out`, their rows to `targets`; returns the other processes' CPU of each window.
 * @param {Awaited<ReturnType<typeof createLoadPool>>} pool
 * @param {Awaited<ReturnType<typeof prepareTemplate>>} base
 * @param {string[]} out
 * @param {[string, string, boolean | undefined][]} targets
 */
async function baseRun(pool, base, out, targets) {
  progress(`start-up x ${opts.startups} (bare, assessd with ${BASE.label})`);
  const startups = await measureStartups(base.dir, true);

  /** @type {Record<string, { bare: Sample[], assessd: Sample[] }>} */
  const results = {};
  for (const s of SCENARIOS) results[s.id] = { bare: [], assessd: [] };
  for (let round = 1; round <= opts.rounds; round++) {
    for (const s of SCENARIOS) {
      for (const kind of /** @type {const} */ (['bare', 'assessd'])) {
        const what = `round ${round} ${s.id} ${kind}`;
        const sample = await runOne(pool, kind, s, base.dir, what);
        results[s.id][kind].push(sample);
        progress(`${what}: ${num(sample.rps)} req/s, p50 ${ms(sample.p50Ms)} ms, p99 ${ms(sample.p99Ms)} ms` +
          (s.write && kind === 'assessd' ? `, ${num(sample.fsyncsPerAck, 3)} fsyncs/ack` : '') +
          `, server CPU ${sample.serverCpuPct.toFixed(0)}%, others ${sample.backgroundPct.toFixed(0)}%` +
          (sample.errors + sample.non2xx ? `, ${sample.errors + sample.non2xx} FAILED` : ''));
      }
    }
  }

  /** @type {{ dataset: typeof SCALE[number], sessionsBytes: number, startups: Awaited<ReturnType<typeof measureStartups>>, results: Record<string, Sample[]> }[]} */
  const scale = [];
  if (flags.scale) {
    for (const dataset of SCALE) {
      progress(`scale: ${dataset.label}`);
      const t = await prepareTemplate(dataset);
      const st = await measureStartups(t.dir, false);
      /** @type {Record<string, Sample[]>} */
      const res = {};
      const scenarios = SCALE_SCENARIOS.filter((s) => s.id !== 'targets-list' || dataset.spec.targetsPerSession);
      for (const s of scenarios) res[s.id] = [];
      for (let round = 1; round <= opts.rounds; round++) {
        for (const s of scenarios) {
          const what = `${dataset.name} round ${round} ${s.id}`;
          const sample = await runOne(pool, 'assessd', s, t.dir, what);
          res[s.id].push(sample);
          progress(`${what}: ${num(sample.rps)} req/s, p50 ${ms(sample.p50Ms)} ms, p99 ${ms(sample.p99Ms)} ms, others ${sample.backgroundPct.toFixed(0)}%`);
        }
      }
      scale.push({ dataset, sessionsBytes: t.sessionsBytes, startups: st, results: res });
      rmSync(t.dir, { recursive: true, force: true });
    }
  }

  // ---- report
  const allSamples = [...Object.values(results).flatMap((r) => [...r.bare, ...r.assessd]), ...scale.flatMap((x) => Object.values(x.results).flat())];
  out.push(`## Results (${BASE.label}, sessions.json ${size(base.sessionsBytes)})\n`);
  out.push('Medians over the rounds; "Ratio" is req/s over the bare server\'s for the same requests and connections; ' +
    'Response is bytes per response, head included; CPU is the server process\'s user+system time per request; fsyncs/ack and acks/batch from `/debug/stats`; ' +
    'Errors counts failed requests and non-2xx answers (warm-up included); ' +
    '"Others %" is the CPU other processes used during assessd\'s measurements (median, % of one core, about ±10): ' +
    'above ~20 the machine was shared and the figures are low.\n');
  out.push(table(RESULT_HEAD, SCENARIOS.map((s) => resultRow(s, results[s.id].assessd, results[s.id].bare))));

  // RSS after load: the scenarios that leave the store as it was (creates add thousands of sessions).
  const steady = SCENARIOS.filter((s) => !s.grows);
  const rssAfterA = Math.max(...steady.map((s) => med(results[s.id].assessd, 'rssAfter')));
  const rssAfterB = Math.max(...steady.map((s) => med(results[s.id].bare, 'rssAfter')));
  const c32 = results['create-32'];
  const grownTo = BASE.spec.sessions + med(c32.assessd, 'acksTotal');
  const startA = median(startups.assessd.startupMs);
  const startB = median(startups.bare.startupMs);
  const idleA = median(startups.assessd.rssIdle);
  const idleB = median(startups.bare.rssIdle);
  out.push('');
  out.push(table(['Process', 'assessd', 'bare', 'Ratio'], [
    [`Start-up ms (spawn to first 200 on /debug/health, median of ${opts.startups})`, ms(startA), ms(startB), `${(startA / startB).toFixed(2)}x`],
    ['RSS idle MB (0.5 s after start-up, median)', mb(idleA), mb(idleB), `${(idleA / idleB).toFixed(2)}x`],
    ['RSS after load MB (largest median over the scenarios that do not grow the store)', mb(rssAfterA), mb(rssAfterB), `${(rssAfterA / rssAfterB).toFixed(2)}x`],
    [`RSS after durable creates at ${C} clients MB (the store grown to ~${num(grownTo)} sessions)`, mb(med(c32.assessd, 'rssAfter')), mb(med(c32.bare, 'rssAfter')), `${(med(c32.assessd, 'rssAfter') / med(c32.bare, 'rssAfter')).toFixed(2)}x`],
  ]));

  const ratio = (/** @type {string} */ id) => med(results[id].assessd, 'rps') / med(results[id].bare, 'rps');
  const create1 = results['create-1'].assessd;
  const create32 = results['create-32'].assessd;
  const writeErrors = ['create-1', 'create-32', 'config-patch'].reduce((a, id) => a + sum(results[id].assessd, 'errors') + sum(results[id].assessd, 'non2xx'), 0);
  targets.push(
    ['GET /debug/health >= 0.85x the bare ceiling', `${ratio('health').toFixed(2)}x`, ratio('health') >= 0.85],
    ['Sessions list (1,000) fast, serialized once per change', `${ratio('sessions-list').toFixed(2)}x bare, ${num(med(results['sessions-list'].assessd, 'cpuUsPerReq'))} µs CPU/req for ${size(Math.round(med(results['sessions-list'].assessd, 'bodyBytes')))}`, undefined],
    ['Configuration GET fast, serialized once per change', `${ratio('config-get').toFixed(2)}x bare, ${num(med(results['config-get'].assessd, 'cpuUsPerReq'))} µs CPU/req for ${size(Math.round(med(results['config-get'].assessd, 'bodyBytes')))}`, undefined],
    ['Durable creates at 32 clients >= 8x the 1-client rate', `${(med(create32, 'rps') / med(create1, 'rps')).toFixed(1)}x (${num(med(create32, 'rps'))} vs ${num(med(create1, 'rps'))} req/s)`, med(create32, 'rps') >= 8 * med(create1, 'rps')],
    ['0 errors on writes', String(writeErrors), writeErrors === 0],
    // the write tails at saturation (issue #17): every round, not only the median one
    ...['create-32', 'config-patch'].map((id) => {
      const tails = results[id].assessd.map((x) => x.p99Ms / x.p50Ms);
      return /** @type {[string, string, boolean]} */ ([
        `${id === 'create-32' ? 'Durable creates' : 'Configuration patches'} at ${C} clients: p99 <= 10x p50 in every round`,
        `${tails.map((t) => `${t.toFixed(1)}x`).join(', ')} (p50 ${ms(med(results[id].assessd, 'p50Ms'))}, p99 ${ms(med(results[id].assessd, 'p99Ms'))} ms)`,
        tails.every((t) => t <= 10),
      ]);
    }),
    ['Start-up <= 1.35x the bare server\'s', `${(startA / startB).toFixed(2)}x (${ms(startA)} vs ${ms(startB)} ms)`, startA <= 1.35 * startB],
    ['RSS after load <= 1.25x the bare server\'s', `${(rssAfterA / rssAfterB).toFixed(2)}x (${mb(rssAfterA)} vs ${mb(rssAfterB)} MB, scenarios that do not grow the store)`, rssAfterA <= 1.25 * rssAfterB],
  );

  if (scale.length > 0) {
    out.push(`\n## Scale\n\nassessd alone (ratios against the bare figures above for the same requests); the first rows repeat the ${BASE.label} run.\n`);
    /** @param {Record<string, Sample[]>} res */
    const steadyRss = (res) => Math.max(...Object.entries(res).filter(([id]) => !byId(id)?.grows).map(([, samples]) => med(samples, 'rssAfter')));
    /** @param {Record<string, Sample[]>} res @param {number} sessions */
    const grown = (res, sessions) => `${mb(med(res['create-32'], 'rssAfter'))} (${num(sessions + med(res['create-32'], 'acksTotal'))} sessions)`;
    out.push(table(['Dataset', 'sessions.json', `Start-up ms (median of ${opts.startups})`, 'RSS idle MB', 'RSS after list load MB', `RSS after creates at ${C} clients MB (sessions then)`], [
      [BASE.label, size(base.sessionsBytes), ms(startA), mb(idleA), mb(med(results['sessions-list'].assessd, 'rssAfter')),
        grown({ 'create-32': c32.assessd }, BASE.spec.sessions)],
      ...scale.map(({ dataset, sessionsBytes, startups: st, results: res }) => [
        dataset.label, size(sessionsBytes), ms(median(st.assessd.startupMs)), mb(median(st.assessd.rssIdle)),
        mb(steadyRss(res)), grown(res, dataset.spec.sessions),
      ]),
    ]));
    out.push('');
    /** @type {string[][]} */
    const rows = [];
    for (const s of SCALE_SCENARIOS) {
      if (results[s.id]) rows.push([`${BASE.label}`, ...resultRow(s, results[s.id].assessd, results[s.id].bare)]);
      for (const { dataset, results: res } of scale) {
        if (res[s.id]) rows.push([dataset.label, ...resultRow(s, res[s.id], results[s.id]?.bare ?? results['sessions-list'].bare)]);
      }
    }
    out.push(table(['Dataset', ...RESULT_HEAD], rows));
    const big = scale.find((x) => x.dataset.spec.sessions >= 100_000 && !x.dataset.spec.targetsPerSession);
    if (big) {
      const st = median(big.startups.assessd.startupMs);
      const idle = median(big.startups.assessd.rssIdle);
      const rssMax = Math.max(idle, ...Object.entries(big.results).filter(([id]) => !byId(id)?.grows).map(([, samples]) => med(samples, 'rssAfter')));
      const w = med(big.results['create-1'], 'p50Ms');
      const w0 = med(create1, 'p50Ms');
      const w32 = med(big.results['create-32'], 'p50Ms');
      const w320 = med(create32, 'p50Ms');
      targets.push(
        ['100,000 sessions: start-up <= 1 s', `${ms(st)} ms`, st <= 1000],
        ['100,000 sessions: RSS <= 150 MB', `${mb(rssMax)} MB (idle ${mb(idle)}; after creates at ${C} clients, grown to ${num(100_000 + med(big.results['create-32'], 'acksTotal'))} sessions: ${mb(med(big.results['create-32'], 'rssAfter'))})`, rssMax <= 150 * 2 ** 20],
        ['100,000 sessions: p50 write latency <= 2x the 1,000-session figure', `${(w / w0).toFixed(1)}x (${ms(w)} vs ${ms(w0)} ms, 1 client; at ${C} clients ${ms(w32)} vs ${ms(w320)} ms)`, w <= 2 * w0 && w32 <= 2 * w320],
      );
    }
  }

  return allSamples.map((x) => x.backgroundPct);
}

main().catch((err) => {
  console.error(`bench: ${err?.stack ?? err}`);
  process.exit(1);
});
