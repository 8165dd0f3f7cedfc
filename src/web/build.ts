/** Build step of the web application: copies the static assets beside the compiled client script. */
import { cp, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { PROJECT_ROOT, WEB_ASSETS_DIR } from '../paths.js';

await mkdir(WEB_ASSETS_DIR, { recursive: true });
await cp(join(PROJECT_ROOT, 'src', 'web', 'static'), WEB_ASSETS_DIR, { recursive: true });
