#!/usr/bin/env node
// @ts-check
/**
 * Profiles assessd under one benchmark scenario: starts `node --cpu-prof dist/assessd.cjs` on a fresh
 * data directory, drives it from 127.0.0.1 like bench/run.mjs does, stops it, and prints where the
 * CPU went (self time by function, and by file). Build first (`npm run build`).
 *
 *   node bench/profile.mjs [--scenario health|sessions-list|config-get|page-gzip|create-1|create-32|config-patch|growth|startup]
 *                          [--sessions N] [--targets-per-session N] [--duration S] [--target N] [--dist DIR] [--top N] [--keep]
 *
 * `startup` profiles start-up alone (spawn, first 200 on /debug/health, stop). `growth` is the
 * bench's growth scenario (32 writers until the store holds `--target` sessions, default 400,000,
 * a health probe beside them). Besides self time, it prints the longest stretches the main
 * thread spent inside one function without a break, garbage collections in it included (what a
 * request arriving then waits for).
 * `--dist DIR` profiles another build (a copy of an earlier dist/).
 * The .cpuprofile is left in the temp dir with --keep (open it in Chrome DevTools).
 */
import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { BENCH_TOKEN, createLoadPool } from './load.mjs';
import { startEnv, startFlags } from './start-flags.mjs';
import { writeDataDir } from './dataset.mjs';
import { runGrowth } from './growth.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values: flags } = parseArgs({
  options: {
    scenario: { type: 'string', default: 'health' },
    sessions: { type: 'string', default: '1000' },
    'targets-per-session': { type: 'string', default: '0' },
    duration: { type: 'string', default: '5' },
    connections: { type: 'string', default: '32' },
    top: { type: 'string', default: '25' },
    target: { type: 'string', default: '400000' },
    dist: { type: 'string' },
    keep: { type: 'boolean', default: false },
  },
});

const FORM = { 'Content-Type': 'application/x-www-form-urlencoded' };
const configKey = JSON.parse(readFileSync(join(ROOT, 'data', 'default-configuration.json'), 'utf8')).items[0].key;
const C = Number(flags.connections);
/** @type {Record<string, { connections: number, request: import('./load.mjs').RequestSpec }>} */
const SCENARIOS = {
  health: { connections: C, request: { method: 'GET', path: '/debug/health' } },
  'sessions-list': { connections: C, request: { method: 'GET', path: '/api/v1/sessions/' } },
  'config-get': { connections: C, request: { method: 'GET', path: '/api/v1/configuration' } },
  'page-gzip': { connections: C, request: { method: 'GET', path: '/', headers: { 'Accept-Encoding': 'gzip' } } },
  'targets-list': { connections: C, request: { method: 'GET', path: '/api/v1/targets/' } },
  'create-1': { connections: 1, request: { method: 'POST', path: '/api/v1/sessions/', headers: FORM, body: 'name=p-{id}' } },
  'create-32': { connections: C, request: { method: 'POST', path: '/api/v1/sessions/', headers: FORM, body: 'name=p-{id}' } },
  'config-patch': { connections: C, request: { method: 'PATCH', path: '/api/v1/configuration/', headers: FORM, body: `${encodeURIComponent(configKey)}=p-{id}` } },
};
const scenario = flags.scenario === 'startup' || flags.scenario === 'growth' ? undefined : SCENARIOS[/** @type {string} */ (flags.scenario)];
if (flags.scenario !== 'startup' && flags.scenario !== 'growth' && !scenario) throw new Error(`unknown scenario ${flags.scenario}`);

const work = mkdtempSync(join(tmpdir(), 'assessd-profile-'));
const app = join(work, 'app');
for (const file of ['package.json', join('data', 'default-configuration.json')]) cpSync(join(ROOT, file), join(app, file));
cpSync(flags.dist ? resolve(flags.dist) : join(ROOT, 'dist'), join(app, 'dist'), { recursive: true });
const dataDir = join(work, 'data');
writeDataDir(dataDir, { sessions: Number(flags.sessions), targetsPerSession: Number(flags['targets-per-session']) });
const profDir = join(work, 'prof');

/** @param {number} port */
function health(port) {
  return new Promise((res) => {
    const req = httpRequest({ host: '127.0.0.1', port, path: '/debug/health', agent: false, timeout: 2000 }, (r) => {
      r.resume();
      r.on('end', () => res(r.statusCode === 200));
    });
    req.on('error', () => res(false));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

/** @param {string[]} extra */
async function start(extra) {
  const child = spawn(process.execPath, [...startFlags(app), ...extra, join(app, 'dist', 'assessd.cjs'), '--host', '127.0.0.1', '--port', '0', '--data-dir', dataDir], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...startEnv(app), ASSESSD_TOKEN: BENCH_TOKEN },
  });
  const port = await new Promise((res, rej) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
      if (m) res(Number(m[1]));
    });
    child.once('exit', (code) => rej(new Error(`assessd exited with ${code}`)));
  });
  for (let i = 0; i < 1000 && !(await health(port)); i++) await sleep(5);
  return { child, port };
}

try {
  // A first start writes the configuration file; the profiled one is a restart, like in production.
  const first = await start([]);
  first.child.kill('SIGTERM');
  await new Promise((res) => first.child.once('exit', res));

  const { child, port } = await start(['--cpu-prof', '--cpu-prof-dir', profDir]);
  if (scenario) {
    const pool = await createLoadPool(1);
    await pool.run({ port, connections: scenario.connections, durationMs: 1000, request: scenario.request, maxRequests: scenario.request.method === 'GET' ? undefined : 200 });
    const r = await pool.run({ port, connections: scenario.connections, durationMs: Number(flags.duration) * 1000, request: scenario.request });
    await pool.close();
    console.log(`${flags.scenario}: ${Math.round(r.rps)} req/s, p50 ${r.p50Ms.toFixed(2)} ms, p99 ${r.p99Ms.toFixed(2)} ms, ${r.errors + r.non2xx} failed`);
  } else if (flags.scenario === 'growth') {
    const pool = await createLoadPool(1);
    const rss = (/** @type {number} */ pid) => Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) * 1024;
    const storeStats = async (/** @type {number} */ p) => (await (await fetch(`http://127.0.0.1:${p}/debug/stats`)).json()).data.store;
    const g = await runGrowth({
      pool, server: { port, pid: /** @type {number} */ (child.pid) }, dataDir, sessionsStart: Number(flags.sessions), targetSessions: Number(flags.target),
      marks: [], maxMs: 120_000, connections: C, warmupRequests: 200, configKey, rss, storeStats,
    });
    await pool.close();
    console.log(`growth: ${Number(flags.sessions)} -> ${g.sessionsEnd} sessions in ${g.seconds.toFixed(1)} s, ${Math.round(g.rps)} writes/s; ` +
      `create p50 ${g.create.p50Ms.toFixed(2)} p99 ${g.create.p99Ms.toFixed(2)} max ${g.create.maxMs.toFixed(0)} ms; ` +
      `health median ${g.health.p50Ms.toFixed(2)} worst ${g.health.maxMs.toFixed(0)} ms; ${g.compactions} compactions`);
  }
  child.kill('SIGTERM');
  await new Promise((res) => child.once('exit', res));

  const file = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
  if (!file) throw new Error('no .cpuprofile written');
  summarize(JSON.parse(readFileSync(join(profDir, file), 'utf8')), Number(flags.top));
  if (flags.keep) console.log(`\nprofile: ${join(profDir, file)}`);
} finally {
  if (!flags.keep) rmSync(work, { recursive: true, force: true });
}

/**
 * @param {{ nodes: { id: number, callFrame: { functionName: string, url: string, lineNumber: number } }[], samples: number[], timeDeltas: number[] }} profile
 * @param {number} top
 */
function summarize(profile, top) {
  /** @type {Map<number, { callFrame: { functionName: string, url: string, lineNumber: number } }>} */
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  /** @type {Map<string, number>} */
  const byFunction = new Map();
  /** @type {Map<string, number>} */
  const byFile = new Map();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const dt = profile.timeDeltas[i] ?? 0;
    const f = /** @type {NonNullable<ReturnType<typeof nodes.get>>} */ (nodes.get(id)).callFrame;
    if (f.functionName === '(idle)') return;
    total += dt;
    const url = f.url.replace(/^file:\/\/.*\/app\//, '').replace(/^file:\/\//, '');
    const fn = `${f.functionName || '(anonymous)'} ${url ? `${url}:${f.lineNumber + 1}` : ''}`.trim();
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + dt);
    const group = url.startsWith('node:') ? url.replace(/^node:internal\//, 'node:').split('/').slice(0, 2).join('/') : url || f.functionName;
    byFile.set(group, (byFile.get(group) ?? 0) + dt);
  });
  /** @param {Map<string, number>} m @param {number} n */
  const show = (m, n) =>
    [...m.entries()].sort((a, b) => b[1] - a[1]).slice(0, n).map(([k, v]) => `${((100 * v) / total).toFixed(1).padStart(5)}%  ${(v / 1000).toFixed(0).padStart(6)} ms  ${k}`).join('\n');
  console.log(`\nbusy CPU on the main thread: ${(total / 1000).toFixed(0)} ms\n\nself time by file:\n${show(byFile, 15)}\n\nself time by function:\n${show(byFunction, top)}`);

  // The longest unbroken stretch of samples inside each function (anywhere on the stack).
  /** @type {Map<number, number>} */
  const parentOf = new Map();
  for (const n of /** @type {any[]} */ (profile.nodes)) for (const c of n.children ?? []) parentOf.set(c, n.id);
  /** @type {Map<string, { start: number, length: number, best: number, bestAt: number }>} */
  const runs = new Map();
  let t = 0;
  profile.samples.forEach((id, i) => {
    const dt = profile.timeDeltas[i] ?? 0;
    t += dt;
    /** @type {Set<string>} */
    const names = new Set();
    for (let n = /** @type {number | undefined} */ (id); n !== undefined; n = parentOf.get(n)) {
      const f = /** @type {NonNullable<ReturnType<typeof nodes.get>>} */ (nodes.get(n)).callFrame;
      if (f.functionName === '(idle)' || f.functionName === '(root)' || f.functionName === '(program)') continue;
      names.add(`${f.functionName || '(anonymous)'} ${f.url.replace(/^file:\/\/.*\/app\//, '').replace(/^file:\/\//, '')}:${f.lineNumber + 1}`);
    }
    // a collection is charged to whatever was running (it allocated): it does not break a stretch
    const inGc = names.has('(garbage collector) :0');
    for (const [name, run] of runs) {
      if (inGc && run.length > 0) names.add(name);
      else if (!names.has(name)) runs.set(name, { ...run, length: 0 });
    }
    for (const name of names) {
      const run = runs.get(name) ?? { start: t, length: 0, best: 0, bestAt: 0 };
      if (run.length === 0) run.start = t - dt;
      run.length = t - run.start;
      if (run.length > run.best) [run.best, run.bestAt] = [run.length, run.start];
      runs.set(name, run);
    }
  });
  // one line per stretch: the functions that span the same one, innermost first
  /** @type {Map<string, { best: number, bestAt: number, names: string[] }>} */
  const stretches = new Map();
  for (const [name, r] of runs) {
    const key = `${r.bestAt}:${r.best}`;
    const s = stretches.get(key) ?? { best: r.best, bestAt: r.bestAt, names: [] };
    s.names.push(name.split(' ')[0]);
    stretches.set(key, s);
  }
  const longest = [...stretches.values()].sort((a, b) => b.best - a.best).slice(0, 12);
  console.log(`\nlongest unbroken stretches inside one function (main thread), with the functions around it:\n${longest.map((r) => `${(r.best / 1000).toFixed(1).padStart(8)} ms  at ${(r.bestAt / 1e6).toFixed(2)} s  ${r.names.slice(0, 6).join(' < ')}`).join('\n')}`);
}
