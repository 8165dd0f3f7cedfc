/**
 * The CLI's loader (src/load-bundle.ts) reads the bundle, then its V8 code cache into the same
 * buffer where it fits: whatever the cache holds (the build's, none, an empty file, garbage larger
 * than the bundle), the bundle's own source is what runs, and a cache V8 refuses is said so.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { copyFileSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { loadBundle } from '../../src/load-bundle.ts';
import { PROJECT_ROOT } from '../../src/paths.ts';
import { tempDir } from '../helpers/server.ts';

const BUNDLE = join(PROJECT_ROOT, 'dist', 'main.cjs');

/** Loads a copy of the CLI's bundle with `cache` beside it (undefined: no cache file). */
async function loadWith(cache: Buffer | undefined) {
  const dir = await tempDir();
  try {
    copyFileSync(BUNDLE, join(dir, 'main.cjs'));
    if (cache !== undefined) writeFileSync(join(dir, 'main.cjs.cache'), cache);
    return loadBundle(pathToFileURL(join(dir, 'main.cjs')));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

test('the bundle runs from its source whatever lies in its code cache file', async () => {
  const size = statSync(BUNDLE).size;
  const built = readFileSync(`${BUNDLE}.cache`);
  assert.ok(built.length < size, 'the build\'s cache is smaller than the bundle: it is read into the bundle\'s bytes');
  const cases: [string, Buffer | undefined, boolean | undefined][] = [
    // accepted or not depends on this process's V8 flags (coverage may refuse it): run either way
    ['the build\'s cache', built, undefined],
    ['no cache file', undefined, undefined],
    ['an empty cache file', Buffer.alloc(0), false],
    ['garbage larger than the bundle', randomBytes(size + 4096), false],
    ['garbage smaller than the bundle', randomBytes(1024), false],
  ];
  for (const [name, cache, accepted] of cases) {
    const loaded = await loadWith(cache);
    assert.equal(typeof loaded.exports.runCli, 'function', name);
    assert.equal(typeof loaded.exports.parseCli, 'function', name);
    // the source compiled is the bundle's, not the cache read into its bytes after it: its code answers
    const parsed = (loaded.exports.parseCli as (argv: string[], env: object, dataDir: string) => { kind: string })(['--version'], {}, '/nonexistent');
    assert.equal(parsed.kind, 'version', name);
    if (cache === undefined) assert.equal(loaded.cacheAccepted, undefined, name);
    else if (accepted !== undefined) assert.equal(loaded.cacheAccepted, accepted, name);
    else assert.equal(typeof loaded.cacheAccepted, 'boolean', name);
  }
});
