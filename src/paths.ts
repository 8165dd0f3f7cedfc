/** Where the project's own files are, whether running from src/ (tsx) or dist/ (compiled). */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const PROJECT_ROOT = fileURLToPath(new URL('..', import.meta.url));
export const DEFAULT_DATA_DIR = join(PROJECT_ROOT, 'data');
export const DEFAULT_CONFIGURATION_FILE = join(PROJECT_ROOT, 'data', 'default-configuration.json');
export const WEB_ASSETS_DIR = join(PROJECT_ROOT, 'dist', 'web', 'static');

/** How to start a worker thread: a script file, or its code (evaluated as CommonJS). */
export type WorkerSource = { file: string } | { code: string };

/**
 * The compaction worker, resolved here alone: `dist/compactor.js` beside the bundle; from the
 * TypeScript sources (tests under tsx), a bootstrap that registers tsx before importing the entry,
 * because Node 20 loads a worker's entry without the hooks of the parent's `--import tsx`. A
 * single-executable build would return the bundled worker's code, embedded as an asset.
 */
export function compactionWorker(): WorkerSource {
  if (!import.meta.url.endsWith('.ts')) return { file: join(PROJECT_ROOT, 'dist', 'compactor.js') };
  const entry = new URL('./store/compaction-worker.ts', import.meta.url).href;
  const tsx = import.meta.resolve('tsx/esm/api');
  return { code: `import(${JSON.stringify(tsx)}).then((api) => { api.register(); return import(${JSON.stringify(entry)}); });` };
}
