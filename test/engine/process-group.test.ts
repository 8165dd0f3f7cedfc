import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, copyFileSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { checkProgram, endStaleGroup, runProgram, type RunOptions } from '../../src/engine/process-group.ts';
import { killLeftovers, parseProcStat, procRead, processStartTime, readProcStat, runMarker } from '../../src/engine/proc.ts';
import { groupStopped } from '../helpers/engine.ts';

const MiB = 1024 * 1024;
let dir = '';
let runs = 0;
/** Every group a test started, killed at the end whatever happened. */
const groups = new Set<number>();

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'assessd-pg-'));
});

after(() => {
  for (const pid of groups) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // gone already
    }
  }
  rmSync(dir, { recursive: true, force: true });
});

/** An executable test tool (the tool may be anything, a shell script included; the server runs no shell). */
function tool(name: string, text: string, mode = 0o755): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  chmodSync(path, mode);
  return path;
}

function run(options: Partial<RunOptions> & { program: string }) {
  const outputDir = join(dir, `run-${++runs}`);
  const handle = runProgram({ argv: [], outputDir, maxOutputBytes: MiB, timeoutMs: 10_000, killGraceMs: 2000, ...options });
  if (handle.pid > 0) groups.add(handle.pid);
  const stdout = () => readFileSync(join(outputDir, 'stdout.txt'), 'utf8');
  const stderr = () => readFileSync(join(outputDir, 'stderr.txt'), 'utf8');
  return { handle, outputDir, stdout, stderr };
}

async function until(condition: () => boolean, what: string, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await delay(10);
  }
}

const alive = (pid: number) => {
  const stat = readProcStat(pid);
  return stat !== undefined && stat.state !== 'Z';
};

/** The first line of a file that is still being written: a pid the tool printed. */
async function printedPid(read: () => string): Promise<number> {
  await until(() => /^\d+\n/.test(read()), 'the printed pid');
  return Number(read().split('\n')[0]);
}

const HOSTILE_ARGS = ['; rm -rf /', '$(id)', '`id`', '|', '&', '>', '*', 'two words', ' ', '', "it's \"quoted\"", '--flag=x y'];

test('each argv element arrives as one uninterpreted argument, stdout and stderr go to their files', async () => {
  const echo = tool('print-args', '#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a"; done\necho "to stderr" >&2\n');
  const { handle, stdout, stderr, outputDir } = run({ program: echo, argv: HOSTILE_ARGS });
  assert.ok(handle.pid > 0);
  const end = await handle.done;
  assert.equal(end.outcome, 'exited');
  assert.equal(end.exitCode, 0);
  assert.equal(end.signal, null);
  assert.deepEqual(stdout().split('\n').slice(0, -1), HOSTILE_ARGS);
  assert.equal(stderr(), 'to stderr\n');
  assert.equal(end.stdoutBytes, Buffer.byteLength(stdout()));
  assert.equal(end.stderrBytes, 10);
  assert.equal(end.capped, false);
  assert.equal(statSync(outputDir).mode & 0o777, 0o700);
  assert.equal(statSync(join(outputDir, 'stdout.txt')).mode & 0o777, 0o600);
});

test('a bare program name is looked up in PATH', async () => {
  const { handle, stdout } = run({ program: 'printf', argv: ['%s|', 'a b', '$HOME'] });
  assert.equal((await handle.done).outcome, 'exited');
  assert.equal(stdout(), 'a b|$HOME|');
});

test('an exit status is outcome exited with that code', async () => {
  const { handle } = run({ program: tool('exit3', '#!/bin/sh\nexit 3\n') });
  const end = await handle.done;
  assert.deepEqual([end.outcome, end.exitCode, end.signal, end.reason], ['exited', 3, null, undefined]);
});

for (const signal of ['SIGSEGV', 'SIGKILL'] as const) {
  test(`a program dying of ${signal} it was not sent by us is outcome signaled`, async () => {
    const { handle } = run({ program: tool(`die-${signal}`, `#!/bin/sh\nkill -${signal.slice(3)} $$\n`) });
    const end = await handle.done;
    assert.deepEqual([end.outcome, end.exitCode, end.signal], ['signaled', null, signal]);
  });
}

test('output past maxOutputBytes is capped with a note, the pipe still drained, memory flat', async () => {
  const rssBefore = process.memoryUsage().rss;
  const size = 200 * MiB;
  const max = 32 * MiB;
  const { handle, outputDir } = run({ program: 'head', argv: ['-c', String(size), '/dev/zero'], maxOutputBytes: max });
  const end = await handle.done;
  const growth = process.memoryUsage().rss - rssBefore;
  assert.equal(end.outcome, 'exited');
  assert.equal(end.exitCode, 0, 'the tool was never blocked: it printed everything and exited by itself');
  assert.equal(end.stdoutBytes, size);
  assert.equal(end.capped, true);
  const note = `\n[output capped at ${max} bytes]\n`;
  const path = join(outputDir, 'stdout.txt');
  assert.equal(statSync(path).size, max + note.length);
  const file = readFileSync(path);
  assert.equal(file.subarray(max).toString(), note);
  assert.ok(growth < 64 * MiB, `rss grew by ${Math.round(growth / MiB)} MiB`);
});

test('the cap note goes on a line of its own; output of exactly the cap is not capped', async () => {
  const capped = run({ program: 'printf', argv: ['abcdef'], maxOutputBytes: 4 });
  assert.equal((await capped.handle.done).capped, true);
  assert.equal(capped.stdout(), 'abcd\n[output capped at 4 bytes]\n');
  const exact = run({ program: 'printf', argv: ['abcd'], maxOutputBytes: 4 });
  assert.equal((await exact.handle.done).capped, false);
  assert.equal(exact.stdout(), 'abcd');
});

test('abort ends the group, grandchild included, with outcome aborted and its reason', async () => {
  const { handle, stdout } = run({ program: tool('spawner', '#!/bin/sh\nsleep 100 &\necho $!\nsleep 100\n') });
  const grandchild = await printedPid(stdout);
  assert.ok(alive(grandchild));
  assert.equal(readProcStat(grandchild)?.pgrp, handle.pid);
  handle.abort('stopped by the user');
  const end = await handle.done;
  assert.equal(end.outcome, 'aborted');
  assert.equal(end.reason, 'stopped by the user');
  assert.equal(end.signal, 'SIGTERM');
  await until(() => !alive(grandchild), 'the grandchild to end');
});

test('a group that ignores SIGTERM is killed after the grace', async () => {
  const { handle, stdout } = run({ program: tool('stubborn', "#!/bin/sh\ntrap '' TERM\nsleep 100 &\necho $!\nwhile :; do sleep 1; done\n"), killGraceMs: 300 });
  const grandchild = await printedPid(stdout);
  const started = Date.now();
  handle.abort('enough');
  const end = await handle.done;
  assert.equal(end.outcome, 'aborted');
  assert.equal(end.signal, 'SIGKILL');
  assert.ok(Date.now() - started >= 250);
  await until(() => !alive(grandchild), 'the grandchild to end');
});

test('what a program leaves behind in its group is killed when it exits', async () => {
  const { handle, stdout } = run({ program: tool('leaver', '#!/bin/sh\nsleep 100 &\necho $!\nexit 0\n') });
  const end = await handle.done;
  assert.deepEqual([end.outcome, end.exitCode], ['exited', 0]);
  const grandchild = Number(stdout().split('\n')[0]);
  // already: a busy box may run a SIGKILLed process long after the signal, and the run waits for that
  assert.equal(alive(grandchild), false, `the grandchild ${grandchild} outlived its run`);
});

test('a process that left the group and holds the pipes open does not hold the run past the grace', async () => {
  const script = "#!/bin/sh\nsetsid sh -c 'echo $$; exec sleep 100' &\nsleep 0.3\n";
  const { handle, stdout } = run({ program: tool('escaper', script), killGraceMs: 300 });
  const escaped = await printedPid(stdout);
  groups.add(escaped); // a group of its own now: the test ends it
  const started = Date.now();
  const end = await handle.done;
  assert.deepEqual([end.outcome, end.exitCode], ['exited', 0]);
  // far under the 100 s the escaped sleeper holds the pipes; loose, for a busy box
  assert.ok(Date.now() - started < 20_000);
  assert.notEqual(readProcStat(escaped)?.pgrp, handle.pid);
  assert.ok(alive(escaped), 'out of the group, out of reach');
  process.kill(-escaped, 'SIGKILL');
});

test('a marked process that left the group is dead once the run is done: no wait after it', async () => {
  const marker = `ASSESSD_RUN=test-${process.pid}:1`;
  const script = "#!/bin/sh\nsetsid sh -c 'echo $$; exec sleep 100' < /dev/null > \"$1\" 2>&1 &\nsleep 0.3\n";
  const pidFile = join(dir, 'escaped-marked.pid');
  const { handle } = run({ program: tool('marked-escaper', script), argv: [pidFile], marker, env: { ...process.env, ASSESSD_RUN: marker.slice('ASSESSD_RUN='.length) } });
  const end = await handle.done;
  assert.deepEqual([end.outcome, end.exitCode], ['exited', 0]);
  const escaped = Number(readFileSync(pidFile, 'utf8').trim());
  groups.add(escaped);
  assert.ok(escaped > 0);
  assert.equal(alive(escaped), false, `the marked process ${escaped} outlived its run`);
});

test('a marked process whose pid is below the leader\'s (pids wrap) is killed with its run', async () => {
  const marker = `ASSESSD_RUN=test-${process.pid}:2`;
  // started before the run's leader, so its pid is lower: what a child gets once pids wrap past pid_max
  const earlier = spawn('sleep', ['100'], { detached: true, stdio: 'ignore', env: { ...process.env, ASSESSD_RUN: marker.slice('ASSESSD_RUN='.length) } });
  groups.add(earlier.pid!);
  const { handle } = run({ program: tool('quick', '#!/bin/sh\nexit 0\n'), marker, env: { ...process.env, ASSESSD_RUN: marker.slice('ASSESSD_RUN='.length) } });
  assert.ok(handle.pid > earlier.pid!, `leader ${handle.pid} after ${earlier.pid}`);
  const end = await handle.done;
  assert.deepEqual([end.outcome, end.exitCode], ['exited', 0]);
  assert.equal(alive(earlier.pid!), false, `the marked process ${earlier.pid} below the leader's pid outlived the run`);
});

test('a process with an empty environment, outside the group, is read again a few times and left alone: it is not the run\'s', async () => {
  // an environment reads empty while a process is between two programs (execve), and for one started with none
  // env -i: node puts NODE_V8_COVERAGE in every child's environment under c8, even env: {}
  const bare = spawn('env', ['-i', 'sleep', '100'], { detached: true, stdio: 'ignore' });
  groups.add(bare.pid!);
  await until(() => readFileSync(`/proc/${bare.pid}/cmdline`, 'latin1').startsWith('sleep'), 'sleep to run');
  assert.equal(readFileSync(`/proc/${bare.pid}/environ`, 'latin1'), '');
  const killed = await killLeftovers(2 ** 22 + 1, `ASSESSD_RUN=test-${process.pid}:3`);
  assert.equal(killed, 0);
  assert.ok(alive(bare.pid!), 'a process that is not the run\'s is never signalled');
});

test("the group's number is never signalled once its leader is gone: a process now holding that number (a reused pid) is left alone", async () => {
  // a group of its own, alive, no SIGKILL waiting: what a later process with the old leader's number looks like
  const later = spawn('sleep', ['100'], { detached: true, stdio: 'ignore' });
  groups.add(later.pid!);
  await until(() => readProcStat(later.pid!)?.pgrp === later.pid, 'its own group');
  assert.equal(await killLeftovers(later.pid!), 0);
  assert.ok(alive(later.pid!), 'a process the run did not start is never signalled');
});

test('a /proc file that does not read within a second is given up, and its process is not read again (one stuck thread, not one a run)', async () => {
  // a FIFO without a writer reads as a process stuck in the kernel does: never
  const fifo = join(dir, 'stuck-environ');
  await new Promise<void>((resolve, reject) => spawn('mkfifo', [fifo]).on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`mkfifo ${code}`)))));
  // procRead keys what it gives up by the path's third part (a pid under /proc; here the test's directory)
  await assert.rejects(procRead(fifo, 'latin1'), /no answer within 1000 ms/);
  await assert.rejects(procRead(fifo, 'latin1'), /did not read before/, 'not read a second time');
  // let go of the thread the first read holds
  writeFileSync(fifo, '');
});

test('an output directory that cannot be made throws before anything starts', () => {
  const file = tool('a-file', 'x', 0o644);
  assert.throws(() => runProgram({ program: 'true', argv: [], outputDir: join(file, 'out'), maxOutputBytes: MiB, timeoutMs: 1000 }), { code: 'ENOTDIR' });
});

test('a symlink left in the output directory as stdout.txt is replaced, never followed', async () => {
  const victim = tool('victim', 'precious\n', 0o644);
  const outputDir = join(dir, 'planted');
  mkdirSync(outputDir);
  symlinkSync(victim, join(outputDir, 'stdout.txt'));
  const handle = runProgram({ program: 'printf', argv: ['new output'], outputDir, maxOutputBytes: MiB, timeoutMs: 5000 });
  assert.equal((await handle.done).outcome, 'exited');
  assert.equal(readFileSync(victim, 'utf8'), 'precious\n');
  assert.ok(lstatSync(join(outputDir, 'stdout.txt')).isFile());
  assert.equal(readFileSync(join(outputDir, 'stdout.txt'), 'utf8'), 'new output');
});

test('a rerun in the same output directory replaces the previous output', async () => {
  const outputDir = join(dir, 'rerun');
  for (const word of ['first run, longer', 'second']) {
    const handle = runProgram({ program: 'printf', argv: [word], outputDir, maxOutputBytes: MiB, timeoutMs: 5000 });
    await handle.done;
    assert.equal(readFileSync(join(outputDir, 'stdout.txt'), 'utf8'), word);
  }
});

test('an argument holding a NUL byte is failed-to-start, not a throw', async () => {
  const { handle } = run({ program: 'printf', argv: ['a\0b'] });
  const end = await handle.done;
  assert.equal(end.outcome, 'failed-to-start');
  assert.equal(end.errno, 'ERR_INVALID_ARG_VALUE');
});

test('pause stops every process of the group, resume continues them', async () => {
  const { handle, stdout } = run({ program: tool('pausable', '#!/bin/sh\nsleep 100 &\necho $!\nsleep 100\n') });
  const grandchild = await printedPid(stdout);
  const members = [handle.pid, grandchild];
  handle.pause();
  await until(() => groupStopped(handle.pid) && readProcStat(grandchild)?.state === 'T', 'state T');
  handle.resume();
  await until(() => members.every((pid) => ['S', 'R'].includes(readProcStat(pid)?.state ?? '')), 'state S or R');
  handle.pause();
  await until(() => groupStopped(handle.pid), 'state T again');
  await delay(50);
  // a stopped group still ends on abort: it is continued first
  handle.abort('abort while paused');
  const end = await handle.done;
  assert.equal(end.outcome, 'aborted');
  assert.ok(end.pausedMs >= 45, `pausedMs ${end.pausedMs}`);
  await until(() => !alive(grandchild), 'the grandchild to end');
});

test('the time limit ends a sleeper with outcome timeout', async () => {
  const started = Date.now();
  const { handle } = run({ program: 'sleep', argv: ['100'], timeoutMs: 300 });
  const end = await handle.done;
  assert.equal(end.outcome, 'timeout');
  assert.match(end.reason ?? '', /time limit/);
  // far under the 100 s the sleeper would take; loose, for a busy box
  assert.ok(Date.now() - started < 20_000);
});

test('paused time does not count toward the time limit', async () => {
  const { handle } = run({ program: 'sleep', argv: ['100'], timeoutMs: 300 });
  let ended = false;
  void handle.done.then(() => (ended = true));
  handle.pause();
  await delay(500);
  handle.resume();
  await delay(100);
  assert.equal(ended, false, 'not timed out right after resuming');
  const end = await handle.done;
  assert.equal(end.outcome, 'timeout');
  assert.ok(end.pausedMs >= 450 && end.pausedMs < 1500, `pausedMs ${end.pausedMs}`);
});

test('a program that cannot start is failed-to-start with its errno', async () => {
  const text = tool('not-executable', '#!/bin/sh\necho hi\n', 0o644);
  const cases: [string, string[]][] = [
    [join(dir, 'missing-tool'), ['ENOENT']],
    ['assessd-no-such-tool', ['ENOENT']],
    [dir, ['EACCES', 'EISDIR']],
    [text, ['EACCES']],
    [`${text}/x`, ['ENOTDIR']],
  ];
  for (const [program, errnos] of cases) {
    const { handle } = run({ program });
    assert.equal(handle.pid, 0);
    assert.equal(handle.startTime, '');
    handle.pause(); // harmless on a run that never started
    handle.abort('nothing to abort');
    const end = await handle.done;
    assert.equal(end.outcome, 'failed-to-start', program);
    assert.ok(errnos.includes(end.errno ?? ''), `${program}: ${end.errno}`);
    assert.ok(end.reason?.includes(end.errno!) && end.reason.includes(program), end.reason);
  }
});

test('checkProgram tells missing, not executable, a directory, and finds a name through PATH as execvp does', async () => {
  const first = join(dir, 'path-a');
  const second = join(dir, 'path-b');
  mkdirSync(join(first, 'scanner'), { recursive: true }); // a directory of that name is passed over
  mkdirSync(second);
  const good = join(second, 'scanner');
  writeFileSync(good, '#!/bin/sh\n');
  chmodSync(good, 0o755);
  writeFileSync(join(second, 'plain'), 'x');
  assert.deepEqual(await checkProgram('scanner', `${first}:${second}`), { ok: true, path: good });
  assert.equal((await checkProgram('scanner', first)).ok, false);
  assert.deepEqual(await checkProgram('scanner', first), { ok: false, reason: 'directory', message: `${join(first, 'scanner')} is a directory` });
  const plain = await checkProgram('plain', second);
  assert.equal(plain.ok === false && plain.reason, 'not-executable');
  const missing = await checkProgram('assessd-no-such-tool', `${first}:${second}`);
  assert.equal(missing.ok === false && missing.reason, 'missing');
  assert.equal(missing.ok === false && missing.message, 'assessd-no-such-tool was not found in PATH');
  assert.equal((await checkProgram(join(dir, 'nothing-here'))).ok, false);
  assert.equal(((await checkProgram(dir)) as { reason: string }).reason, 'directory');
  assert.equal(((await checkProgram(join(second, 'plain'))) as { reason: string }).reason, 'not-executable');
  assert.equal(((await checkProgram(`${join(second, 'plain')}/x`)) as { reason: string }).reason, 'missing');
  assert.deepEqual(await checkProgram('./scanner', undefined, second), { ok: true, path: good });
  assert.equal((await checkProgram('sh')).ok, true);
  assert.equal(((await checkProgram('')) as { reason: string }).reason, 'missing');
});

test('/proc/<pid>/stat is split after the last ")": a command name may hold spaces and parentheses', async () => {
  const line = '4242 (a) b (c) S) R 1 4242 4242 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 987654 1000 200 18446744073709551615';
  assert.deepEqual(parseProcStat(line), { state: 'R', pgrp: 4242, startTime: '987654', kernelThread: false });
  // field 9 with PF_KTHREAD (0x200000): a kernel thread, whose environment reads empty for ever
  assert.equal(parseProcStat(line.replace(' 4194560 ', ' 2129984 '))?.kernelThread, true);
  assert.equal(parseProcStat('garbage'), undefined);
  const odd = join(dir, 'x) S 1 (y');
  copyFileSync('/bin/sleep', odd);
  chmodSync(odd, 0o755);
  const { handle } = run({ program: odd, argv: ['100'] });
  const stat = readProcStat(handle.pid);
  assert.equal(stat?.pgrp, handle.pid);
  assert.equal(stat?.startTime, handle.startTime);
  assert.match(handle.startTime, /^\d+$/);
  handle.abort('done');
  assert.equal((await handle.done).outcome, 'aborted');
});

/** A group left running as if by a server that crashed. */
function strayGroup() {
  const child = spawn('sleep', ['100'], { detached: true, stdio: 'ignore' });
  groups.add(child.pid!);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return { pid: child.pid!, startTime: processStartTime(child.pid!)!, exited };
}

test('endStaleGroup ends a group whose leader has the recorded start time', async () => {
  const stray = strayGroup();
  assert.match(stray.startTime, /^\d+$/);
  assert.equal(await endStaleGroup(stray.pid, stray.startTime), 'ended');
  await stray.exited;
  assert.equal(processStartTime(stray.pid), undefined);
});

test('endStaleGroup ends a stopped group too (continued first), children included', async () => {
  const stray = tool('stray', '#!/bin/sh\nsleep 100 &\necho $!\nwait\n');
  const child = spawn(stray, [], { detached: true, stdio: ['ignore', 'pipe', 'ignore'] });
  groups.add(child.pid!);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const grandchild = Number(await new Promise<string>((resolve) => child.stdout!.once('data', (d: Buffer) => resolve(d.toString()))));
  process.kill(-child.pid!, 'SIGSTOP');
  await until(() => groupStopped(child.pid!), 'state T');
  assert.equal(await endStaleGroup(child.pid!, processStartTime(child.pid!)!), 'ended');
  await exited;
  await until(() => !alive(grandchild), 'the grandchild to end');
});

test('endStaleGroup never signals a pid whose start time differs (a reused pid)', async () => {
  const stray = strayGroup();
  assert.equal(await endStaleGroup(stray.pid, String(Number(stray.startTime) - 1)), 'reused');
  assert.equal(await endStaleGroup(stray.pid, ''), 'reused');
  await delay(100);
  assert.ok(alive(stray.pid));
  process.kill(-stray.pid, 'SIGKILL');
  await stray.exited;
});

test('endStaleGroup of a dead pid is gone', async () => {
  const child = spawn('true', [], { stdio: 'ignore' });
  const pid = child.pid!;
  await new Promise((resolve) => child.once('exit', resolve));
  await until(() => processStartTime(pid) === undefined, 'the pid to be reaped');
  assert.equal(await endStaleGroup(pid, '12345'), 'gone');
});

test('the run marker names the data directory, not only its path: another directory at that path (a private /tmp, a container) has another', () => {
  const parent = mkdtempSync(join(tmpdir(), 'assessd-marker-'));
  try {
    const dir = join(parent, 'data');
    mkdirSync(dir);
    const first = runMarker(dir);
    assert.equal(runMarker(`${dir}/`), first, 'the same directory, however written');
    // another directory put at the same path while the first still exists (so not its inode again)
    mkdirSync(join(parent, 'other'));
    renameSync(dir, join(parent, 'first'));
    renameSync(join(parent, 'other'), dir);
    assert.notEqual(runMarker(dir), first);
    assert.match(runMarker(dir), /^[0-9a-f]{16}$/);
  } finally {
    rmSync(parent, { recursive: true, force: true });
  }
});
