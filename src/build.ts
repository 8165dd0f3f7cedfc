/**
 * The build's last step, after tsc has type-checked everything and written the declarations: bundles
 * the CLI into dist/main.js, the library into dist/index.js (one module each to load instead of
 * thirty: a faster start) and the compaction worker into dist/compactor.js (self-contained, see
 * paths.ts); and the web application's script into one file, app.js (a browser fetching twenty
 * modules in four rounds waits ~100 ms before it can ask for any data), beside the page's static files.
 */
import { cp, mkdir, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { build } from 'esbuild';
import { PROJECT_ROOT, WEB_ASSETS_DIR } from './paths.js';

// chunks from an earlier build would be packed with this one's
for (const name of await readdir(join(PROJECT_ROOT, 'dist')).catch(() => [])) {
  if (name.startsWith('chunk-')) await rm(join(PROJECT_ROOT, 'dist', name));
}
const common = { bundle: true, platform: 'node', format: 'esm', target: 'node20', sourcemap: true, logLevel: 'warning' } as const;
// What runs plugins (the checks with https and tls, the runner with child_process, the parsers)
// is imported with the first run: split into a chunk, a server that runs nothing never loads it.
await build({
  ...common,
  entryPoints: { main: join(PROJECT_ROOT, 'src', 'main.ts'), index: join(PROJECT_ROOT, 'src', 'index.ts') },
  outdir: join(PROJECT_ROOT, 'dist'),
  splitting: true,
  chunkNames: 'chunk-[hash]',
});
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
