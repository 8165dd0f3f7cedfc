/** /debug/health, and the store's write counters beside it. */
import { getHeapSpaceStatistics } from 'node:v8';
import { success, successBody } from '../http/jsend.js';
import { prepared } from '../http/respond.js';
import type { Store } from '../store/store.js';
import type { ApiRouter } from './openapi.js';

const HEALTHY = prepared({ status: 200, body: Buffer.from(successBody({ status: 'ok' })) });

/** Bytes V8 holds for its young generation (both semi-spaces): whether it grew under load. */
const youngGeneration = () => getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')?.space_size ?? 0;

export function registerHealth(router: ApiRouter, store: Store): void {
  router.add('GET', '/debug/health', () => HEALTHY, {
    summary: 'Health check (needs no token)',
    open: true,
    ok: { status: 200, description: 'The server answers', data: { type: 'object', properties: { status: { const: 'ok' } }, required: ['status'] } },
  });
  router.add('GET', '/debug/stats', () => success({ store: store.stats, memory: { ...process.memoryUsage(), youngGeneration: youngGeneration() } }), {
    summary: "The store's write counters and the process's memory (for benchmarks)",
    ok: { status: 200, description: 'Counters', data: { type: 'object', properties: { store: { type: 'object' }, memory: { type: 'object' } } } },
  });
}
