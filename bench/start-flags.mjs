// @ts-check
import { spawnSync } from 'node:child_process';
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
 * The environment a build's `npm start` gives its server, starting from `env`: the start script
 * run by sh as npm runs it, with `env -0` in place of the node it runs (the script decides, from
 * the machine, what it sets: glibc's allocator setting).
 * @param {string} app the directory holding the build's package.json and dist/
 * @param {NodeJS.ProcessEnv} [env]
 * @returns {NodeJS.ProcessEnv}
 */
export function startEnv(app, env = process.env) {
  const script = startScript(app);
  const printing = script.replace(/exec node .*$/, 'exec env -0');
  if (printing === script) throw new Error(`the start script does not end by running node with exec: ${script}`);
  const run = spawnSync('sh', ['-c', printing], { env, encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`the start script's environment could not be read: ${run.stderr}`);
  /** @type {NodeJS.ProcessEnv} */
  const out = {};
  for (const pair of run.stdout.split('\0')) {
    const at = pair.indexOf('=');
    if (at > 0) out[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return out;
}
