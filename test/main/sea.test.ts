/**
 * The single executable as a user gets it: `npm run sea` builds dist/assessd, which is copied alone
 * into an empty directory and run there with an empty PATH (no node, no node_modules to find).
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, readdir, readFile, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { PROJECT_ROOT, version } from '../../src/paths.ts';
import { rememberPrintedToken, request, tempDir } from '../helpers/server.ts';

const run = promisify(execFile);
const skip = process.platform === 'win32' ? 'the single executable is built for Linux and macOS here' : false;

/** Every executable started: a failed assertion must not leave one running (the test run would never end). */
const launched: ChildProcess[] = [];
after(() => {
  for (const proc of launched) if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
});

/** Starts the executable with nothing but an empty PATH in its environment; resolves on its start-up line. */
function launch(executable: string, args: string[], cwd: string) {
  // a tiny compaction threshold: the embedded compaction worker runs too
  const proc = spawn(executable, args, { cwd, env: { PATH: '', ASSESSD_COMPACT_AFTER: '300' }, stdio: ['ignore', 'pipe', 'pipe'] });
  launched.push(proc);
  let output = '';
  const exited = new Promise<number | null>((resolve) => proc.on('exit', resolve));
  const listening = new Promise<string>((resolve, reject) => {
    proc.stdout.on('data', (chunk: Buffer) => {
      output += chunk;
      const m = /assessd listening on (http:\/\/\S+) \(data: (.+?)\)/.exec(output);
      if (!m) return;
      // the printed login URL's token: requests to this server send it, as a user's would
      rememberPrintedToken(output);
      resolve(m[1]);
    });
    proc.stderr.on('data', (chunk: Buffer) => (output += chunk));
    void exited.then((code) => reject(new Error(`exited ${code}: ${output}`)));
  });
  return { proc, exited, listening, output: () => output };
}

test('npm run sea builds one file that runs alone: same flags, the page, and a store that persists beside it', { skip }, async () => {
  await run(process.execPath, ['--import', 'tsx', join(PROJECT_ROOT, 'src', 'build-sea.ts')], { cwd: PROJECT_ROOT });
  const box = await tempDir('assessd-sea-');
  const executable = join(box, 'assessd');
  await copyFile(join(PROJECT_ROOT, 'dist', 'assessd'), executable);
  const elsewhere = join(box, 'elsewhere');
  await mkdir(elsewhere);

  const versionRun = await run(executable, ['--version'], { cwd: elsewhere, env: { PATH: '' } });
  assert.equal(versionRun.stdout.trim(), version());

  const first = launch(executable, ['--port', '0'], elsewhere);
  const url = await first.listening;
  assert.match(first.output(), new RegExp(`\\(data: ${join(box, 'assessd-data')}\\)`), 'the data directory is beside the executable');
  const page = await request(url, '/');
  assert.equal(page.status, 200);
  assert.match(page.text, /<!doctype html>/i);
  assert.equal((await request(url, '/static/app.js')).status, 200);
  // the plugin catalogue is embedded too
  const plugins = (await request(url, '/api/v1/plugins/')).json.data as { key: string }[];
  assert.ok(plugins.length > 100 && plugins.some((p) => p.key === 'semi_passive@OWTF-WGP-002'), `${plugins.length} plugins`);
  assert.equal((await request(url, '/', { headers: { 'accept-encoding': 'gzip' } })).headers['content-encoding'], 'gzip');
  // the wordlists default values name are embedded too, and written where those values point
  const wordlist = (await request(url, '/api/v1/configuration?key=DICT_CMS_WORDPRESS_ALL_DIRBUSTER')).json.data[0].value;
  assert.equal(wordlist, join(box, 'assessd-data', 'shipped', 'wordlists', 'wordpress.txt'));
  assert.match(await readFile(wordlist, 'utf8'), /^wp-admin\/$/m);
  // made by the shipped files' copy, before the store: as private as the store makes it
  assert.equal((await stat(join(box, 'assessd-data'))).mode & 0o777, 0o700);
  assert.equal((await stat(join(box, 'assessd-data', 'shipped', 'wordlists'))).mode & 0o777, 0o700);
  assert.equal((await stat(wordlist)).mode & 0o777, 0o600);
  assert.equal((await request(url, '/api/v1/sessions/', { method: 'POST', form: { name: 'on the box' } })).status, 201);
  assert.equal((await request(url, '/api/v1/configuration/', { method: 'PATCH', form: { THREADS: '3' } })).status, 200);
  for (let i = 0; i < 5; i++) assert.equal((await request(url, '/api/v1/sessions/', { method: 'POST', form: { name: `filler ${i}` } })).status, 201);
  let stats;
  for (let tries = 0; tries < 100; tries++) {
    stats = (await request(url, '/debug/stats')).json.data.store;
    if (stats.compactions > 0 && !stats.compacting) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.ok(stats.compactions > 0 && stats.failedCompactions === 0, `the embedded compaction worker ran: ${JSON.stringify(stats)}`);
  first.proc.kill('SIGTERM');
  assert.equal(await first.exited, 0);

  const second = launch(executable, ['--port', '0', '--host', '127.0.0.1'], elsewhere);
  const again = await second.listening;
  try {
    const names = (await request(again, '/api/v1/sessions/')).json.data.map((s: { name: string }) => s.name);
    assert.deepEqual(names, ['default session', 'on the box', ...[0, 1, 2, 3, 4].map((i) => `filler ${i}`)]);
    assert.equal((await request(again, '/api/v1/configuration?key=THREADS')).json.data[0].value, '3');
    // another start, or an offline command, on the directory this server holds is refused, and
    // writes nothing there first (its shipped files were written before the lock was asked for)
    await rm(wordlist);
    for (const args of [['--port', '0'], ['export', '--session', '1', '--out', join(box, 'out.json')]]) {
      const refused = await run(executable, args, { cwd: elsewhere, env: { PATH: '' } }).then(() => undefined, (err: { code: number; stderr: string }) => err);
      assert.ok(refused && refused.code === 1 && /in use/.test(refused.stderr), `${args[0]}: ${JSON.stringify(refused)}`);
    }
    assert.equal(existsSync(wordlist), false, 'the wordlist removed under the running server was not written again by the refused ones');
  } finally {
    second.proc.kill('SIGTERM');
    await second.exited;
  }
  assert.deepEqual(await readdir(elsewhere), [], 'nothing written to the working directory');
});
