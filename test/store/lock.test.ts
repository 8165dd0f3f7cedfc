import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { mkdir, readdir, rename, symlink, writeFile } from 'node:fs/promises';
import { connect, Server } from 'node:net';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { PROJECT_ROOT } from '../../src/paths.ts';
import { abstractLockAddress, acquireLock, DataDirInUseError, LEGACY_LOCK_FILE, LOCK_SOCKET_PREFIX, type Lock, type LockKind } from '../../src/store/lock.ts';
import { abstractNameFree, MAX_SOCKET_PATH } from '../../src/store/lock-socket.ts';
import { openStore } from '../../src/store/store.ts';
import { request, spawnServer, tempDir, type ChildServer, rememberPrintedToken } from '../helpers/server.ts';

const MAIN = join(PROJECT_ROOT, 'dist', 'assessd.cjs');
const noLog = () => {};

async function lockSockets(dir: string): Promise<string[]> {
  return (await readdir(dir)).filter((name) => name.startsWith(LOCK_SOCKET_PREFIX));
}

const KINDS: LockKind[] = process.platform === 'linux' ? ['file', 'abstract'] : ['file'];

/**
 * A test run once per lock kind, `ASSESSD_LOCK_KIND` set meanwhile: the in-process locks and
 * stores, and the servers it spawns (they inherit the environment), all use that kind.
 */
function lockTest(name: string, options: { timeout?: number; skip?: string | false }, fn: (kind: LockKind, t: TestContext) => Promise<void>): void {
  for (const kind of KINDS) {
    test(`${name} [${kind} socket]`, options, async (t) => {
      process.env.ASSESSD_LOCK_KIND = kind;
      try {
        await fn(kind, t);
      } finally {
        delete process.env.ASSESSD_LOCK_KIND;
      }
    });
  }
}

/**
 * The abstract socket names listening now (without their leading NUL), from /proc/net/unix. Only
 * listening sockets (flag __SO_ACCEPTCON, 0x10000): a connection the lock has accepted (a refused
 * start asking who holds it) shows the same name until it is closed.
 */
function abstractSockets(): string[] {
  return readFileSync('/proc/net/unix', 'utf8').split('\n').flatMap((line) => {
    const [, , , flags, , , , path] = line.trim().split(/\s+/);
    const listening = (Number.parseInt(flags ?? '0', 16) & 0x10000) !== 0;
    return listening && path?.startsWith('@') ? [path.slice(1)] : [];
  });
}

/** How many locks `dir` has now, of the kind: socket files, or its abstract name listening. */
async function locksOf(dir: string, kind: LockKind): Promise<number> {
  if (kind === 'file') return (await lockSockets(dir)).length;
  assert.deepEqual(await lockSockets(dir), [], 'an abstract lock makes no socket file');
  return abstractSockets().filter((name) => `\0${name}` === abstractLockAddress(dir)).length;
}

/** The pid the lock of `dir` names to whoever is refused it. */
async function ownerPid(dir: string): Promise<number | undefined> {
  const lock = await acquireLock(dir, noLog).catch((err: unknown) => {
    assert.ok(err instanceof DataDirInUseError, String(err));
    return err;
  });
  if (lock instanceof DataDirInUseError) return lock.pid;
  await lock.release();
  return assert.fail('nobody held the lock');
}

/** Makes this process's socket files fail to bind with `code`, as on a file system without them; abstract names still bind. */
function noSocketFiles(t: TestContext, code: string) {
  const listen = Server.prototype.listen;
  return t.mock.method(Server.prototype, 'listen', function (this: Server, ...args: unknown[]) {
    if (typeof args[0] === 'string' && !args[0].startsWith('\0')) {
      process.nextTick(() => this.emit('error', Object.assign(new Error(`listen ${code}: injected, ${args[0] as string}`), { code, syscall: 'listen' })));
      return this;
    }
    return listen.apply(this, args as Parameters<typeof listen>);
  });
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
      if (!m) return;
      rememberPrintedToken(output);
      resolve(m[1]);
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

lockTest('the lock is a listening socket; a second one is refused naming the pid and the advertised URL; release removes it', {}, async (kind) => {
  const dir = await tempDir();
  const lock = await acquireLock(dir, noLog);
  assert.equal(lock.kind, kind);
  assert.equal(await locksOf(dir, kind), 1);
  if (kind === 'file') {
    const [name] = await lockSockets(dir);
    assert.match(name, new RegExp(`^\\.assessd-lock-${process.pid}-[0-9a-f]{8}\\.sock$`));
    assert.ok(statSync(join(dir, name)).isSocket());
  }
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
  assert.equal(await locksOf(dir, kind), 0);
  await (await acquireLock(dir, noLog)).release();
});

lockTest('concurrent acquisitions in one process: exactly one wins, the others name it', {}, async (kind) => {
  for (let round = 0; round < 10; round++) {
    const dir = await tempDir();
    const results = await Promise.allSettled(Array.from({ length: 8 }, () => acquireLock(dir, noLog)));
    const won = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    assert.equal(won.length, 1, JSON.stringify(results.map((r) => r.status)));
    for (const r of results) if (r.status === 'rejected') assert.ok(r.reason instanceof DataDirInUseError, String(r.reason));
    assert.equal(await locksOf(dir, kind), 1);
    await won[0].release();
    assert.deepEqual(await readdir(dir), []);
  }
});

test('acquisitions of both kinds at once on one directory: exactly one wins, whatever its kind', { skip: process.platform !== 'linux' && 'abstract sockets are Linux only' }, async () => {
  const wins = { file: 0, abstract: 0 };
  for (let round = 0; round < 20; round++) {
    const dir = await tempDir();
    const kinds: LockKind[] = ['file', 'abstract', 'file', 'abstract', 'file', 'abstract'];
    const results = await Promise.allSettled(kinds.map((kind) => acquireLock(dir, noLog, { kind })));
    const won = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    assert.equal(won.length, 1, JSON.stringify(results.map((r) => (r.status === 'rejected' ? String(r.reason) : r.status))));
    for (const r of results) if (r.status === 'rejected') assert.ok(r.reason instanceof DataDirInUseError, String(r.reason));
    wins[won[0].kind]++;
    // whichever kind holds it, the other kind is refused too
    for (const kind of KINDS) await assert.rejects(acquireLock(dir, noLog, { kind }), DataDirInUseError);
    await won[0].release();
    assert.deepEqual(await readdir(dir), []);
  }
  assert.ok(wins.file + wins.abstract === 20, JSON.stringify(wins));
});

test('a file system without socket files (bind fails with ENOSYS, EPERM, EOPNOTSUPP, EINVAL): the abstract socket instead, with a log line; the lock holds against both kinds', { skip: process.platform !== 'linux' && 'abstract sockets are Linux only' }, async (t) => {
  for (const code of ['ENOSYS', 'EPERM', 'EOPNOTSUPP', 'EINVAL']) {
    const dir = await tempDir();
    const logs: string[] = [];
    const bind = noSocketFiles(t, code);
    const lock = await acquireLock(dir, (line) => logs.push(line));
    assert.equal(lock.kind, 'abstract');
    assert.deepEqual(logs, [`data directory ${dir}: its file system cannot hold a socket file (${code}): locked by an abstract socket named after its device and inode instead`]);
    assert.equal(await locksOf(dir, 'abstract'), 1);
    await assert.rejects(acquireLock(dir, noLog), (err: DataDirInUseError) => err.pid === process.pid);
    bind.mock.restore();
    // a process on a file system that does hold sockets files is refused as well
    await assert.rejects(acquireLock(dir, noLog, { kind: 'file' }), (err: DataDirInUseError) => err.pid === process.pid);
    await lock.release();
    assert.deepEqual(await readdir(dir), []);
  }
});

test('an abstract name is found free by binding it, which is undone at once; a name in use is not free, and its holder keeps it', { skip: process.platform !== 'linux' && 'abstract sockets are Linux only' }, async () => {
  const address = `\0assessd-test-free-${process.pid}-${Date.now()}`;
  assert.equal(await abstractNameFree(address), true);
  // undone: free again, and bindable by anyone
  assert.equal(await abstractNameFree(address), true);
  const holder = new Server((conn) => conn.end('here\n'));
  await new Promise<void>((resolve) => holder.listen(address, resolve));
  try {
    assert.equal(await abstractNameFree(address), false);
    const answer = await new Promise<string>((resolve, reject) => {
      const conn = connect(address);
      let text = '';
      conn.on('data', (chunk) => (text += chunk)).on('end', () => resolve(text)).on('error', reject);
    });
    assert.equal(answer, 'here\n');
  } finally {
    await new Promise((resolve) => holder.close(resolve));
  }
});

test('the abstract lock is the directory, not its path: a symlink to a locked directory is refused', { skip: process.platform !== 'linux' && 'abstract sockets are Linux only' }, async () => {
  const base = await tempDir();
  const dir = join(base, 'data');
  await mkdir(dir);
  await symlink(dir, join(base, 'link'));
  const lock = await acquireLock(dir, noLog, { kind: 'abstract' });
  await assert.rejects(acquireLock(join(base, 'link'), noLog, { kind: 'abstract' }), (err: DataDirInUseError) => err.pid === process.pid);
  await lock.release();
  await (await acquireLock(join(base, 'link'), noLog, { kind: 'abstract' })).release();
});

test('outside Linux, a file system without socket files is refused with a clear message', async (t) => {
  const dir = await tempDir();
  noSocketFiles(t, 'ENOSYS');
  const platform = Object.getOwnPropertyDescriptor(process, 'platform')!;
  Object.defineProperty(process, 'platform', { value: 'darwin' });
  try {
    await assert.rejects(acquireLock(dir, noLog), {
      message: `data directory ${dir}: its file system cannot hold the lock's socket file (ENOSYS), and outside Linux there is no other lock: use a directory on a local file system`,
    });
    await assert.rejects(acquireLock(dir, noLog, { kind: 'abstract' }), { message: `data directory ${dir}: an abstract lock socket needs Linux` });
  } finally {
    Object.defineProperty(process, 'platform', platform);
  }
  assert.deepEqual(await readdir(dir), []);
});

for (const [what, content] of [
  ['pid 1 (init, alive)', '1\n'],
  ["this test's own live pid", `${process.pid}\n`],
  ['a dead pid', '999999999\n'],
  ['nothing', ''],
  ['no pid', 'not a pid\n'],
] as const) {
  lockTest(`a pid file of an earlier version naming ${what} blocks nothing: removed with a log line`, {}, async () => {
    const dir = await tempDir();
    await writeFile(join(dir, LEGACY_LOCK_FILE), content);
    const logs: string[] = [];
    const store = await openStore({ dir, defaults: [], log: (line) => logs.push(line) });
    assert.ok(!existsSync(join(dir, LEGACY_LOCK_FILE)));
    await store.close();
    assert.match(logs.join('\n'), /removed assessd\.lock, the pid file of an earlier version/);
  });
}

lockTest('a planted lock naming live unrelated pids does not stop the compiled server', {}, async (kind) => {
  for (const pid of [1, process.pid]) {
    const dir = await tempDir();
    await writeFile(join(dir, LEGACY_LOCK_FILE), `${pid}\n`);
    // a file that looks like a lock socket but that nobody listens on: as stale as a dead one
    await writeFile(join(dir, `${LOCK_SOCKET_PREFIX}${pid}-0123abcd.sock`), '');
    const server = await spawnServer(['--port', '0', '--data-dir', dir]);
    try {
      assert.equal(await ownerPid(dir), server.proc.pid);
      assert.equal(await locksOf(dir, kind), 1);
    } finally {
      await stopChild(server);
    }
    assert.match(server.output(), new RegExp(`taking over the stale lock of process ${pid} in `));
    assert.equal(await locksOf(dir, kind), 0);
  }
});

lockTest('a second live server is refused at once, exit 1, and the first keeps serving its data', {}, async (kind) => {
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
  assert.equal(await locksOf(dir, kind), 0);
});

lockTest('an owner too busy to answer (a long synchronous load) is still alive: refused, naming its pid where it can', {}, async (kind) => {
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
    // a socket file's name holds its pid; an abstract name does not, and the owner cannot say it
    const pid = kind === 'file' ? holder.pid : undefined;
    await assert.rejects(acquireLock(dir, noLog), (err: DataDirInUseError) => {
      assert.equal(err.pid, pid);
      assert.equal(err.message, `data directory ${dir} is in use by ${pid === undefined ? 'a process too busy to say which' : `process ${pid}`}`);
      return true;
    });
  } finally {
    holder.kill('SIGKILL');
  }
});

/** Restarts after kill -9 (the lock of an earlier build let 3 of 10 start): LOCK_RESTARTS=20 for a longer hunt (npm run test:long). */
const RESTARTS = Number(process.env.LOCK_RESTARTS ?? 3);

lockTest(`${RESTARTS} restarts under npm start, each right after kill -9 of the whole group: all start, no write lost`, { timeout: 180_000 }, async () => {
  const dir = await tempDir();
  for (let round = 0; round < RESTARTS; round++) {
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

lockTest('a zombie (killed, not reaped by its parent) does not block a start', { skip: process.platform !== 'linux' && 'reads /proc' }, async (kind) => {
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
    // an abstract name leaves no file behind: nothing stale to take over
    if (kind === 'file') assert.match(next.output(), new RegExp(`taking over the stale lock of process ${pid} in `));
  } finally {
    killGroup(parent.proc);
  }
});

lockTest('four servers racing for a fresh dir: exactly one starts, the others exit 1 naming it, the winner undisturbed', { timeout: 120_000 }, async (kind) => {
  for (let round = 0; round < 4; round++) {
    const dir = await tempDir();
    const { started, refusals } = await race(dir, 4);
    try {
      assert.equal(started.length, 1, refusals.join('\n'));
      const [winner] = started;
      for (const refusal of refusals) assert.ok(refusal.endsWith(`exited with 1 before listening: ${inUse(dir, winner.proc.pid!)}\n`), refusal);
      await createSession(winner.url, 'after the race');
      assert.deepEqual(await sessionNames(winner.url), ['default session', 'after the race']);
      assert.equal(await locksOf(dir, kind), 1);
    } finally {
      await Promise.all(started.map(stopChild));
    }
  }
});

lockTest('four servers racing for a dir a power loss left (a dead socket and a pid file, both naming a live pid): exactly one starts, with the data', { timeout: 120_000 }, async (kind) => {
  for (let round = 0; round < 3; round++) {
    const dir = await tempDir();
    const killed = await spawnServer(['--port', '0', '--data-dir', dir]);
    try {
      await createSession(killed.url, 'before the kill');
    } finally {
      killed.proc.kill('SIGKILL');
      await killed.exited;
    }
    if (kind === 'file') {
      const [leftover] = await lockSockets(dir);
      assert.ok(statSync(join(dir, leftover)).isSocket(), 'kill -9 leaves its socket file');
      // after a reboot the dead server's pid names another live process
      await rename(join(dir, leftover), join(dir, leftover.replace(`-${killed.proc.pid}-`, '-1-')));
    } else {
      assert.equal(await locksOf(dir, kind), 0, 'kill -9 leaves no abstract name');
      // a socket file left by a run on a file system that held them
      await writeFile(join(dir, `${LOCK_SOCKET_PREFIX}1-0123abcd.sock`), '');
    }
    await writeFile(join(dir, LEGACY_LOCK_FILE), '1\n');
    const { started, refusals } = await race(dir, 4);
    try {
      assert.equal(started.length, 1, refusals.join('\n'));
      const [winner] = started;
      // a loser may be the one that removed the stale socket first, and says so before its refusal
      for (const refusal of refusals) {
        assert.match(refusal, /^server exited with 1 before listening: /);
        assert.ok(refusal.endsWith(`: ${inUse(dir, winner.proc.pid!)}\n`) || refusal.endsWith(`\n${inUse(dir, winner.proc.pid!)}\n`), `winner ${winner.proc.pid}; refused:\n${refusals.join('\n')}`);
      }
      assert.deepEqual(await sessionNames(winner.url), ['default session', 'before the kill']);
      assert.equal(await ownerPid(dir), winner.proc.pid);
      assert.equal(await locksOf(dir, kind), 1);
    } finally {
      await Promise.all(started.map(stopChild));
    }
  }
});

lockTest(`a data dir path longer than a socket path may be (${MAX_SOCKET_PATH} bytes): lock, refusal, takeover after kill -9`, {}, async (kind) => {
  const base = await tempDir();
  const dir = join(base, 'a-rather-long-directory-name-'.repeat(3), 'and-another-level-of-it-'.repeat(2), 'data');
  assert.ok(Buffer.byteLength(dir) > 108);
  const first = await spawnServer(['--port', '0', '--data-dir', dir]);
  try {
    await createSession(first.url, 'long');
    assert.equal(await locksOf(dir, kind), 1);
    if (kind === 'file') assert.ok(statSync(join(dir, (await lockSockets(dir))[0])).isSocket());
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
  assert.equal(await locksOf(dir, kind), 0);
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
