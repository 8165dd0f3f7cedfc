/**
 * dist/assessd.cjs's loader: the CLI's bundle (dist/main.cjs, CommonJS written as its wrapper
 * function) compiled with the V8 code cache the build made for it (dist/main.cjs.cache, from warm
 * starts of this very bundle), so that a start parses and compiles almost nothing. A cache that
 * does not fit this node (another version or V8 flags) is refused by V8 and the bundle is compiled
 * as usual: slower, never wrong.
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

/**
 * What the bundle's function takes: CommonJS's five, and the bundle's `import.meta.url` (esbuild's
 * define: paths.ts finds the project by it). The build writes the bundle as that function.
 */
export const BUNDLE_PARAMETERS = ['exports', 'require', 'module', '__filename', '__dirname', '__assessd_import_meta_url'] as const;

/**
 * Loads the bundle at `url`, a function expression taking BUNDLE_PARAMETERS (its cache beside it,
 * `<bundle>.cache`); `withCache: false` ignores the cache (to make one).
 */
export function loadBundle(url: URL, { withCache = true } = {}): LoadedBundle {
  const file = fileURLToPath(url);
  // ASCII (the build checks it): read without decoding UTF-8, ~0.5 ms sooner for 600 KB
  const source = readFileSync(file, 'latin1');
  let cachedData: Buffer | undefined;
  if (withCache) {
    try {
      cachedData = readFileSync(`${file}.cache`);
    } catch {
      // a build without its cache: compiled as usual
    }
  }
  const script = new Script(source, { filename: file, ...(cachedData ? { cachedData } : {}) });
  const module = { exports: {} as Record<string, unknown> };
  // in BUNDLE_PARAMETERS' order
  (script.runInThisContext() as (...args: unknown[]) => void)(module.exports, createRequire(url), module, file, dirname(file), url.href);
  if (process.env.ASSESSD_DEBUG_CODE_CACHE) console.error(`assessd: code cache ${cachedData ? (script.cachedDataRejected ? 'rejected' : 'accepted') : 'absent'}`);
  return { exports: module.exports, script, cacheAccepted: cachedData ? !script.cachedDataRejected : undefined };
}
