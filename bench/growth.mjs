// @ts-check
/**
 * The growth scenario of the benchmark (issue #9): 32 clients write while the store grows past
 * 300,000 sessions (three connections in four create sessions, the fourth patches the
 * configuration), a health prober beside them on its own connection (one request every 20 ms),
 * and the server's RSS sampled every 100 ms. What it judges: each write's p99 against its own
 * p50, and the prober's worst answer, both while the store is compacted under the load.
 */
import { readdirSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { quantile } from './load.mjs';

/**
 * One request every `everyMs` on one keep-alive connection of its own, each sent when its slot
 * comes (or as soon as the previous answer is in, if that took longer).
 * @param {number} port @param {number} everyMs
 */
export function startProber(port, everyMs = 20) {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  /** @type {number[]} */
  const latencies = [];
  let failed = 0;
  let stopped = false;
  const once = () =>
    new Promise((resolve) => {
      const t0 = performance.now();
      const req = httpRequest({ host: '127.0.0.1', port, path: '/debug/health', agent, timeout: 10_000 }, (res) => {
        res.resume();
        res.on('end', () => {
          if (res.statusCode === 200) latencies.push(performance.now() - t0);
          else failed++;
          resolve(undefined);
        });
      });
      req.on('timeout', () => req.destroy(new Error('timed out')));
      req.on('error', () => {
        failed++;
        resolve(undefined);
      });
      req.end();
    });
  const loop = (async () => {
    let next = performance.now();
    while (!stopped) {
      await once();
      next += everyMs;
      const now = performance.now();
      if (next < now) next = now;
      else await sleep(next - now);
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      agent.destroy();
      return { latencies, failed };
    },
  };
}

/** @param {number[]} xs @param {number} q */
function quantileOf(xs, q) {
  if (xs.length === 0) return NaN;
  const v = [...xs].sort((a, b) => a - b);
  return v[Math.min(v.length - 1, Math.max(0, Math.ceil(q * v.length) - 1))];
}

/**
 * Whether a compaction is under way, seen from the data directory alone (so that any build can be
 * measured): a sealed journal segment beside the live one, or a snapshot's temp file.
 * @param {string} dir
 */
function compacting(dir) {
  try {
    const names = readdirSync(dir);
    return names.filter((name) => /^journal(\.\d+)?\.jsonl$/.test(name)).length > 1 || names.some((name) => name.includes('.tmp-'));
  } catch {
    return false;
  }
}

/**
 * @typedef {{ sessions: number, rssBefore: number, rssPeak: number, rssAfter: number | undefined }} Compaction
 *
 * @typedef {object} GrowthSample
 * @property {number} seconds
 * @property {number} sessionsStart
 * @property {number} sessionsEnd
 * @property {number} rps all writes
 * @property {{ rps: number, p50Ms: number, p99Ms: number, maxMs: number }} create
 * @property {{ rps: number, p50Ms: number, p99Ms: number, maxMs: number }} patch
 * @property {{ count: number, failed: number, p50Ms: number, p99Ms: number, maxMs: number }} health
 * @property {{ sessions: number, rss: number, compacting: boolean }[]} rssAt RSS at the first samples past each mark
 * @property {{ sessions: number, rss: number }} rssPeak the largest RSS, and the sessions then
 * @property {Compaction[]} compactionsSeen each compaction the sampler saw: RSS before, at its largest, after
 * @property {number} rssEnd RSS at the end, the last compaction done
 * @property {number} compactions
 * @property {number} fsyncsPerAck
 * @property {number} errors failed requests and non-2xx answers
 * @property {string[]} problems
 */

/**
 * Drives one running server until it holds `targetSessions` sessions (or `maxMs` passes).
 * @param {object} o
 * @param {Awaited<ReturnType<typeof import('./load.mjs').createLoadPool>>} o.pool
 * @param {{ port: number, pid: number }} o.server
 * @param {string} o.dataDir
 * @param {number} o.sessionsStart sessions in the data directory before the load
 * @param {number} o.targetSessions
 * @param {number[]} o.marks session counts at which to note the RSS
 * @param {number} o.maxMs
 * @param {number} o.connections
 * @param {number} o.warmupRequests
 * @param {string} o.configKey
 * @param {(pid: number) => number} o.rss
 * @param {(port: number) => Promise<any>} o.storeStats
 * @returns {Promise<GrowthSample>}
 */
export async function runGrowth(o) {
  const FORM = { 'Content-Type': 'application/x-www-form-urlencoded' };
  const create = { method: 'POST', path: '/api/v1/sessions/', headers: FORM, body: 'name=grow-{id}' };
  const patch = { method: 'PATCH', path: '/api/v1/configuration/', headers: FORM, body: `${encodeURIComponent(o.configKey)}=grow-{id}` };
  const requests = [create, create, create, patch];
  const createsOf = (/** @type {number[]} */ okBySpec) => okBySpec[0] + okBySpec[1] + okBySpec[2];
  /** @type {string[]} */
  const problems = [];

  const warm = await o.pool.run({ port: o.server.port, connections: o.connections, durationMs: 5000, maxRequests: o.warmupRequests, requests });
  if (warm.errors + warm.non2xx > 0) problems.push(`growth warm-up: ${warm.errors} errors, ${warm.non2xx} non-2xx ${warm.errorSamples.join('; ')}`);
  const sessionsAfterWarmup = o.sessionsStart + createsOf(warm.bySpec.map((s) => s.ok));
  let sessions = sessionsAfterWarmup;

  /** @type {{ sessions: number, rss: number, compacting: boolean }[]} */
  const rssAt = [];
  let rssPeak = { sessions, rss: 0 };
  const marks = [...o.marks];
  /** @type {Compaction[]} */
  const compactions = [];
  let rssBefore = 0;
  /** @type {Compaction | undefined} the one under way */
  let current;
  const sample = () => {
    const rss = o.rss(o.server.pid);
    const now = compacting(o.dataDir);
    if (rss > rssPeak.rss) rssPeak = { sessions, rss };
    while (marks.length > 0 && sessions >= marks[0]) {
      marks.shift();
      rssAt.push({ sessions, rss, compacting: now });
    }
    if (now) {
      if (!current) compactions.push((current = { sessions, rssBefore, rssPeak: rss, rssAfter: undefined }));
      current.rssPeak = Math.max(current.rssPeak, rss);
    } else {
      if (current) current.rssAfter = rss;
      current = undefined;
      rssBefore = rss;
    }
  };
  const sampler = setInterval(sample, 100);

  const s0 = await o.storeStats(o.server.port);
  const prober = startProber(o.server.port, 20);
  let stopping = false;
  const r = await o.pool.run({
    port: o.server.port,
    connections: o.connections,
    durationMs: o.maxMs,
    requests,
    onProgress: (okBySpec) => {
      sessions = sessionsAfterWarmup + createsOf(okBySpec);
      if (!stopping && sessions >= o.targetSessions) {
        stopping = true;
        o.pool.stop();
      }
    },
  });
  const probed = await prober.stop();
  sessions = sessionsAfterWarmup + createsOf(r.bySpec.map((s) => s.ok));
  sample();
  if (r.errors + r.non2xx > 0) problems.push(`growth: ${r.errors} errors, ${r.non2xx} non-2xx ${JSON.stringify(r.statuses)} ${r.errorSamples.join('; ')}`);
  if (probed.failed > 0) problems.push(`growth: ${probed.failed} health probes failed`);

  // the compaction the load left running finishes (bounded), so the RSS at the end is comparable
  for (let i = 0; i < 300 && compacting(o.dataDir); i++) await sleep(100);
  await sleep(150);
  clearInterval(sampler);
  const s1 = await o.storeStats(o.server.port);
  if (s1.failedBatches > 0) problems.push(`growth: ${s1.failedBatches} failed batches`);
  const creates = r.bySpec.slice(0, 3);
  const createHist = creates.reduce((h, s) => h.map((n, i) => n + s.histogram[i]), new Uint32Array(creates[0].histogram.length));
  const lat = (/** @type {Uint32Array} */ h, /** @type {number} */ rps) => ({ rps, p50Ms: quantile(h, 0.5) / 1000, p99Ms: quantile(h, 0.99) / 1000, maxMs: quantile(h, 1) / 1000 });
  const acks = s1.acknowledged - s0.acknowledged;
  return {
    seconds: r.seconds,
    sessionsStart: o.sessionsStart,
    sessionsEnd: sessions,
    rps: r.rps,
    create: lat(createHist, creates.reduce((a, s) => a + s.rps, 0)),
    patch: lat(r.bySpec[3].histogram, r.bySpec[3].rps),
    health: {
      count: probed.latencies.length,
      failed: probed.failed,
      p50Ms: quantileOf(probed.latencies, 0.5),
      p99Ms: quantileOf(probed.latencies, 0.99),
      maxMs: Math.max(...probed.latencies),
    },
    rssAt,
    rssPeak,
    compactionsSeen: compactions,
    rssEnd: o.rss(o.server.pid),
    compactions: s1.compactions - s0.compactions,
    fsyncsPerAck: acks > 0 ? (s1.fsyncs - s0.fsyncs) / acks : NaN,
    errors: r.errors + r.non2xx + warm.errors + warm.non2xx + probed.failed,
    problems,
  };
}
