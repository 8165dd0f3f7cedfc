/**
 * The build's last step, after tsc has type-checked everything and written the declarations: bundles
 * the CLI into dist/main.js, the library into dist/index.js (one module each to load instead of
 * thirty: a faster start) and the compaction worker into dist/compactor.js (self-contained, see
 * paths.ts); and the web application's script into one file, app.js (a browser fetching twenty
 * modules in four rounds waits ~100 ms before it can ask for any data), beside the page's static files.
 */
import { cp, mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { build } from 'esbuild';
import { PROJECT_ROOT, WEB_ASSETS_DIR } from './paths.js';

await build({
  entryPoints: {
    main: join(PROJECT_ROOT, 'src', 'main.ts'),
    index: join(PROJECT_ROOT, 'src', 'index.ts'),
    compactor: join(PROJECT_ROOT, 'src', 'store', 'compaction-worker.ts'),
  },
  outdir: join(PROJECT_ROOT, 'dist'),
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  sourcemap: true,
  logLevel: 'warning',
});
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
