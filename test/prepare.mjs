// `npm test`'s first step: the build (type-check and declarations of the sources, the web
// application's type-check, the bundles) and the type-check of the tests with the sources, side by
// side: they need nothing of each other, and one after the other they took a minute of a test run.
// Fails, printing what failed, when either does. The two type-checks that write nothing (the tests',
// the web application's) keep tsc's incremental state in dist/.tsbuildinfo/: run again with nothing
// changed, they take ~5 s instead of ~13. The build's own tsc, which writes the declarations, does
// not: an incremental tsc does not write again a declaration deleted since its last run.
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bin = (name) => join(root, 'node_modules', '.bin', name);
// the npm that runs `npm test` runs the build too
const npm = process.env.npm_execpath;

/** Runs the commands one after the other; resolves with the first failure's output, or undefined. */
async function sequence(commands) {
  for (const [command, ...args] of commands) {
    const output = await new Promise((resolve) => {
      const child = spawn(command, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
      let text = '';
      child.stdout.on('data', (chunk) => (text += chunk));
      child.stderr.on('data', (chunk) => (text += chunk));
      child.on('close', (code) => resolve(code === 0 ? undefined : `${[command, ...args].join(' ')} failed (${code}):\n${text}`));
    });
    if (output !== undefined) return output;
  }
  return undefined;
}

const failures = (
  await Promise.all([
    sequence([npm ? [process.execPath, npm, 'run', 'build'] : ['npm', 'run', 'build']]),
    // the tests with the sources: a test calling what the code no longer has fails here, in seconds
    sequence([[bin('tsc'), '-p', 'test']]),
  ])
).filter((failure) => failure !== undefined);

for (const failure of failures) console.error(failure);
process.exitCode = failures.length > 0 ? 1 : 0;
