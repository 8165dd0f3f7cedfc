/**
 * The build's last step, after tsc has type-checked everything and written the declarations: bundles
 * the CLI into dist/main.cjs (run by dist/assessd.cjs), the library into dist/index.js (one module
 * each to load instead of thirty: a faster start) and the compaction worker into dist/compactor.js
 * (self-contained, see paths.ts); and the web application's script into one file, app.js (a browser
 * fetching twenty modules in four rounds waits ~100 ms before it can ask for any data), beside the
 * page's static files.
 */
import { execFileSync } from 'node:child_process';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { BUNDLE_PARAMETERS } from './load-bundle.js';
import { PROJECT_ROOT, WEB_ASSETS_DIR } from './paths.js';

// chunks from an earlier build would be packed with this one's
for (const name of await readdir(join(PROJECT_ROOT, 'dist')).catch(() => [])) {
  if (name.startsWith('chunk-')) await rm(join(PROJECT_ROOT, 'dist', name));
}
const common = { bundle: true, platform: 'node', format: 'esm', target: 'node20', sourcemap: true, logLevel: 'warning' } as const;
const DIST = join(PROJECT_ROOT, 'dist');
/** Written as the build's last step, removed as its first: what `npm start` (src/prestart.mjs) holds the sources against. */
const COMPLETE = join(DIST, 'build-complete');
await rm(COMPLETE, { force: true });
// The library: what runs plugins (the checks with https and tls, the runner with child_process, the
// parsers) is imported with the first run: split into a chunk, a server that runs nothing never loads it.
await build({ ...common, entryPoints: { index: join(PROJECT_ROOT, 'src', 'index.ts') }, outdir: DIST, splitting: true, chunkNames: 'chunk-[hash]' });
// The CLI: one CommonJS bundle (what a V8 code cache is made for; its lazy imports stay lazy, as
// functions run on first use), loaded with the cache made below by dist/assessd.cjs (src/load-bundle.ts).
await build({
  ...common,
  entryPoints: [join(PROJECT_ROOT, 'src', 'cli-main.ts')],
  outfile: join(DIST, 'main.cjs'),
  format: 'cjs',
  supported: { 'dynamic-import': false },
  define: { 'import.meta.url': '__assessd_import_meta_url' },
  // paths.ts reads import.meta.resolve only when run from the TypeScript sources
  logOverride: { 'empty-import-meta': 'silent' },
  // The file is the function the loader calls, as written: wrapped when loaded, the 600 KB text was
  // copied once more, and the copy filled the young generation enough for a collection of its own.
  banner: { js: `(function (${BUNDLE_PARAMETERS.join(', ')}) {` },
  footer: { js: '})' },
});
// the loader reads it as latin1, which copies bytes into a string where UTF-8 would decode them:
// right only while esbuild escapes every character past ASCII (its default charset)
if (/[^\x00-\x7f]/.test(await readFile(join(DIST, 'main.cjs'), 'latin1'))) throw new Error('dist/main.cjs is not ASCII: the loader reads it as latin1');
// The loader, CommonJS like the entry point that requires it.
await build({ ...common, entryPoints: [join(PROJECT_ROOT, 'src', 'load-bundle.ts')], outfile: join(DIST, 'load-bundle.cjs'), format: 'cjs' });
// The entry point (`npm start`, the `assessd` bin) is CommonJS: node starts a CommonJS main module
// ~10 ms sooner than an ES module one (no module loader to set up before the first line runs).
await writeFile(
  join(DIST, 'assessd.cjs'),
  `#!/usr/bin/env node
'use strict';
// The CLI (src/main.ts): its bundle, main.cjs, run with the V8 code cache the build made for it (src/load-bundle.ts).
const { join } = require('node:path');
const { pathToFileURL } = require('node:url');
const { loadBundle } = require('./load-bundle.cjs');

loadBundle(pathToFileURL(join(__dirname, 'main.cjs'))).exports.runCli();
`,
  { mode: 0o755 },
);
// dist/main.js, the entry point of earlier builds, for whoever still runs it: the same CLI
await writeFile(
  join(DIST, 'main.js'),
  `#!/usr/bin/env node
// Earlier builds' entry point: the CLI is dist/assessd.cjs (a CommonJS entry point starts sooner).
import './assessd.cjs';
`,
  { mode: 0o755 },
);
// what earlier builds wrote that this one does not
for (const name of ['load-bundle.js', 'load-bundle.js.map', 'main.js.map']) await rm(join(DIST, name), { force: true });
// the compaction worker stays one self-contained file (paths.ts starts it by its path)
await build({ ...common, entryPoints: { compactor: join(PROJECT_ROOT, 'src', 'store', 'compaction-worker.ts') }, outdir: join(PROJECT_ROOT, 'dist') });
// the declarations of the build's and the CLI's own entry points describe nothing a library user imports
for (const entry of ['build', 'build-sea', 'main']) await rm(join(PROJECT_ROOT, 'dist', 'types', `${entry}.d.ts`), { force: true });
// every file in the folder is served: nothing from an earlier build may stay
await rm(WEB_ASSETS_DIR, { recursive: true, force: true });
await mkdir(WEB_ASSETS_DIR, { recursive: true });
await cp(join(PROJECT_ROOT, 'src', 'web', 'static'), WEB_ASSETS_DIR, { recursive: true });
await build({
  entryPoints: [join(PROJECT_ROOT, 'src', 'web', 'client', 'app.ts')],
  outfile: join(WEB_ASSETS_DIR, 'app.js'),
  bundle: true,
  platform: 'browser',
  format: 'esm',
  target: 'es2022',
  tsconfig: join(PROJECT_ROOT, 'src', 'web', 'client', 'tsconfig.json'),
  logLevel: 'warning',
});
// last: its warm start serves the page, so the web application must be built (a fresh tree has none yet)
await makeCodeCache();
// the build is whole: a build cut short (killed, failed) leaves none, and npm start builds again
await writeFile(COMPLETE, `${new Date().toISOString()}\n`);

/**
 * dist/main.cjs.cache: V8's code cache of the CLI's bundle, taken after warm starts of it (the flags
 * read, a start, the first requests a server answers, then a restart on the same directory, which
 * reads its files: the functions they compile are in the cache), in a node run with the flags of
 * `npm start` (package.json's start script): as users run it.
 */
async function makeCodeCache(): Promise<void> {
  const { scripts } = JSON.parse(await readFile(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } };
  const flags = scripts.start.split(/\s+/).filter((word) => word.startsWith('--'));
  const dataDir = await mkdtemp(join(tmpdir(), 'assessd-code-cache-'));
  const token = 'code-cache-token-0123456789abcdef0123456789';
  const argv = ['--host', '127.0.0.1', '--port', '0', '--proxy-port', '0', '--data-dir', dataDir];
  const warm = `
    import { writeFileSync } from 'node:fs';
    import { createRequire } from 'node:module';
    const { loadBundle } = createRequire(import.meta.url)(${JSON.stringify(join(DIST, 'load-bundle.cjs'))});
    const { exports, script } = loadBundle(new URL(${JSON.stringify(new URL('../dist/main.cjs', import.meta.url).href)}), { withCache: false });
    const { options } = exports.parseCli(${JSON.stringify(argv)}, { ASSESSD_TOKEN: ${JSON.stringify(token)} }, ${JSON.stringify(dataDir)});
    // a first start makes the directory's files, a restart reads them and replays the journal (as most starts do)
    for (let round = 0; round < 2; round++) {
      const server = await exports.start({ ...options, log: () => {} });
      for (const path of ['/debug/health', '/', '/api/v1/sessions/', '/api/v1/targets/', '/api/v1/configuration', '/api/v1/plugins/', '/api/v1/worklist/']) {
        await (await fetch(server.url + path, { headers: { authorization: 'Bearer ${token}' } })).arrayBuffer();
      }
      // a write, which the restart replays from the journal
      if (round === 0) {
        const made = await fetch(server.url + '/api/v1/sessions/', { method: 'POST', headers: { authorization: 'Bearer ${token}' }, body: new URLSearchParams({ name: 'warm start' }) });
        if (made.status !== 201) throw new Error('the warm start could not add a session: ' + made.status + ' ' + (await made.text()));
      }
      await server.close();
    }
    writeFileSync(${JSON.stringify(join(DIST, 'main.cjs.cache'))}, script.createCachedData());`;
  try {
    execFileSync(process.execPath, [...flags, '--input-type=module', '-e', warm], { stdio: ['ignore', 'ignore', 'inherit'] });
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}
