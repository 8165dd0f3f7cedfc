/**
 * dist/assessd.cjs's loader: the CLI's bundle (dist/main.cjs, CommonJS written as its wrapper
 * function) compiled with the V8 code cache the build made for it (dist/main.cjs.cache, from warm
 * starts of this very bundle), so that a start parses and compiles almost nothing. A cache that
 * does not fit this node (another version or V8 flags) is refused by V8 and the bundle is compiled
 * as usual: slower, never wrong.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
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
  // ASCII (the build checks it): copied into a string as latin1, where UTF-8 would decode it
  const read = readWhole(file);
  const source = read.toString('latin1');
  let cachedData: Buffer | undefined;
  if (withCache) {
    try {
      // into the source's bytes, copied out already: memory a start touches for the first time
      // costs more than its copy (each new page is a fault, ~10 µs on a virtual machine)
      cachedData = readWhole(`${file}.cache`, read);
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

/** A file's bytes, in `reuse` when they fit (a view of it), else in a buffer of their own. */
function readWhole(path: string, reuse?: Buffer): Buffer {
  const fd = openSync(path, 'r');
  try {
    const size = fstatSync(fd).size;
    const into = reuse !== undefined && size <= reuse.length ? reuse : Buffer.allocUnsafeSlow(size);
    let length = 0;
    while (length < size) {
      const n = readSync(fd, into, length, size - length, length);
      if (n === 0) break;
      length += n;
    }
    return into.subarray(0, length);
  } finally {
    closeSync(fd);
  }
}
