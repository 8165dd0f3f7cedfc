// @ts-check
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** @param {string} app */
function startScript(app) {
  const { scripts } = JSON.parse(readFileSync(join(app, 'package.json'), 'utf8'));
  return String(scripts.start);
}

/**
 * The node flags a build's `npm start` gives its server (the start script of `app/package.json`),
 * so that a bench runs the server as users run it.
 * @param {string} app the directory holding the build's package.json and dist/
 * @returns {string[]}
 */
export function startFlags(app) {
  return startScript(app).split(/\s+/).filter((word) => word.startsWith('--'));
}

/**
 * The environment a build's `npm start` gives its server: the script's leading assignments,
 * `NAME=value` or `NAME=${NAME-value}` (the value unless `env` has the name), merged into `env`.
 * @param {string} app the directory holding the build's package.json and dist/
 * @param {NodeJS.ProcessEnv} [env]
 * @returns {NodeJS.ProcessEnv}
 */
export function startEnv(app, env = process.env) {
  const out = { ...env };
  for (const word of startScript(app).split(/\s+/)) {
    const m = /^([A-Za-z_]\w*)=(?:\$\{(\w+)-([^}]*)\}|([^$]*))$/.exec(word);
    if (!m) break;
    const [, name, own, fallback, plain] = m;
    if (own !== undefined && own !== name) throw new Error(`start script: ${word} names another variable`);
    out[name] = own !== undefined ? (env[name] ?? fallback) : plain;
  }
  return out;
}
