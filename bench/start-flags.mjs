// @ts-check
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The node flags a build's `npm start` gives its server (the start script of `app/package.json`),
 * so that a bench runs the server as users run it.
 * @param {string} app the directory holding the build's package.json and dist/
 * @returns {string[]}
 */
export function startFlags(app) {
  const { scripts } = JSON.parse(readFileSync(join(app, 'package.json'), 'utf8'));
  return String(scripts.start).split(/\s+/).filter((word) => word.startsWith('--'));
}
