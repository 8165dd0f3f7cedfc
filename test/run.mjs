// `npm test`'s runner: every test file (or the ones named), each in its own process, several at
// once, the slowest first. `node --test` sorts the files by name, which started the longest ones
// (the browser's, the lock's) last, with two cores idle meanwhile; node:test's run() keeps the
// order it is given. Runs under the --import of its own command line (tsx), as `node --test` would.
//
//   node --import tsx test/run.mjs [FILE ...]     TEST_CONCURRENCY=N sets how many files at once
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { run } from 'node:test';
import { spec } from 'node:test/reporters';
import { fileURLToPath } from 'node:url';

const root = dirname(fileURLToPath(import.meta.url));

/**
 * The files that took longest in a whole run (most wait on browsers, servers and tools rather
 * than use a core), started first, longest first: a short file is what should end a run. A file
 * not named here runs after them, in name order.
 */
const SLOWEST = [
  'web/engine.test.ts',
  'store/lock.test.ts',
  'engine/verdicts.test.ts',
  'evidence/code.test.ts',
  'web/e2e.test.ts',
  'web/transactions.test.ts',
  'store/power-loss.test.ts',
  'api/bundles.test.ts',
  'api/engine-tools.test.ts',
  'evidence/grep.test.ts',
  'proxy/proxy.test.ts',
  'api/hostile-target.test.ts',
  'main/young-generation.test.ts',
  'main/package.test.ts',
  'store/crash.test.ts',
  'web/security.test.ts',
  'web/portability.test.ts',
  'http/hostile.test.ts',
  'api/engine-runs.test.ts',
  'main/sea.test.ts',
];

function allFiles() {
  const found = [];
  for (const entry of readdirSync(root, { withFileTypes: true })) {
    if (!entry.isDirectory()) continue;
    for (const name of readdirSync(join(root, entry.name))) if (name.endsWith('.test.ts')) found.push(`${entry.name}/${name}`);
  }
  const rank = (file) => {
    const i = SLOWEST.indexOf(file);
    return i === -1 ? SLOWEST.length : i;
  };
  return found.sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0)).map((file) => join(root, file));
}

const named = process.argv.slice(2).map((file) => resolve(file));
const files = named.length > 0 ? named : allFiles();
const concurrency = Number(process.env.TEST_CONCURRENCY) || 3;
process.stderr.write(`running ${files.length} test files, ${concurrency} at once${named.length > 0 ? '' : `, from ${relative(process.cwd(), root) || '.'}`}\n`);

// Every file's temporary files (data directories, tools' outputs, Chromium's profiles) go under one
// directory of this run, removed when the run ends: a run used to leave ~650 MB in /tmp (servers
// killed on purpose, fixtures kept for a restart). KEEP_TMP=1 keeps it, to look into a failure.
const runTmp = mkdtempSync(join(tmpdir(), 'assessd-tests-'));
// as /tmp is: the web servers the verdicts run (Apache's www-data) read files under it
chmodSync(runTmp, 0o1777);
// tsx keeps its compiled files in <tmp>/tsx-<uid>: still shared between runs, as before
const tsxCache = `tsx-${process.geteuid?.() ?? userInfo().username}`;
mkdirSync(join(tmpdir(), tsxCache), { recursive: true, mode: 0o700 });
symlinkSync(join(tmpdir(), tsxCache), join(runTmp, tsxCache));
process.env.TMPDIR = runTmp;
process.on('exit', () => {
  if (process.env.KEEP_TMP) process.stderr.write(`temporary files kept in ${runTmp}\n`);
  else rmSync(runTmp, { recursive: true, force: true, maxRetries: 3 });
});
// Ctrl-C (the test files get it too): removed all the same
process.once('SIGINT', () => process.exit(130));

const stream = run({ files, concurrency });
stream.on('test:fail', () => {
  process.exitCode = 1;
});
stream.compose(spec).pipe(process.stdout);

// TEST_TIMES=1: at the end, each file's top-level tests' durations summed, longest first (to keep
// SLOWEST right; run() reports a file's tests once the file has ended, so no start time is known).
if (process.env.TEST_TIMES) {
  const sums = new Map();
  const ended = (data) => {
    if (data.file && data.nesting === 0) sums.set(data.file, (sums.get(data.file) ?? 0) + data.details.duration_ms);
  };
  stream.on('test:pass', ended);
  stream.on('test:fail', ended);
  process.on('exit', () => {
    for (const [file, ms] of [...sums].sort((a, b) => b[1] - a[1])) process.stderr.write(`${(ms / 1000).toFixed(1).padStart(7)} s  ${relative(root, file)}\n`);
  });
}
