/** Where the project's own files are, whether running from src/ (tsx) or dist/ (compiled). */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const PROJECT_ROOT = fileURLToPath(new URL('..', import.meta.url));
export const DEFAULT_DATA_DIR = join(PROJECT_ROOT, 'data');
export const DEFAULT_CONFIGURATION_FILE = join(PROJECT_ROOT, 'data', 'default-configuration.json');
export const WEB_ASSETS_DIR = join(PROJECT_ROOT, 'dist', 'web', 'static');
