/**
 * Node modules loaded when first used instead of at start: each one costs the start-up the compile
 * of its internals (node:crypto alone is seventeen of them) and the first answers need none of these.
 * A synchronous require (createRequire), so a caller stays synchronous; the CommonJS bundles (the
 * CLI's, the single executable's) define import.meta.url for it.
 */
import { createRequire } from 'node:module';

const load = createRequire(import.meta.url);

function lazy<T>(name: string): () => T {
  let loaded: T | undefined;
  return () => (loaded ??= load(name) as T);
}

export const crypto = lazy<typeof import('node:crypto')>('node:crypto');
export const workerThreads = lazy<typeof import('node:worker_threads')>('node:worker_threads');
export const perfHooks = lazy<typeof import('node:perf_hooks')>('node:perf_hooks');
export const fsPromises = lazy<typeof import('node:fs/promises')>('node:fs/promises');
export const zlib = lazy<typeof import('node:zlib')>('node:zlib');
export const tls = lazy<typeof import('node:tls')>('node:tls');
export const https = lazy<typeof import('node:https')>('node:https');

/** Loads node modules at once (a require that esbuild keeps: it drops an unused import of one). */
export function loadNow(...names: string[]): void {
  for (const name of names) load(name);
}
