/**
 * One owner per data directory, proved by what the kernel takes away when a process dies: a
 * listening Unix-domain socket in the directory. A connect() that the kernel accepts means its
 * process is alive (busy or not); a refused one means it is gone, zombie or not, whatever pid a
 * file may name.
 *
 * Each candidate listens on a socket of its own, uniquely named (`.assessd-lock-<pid>-<random>.sock`,
 * so nothing is ever replaced, only dead ones removed), answering `{"pid","state","url"}`, then
 * scans the directory's lock sockets: a refused one is stale and removed; a live `owner` (or one
 * that does not answer in time) refuses us; live `starting` peers: the larger name gives way (it
 * closes its socket, then watches until an owner appears, to name it, or until nobody is left, to
 * try again), the smaller rescans until they gave way or became owner. A scan that finds nobody
 * alive makes us the owner.
 *
 * Why two can never both be owner: say A and B were, A's socket visible from time a, B's from b,
 * both until they stop owning. A's deciding scan listed the directory after a, B's after b. If
 * b came before A's listing, A saw B alive and did not become owner; so b came after A's listing,
 * hence after a, and then B's listing, after b, saw A alive. Either way one of them did not.
 * A socket is only visible once it accepts connections (bound under another name, then renamed):
 * between bind() and listen() a connect is refused, which would read as stale.
 */
import { randomBytes } from 'node:crypto';
import { readdirSync, renameSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { listenAt, openSocketDir, probe, type Answer, type LockServer, type SocketDir } from './lock-socket.js';

/** The pid file of earlier versions: removed once we own the directory, it proves nothing. */
export const LEGACY_LOCK_FILE = 'assessd.lock';

/** The lock sockets' name prefix; their names hold the pid, for the message and for `ls -a`. */
export const LOCK_SOCKET_PREFIX = '.assessd-lock-';

// `.bind`: bound but not renamed into view yet, left only by a process that died in between
const LOCK_NAME = /^\.assessd-lock-(\d+)-[0-9a-f]+\.(sock|bind)$/;
const LONGEST_NAME = `${LOCK_SOCKET_PREFIX}${'9'.repeat(10)}-${'f'.repeat(8)}.sock`.length;
/** How long a live peer may take to answer before it counts as an owner too busy to say so. */
const ANSWER_WAIT_MS = 2000;
const RESCAN_MS = 20;

/** Another live process owns the data directory. */
export class DataDirInUseError extends Error {
  readonly code = 'ERR_DATA_DIR_IN_USE';
  constructor(
    readonly dir: string,
    readonly pid: number,
    /** The owner's URL, once it advertised one. */
    readonly url?: string,
  ) {
    super(`data directory ${dir} is in use by process ${pid}`);
  }
}

export interface Lock {
  /** Makes the owner's answer carry the server's URL, for whoever is refused the directory. */
  advertise(info: { url: string }): void;
  /** Gives up the directory: the socket closed and its file removed. */
  release(): Promise<void>;
}

interface Peer {
  name: string;
  pid: number;
  answer?: Answer;
}

interface Candidate {
  name: string;
  answer: Answer;
  server: LockServer;
}

/**
 * Takes the directory, or rejects with `DataDirInUseError` naming the live owner. Stale sockets
 * are removed with a log line.
 */
export async function acquireLock(dir: string, log: (line: string) => void): Promise<Lock> {
  const sockets = openSocketDir(dir, LONGEST_NAME);
  try {
    for (;;) {
      const owner = await compete(dir, sockets, log);
      if (owner) return ownLock(dir, sockets, owner, log);
      await watch(dir, sockets, undefined, log);
    }
  } catch (err) {
    sockets.close();
    throw err;
  }
}

/** The candidate, now owner; or undefined when it gave way to another one. */
async function compete(dir: string, sockets: SocketDir, log: (line: string) => void): Promise<Candidate | undefined> {
  const id = `${LOCK_SOCKET_PREFIX}${process.pid}-${randomBytes(4).toString('hex')}`;
  const candidate = { name: `${id}.sock`, answer: { pid: process.pid, state: 'starting' } as Answer };
  let server: LockServer;
  try {
    server = await listenAt(sockets.address(`${id}.bind`), () => candidate.answer, log);
  } catch (err) {
    throw new Error(`data directory ${dir}: cannot create its lock socket: ${(err as Error).message}`);
  }
  try {
    renameSync(join(dir, `${id}.bind`), join(dir, candidate.name));
  } catch (err) {
    await server.close();
    // a scan found it between bind() and listen() and removed it as stale: try again
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  let won = false;
  try {
    won = await watch(dir, sockets, candidate.name, log);
  } finally {
    if (!won) await closeLockSocket(dir, candidate.name, server);
  }
  if (!won) return undefined;
  candidate.answer.state = 'owner';
  return { ...candidate, server };
}

/**
 * Scans until nobody else is alive (true: for a candidate, it may own the directory), a live
 * owner shows (rejects naming it), or, for a candidate `own`, a smaller one is starting (false).
 */
async function watch(dir: string, sockets: SocketDir, own: string | undefined, log: (line: string) => void): Promise<boolean> {
  for (;;) {
    const peers = await scan(dir, sockets, own, log);
    const holder = peers.find((peer) => peer.answer?.state !== 'starting');
    if (holder) throw new DataDirInUseError(dir, holder.answer?.pid ?? holder.pid, holder.answer?.url);
    if (peers.length === 0) return true;
    if (own !== undefined && peers.some((peer) => peer.name < own)) return false;
    await new Promise((resolve) => setTimeout(resolve, RESCAN_MS * (1 + Math.random())));
  }
}

/** The live lock sockets other than `own`; the dead ones are removed. */
async function scan(dir: string, sockets: SocketDir, own: string | undefined, log: (line: string) => void): Promise<Peer[]> {
  const names = readdirSync(dir).filter((name) => name !== own && LOCK_NAME.test(name));
  const probes = await Promise.all(names.map((name) => probe(sockets.address(name), ANSWER_WAIT_MS)));
  const peers: Peer[] = [];
  names.forEach((name, i) => {
    const [, pid, kind] = LOCK_NAME.exec(name)!;
    const result = probes[i];
    if (result.kind === 'dead') {
      if (removeIfThere(join(dir, name)) && kind === 'sock') log(`taking over the stale lock of process ${pid} in ${dir}`);
    } else if (result.kind === 'live' && kind === 'sock') {
      peers.push({ name, pid: Number(pid), answer: result.answer });
    }
  });
  return peers;
}

function ownLock(dir: string, sockets: SocketDir, owner: Candidate, log: (line: string) => void): Lock {
  if (removeIfThere(join(dir, LEGACY_LOCK_FILE))) log(`removed ${LEGACY_LOCK_FILE}, the pid file of an earlier version: the lock is now a socket`);
  let released: Promise<void> | undefined;
  return {
    advertise(info) {
      owner.answer.url = info.url;
    },
    release() {
      released ??= closeLockSocket(dir, owner.name, owner.server).then(() => sockets.close());
      return released;
    },
  };
}

async function closeLockSocket(dir: string, name: string, server: LockServer): Promise<void> {
  removeIfThere(join(dir, name));
  await server.close();
}

function removeIfThere(path: string): boolean {
  try {
    unlinkSync(path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}
