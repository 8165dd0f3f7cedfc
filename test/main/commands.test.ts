/** `assessd export` and `assessd import` through the compiled binary, on the directories of stopped servers. */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync, spawn } from 'node:child_process';
import { mkdir, readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../../src/paths.ts';
import { bundle, storeBytes, withoutId } from '../helpers/bundles.ts';
import { harOf } from '../evidence/helpers.ts';
import { mountTmpfs } from '../helpers/mount.ts';
import { request, runCli, spawnServer, tempDir, type ChildServer } from '../helpers/server.ts';

async function stop(server: ChildServer): Promise<void> {
  server.proc.kill('SIGTERM');
  assert.equal(await server.exited, 0);
}

/** A failure: exit 1, nothing on stdout, one line on stderr matching `pattern`. */
/** The command a refusal suggests instead. */
function suggested(stderr: string): string {
  return stderr.trimEnd().replace(/^.*use its API instead: /s, '');
}

/** Runs a command line as a user's shell does. */
function shell(line: string, env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile('/bin/sh', ['-c', line], { env: { ...process.env, ...env } }, (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }));
  });
}

function assertRefused(run: { code: number | null; stdout: string; stderr: string }, pattern: RegExp): void {
  assert.equal(run.code, 1, run.stderr);
  assert.equal(run.stdout, '');
  assert.equal(run.stderr.split('\n').filter(Boolean).length, 1, run.stderr);
  assert.match(run.stderr, /^assessd: /);
  assert.match(run.stderr.trimEnd(), pattern);
  assert.doesNotMatch(run.stderr, /\n\s+at /);
}

/** A stopped server's directory: session 2 "acme web" with three targets. */
async function stoppedServerDir(): Promise<{ dir: string; exported: any }> {
  const dir = await tempDir();
  const server = await spawnServer(['--port', '0', '--data-dir', dir]);
  try {
    assert.equal((await request(server.url, '/api/v1/sessions/', { method: 'POST', form: { name: 'acme web' } })).status, 201);
    const targets = { target_url: ['https://app.acme.example/login', 'http://10.0.0.5:8080/', 'http://[::1]:3000/api'] };
    assert.equal((await request(server.url, '/api/v1/targets/', { method: 'POST', form: targets })).status, 201);
    return { dir, exported: (await request(server.url, '/api/v1/bundles/2')).json };
  } finally {
    await stop(server);
  }
}

describe('a round trip through the CLI, no server running', () => {
  let source: { dir: string; exported: any };
  before(async () => (source = await stoppedServerDir()));

  test('export --out writes the bundle the API answers; import reads it into another directory', async () => {
    const out = join(await tempDir(), 'acme.assessd.json');
    const exported = await runCli(['export', '--data-dir', source.dir, '--session', '2', '--out', out]);
    assert.equal(exported.code, 0, exported.stderr);
    assert.equal(exported.stderr, '');
    assert.equal(exported.stdout, `exported session 2 "acme web" (3 targets) to ${out}\n`);
    const file = JSON.parse(await readFile(out, 'utf8'));
    assert.deepEqual({ ...file, exported_at: 'x' }, { ...source.exported, exported_at: 'x' });
    assert.deepEqual(await readdir(join(out, '..')), ['acme.assessd.json'], 'no temp file left beside it');

    const target = join(await tempDir(), 'fresh', 'box');
    const imported = await runCli(['import', out, '--data-dir', target]);
    assert.equal(imported.code, 0, imported.stderr);
    assert.equal(imported.stdout, `imported "acme web" as session 2 with 3 targets into ${target}\n`);

    const server = await spawnServer(['--port', '0', '--data-dir', target]);
    try {
      const sessions = (await request(server.url, '/api/v1/sessions/')).json.data;
      assert.deepEqual(sessions, [{ id: 1, name: 'default session', active: true }, { id: 2, name: 'acme web', active: false }]);
      const targets = (await request(server.url, '/api/v1/targets/?session_id=2')).json.data;
      // a bundle's target also carries its outputs (none here), which the targets list does not show
      assert.deepEqual(targets.map(withoutId), source.exported.targets.map(({ outputs: _outputs, ...t }: any) => withoutId(t)));
    } finally {
      await stop(server);
    }
  });

  test('export without --out (or with --out -) writes the bundle to standard output, and nothing else', async () => {
    for (const out of [[], ['--out', '-']]) {
      const run = await runCli(['export', '--session', '2', ...out], { ASSESSD_DATA_DIR: source.dir });
      assert.equal(run.code, 0, run.stderr);
      assert.equal(run.stderr, '');
      assert.deepEqual({ ...JSON.parse(run.stdout), exported_at: 'x' }, { ...source.exported, exported_at: 'x' });
    }
  });

  test('export --out removes the temp file a killed export left beside that file (its process gone), and no other', async () => {
    const dir = await tempDir();
    const out = join(dir, 'acme.assessd.json');
    // a pid no process has (past pid_max), one that is running (this one), another file's
    const dead = join(dir, `.acme.assessd.json.tmp-4194305-0-1`);
    const running = join(dir, `.acme.assessd.json.tmp-${process.pid}-0-1`);
    const other = join(dir, `.other.json.tmp-4194305-0-1`);
    for (const file of [dead, running, other]) await writeFile(file, '{"format":"assessd-session", "half');
    const run = await runCli(['export', '--data-dir', source.dir, '--session', '2', '--out', out]);
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual((await readdir(dir)).sort(), [running, other, out].map((f) => f.slice(dir.length + 1)).sort());
  });

  test('import - reads standard input; --name names the session', async () => {
    const target = await tempDir();
    const proc = spawn(process.execPath, [join(PROJECT_ROOT, 'dist', 'assessd.cjs'), 'import', '-', '--data-dir', target, '--name', 'from stdin'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    proc.stdout.on('data', (c: Buffer) => (stdout += c));
    proc.stdin.end(JSON.stringify(source.exported));
    const code = await new Promise((resolve) => proc.on('close', resolve));
    assert.equal(code, 0);
    assert.equal(stdout, `imported "from stdin" as session 2 with 3 targets into ${target}\n`);
  });

  test('a second import of the same name is refused and changes nothing; --name gets it in', async () => {
    const target = await tempDir();
    const file = join(target, '..', `${Date.now()}-b.json`);
    await writeFile(file, JSON.stringify(source.exported));
    assert.equal((await runCli(['import', file, '--data-dir', target])).code, 0);
    const before = await storeBytes(target);
    assertRefused(await runCli(['import', file, '--data-dir', target]), /a session named "acme web" already exists in .*; choose another name with --name$/);
    assert.deepEqual(await storeBytes(target), before);
    const renamed = await runCli(['import', file, '--data-dir', target, '--name', 'acme web (2)']);
    assert.equal(renamed.code, 0);
    assert.match(renamed.stdout, /^imported "acme web \(2\)" as session 3 with 3 targets/);
  });
});

/** The one JSON line a lock socket answers (src/store/lock-socket.ts), or undefined. */
function lockAnswer(path: string): Promise<{ state?: string; command?: string } | undefined> {
  return new Promise((resolve) => {
    let text = '';
    const socket = connect(path);
    socket.on('data', (chunk) => (text += chunk));
    socket.on('error', () => resolve(undefined));
    socket.on('close', () => {
      try {
        resolve(JSON.parse(text.split('\n')[0]!));
      } catch {
        resolve(undefined);
      }
    });
  });
}

test('while another command holds the directory (an import-har reading its standard input), a command or a start is told so, not sent to a server that is not there', async () => {
  const dir = await tempDir();
  const file = join(await tempDir(), 'b.json');
  await writeFile(file, bundle('n', ['http://a.example/']));
  assert.equal((await runCli(['import', file, '--data-dir', dir])).code, 0);
  const holder = spawn(process.execPath, [join(PROJECT_ROOT, 'dist', 'assessd.cjs'), 'import-har', '-', '--target', '1', '--data-dir', dir], { stdio: ['pipe', 'pipe', 'pipe'] });
  try {
    // its lock socket answers that it owns the directory, and whose it is, from its first answer (an
    // export polling instead would compete for the directory, and could take it first)
    let answer: { state?: string; command?: string } | undefined;
    for (let i = 0; i < 400 && answer?.state !== 'owner'; i++) {
      assert.equal(holder.exitCode, null, 'the import-har ended before it held the directory');
      const socket = (await readdir(dir)).find((name) => name.startsWith(`.assessd-lock-${holder.pid}-`) && name.endsWith('.sock'));
      answer = socket === undefined ? undefined : await lockAnswer(join(dir, socket));
      if (answer?.state !== 'owner') await new Promise((r) => setTimeout(r, 25));
    }
    assert.equal(answer?.command, 'import-har', JSON.stringify(answer));
    const refused = await runCli(['export', '--data-dir', dir, '--session', '2']);
    const message = `data directory ${dir} is in use by assessd import-har (process ${holder.pid}): try again once it has ended`;
    assertRefused(refused, new RegExp(`^assessd: export: ${message.replace(/[.()]/g, '\\$&')}$`));
    const start = await runCli(['--port', '0', '--data-dir', dir]);
    assert.equal(start.code, 1);
    assert.equal(start.stderr, `assessd: ${message}\n`);
    holder.stdin.end(harOf([{ url: 'http://a.example/x' }]));
    assert.equal(await new Promise((resolve) => holder.on('close', resolve)), 0);
  } finally {
    holder.kill('SIGKILL');
  }
});

describe('while a server holds the directory', () => {
  let dir: string;
  let server: ChildServer;
  before(async () => {
    dir = await tempDir();
    server = await spawnServer(['--port', '0', '--data-dir', dir]);
  });
  after(() => stop(server));

  test('export refuses in one line naming the server and the API call to use instead, which works pasted', async () => {
    const out = join(await tempDir(), 'x.json');
    const run = await runCli(['export', '--data-dir', dir, '--session', '1', '--out', out]);
    // the server's own address, as its lock advertises it, and its token: a command the user can paste
    const auth = `-H "Authorization: Bearer $(cat ${dir}/token)"`.replace(/[$()./]/g, '\\$&');
    assertRefused(run, new RegExp(`process ${server.proc.pid}.*use its API instead: curl -f ${auth} -o ${out.replace(/\./g, '\\.')} ${server.url.replace(/\./g, '\\.')}/api/v1/bundles/1$`));
    const pasted = await shell(suggested(run.stderr));
    assert.equal(pasted.code, 0, pasted.stderr);
    assert.equal(JSON.parse(await readFile(out, 'utf8')).session.name, 'default session');
  });

  test('import refuses in one line naming the POST to use instead, and changes nothing', async () => {
    const file = join(await tempDir(), 'b.json');
    await writeFile(file, bundle('n', ['http://a.example/']));
    const before = await storeBytes(dir);
    const run = await runCli(['import', file, '--data-dir', dir, '--name', 'x y']);
    const auth = `-H "Authorization: Bearer $(cat ${dir}/token)"`.replace(/[$()./]/g, '\\$&');
    assertRefused(run, new RegExp(`process ${server.proc.pid}.*use its API instead: curl ${auth} -H 'Content-Type: application/json' --data-binary @${file} '${server.url.replace(/\./g, '\\.')}/api/v1/bundles/\\?name=x%20y'$`));
    assert.deepEqual(await storeBytes(dir), before);
    assert.equal((await request(server.url, '/api/v1/sessions/')).json.data.length, 1);
    // pasted, the suggestion imports through the server
    const pasted = await shell(suggested(run.stderr));
    assert.equal(pasted.code, 0, pasted.stderr);
    assert.equal(JSON.parse(pasted.stdout).status, 'success', pasted.stdout);
    assert.deepEqual((await request(server.url, '/api/v1/sessions/')).json.data.map((row: { name: string }) => row.name), ['default session', 'x y']);
  });
});

for (const fileLeft of [false, true]) {
  test(`a server given its token (ASSESSD_TOKEN${fileLeft ? ', beside a token file an earlier start made' : ', no token file'}): the suggested call sends $ASSESSD_TOKEN, and works pasted where it is set`, async () => {
    const dir = await tempDir();
    if (fileLeft) await stop(await spawnServer(['--port', '0', '--data-dir', dir]));
    const token = 'given-token-0123456789';
    const server = await spawnServer(['--port', '0', '--data-dir', dir], { ASSESSD_TOKEN: token });
    try {
      const out = join(await tempDir(), 'given.json');
      const run = await runCli(['export', '--data-dir', dir, '--session', '1', '--out', out]);
      // the file's token is not this server's: a call reading it was refused (401)
      assertRefused(run, /use its API instead: curl -f -H "Authorization: Bearer \$ASSESSD_TOKEN" -o /);
      const pasted = await shell(suggested(run.stderr), { ASSESSD_TOKEN: token });
      assert.equal(pasted.code, 0, pasted.stderr);
      assert.equal(JSON.parse(await readFile(out, 'utf8')).session.name, 'default session');
    } finally {
      await stop(server);
    }
  });
}

test('after a server was killed (-9), its directory is exported and imported into at once', async () => {
  const dir = await tempDir();
  const server = await spawnServer(['--port', '0', '--data-dir', dir]);
  assert.equal((await request(server.url, '/api/v1/targets/', { method: 'POST', form: { target_url: 'http://killed.example/' } })).status, 201);
  server.proc.kill('SIGKILL');
  await server.exited;
  const run = await runCli(['export', '--data-dir', dir, '--session', '1']);
  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(JSON.parse(run.stdout).targets.map((t: any) => t.target_url), ['http://killed.example/']);
  const file = join(await tempDir(), 'k.json');
  await writeFile(file, bundle('after kill', ['http://other.example/']));
  assert.equal((await runCli(['import', file, '--data-dir', dir])).code, 0);
});

describe('refusals: exit 1 and one line', () => {
  let source: { dir: string; exported: any };
  before(async () => (source = await stoppedServerDir()));

  test('export: missing or bad --session, unknown session, no data, bad flag, unwritable --out', async () => {
    const empty = await tempDir();
    assertRefused(await runCli(['export', '--data-dir', source.dir]), /^assessd: export: --session is required/);
    assertRefused(await runCli(['export', '--data-dir', source.dir, '--session', 'two']), /--session must be a session id \(an unsigned integer\), not "two"/);
    assertRefused(await runCli(['export', '--data-dir', source.dir, '--session', '9']), new RegExp(`no session 9 in ${source.dir}$`));
    assertRefused(await runCli(['export', '--data-dir', empty, '--session', '1']), new RegExp(`no assessd data in ${empty} \\(no sessions.json\\)$`));
    assert.deepEqual(await readdir(empty), [], 'nothing created in a directory without data');
    assertRefused(await runCli(['export', '--data-dir', source.dir, '--session', '1', '--bogus']), /Unknown option '--bogus'/);
    assertRefused(await runCli(['export', '--data-dir', source.dir, '--session', '1', 'extra']), /unexpected argument "extra"/);
    assertRefused(await runCli(['export', '--data-dir', source.dir, '--session', '1', '--out', join(empty, 'no', 'such', 'dir', 'f.json')]), /cannot write .*f\.json: ENOENT/);
  });

  test('export by a user who may not read the data directory: it says so, not "no assessd data"', async (t) => {
    if (process.getuid?.() !== 0) return t.skip('needs root, to run the command as nobody');
    // the store's directory is 0700, root's
    const run = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
      // without the coverage's directory, which nobody may write to (node hands NODE_V8_COVERAGE to every child)
      execFile('runuser', ['-u', 'nobody', '--', 'env', '-u', 'NODE_V8_COVERAGE', process.execPath, join(PROJECT_ROOT, 'dist', 'assessd.cjs'), 'export', '--data-dir', source.dir, '--session', '1'], (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      ),
    );
    assertRefused(run, new RegExp(`cannot read the data directory ${source.dir}: EACCES`));
  });

  test('export from a directory on a read-only file system (an archive): says so, and how to export from it', async (t) => {
    const view = await tempDir();
    try {
      execFileSync('mount', ['--bind', source.dir, view], { stdio: 'ignore' });
    } catch {
      return t.skip('needs root, to mount a read-only view of the directory');
    }
    try {
      execFileSync('mount', ['-o', 'remount,bind,ro', view], { stdio: 'ignore' });
      assertRefused(
        await runCli(['export', '--data-dir', view, '--session', '1']),
        /cannot create its lock socket: .*EROFS.* \(its file system is read-only, and assessd writes in its data directory even to export from it: copy the directory with cp -a .*--data-dir\)$/,
      );
    } finally {
      execFileSync('umount', [view]);
    }
  });

  test('export: an --out inside the data directory (its journal, a snapshot, the token, through a link too), a directory or empty is refused; the store unchanged', async () => {
    const dir = source.dir;
    const before = await storeBytes(dir);
    const link = join(await tempDir(), 'data');
    await symlink(dir, link);
    for (const out of [join(dir, 'journal.jsonl'), join(dir, 'sessions.json'), join(dir, 'token'), join(dir, 'new.json'), join(dir, 'outputs', 'x.json'), join(link, 'journal.jsonl')]) {
      assertRefused(await runCli(['export', '--data-dir', dir, '--session', '1', '--out', out]), /is inside the data directory .*: write the bundle elsewhere$/);
    }
    assertRefused(await runCli(['export', '--data-dir', dir, '--session', '1', '--out', tmpdir()]), /is a directory: name a file in it$/);
    assertRefused(await runCli(['export', '--data-dir', dir, '--session', '1', '--out', '']), /--out is empty/);
    assert.deepEqual(await storeBytes(dir), before);
  });

  test('import: no file, a missing file, and each kind of bad bundle, naming the problem; the store unchanged', async () => {
    const dir = source.dir;
    const before = await storeBytes(dir);
    const files = await tempDir();
    const write = async (name: string, text: string) => {
      const path = join(files, name);
      await writeFile(path, text);
      return path;
    };
    assertRefused(await runCli(['import', '--data-dir', dir]), /^assessd: import: import takes one FILE/);
    assertRefused(await runCli(['import', join(files, 'absent.json'), '--data-dir', dir]), /cannot read .*absent\.json: ENOENT$/);
    assertRefused(await runCli(['import', await write('a.json', '{oops'), '--data-dir', dir]), /a\.json: Bundle is not valid JSON$/);
    assertRefused(await runCli(['import', await write('b.json', bundle('n', [], { version: 7 })), '--data-dir', dir]), /b\.json: Bundle version 7 is not supported: this build reads version 1$/);
    assertRefused(await runCli(['import', await write('c.json', bundle('n', ['http://ok.example/', 'gopher://x'])), '--data-dir', dir]), /c\.json: targets\[1\]\.target_url is not an absolute http\(s\) URL$/);
    assertRefused(await runCli(['import', await write('d.json', bundle('n', [])), '--data-dir', dir, '--name', '']), /Session name must be 1 to 255 characters$/);
    assert.deepEqual(await storeBytes(dir), before);
  });

  test('import onto a full disk: one line naming the data directory (a write on a descriptor names no file); nothing imported', async (t) => {
    const dir = await tempDir();
    if (!mountTmpfs(dir, '256k')) return t.skip('this machine does not let the test mount a tmpfs (needs root)');
    try {
      const files = await tempDir();
      const small = join(files, 'small.json');
      await writeFile(small, bundle('small', ['http://a.example/']));
      assert.equal((await runCli(['import', small, '--data-dir', dir])).code, 0);
      // ~600 KB of targets into what is left of 256 KiB
      const large = join(files, 'large.json');
      await writeFile(large, bundle('large', Array.from({ length: 5000 }, (_, i) => `http://host-${i}.example/${'p'.repeat(100)}`)));
      assertRefused(await runCli(['import', large, '--data-dir', dir]), new RegExp(`^assessd: import: ${dir}: ENOSPC: no space left on device, write$`));
      const listed = await runCli(['export', '--data-dir', dir, '--session', '3']);
      assertRefused(listed, new RegExp(`no session 3 in ${dir}$`));
    } finally {
      execFileSync('umount', [dir]);
    }
  });

  test('a corrupt data directory: one line naming the file', async () => {
    const dir = await tempDir();
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, 'sessions.json'), '{oops');
    assertRefused(await runCli(['export', '--data-dir', dir, '--session', '1']), new RegExp(`${join(dir, 'sessions.json')}: not valid JSON`));
    const file = join(await tempDir(), 'ok.json');
    await writeFile(file, bundle('n', []));
    assertRefused(await runCli(['import', file, '--data-dir', dir]), /sessions\.json: not valid JSON/);
    assert.equal(await readFile(join(dir, 'sessions.json'), 'utf8'), '{oops');
  });

  test('--help of each command prints its usage and exits 0', async () => {
    for (const command of ['export', 'import']) {
      const run = await runCli([command, '--help']);
      assert.equal(run.code, 0);
      assert.match(run.stdout, new RegExp(`^Usage: assessd ${command} `));
    }
    assert.match((await runCli(['--help'])).stdout, /assessd export --session ID/);
  });
});

test('export into a pipe whose reader stops early (| head): one line saying so, exit 1, no stack trace', async () => {
  const dir = await tempDir();
  const server = await spawnServer(['--port', '0', '--data-dir', dir]);
  try {
    // an export larger than a pipe holds (64 KiB), so that the writes meet the closed pipe
    const targets = { target_url: Array.from({ length: 3000 }, (_, i) => `http://h${i}.example/`) };
    assert.equal((await request(server.url, '/api/v1/targets/', { method: 'POST', form: targets })).status, 201);
  } finally {
    await stop(server);
  }
  const line = `${JSON.stringify(process.execPath)} ${JSON.stringify(join(PROJECT_ROOT, 'dist', 'assessd.cjs'))} export --data-dir ${JSON.stringify(dir)} --session 1 | head -c 10 > /dev/null; echo "status \${PIPESTATUS[0]}" >&2`;
  const run = await new Promise<{ stderr: string }>((resolve) => execFile('/bin/bash', ['-c', line], (_err, _stdout, stderr) => resolve({ stderr })));
  assert.match(run.stderr, /^assessd: export: the standard output was closed before all of it was written \(EPIPE: its reader stopped\)\nstatus 1\n$/);
});

