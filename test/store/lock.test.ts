import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { mkdir, readdir, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { PROJECT_ROOT } from '../../src/paths.ts';
import { acquireLock, DataDirInUseError, LEGACY_LOCK_FILE, LOCK_SOCKET_PREFIX, type Lock } from '../../src/store/lock.ts';
import { MAX_SOCKET_PATH } from '../../src/store/lock-socket.ts';
import { openStore } from '../../src/store/store.ts';
import { request, spawnServer, tempDir, type ChildServer } from '../helpers/server.ts';

const MAIN = join(PROJECT_ROOT, 'dist', 'main.js');
const noLog = () => {};

async function lockSockets(dir: string): Promise<string[]> {
  return (await readdir(dir)).filter((name) => name.startsWith(LOCK_SOCKET_PREFIX));
}

function inUse(dir: string, pid: number): string {
  return `assessd: data directory ${dir} is in use by process ${pid}`;
}

/** A process started in its own group, its output gathered, its start-up URL awaited. */
function launch(command: string, args: string[]) {
  const proc = spawn(command, args, { cwd: PROJECT_ROOT, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  const listening = new Promise<string>((resolve, reject) => {
    proc.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const m = /assessd listening on (http:\/\/\S+) /.exec(output);
      if (m) resolve(m[1]);
    });
    proc.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    void exited.then((code) => reject(new Error(`exited with ${code} before listening: ${output}`)));
  });
  return { proc, exited, listening, output: () => output };
}

function killGroup(proc: ChildProcess): void {
  try {
    process.kill(-proc.pid!, 'SIGKILL');
  } catch {
    // the group is gone already (its server was refused)
  }
}

/** Starts `count` servers at once; each either starts or is refused. */
async function race(dir: string, count: number) {
  const outcomes = await Promise.all(
    Array.from({ length: count }, () =>
      spawnServer(['--port', '0', '--data-dir', dir]).then(
        (server) => ({ server, error: '' }),
        (err: Error) => ({ server: undefined, error: err.message }),
      ),
    ),
  );
  return { started: outcomes.flatMap((o) => (o.server ? [o.server] : [])), refusals: outcomes.flatMap((o) => (o.server ? [] : [o.error])) };
}

/** The output of a server that must not start (one that does is killed, and the test fails). */
async function refusedStart(dir: string): Promise<string> {
  const server = await spawnServer(['--port', '0', '--data-dir', dir]).catch((err: Error) => err.message);
  if (typeof server === 'string') return server;
  server.proc.kill('SIGKILL');
  return assert.fail('a second server started');
}

async function stopChild(server: ChildServer): Promise<void> {
  server.proc.kill('SIGTERM');
  assert.equal(await server.exited, 0);
}

async function createSession(url: string, name: string): Promise<void> {
  assert.equal((await request(url, '/api/v1/sessions/', { method: 'POST', form: { name } })).status, 201);
}

async function sessionNames(url: string): Promise<string[]> {
  return (await request(url, '/api/v1/sessions/')).json.data.map((s: { name: string }) => s.name);
}

function isZombie(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '').startsWith('Z');
  } catch {
    return false;
  }
}

test('the lock is a listening socket in the data dir; a second one is refused naming the pid and the advertised URL; release removes it', async () => {
  const dir = await tempDir();
  const lock = await acquireLock(dir, noLog);
  const [name] = await lockSockets(dir);
  assert.match(name, new RegExp(`^\\.assessd-lock-${process.pid}-[0-9a-f]{8}\\.sock$`));
  assert.ok(statSync(join(dir, name)).isSocket());
  await assert.rejects(acquireLock(dir, noLog), (err: unknown) => {
    assert.ok(err instanceof DataDirInUseError);
    assert.equal(err.message, `data directory ${dir} is in use by process ${process.pid}`);
    assert.deepEqual([err.code, err.pid, err.url], ['ERR_DATA_DIR_IN_USE', process.pid, undefined]);
    return true;
  });
  lock.advertise({ url: 'http://127.0.0.1:8009' });
  await assert.rejects(acquireLock(dir, noLog), (err: DataDirInUseError) => err.url === 'http://127.0.0.1:8009');
  await lock.release();
  await lock.release();
  assert.deepEqual(await readdir(dir), []);
  await (await acquireLock(dir, noLog)).release();
});

test('concurrent acquisitions in one process: exactly one wins, the others name it', async () => {
  for (let round = 0; round < 10; round++) {
    const dir = await tempDir();
    const results = await Promise.allSettled(Array.from({ length: 8 }, () => acquireLock(dir, noLog)));
    const won = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    assert.equal(won.length, 1, JSON.stringify(results.map((r) => r.status)));
    for (const r of results) if (r.status === 'rejected') assert.ok(r.reason instanceof DataDirInUseError, String(r.reason));
    assert.equal((await lockSockets(dir)).length, 1);
    await won[0].release();
    assert.deepEqual(await readdir(dir), []);
  }
});

for (const [what, content] of [
  ['pid 1 (init, alive)', '1\n'],
  ["this test's own live pid", `${process.pid}\n`],
  ['a dead pid', '999999999\n'],
  ['nothing', ''],
  ['no pid', 'not a pid\n'],
] as const) {
  test(`a pid file of an earlier version naming ${what} blocks nothing: removed with a log line`, async () => {
    const dir = await tempDir();
    await writeFile(join(dir, LEGACY_LOCK_FILE), content);
    const logs: string[] = [];
    const store = await openStore({ dir, defaults: [], log: (line) => logs.push(line) });
    assert.ok(!existsSync(join(dir, LEGACY_LOCK_FILE)));
    await store.close();
    assert.match(logs.join('\n'), /removed assessd\.lock, the pid file of an earlier version/);
  });
}

test('a planted lock naming live unrelated pids does not stop the compiled server', async () => {
  for (const pid of [1, process.pid]) {
    const dir = await tempDir();
    await writeFile(join(dir, LEGACY_LOCK_FILE), `${pid}\n`);
    // a file that looks like a lock socket but that nobody listens on: as stale as a dead one
    await writeFile(join(dir, `${LOCK_SOCKET_PREFIX}${pid}-0123abcd.sock`), '');
    const server = await spawnServer(['--port', '0', '--data-dir', dir]);
    try {
      assert.deepEqual((await lockSockets(dir)).map((name) => name.split('-')[2]), [String(server.proc.pid)]);
    } finally {
      await stopChild(server);
    }
    assert.match(server.output(), new RegExp(`taking over the stale lock of process ${pid} in `));
    assert.deepEqual(await lockSockets(dir), []);
  }
});

test('a second live server is refused at once, exit 1, and the first keeps serving its data', async () => {
  const dir = await tempDir();
  const first = await spawnServer(['--port', '0', '--data-dir', dir]);
  try {
    await createSession(first.url, 'kept');
    const second = await refusedStart(dir);
    assert.match(second, /^server exited with 1 before listening: /);
    assert.ok(second.endsWith(`${inUse(dir, first.proc.pid!)}\n`), second);
    assert.deepEqual(await sessionNames(first.url), ['default session', 'kept']);
    await createSession(first.url, 'after');
  } finally {
    await stopChild(first);
  }
  assert.deepEqual(await lockSockets(dir), []);
});

test('an owner too busy to answer (a long synchronous load) is still alive: refused, naming its pid', async () => {
  const dir = await tempDir();
  const lockModule = pathToFileURL(join(PROJECT_ROOT, 'src', 'store', 'lock.ts')).href;
  const holder = spawn(
    process.execPath,
    [
      '--import', 'tsx', '--input-type=module', '-e',
      `const { acquireLock } = await import(${JSON.stringify(lockModule)});
       await acquireLock(${JSON.stringify(dir)}, () => {});
       console.log('locked');
       Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 60000);`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  try {
    await new Promise((resolve, reject) => {
      holder.stdout!.once('data', resolve);
      holder.once('exit', (code) => reject(new Error(`the holder exited with ${code}`)));
    });
    await assert.rejects(acquireLock(dir, noLog), (err: DataDirInUseError) => err.pid === holder.pid);
  } finally {
    holder.kill('SIGKILL');
  }
});

test('ten restarts under npm start, each right after kill -9 of the whole group: all start, no write lost', { timeout: 180_000 }, async () => {
  const dir = await tempDir();
  for (let round = 0; round < 10; round++) {
    const run = launch('npm', ['start', '--', '--port', '0', '--data-dir', dir]);
    try {
      const url = await run.listening;
      assert.deepEqual(await sessionNames(url), ['default session', ...Array.from({ length: round }, (_, i) => `round ${i}`)]);
      await createSession(url, `round ${round}`);
    } finally {
      // npm and node both die; the server lingers as a zombie until something reaps it
      killGroup(run.proc);
    }
  }
});

test('a zombie (killed, not reaped by its parent) does not block a start', { skip: process.platform !== 'linux' && 'reads /proc' }, async () => {
  const dir = await tempDir();
  // sh starts the server, then becomes `sleep`, a parent that never waits for its children
  const parent = launch('sh', ['-c', `"$0" "$1" --port 0 --data-dir "$2" & echo "pid $!"; exec sleep 120`, process.execPath, MAIN, dir]);
  try {
    const url = await parent.listening;
    await createSession(url, 'before the kill');
    const pid = Number(/pid (\d+)/.exec(parent.output())![1]);
    process.kill(pid, 'SIGKILL');
    for (let tries = 0; tries < 1000 && !isZombie(pid); tries++) await new Promise((resolve) => setTimeout(resolve, 10));
    assert.ok(isZombie(pid), 'a zombie once killed');
    const next = await spawnServer(['--port', '0', '--data-dir', dir]);
    try {
      assert.ok(isZombie(pid), 'still a zombie while the next server started');
      assert.deepEqual(await sessionNames(next.url), ['default session', 'before the kill']);
    } finally {
      await stopChild(next);
    }
    assert.match(next.output(), new RegExp(`taking over the stale lock of process ${pid} in `));
  } finally {
    killGroup(parent.proc);
  }
});

test('four servers racing for a fresh dir: exactly one starts, the others exit 1 naming it, the winner undisturbed', { timeout: 120_000 }, async () => {
  for (let round = 0; round < 4; round++) {
    const dir = await tempDir();
    const { started, refusals } = await race(dir, 4);
    try {
      assert.equal(started.length, 1, refusals.join('\n'));
      const [winner] = started;
      for (const refusal of refusals) assert.ok(refusal.endsWith(`exited with 1 before listening: ${inUse(dir, winner.proc.pid!)}\n`), refusal);
      await createSession(winner.url, 'after the race');
      assert.deepEqual(await sessionNames(winner.url), ['default session', 'after the race']);
      assert.equal((await lockSockets(dir)).length, 1);
    } finally {
      await Promise.all(started.map(stopChild));
    }
  }
});

test('four servers racing for a dir a power loss left (a dead socket and a pid file, both naming a live pid): exactly one starts, with the data', { timeout: 120_000 }, async () => {
  for (let round = 0; round < 3; round++) {
    const dir = await tempDir();
    const killed = await spawnServer(['--port', '0', '--data-dir', dir]);
    try {
      await createSession(killed.url, 'before the kill');
    } finally {
      killed.proc.kill('SIGKILL');
      await killed.exited;
    }
    const [leftover] = await lockSockets(dir);
    assert.ok(statSync(join(dir, leftover)).isSocket(), 'kill -9 leaves its socket file');
    // after a reboot the dead server's pid names another live process
    await rename(join(dir, leftover), join(dir, leftover.replace(`-${killed.proc.pid}-`, '-1-')));
    await writeFile(join(dir, LEGACY_LOCK_FILE), '1\n');
    const { started, refusals } = await race(dir, 4);
    try {
      assert.equal(started.length, 1, refusals.join('\n'));
      const [winner] = started;
      for (const refusal of refusals) assert.ok(refusal.endsWith(`exited with 1 before listening: ${inUse(dir, winner.proc.pid!)}\n`), refusal);
      assert.deepEqual(await sessionNames(winner.url), ['default session', 'before the kill']);
      assert.deepEqual((await lockSockets(dir)).map((name) => name.split('-')[2]), [String(winner.proc.pid)]);
    } finally {
      await Promise.all(started.map(stopChild));
    }
  }
});

test(`a data dir path longer than a socket path may be (${MAX_SOCKET_PATH} bytes): lock, refusal, takeover after kill -9`, async () => {
  const base = await tempDir();
  const dir = join(base, 'a-rather-long-directory-name-'.repeat(3), 'and-another-level-of-it-'.repeat(2), 'data');
  assert.ok(Buffer.byteLength(dir) > 108);
  const first = await spawnServer(['--port', '0', '--data-dir', dir]);
  try {
    await createSession(first.url, 'long');
    const [name] = await lockSockets(dir);
    assert.ok(statSync(join(dir, name)).isSocket());
    const second = await refusedStart(dir);
    assert.ok(second.endsWith(`${inUse(dir, first.proc.pid!)}\n`), second);
  } finally {
    first.proc.kill('SIGKILL');
    await first.exited;
  }
  const next = await spawnServer(['--port', '0', '--data-dir', dir]);
  try {
    assert.deepEqual(await sessionNames(next.url), ['default session', 'long']);
  } finally {
    await stopChild(next);
  }
  assert.deepEqual(await lockSockets(dir), []);
  // libuv would have truncated a long path, binding somewhere above the directory
  for (let d = dirname(dir); d.startsWith(base); d = dirname(d)) {
    assert.deepEqual((await readdir(d)).filter((n) => !dir.startsWith(join(d, n))), [], d);
  }
});

test('without /proc/self/fd (macOS), a data dir path too long for a socket is refused with a clear message', async () => {
  const dir = join(await tempDir(), 'x'.repeat(120));
  await mkdir(dir);
  const platform = Object.getOwnPropertyDescriptor(process, 'platform')!;
  Object.defineProperty(process, 'platform', { value: 'darwin' });
  let lock: Lock | undefined;
  try {
    lock = await acquireLock(dir, noLog).catch((err: Error) => {
      assert.match(err.message, new RegExp(`^data directory ${dir}: the path is too long for its lock socket \\(\\d+ bytes with the socket's name, at most ${MAX_SOCKET_PATH}\\): use a shorter path$`));
      return undefined;
    });
  } finally {
    Object.defineProperty(process, 'platform', platform);
  }
  await lock?.release();
  assert.equal(lock, undefined);
  assert.deepEqual(await readdir(dir), []);
});
