/**
 * Processes and programs as the system sees them: what Linux's /proc says of a process (its state,
 * group, start time), signals to a whole group, the recovery of a group a crashed server left
 * running, and a program looked up as execvp would.
 */
import { constants, readFileSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { crypto, fsPromises } from '../lazy-builtins.js';

const delay = (ms: number) => new Promise((done) => setTimeout(done, ms));

export interface ProcStat {
  /** `R` running, `S` sleeping, `T` stopped, `Z` zombie... */
  state: string;
  pgrp: number;
  /** Field 22: clock ticks since boot, as written (a pid and this name one process for ever). */
  startTime: string;
  /** Field 9 has PF_KTHREAD: a kernel thread (its environment is always empty). */
  kernelThread: boolean;
}

/**
 * Parses the text of `/proc/<pid>/stat`. The command name (field 2) is in parentheses and may
 * itself hold spaces and `)`, so the fields are split after the last `)`.
 */
export function parseProcStat(text: string): ProcStat | undefined {
  const close = text.lastIndexOf(')');
  if (close < 0) return undefined;
  // after the name: field 3 (state) is index 0, field 5 (pgrp) index 2, field 9 (flags) index 6,
  // field 22 (starttime) index 19
  const fields = text.slice(close + 1).trim().split(/\s+/);
  if (fields.length < 20 || !/^\d+$/.test(fields[19]!)) return undefined;
  return { state: fields[0]!, pgrp: Number(fields[2]), startTime: fields[19]!, kernelThread: (Number(fields[6]) & 0x00200000) !== 0 };
}

/** The stat of a live (or zombie) process; `undefined` when it is gone or there is no /proc. */
export function readProcStat(pid: number): ProcStat | undefined {
  if (!Number.isSafeInteger(pid) || pid <= 0) return undefined;
  try {
    return parseProcStat(readFileSync(`/proc/${pid}/stat`, 'latin1'));
  } catch {
    return undefined;
  }
}

/** The process's start time (`/proc/<pid>/stat` field 22); `undefined` when it is gone or not on Linux. */
export function processStartTime(pid: number): string | undefined {
  return readProcStat(pid)?.startTime;
}

/** Sends `signal` to the group led by `pid`. Errors are dropped: ESRCH is a group already gone. */
export function signalGroup(pid: number, signal: NodeJS.Signals): void {
  // never 0 or negative: kill(-0) would signal our own group
  if (!Number.isSafeInteger(pid) || pid <= 1) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // ESRCH: nobody left; EPERM: only a setuid member, which SIGKILL of the rest leaves alone
  }
}

/**
 * After a crash: ends the group a dead server started, if its leader is still the process that
 * was recorded (same pid and start time): SIGCONT and SIGTERM to the group, up to `graceMs` for
 * the leader to end, then SIGKILL to the group. A pid now naming another process (or one whose
 * start time cannot be read) is never signalled: `reused`. A leader already gone is `gone`, and
 * its group is left alone: its id could by then be a later process's group.
 */
export async function endStaleGroup(pid: number, startTime: string, graceMs = 5000): Promise<'ended' | 'gone' | 'reused'> {
  const stat = readProcStat(pid);
  if (!stat) return isAlive(pid) ? 'reused' : 'gone'; // alive without /proc: unprovable, so not ours
  if (startTime === '' || stat.startTime !== startTime) return 'reused';
  signalGroup(pid, 'SIGCONT');
  signalGroup(pid, 'SIGTERM');
  const deadline = performance.now() + graceMs;
  while (performance.now() < deadline) {
    const now = readProcStat(pid);
    if (!now || now.state === 'Z' || now.startTime !== startTime) break;
    await delay(25);
  }
  signalGroup(pid, 'SIGKILL');
  return 'ended';
}

/** A process of that pid exists (a zombie too; another user's: EPERM). */
export function isAlive(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export type ProgramCheck =
  | { ok: true; path: string }
  | { ok: false; reason: 'missing' | 'not-executable' | 'directory'; message: string };

async function checkFile(path: string): Promise<ProgramCheck> {
  const { access, stat } = fsPromises();
  try {
    const info = await stat(path);
    if (info.isDirectory()) return { ok: false, reason: 'directory', message: `${path} is a directory` };
    if (!info.isFile()) return { ok: false, reason: 'not-executable', message: `${path} is not a regular file` };
    await access(path, constants.X_OK);
    return { ok: true, path };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'ELOOP') return { ok: false, reason: 'missing', message: `${path} does not exist` };
    return { ok: false, reason: 'not-executable', message: `${path} is not executable` };
  }
}

/**
 * Finds `program` as execvp would: a name holding `/` is taken as it is (relative to `cwd`),
 * a bare name is looked up in each `PATH` entry in turn (an empty entry is the current directory),
 * passing over entries that are directories or not executable. Give it the `PATH` of the
 * environment the run will have: spawn searches that one.
 */
export async function checkProgram(program: string, pathEnv: string | undefined = process.env.PATH, cwd = process.cwd()): Promise<ProgramCheck> {
  if (program === '') return { ok: false, reason: 'missing', message: 'no program given' };
  if (program.includes('/')) return checkFile(resolve(cwd, program));
  let refusal: ProgramCheck | undefined;
  for (const dir of (pathEnv ?? '/usr/bin:/bin').split(':')) {
    const verdict = await checkFile(resolve(cwd, dir || '.', program));
    if (verdict.ok) return verdict;
    if (verdict.reason !== 'missing') refusal ??= verdict;
  }
  return refusal ?? { ok: false, reason: 'missing', message: `${program} was not found in PATH` };
}

/**
 * The marker in each program's environment: which data directory's run it is, found again after a
 * crash. The directory's path and its identity on disk (device, inode): two directories at one
 * path (a service's private /tmp, a container sharing the host's processes) never share a marker,
 * and a start kills what carries its own.
 */
export function runMarker(dataDir: string): string {
  const path = resolve(dataDir);
  let identity = '';
  try {
    const { dev, ino } = statSync(path);
    identity = `${dev}:${ino}`;
  } catch {
    // not there (yet): the path alone
  }
  return crypto().createHash('sha256').update(`${path}\0${identity}`).digest('hex').slice(0, 16);
}
export const RUN_MARKER_VARIABLE = 'ASSESSD_RUN';

/** The output a process's environment (`/proc/<pid>/environ`) marks it a run of, for `marker`'s data directory; undefined when it carries no such marker. */
export function markedOutput(environ: string, marker: string): string | undefined {
  const entry = `${RUN_MARKER_VARIABLE}=${marker}:`;
  let at: number;
  if (environ.startsWith(entry)) at = entry.length;
  else {
    const found = environ.indexOf(`\0${entry}`);
    if (found === -1) return undefined;
    at = found + 1 + entry.length;
  }
  const end = environ.indexOf('\0', at);
  return environ.slice(at, end === -1 ? undefined : end);
}

/**
 * Ends what a run left, once its leader has exited and its group was sent SIGKILL: kills every
 * process whose environment holds `entry` (`ASSESSD_RUN=<marker>:<id>`, inherited by everything a
 * run starts), so that a child that left the group (setsid) ends with its run too, and waits
 * (bounded) until those and the group's members that the group's SIGKILL reached are gone or
 * zombies: SIGKILL is acted on only when its process next runs, which on a busy box can be long
 * after, and a run reported ended must leave nothing running. The group's number is never
 * signalled here: its leader is gone, so a new process may have it by now. Every pid is read,
 * whatever its number: pids wrap past `pid_max` (32768 on many boxes), so a run's child may have
 * a lower pid than its leader. Two passes, for what a killed process forked meanwhile. Answers
 * how many it killed.
 */
export function killLeftovers(leader: number, entry?: string, waitMs = 2000): Promise<number> {
  return killMarked(leader, entry === undefined ? () => false : (environ) => environ.startsWith(`${entry}\0`) || environ.includes(`\0${entry}\0`), waitMs);
}

/**
 * After a crash: kills every process that carries a run marker of `marker` (a data directory's)
 * for an output `isOwn` does not claim as a run of this server's: what a dead server left running
 * that no output names any more (its output, target or session deleted while it ran, then the
 * crash, before the program was ended), a child that left its group included. Answers how many.
 */
export function killUnowned(marker: string, isOwn: (output: number) => boolean, waitMs = 2000): Promise<number> {
  return killMarked(undefined, (environ) => {
    const output = markedOutput(environ, marker);
    return output !== undefined && (!/^[0-9]+$/.test(output) || !isOwn(Number(output)));
  }, waitMs);
}

/**
 * Kills every process whose environment `marks` says is to go (two passes, for what a killed one
 * forked meanwhile), and waits (bounded) for those and for the members of `leader`'s group that
 * its SIGKILL reached.
 */
async function killMarked(leader: number | undefined, marks: (environ: string) => boolean, waitMs: number): Promise<number> {
  const { readdir } = fsPromises();
  /** A Set: a process killed in the first pass may not be a zombie yet when the second reads it. */
  const killed = new Set<number>();
  /** Members of the group dying of its SIGKILL: waited for, never signalled. */
  const dying: number[] = [];
  /** Whether `pid` is marked: `undefined` while its environment reads empty (an execve under way shows none). */
  const marked = async (pid: number): Promise<boolean | undefined> => {
    let environ: string;
    try {
      environ = await procRead(`/proc/${pid}/environ`, 'latin1');
    } catch {
      return false; // gone, or another user's
    }
    if (environ === '') return undefined;
    return marks(environ);
  };
  const kill = (pid: number) => {
    if (killed.has(pid)) return 0;
    try {
      process.kill(pid, 'SIGKILL');
      killed.add(pid);
      return 1;
    } catch {
      return 0; // gone meanwhile
    }
  };
  for (let pass = 0; pass < 2; pass++) {
    let names: string[];
    try {
      names = await readdir('/proc');
    } catch {
      return killed.size; // not Linux: the process group is all there is
    }
    let found = 0;
    let unread: number[] = [];
    for (const name of names) {
      const pid = Number(name);
      if (!Number.isSafeInteger(pid) || pid <= 1 || pid === process.pid) continue;
      const stat = parseProcStat(await procRead(`/proc/${pid}/stat`, 'latin1').catch(() => ''));
      if (!stat || stat.state === 'Z' || stat.state === 'X' || stat.kernelThread) continue;
      const verdict = await marked(pid);
      if (verdict) found += kill(pid);
      else if (leader !== undefined && stat.pgrp === leader && pass === 0 && (await killPending(pid))) dying.push(pid);
      else if (verdict === undefined) unread.push(pid);
    }
    // read again what was between two programs; a process whose environment stays empty is not the run's
    for (let retry = 0; retry < 10 && unread.length > 0; retry++) {
      await delay(10);
      const still: number[] = [];
      for (const pid of unread) {
        const verdict = await marked(pid);
        if (verdict) found += kill(pid);
        else if (verdict === undefined) still.push(pid);
      }
      unread = still;
    }
    if (found === 0) break;
  }
  const deadline = performance.now() + waitMs;
  while ([...killed, ...dying].some((pid) => isRunning(pid)) && performance.now() < deadline) await delay(5);
  return killed.size;
}

/**
 * Whether a SIGKILL waits for `pid` (`/proc/<pid>/status`, ShdPnd or SigPnd): one its group was
 * sent, not a later process of that number. Read as the scan's other /proc files are (procRead:
 * never on the event loop, given up on a process stuck in the kernel).
 */
async function killPending(pid: number): Promise<boolean> {
  const status = await procRead(`/proc/${pid}/status`, 'latin1').catch(() => '');
  // a mask of pending signals in hex, signal n at bit n - 1: SIGKILL (9) is 0x100
  for (const m of status.matchAll(/^(?:ShdPnd|SigPnd):\s*([0-9a-f]+)$/gm)) if ((BigInt(`0x${m[1]}`) & 0x100n) !== 0n) return true;
  return false;
}

/**
 * Processes whose /proc files did not read within a second (one stuck in the kernel holds its
 * memory's lock, and a read of its environment waits with it): skipped from then on, so that each
 * holds at most one of libuv's few threads, not one more at every run's end.
 */
const stuck = new Set<string>();
const PROC_READ_MS = 1000;

/**
 * A /proc file's text (`/proc/<pid>/...`), or a rejection when it cannot be read (gone, another
 * user's) or did not read in time.
 */
export function procRead(path: string, encoding: 'latin1'): Promise<string> {
  const pid = path.split('/')[2]!;
  if (stuck.has(pid)) return Promise.reject(new Error(`${path}: did not read before`));
  const { readFile } = fsPromises();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      stuck.add(pid);
      reject(new Error(`${path}: no answer within ${PROC_READ_MS} ms`));
    }, PROC_READ_MS);
    timer.unref();
  });
  return Promise.race([readFile(path, encoding), late]).finally(() => clearTimeout(timer));
}

/** Not gone and not a zombie. */
function isRunning(pid: number): boolean {
  const state = readProcStat(pid)?.state;
  return state !== undefined && state !== 'Z' && state !== 'X';
}
