/**
 * Runs one program in its own process group, never through a shell: its output streamed to
 * capped files, the whole group paused, continued and ended as one, with a time limit that does
 * not count paused time. (Finding the program, and ending a group a crashed server left: proc.ts.)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { close, closeSync, constants, createWriteStream, fsync, mkdirSync, openSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { setTimeout as delay } from 'node:timers/promises';
import { promisify } from 'node:util';
import { killLeftovers, processStartTime, signalGroup } from './proc.js';

export { checkProgram, endStaleGroup, processStartTime, signalGroup, type ProgramCheck } from './proc.js';

export interface RunOptions {
  /** An absolute path, or a bare name looked up in `PATH` (as execvp does). */
  program: string;
  /** Passed as they are: each element one argument, nothing split or interpreted. */
  argv: string[];
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Gets `stdout.txt` and `stderr.txt` (created, mode 0700). */
  outputDir: string;
  /** Bytes kept of each stream; the rest is read and dropped. */
  maxOutputBytes: number;
  /** Running time allowed, paused time not counted; then the run ends as `timeout`. */
  timeoutMs: number;
  /** Between SIGTERM and SIGKILL when ending the group (default 5000). */
  killGraceMs?: number;
  /**
   * `NAME=value` in `env` that marks this run's processes: those that left the group (setsid)
   * are found by it and killed when the run ends (proc.ts, killLeftovers).
   */
  marker?: string;
}

export type RunOutcome = 'exited' | 'signaled' | 'aborted' | 'timeout' | 'failed-to-start';

export interface RunEnd {
  outcome: RunOutcome;
  exitCode: number | null;
  signal: string | null;
  /** The abort's reason, the time limit's, or the start error's message. */
  reason?: string;
  /** The start error's code: ENOENT, EACCES, ENOTDIR... */
  errno?: string;
  /** Bytes the program printed on each stream (the file keeps at most `maxOutputBytes`). */
  stdoutBytes: number;
  stderrBytes: number;
  /** A stream passed `maxOutputBytes`: its file ends with `[output capped at N bytes]`. */
  capped: boolean;
  pausedMs: number;
  /** Writing or syncing an output file failed (the disk's fault, not the program's). */
  outputError?: string;
}

export interface RunHandle {
  /** The group leader's pid (and the group's id); 0 when it did not start. */
  pid: number;
  /** `/proc/<pid>/stat` field 22, to tell this process from a later one with the same pid; '' off Linux. */
  startTime: string;
  /** Stops the whole group (SIGSTOP) and the time limit. */
  pause(): void;
  /** Continues the group (SIGCONT) and the time limit. */
  resume(): void;
  /** Ends the group: SIGCONT, SIGTERM, then SIGKILL after the grace. */
  abort(reason: string): void;
  /** Resolves (never rejects) once the program has ended and both files are synced. */
  done: Promise<RunEnd>;
}

const fsyncFd = promisify(fsync);
const closeFd = promisify(close);
const MAX_TIMER_MS = 2 ** 31 - 1;
/** At most this long is spent ending what a run left (its scan of /proc and the wait for the killed). */
const LEFTOVERS_MS = 5000;

function createOutputFile(path: string): number {
  // the run's tool may write in this directory: a symlink it left here is replaced, never followed
  rmSync(path, { force: true });
  return openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
}

/** One output stream written to its file with backpressure, past the cap read and dropped. */
function capture(source: Readable | null | undefined, path: string, fd: number, maxBytes: number, onError: () => void) {
  const sink = createWriteStream(path, { fd, autoClose: false });
  const state = { bytes: 0, kept: 0, capped: false, error: undefined as string | undefined };
  let lastByte = 0x0a;
  sink.on('error', (err) => {
    state.error ??= err.message;
    source?.resume();
    onError();
  });
  source?.on('data', (chunk: Buffer) => {
    state.bytes += chunk.length;
    // past the cap (or a failed disk) the pipe is still read, so the program never blocks on it
    if (state.capped || state.error !== undefined) return;
    const room = maxBytes - state.kept;
    if (chunk.length > room) {
      state.capped = true;
      const kept = chunk.subarray(0, room);
      if (kept.length > 0) sink.write(kept);
      state.kept += kept.length;
      if (kept.length > 0) lastByte = kept[kept.length - 1]!;
      sink.write(`${lastByte === 0x0a ? '' : '\n'}[output capped at ${maxBytes} bytes]\n`);
      return;
    }
    state.kept += chunk.length;
    if (chunk.length > 0) lastByte = chunk[chunk.length - 1]!;
    if (!sink.write(chunk)) {
      source.pause();
      sink.once('drain', () => source.resume());
    }
  });
  const ended = source
    ? new Promise<void>((done) => {
        source.once('end', done);
        source.once('close', done);
        source.once('error', () => done());
      })
    : Promise.resolve();
  async function finish(): Promise<void> {
    try {
      sink.end();
      await finished(sink);
      await fsyncFd(fd);
    } catch (err) {
      state.error ??= (err as Error).message;
    }
    await closeFd(fd).catch(() => {});
  }
  return { state, ended, finish, stop: () => source?.destroy() };
}

/** The groups (their leaders' pids) of the programs this process runs now. */
const runningGroups = new Set<number>();
let endedAtExit = false;

/**
 * When this process exits (an uncaught exception, a second Ctrl-C's exit, an embedding program's
 * process.exit: node's 'exit'), the programs it runs end with it: SIGKILL to each group. Left to
 * themselves they went on unwatched, against their targets, until the next start ended them.
 * (A death without 'exit', SIGKILL or V8 out of memory, and a program that left its group, are the
 * next start's: it finds them by their run marker.)
 */
function endGroupsAtExit(): void {
  if (endedAtExit) return;
  endedAtExit = true;
  process.on('exit', () => {
    for (const pid of runningGroups) signalGroup(pid, 'SIGKILL');
  });
}

/**
 * Starts `program` with `argv` (no shell) as the leader of a new process group, its standard
 * output and error streamed to `outputDir/stdout.txt` and `stderr.txt`. Throws only when the
 * output directory or files cannot be made; a program that cannot start ends `failed-to-start`.
 */
export function runProgram(options: RunOptions): RunHandle {
  const { outputDir, maxOutputBytes, timeoutMs, killGraceMs = 5000 } = options;
  mkdirSync(outputDir, { recursive: true, mode: 0o700 });
  const outPath = join(outputDir, 'stdout.txt');
  const errPath = join(outputDir, 'stderr.txt');
  const outFd = createOutputFile(outPath);
  let errFd: number;
  try {
    errFd = createOutputFile(errPath);
  } catch (err) {
    closeSync(outFd);
    throw err;
  }

  let child: ChildProcess | undefined;
  let startError: NodeJS.ErrnoException | undefined;
  // the program inherits this umask (fork copies it): what it writes is the data directory's, 0600 and 0700
  const umask = process.umask(0o077);
  try {
    child = spawn(options.program, options.argv, {
      cwd: options.cwd,
      env: options.env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      shell: false,
      windowsHide: true,
    });
  } catch (err) {
    // ENOTDIR and a few others are thrown at once rather than emitted
    startError = err as NodeJS.ErrnoException;
  } finally {
    process.umask(umask);
  }
  const pid = child?.pid ?? 0;
  if (pid > 0) {
    endGroupsAtExit();
    runningGroups.add(pid);
  }
  // read now: the leader cannot be reaped before the event loop turns, so its /proc entry is there
  const startTime = pid > 0 ? (processStartTime(pid) ?? '') : '';
  // output that can no longer be written (a full disk) ends the run at once: it is lost whatever
  // the program does next, which went on for up to the time limit, its output read and dropped
  const unwritable = () => end('aborted', 'its output could not be written');
  const out = capture(child?.stdout, outPath, outFd, maxOutputBytes, unwritable);
  const err = capture(child?.stderr, errPath, errFd, maxOutputBytes, unwritable);

  let phase: 'running' | 'paused' | 'exited' = pid > 0 ? 'running' : 'exited';
  let ending: { outcome: 'aborted' | 'timeout'; reason: string } | undefined;
  let remainingMs = Number.isFinite(timeoutMs) ? Math.max(0, timeoutMs) : Infinity;
  let runningSince = performance.now();
  let pausedSince = 0;
  let pausedMs = 0;
  let limitTimer: NodeJS.Timeout | undefined;
  let killTimer: NodeJS.Timeout | undefined;

  function armLimit(): void {
    if (remainingMs === Infinity) return;
    limitTimer = setTimeout(() => end('timeout', `time limit of ${timeoutMs} ms reached`), Math.min(remainingMs, MAX_TIMER_MS));
  }

  function end(outcome: 'aborted' | 'timeout', reason: string): void {
    if (phase === 'exited' || ending) return;
    ending = { outcome, reason };
    clearTimeout(limitTimer);
    if (phase === 'paused') {
      pausedMs += performance.now() - pausedSince;
      phase = 'running';
    }
    // a stopped process cannot act on SIGTERM until it is continued
    signalGroup(pid, 'SIGCONT');
    signalGroup(pid, 'SIGTERM');
    killTimer = setTimeout(() => signalGroup(pid, 'SIGKILL'), killGraceMs);
  }

  async function settle(result: Pick<RunEnd, 'outcome' | 'exitCode' | 'signal' | 'reason' | 'errno'>): Promise<RunEnd> {
    // the group's rest, and what left the group, end with it (and let go of the pipes they may hold)
    // bounded: a read of /proc can wait on a process stuck in the kernel
    if (pid > 0) await Promise.race([killLeftovers(pid, options.marker).catch(() => 0), delay(LEFTOVERS_MS, 0, { ref: false })]);
    // bounded: a process that left the group may hold the pipes open for ever
    const drained = Promise.all([out.ended, err.ended]);
    const cancel = new AbortController();
    const late = delay(killGraceMs, 'late' as const, { ref: false, signal: cancel.signal }).catch(() => 'drained' as const);
    if ((await Promise.race([drained, late])) === 'late') {
      out.stop();
      err.stop();
    }
    cancel.abort();
    await Promise.all([out.finish(), err.finish()]);
    const outputError = out.state.error ?? err.state.error;
    return {
      ...result,
      stdoutBytes: out.state.bytes,
      stderrBytes: err.state.bytes,
      capped: out.state.capped || err.state.capped,
      pausedMs: Math.round(pausedMs),
      ...(outputError !== undefined ? { outputError } : {}),
    };
  }

  const done = new Promise<RunEnd>((resolveDone) => {
    const failed = (error: NodeJS.ErrnoException) => {
      phase = 'exited';
      out.stop();
      err.stop();
      // some start errors name the program ("spawn nmap ENOENT"), the thrown ones do not
      const reason = error.message.includes(options.program) ? error.message : `${error.message} (${options.program})`;
      void settle({ outcome: 'failed-to-start', exitCode: null, signal: null, reason, errno: error.code ?? 'UNKNOWN' }).then(resolveDone);
    };
    if (!child || startError) return failed(startError ?? new Error('spawn failed'));
    child.on('error', (error: NodeJS.ErrnoException) => {
      if (pid === 0) failed(error);
    });
    if (pid === 0) return;
    child.once('exit', (exitCode, signal) => {
      if (phase === 'paused') pausedMs += performance.now() - pausedSince;
      phase = 'exited';
      clearTimeout(limitTimer);
      clearTimeout(killTimer);
      // whatever the program left behind in its group must not outlive its run
      signalGroup(pid, 'SIGKILL');
      runningGroups.delete(pid);
      const outcome = ending?.outcome ?? (signal ? 'signaled' : 'exited');
      void settle({ outcome, exitCode, signal, ...(ending ? { reason: ending.reason } : {}) }).then(resolveDone);
    });
    armLimit();
  });

  return {
    pid,
    startTime,
    pause() {
      if (phase !== 'running' || ending) return;
      phase = 'paused';
      pausedSince = performance.now();
      clearTimeout(limitTimer);
      remainingMs -= pausedSince - runningSince;
      signalGroup(pid, 'SIGSTOP');
    },
    resume() {
      if (phase !== 'paused') return;
      phase = 'running';
      runningSince = performance.now();
      pausedMs += runningSince - pausedSince;
      signalGroup(pid, 'SIGCONT');
      armLimit();
    },
    abort(reason) {
      end('aborted', reason);
    },
    done,
  };
}
