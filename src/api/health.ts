/** /debug/health, and the store's write counters beside it. */
import { readFileSync } from 'node:fs';
import type { IntervalHistogram } from 'node:perf_hooks';
import { getHeapSpaceStatistics } from 'node:v8';
import { success, successBody } from '../http/jsend.js';
import { perfHooks } from '../lazy-builtins.js';
import { prepared } from '../http/respond.js';
import type { Store } from '../store/store.js';
import type { ApiRouter } from './openapi.js';

const HEALTHY = prepared({ status: 200, body: Buffer.from(successBody({ status: 'ok' })) });

/** Bytes V8 holds for its young generation (both semi-spaces): whether it grew under load. */
const youngGeneration = () => getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')?.space_size ?? 0;

/**
 * The event loop's delays since the first request for them (or the last `reset`): what a stall
 * (a synchronous task holding the loop) looks like from inside. Started on demand: an idle
 * server keeps no timer for it. `maxMs` is monitorEventLoopDelay's worst delay, which also counts
 * time the process waited for a core; `maxBusyMs` is the worst delay the process spent working
 * (each late tick's delay, at most the CPU time its main thread used meanwhile): on a machine
 * shared with other work, a stall of the server's own shows there and a wait for a core does not.
 */
/**
 * CPU milliseconds the calling thread (the main one: timers run there) has used: Linux's
 * /proc/thread-self/stat, in clock ticks of 10 ms; elsewhere the whole process's, which counts
 * V8's and libuv's threads too (an overestimate, never an underestimate).
 */
function mainThreadCpuMs(): () => number {
  try {
    readFileSync('/proc/thread-self/stat', 'latin1');
  } catch {
    return () => {
      const { user, system } = process.cpuUsage();
      return (user + system) / 1000;
    };
  }
  return () => {
    const stat = readFileSync('/proc/thread-self/stat', 'latin1');
    // after the last ')' (the name may hold anything): utime and stime are fields 14 and 15
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  };
}

function eventLoopDelays(): (reset: boolean) => { maxMs: number; maxBusyMs: number; p99Ms: number; meanMs: number; sinceMs: number } {
  const every = 10;
  let histogram: IntervalHistogram | undefined;
  let since = 0;
  let maxBusy = 0;
  let lastTick = 0;
  let lastCpu = 0;
  // chosen with the first request for the delays, like the histogram: nothing of it runs at start
  let cpuMs = () => 0;
  const tick = () => {
    const now = performance.now();
    const cpu = cpuMs();
    const late = now - lastTick - every;
    if (late > 0) maxBusy = Math.max(maxBusy, Math.min(late, cpu - lastCpu));
    lastTick = now;
    lastCpu = cpu;
  };
  return (reset) => {
    if (!histogram) {
      histogram = perfHooks().monitorEventLoopDelay({ resolution: every });
      histogram.enable();
      cpuMs = mainThreadCpuMs();
      since = lastTick = performance.now();
      lastCpu = cpuMs();
      setInterval(tick, every).unref();
    }
    const ms = (ns: number) => Math.round((Number.isFinite(ns) ? ns : 0) / 1e4) / 100;
    const view = {
      maxMs: ms(histogram.max),
      maxBusyMs: Math.round(maxBusy * 100) / 100,
      p99Ms: ms(histogram.percentile(99)),
      meanMs: ms(histogram.mean),
      sinceMs: Math.round(performance.now() - since),
    };
    if (reset) {
      histogram.reset();
      maxBusy = 0;
      since = performance.now();
    }
    return view;
  };
}

export function registerHealth(router: ApiRouter, store: Store): void {
  const eventLoop = eventLoopDelays();
  router.add('GET', '/debug/health', () => HEALTHY, {
    summary: 'Health check (needs no token)',
    open: true,
    ok: { status: 200, description: 'The server answers', data: { type: 'object', properties: { status: { const: 'ok' } }, required: ['status'] } },
  });
  router.add(
    'GET',
    '/debug/stats',
    (ctx) => success({ store: store.stats, memory: { ...process.memoryUsage(), youngGeneration: youngGeneration() }, eventLoop: eventLoop(ctx.args.get('reset') === 'true') }),
    {
    summary: "The store's write counters, the process's memory and its event loop's delays since the last `reset=true` (for benchmarks and tests)",
    ok: { status: 200, description: 'Counters', data: { type: 'object', properties: { store: { type: 'object' }, memory: { type: 'object' }, eventLoop: { type: 'object' } } } },
    },
  );
}
