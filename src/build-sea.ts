/**
 * `npm run sea`: the single executable, dist/assessd. After `npm run build`: bundles the CLI as one
 * CommonJS script (what Node's single executable applications run), embeds it with the web
 * application's files and the default configuration as assets in a copy of the running `node`
 * binary (`--experimental-sea-config`, injected by postject). The result runs on a machine of the
 * same OS and architecture with no Node.js and no node_modules.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import { inject } from 'postject';
import { DEFAULT_CONFIGURATION_FILE, PLUGINS_DIR, PROJECT_ROOT, SHIPPED_DATA_DIRS, WEB_ASSETS_DIR } from './paths.js';

const SEA_DIR = join(PROJECT_ROOT, 'dist', 'sea');
const EXECUTABLE = join(PROJECT_ROOT, 'dist', process.platform === 'win32' ? 'assessd.exe' : 'assessd');
// The fuse Node looks for to know it carries a blob (documented with single executable applications).
const FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';

const { version } = JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string };
const webFiles = readdirSync(WEB_ASSETS_DIR).filter((name) => statSync(join(WEB_ASSETS_DIR, name)).isFile() && !name.endsWith('.map'));
const pluginFiles = readdirSync(PLUGINS_DIR).filter((name) => name.endsWith('.json')).sort();
// the files default configuration values name ({data}/...), written into the data directory at start
const shippedFiles = SHIPPED_DATA_DIRS.flatMap((dir) => readdirSync(join(PROJECT_ROOT, 'data', dir)).sort().map((name) => `${dir}/${name}`));
if (!webFiles.includes('index.html')) throw new Error(`run npm run build first: ${WEB_ASSETS_DIR} has no index.html`);

rmSync(SEA_DIR, { recursive: true, force: true });
mkdirSync(SEA_DIR, { recursive: true });
const main = join(SEA_DIR, 'main.cjs');
await build({
  entryPoints: [join(PROJECT_ROOT, 'src', 'main.ts')],
  outfile: main,
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  minify: true,
  // a single executable's script cannot import(): dynamic imports (zlib, loaded on first use) become require()
  supported: { 'dynamic-import': false },
  define: {
    ASSESSD_SEA: 'true',
    ASSESSD_VERSION: JSON.stringify(version),
    ASSESSD_WEB_FILES: JSON.stringify(webFiles),
    ASSESSD_PLUGIN_FILES: JSON.stringify(pluginFiles),
    ASSESSD_SHIPPED_FILES: JSON.stringify(shippedFiles),
    // lazy-builtins.ts loads node's modules through createRequire (any absolute URL does for them)
    'import.meta.url': '"file:///"',
  },
  // paths.ts reads import.meta.url only outside the single executable
  logOverride: { 'empty-import-meta': 'silent' },
  logLevel: 'warning',
});

// the compaction worker, run from its code (new Worker(code, { eval: true })): CommonJS, as eval runs it
const compactor = join(SEA_DIR, 'compactor.cjs');
await build({
  entryPoints: [join(PROJECT_ROOT, 'src', 'store', 'compaction-worker.ts')],
  outfile: compactor,
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  minify: true,
  define: { 'import.meta.url': '"file:///"' },
  logLevel: 'warning',
});

const assets: Record<string, string> = { 'default-configuration.json': DEFAULT_CONFIGURATION_FILE, 'compactor.cjs': compactor };
for (const name of webFiles) assets[`web/${name}`] = join(WEB_ASSETS_DIR, name);
for (const name of pluginFiles) assets[`plugins/${name}`] = join(PLUGINS_DIR, name);
for (const name of shippedFiles) assets[`data/${name}`] = join(PROJECT_ROOT, 'data', name);
const blob = join(SEA_DIR, 'assessd.blob');
const config = join(SEA_DIR, 'sea-config.json');
// no useCodeCache: measured, it changed start-up by nothing beyond noise (V8 compiles the 150 KB
// bundle lazily anyway) and added 64 KiB (docs/PERFORMANCE.md)
writeFileSync(config, JSON.stringify({ main, output: blob, disableExperimentalSEAWarning: true, useCodeCache: false, assets }, null, 2));
execFileSync(process.execPath, ['--experimental-sea-config', config], { stdio: 'inherit' });

rmSync(EXECUTABLE, { force: true });
copyFileSync(process.execPath, EXECUTABLE);
chmodSync(EXECUTABLE, 0o755);
const macOS = process.platform === 'darwin';
if (macOS) execFileSync('codesign', ['--remove-signature', EXECUTABLE]);
await inject(EXECUTABLE, 'NODE_SEA_BLOB', readFileSync(blob), { sentinelFuse: FUSE, ...(macOS ? { machoSegmentName: 'NODE_SEA' } : {}) });
if (macOS) execFileSync('codesign', ['--sign', '-', EXECUTABLE]);
console.log(`built ${EXECUTABLE} (${(statSync(EXECUTABLE).size / 1024 / 1024).toFixed(1)} MiB, Node ${process.version})`);
