/** /debug/health, and the store's write counters beside it. */
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
 * server keeps no timer for it.
 */
function eventLoopDelays(): (reset: boolean) => { maxMs: number; p99Ms: number; meanMs: number; sinceMs: number } {
  let histogram: IntervalHistogram | undefined;
  let since = 0;
  return (reset) => {
    if (!histogram) {
      histogram = perfHooks().monitorEventLoopDelay({ resolution: 10 });
      histogram.enable();
      since = performance.now();
    }
    const ms = (ns: number) => Math.round((Number.isFinite(ns) ? ns : 0) / 1e4) / 100;
    const view = { maxMs: ms(histogram.max), p99Ms: ms(histogram.percentile(99)), meanMs: ms(histogram.mean), sinceMs: Math.round(performance.now() - since) };
    if (reset) {
      histogram.reset();
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
