/** /debug/health, and the store's write counters beside it. */
import type { Router } from '../http/router.js';
import { success, successBody } from '../http/jsend.js';
import { prepared } from '../http/respond.js';
import type { Store } from '../store/store.js';
import type { Handler } from './context.js';

const HEALTHY = prepared({ status: 200, body: Buffer.from(successBody({ status: 'ok' })) });

export function registerHealth(router: Router<Handler>, store: Store): void {
  router.add('GET', '/debug/health', () => HEALTHY);
  router.add('GET', '/debug/stats', () => success({ store: store.stats, memory: process.memoryUsage() }));
}
