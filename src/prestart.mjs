// `npm start`'s check, before the server starts (plain JavaScript: it runs before any build):
// exits 1, and npm then builds, when dist/ is missing, cut short or older than what it is built from. Without
// it, `git pull && npm ci && npm start` kept running the previous version's build (npm ci builds
// nothing), its bugs included. An installed package (dist/ without src/, nor this file) is never
// rebuilt: npm start runs this file only where it is.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** What the build reads, beside src/: a change to one of them makes another build. */
const INPUTS = ['package.json', 'package-lock.json', 'tsconfig.json'];

/** The newest modification time of a file under `dir` (0 when none). */
function newest(dir) {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) latest = Math.max(latest, newest(path));
    else if (entry.isFile()) latest = Math.max(latest, statSync(path).mtimeMs);
  }
  return latest;
}

/** Why the build in `root` must be made again, or undefined when it is current. */
export function staleBuild(root) {
  if (!existsSync(join(root, 'dist', 'assessd.cjs'))) return 'there is no build yet';
  const src = join(root, 'src');
  if (!existsSync(src)) return undefined;
  // written as the build's last step (src/build.ts): a build cut short has none
  const complete = join(root, 'dist', 'build-complete');
  if (!existsSync(complete)) return 'the last build did not finish';
  const builtAt = statSync(complete).mtimeMs;
  const inputs = INPUTS.map((name) => join(root, name)).filter((path) => existsSync(path));
  const changed = Math.max(newest(src), ...inputs.map((path) => statSync(path).mtimeMs));
  return changed > builtAt ? 'its sources changed since it was built' : undefined;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const why = staleBuild(join(fileURLToPath(import.meta.url), '..', '..'));
  if (why) {
    process.stderr.write(`assessd: building (${why})\n`);
    process.exitCode = 1;
  }
}
