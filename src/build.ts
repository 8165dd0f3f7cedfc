/**
 * The build's last step, after tsc has type-checked and compiled everything: bundles the server
 * into one file, dist/main.js (one module to load instead of thirty: a faster start), and the
 * compaction worker into another, dist/compactor.js (self-contained, see paths.ts), and copies
 * the web application's static files beside its compiled script.
 */
import { cp, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { build } from 'esbuild';
import { PROJECT_ROOT, WEB_ASSETS_DIR } from './paths.js';

await build({
  entryPoints: {
    main: join(PROJECT_ROOT, 'src', 'main.ts'),
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
await mkdir(WEB_ASSETS_DIR, { recursive: true });
await cp(join(PROJECT_ROOT, 'src', 'web', 'static'), WEB_ASSETS_DIR, { recursive: true });
