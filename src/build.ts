/**
 * The build's last step, after tsc has type-checked everything and compiled the server: bundles
 * the server into one file, dist/main.js (one module to load instead of thirty: a faster start),
 * and the web application's script into one file, app.js (a browser fetching twenty modules in
 * four rounds waits ~100 ms before it can ask for any data), beside the page's static files.
 */
import { cp, mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { build } from 'esbuild';
import { PROJECT_ROOT, WEB_ASSETS_DIR } from './paths.js';

await build({
  entryPoints: [join(PROJECT_ROOT, 'src', 'main.ts')],
  outfile: join(PROJECT_ROOT, 'dist', 'main.js'),
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  sourcemap: true,
  logLevel: 'warning',
});
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
