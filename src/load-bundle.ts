/**
 * dist/assessd.cjs's loader: the CLI's bundle (dist/main.cjs, CommonJS) compiled with the V8 code cache
 * the build made for it (dist/main.cjs.cache, from a warm start of this very bundle), so that a
 * start parses and compiles almost nothing. A cache that does not fit this node (another version or
 * V8 flags) is refused by V8 and the bundle is compiled as usual: slower, never wrong.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Script } from 'node:vm';

export interface LoadedBundle {
  exports: Record<string, unknown>;
  script: Script;
  /** Whether V8 took the code cache: `undefined` when there was none. */
  cacheAccepted: boolean | undefined;
}

/** Loads the bundle at `url` (its cache beside it, `<bundle>.cache`); `withCache: false` ignores the cache (to make one). */
export function loadBundle(url: URL, { withCache = true } = {}): LoadedBundle {
  const file = fileURLToPath(url);
  const source = readFileSync(file, 'utf8');
  let cachedData: Buffer | undefined;
  if (withCache) {
    try {
      cachedData = readFileSync(`${file}.cache`);
    } catch {
      // a build without its cache: compiled as usual
    }
  }
  // the bundle's import.meta.url is this parameter (esbuild's define): paths.ts finds the project by it
  const script = new Script(`(function (exports, require, module, __filename, __dirname, __assessd_import_meta_url) {${source}\n})`, { filename: file, ...(cachedData ? { cachedData } : {}) });
  const module = { exports: {} as Record<string, unknown> };
  (script.runInThisContext() as (...args: unknown[]) => void)(module.exports, createRequire(url), module, file, dirname(file), url.href);
  if (process.env.ASSESSD_DEBUG_CODE_CACHE) console.error(`assessd: code cache ${cachedData ? (script.cachedDataRejected ? 'rejected' : 'accepted') : 'absent'}`);
  return { exports: module.exports, script, cacheAccepted: cachedData ? !script.cachedDataRejected : undefined };
}
