/**
 * One owner per data directory, proved by what the kernel takes away when a process dies: a
 * listening Unix-domain socket. A connect() that the kernel accepts means its process is alive
 * (busy or not); a refused one means it is gone, zombie or not, whatever pid a file may name.
 *
 * Two kinds of socket. A file in the directory where its file system can hold one (any local
 * one): the lock then also holds between containers sharing the directory. Where it cannot (FUSE
 * file systems such as sshfs, vboxsf, some encrypted or shared folders: ENOSYS, EPERM...), on
 * Linux, a socket in the abstract namespace named after the directory's device and inode, so that
 * two paths to one directory are one lock; it leaves nothing behind to go stale. Elsewhere a clear
 * message.
 *
 * Each file candidate listens on a socket of its own, uniquely named
 * (`.assessd-lock-<pid>-<random>.sock`, so nothing is ever replaced, only dead ones removed),
 * answering `{"pid","state","url"}`, then scans the directory's lock sockets (and, on Linux, the
 * directory's abstract name, which it first tries to bind: a bind that succeeds, undone at once,
 * means nobody holds it, as a refusal would): a refused one is stale and removed; a live `owner`
 * (or one that does not answer in time) refuses us; live `starting` peers: the larger name gives
 * way (it closes its socket, then watches until an owner appears, to name it, or until nobody is
 * left, to try again), the smaller rescans until they gave way or became owner. A scan that finds nobody alive
 * makes us the owner. An abstract candidate is the same, its name sorting after every file's; two
 * of them cannot both bind the name, so the one refused (EADDRINUSE) watches like a loser does.
 *
 * Why two can never both be owner: say A and B were, A's socket visible from time a, B's from b,
 * both until they stop owning. A's deciding scan listed the directory after a, B's after b. If
 * b came before A's listing, A saw B alive and did not become owner; so b came after A's listing,
 * hence after a, and then B's listing, after b, saw A alive. Either way one of them did not.
 * A socket is only visible once it accepts connections (a file bound under another name, then
 * renamed; an abstract name answers only once listening): between bind() and listen() a connect
 * is refused, which would read as stale.
 */
import { readdirSync, renameSync, statSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { abstractNameFree, listenAt, openSocketDir, probe, type Answer, type LockServer, type SocketDir } from './lock-socket.js';

/** The pid file of earlier versions: removed once we own the directory, it proves nothing. */
export const LEGACY_LOCK_FILE = 'assessd.lock';

/** The lock sockets' name prefix; their names hold the pid, for the message and for `ls -a`. */
export const LOCK_SOCKET_PREFIX = '.assessd-lock-';

/** A socket file in the directory, or a Linux abstract-namespace socket named after it. */
export type LockKind = 'file' | 'abstract';

export interface LockOptions {
  /**
   * The kind to use, whatever the file system: by default a socket file, the abstract name where
   * the file system cannot hold one. `ASSESSD_LOCK_KIND` in the environment says the same (so that
   * the lock's tests run the compiled server with either kind).
   */
  kind?: LockKind;
  /** An offline command's name (`import`...): every answer of the lock says it, from the first. */
  command?: string;
}

// `.bind`: bound but not renamed into view yet, left only by a process that died in between
const LOCK_NAME = /^\.assessd-lock-(\d+)-[0-9a-f]+\.(sock|bind)$/;
const LONGEST_NAME = `${LOCK_SOCKET_PREFIX}${'9'.repeat(10)}-${'f'.repeat(8)}.sock`.length;
/** The abstract candidate's name among the peers: after every file's, so it gives way to them. */
const ABSTRACT_PEER = '\uffff';
/** What bind() of a socket file says on a file system that cannot hold one. */
const NO_SOCKET_FILES = new Set(['ENOSYS', 'EPERM', 'EOPNOTSUPP', 'ENOTSUP', 'EINVAL']);
/** How long a live peer may take to answer before it counts as an owner too busy to say so. */
const ANSWER_WAIT_MS = 2000;
const RESCAN_MS = 20;
/** Linux's sun_path: an abstract name is its every byte, the leading NUL included. */
const ABSTRACT_LENGTH = 108;

/** Another live process owns the data directory. */
export class DataDirInUseError extends Error {
  readonly code = 'ERR_DATA_DIR_IN_USE';
  constructor(
    readonly dir: string,
    /** Undefined for an abstract socket's owner that did not answer in time (its name holds no pid). */
    readonly pid: number | undefined,
    /** The owner's URL, once it advertised one. */
    readonly url?: string,
    /** The owner's offline command (`import`...), when it is one and said so. */
    readonly command?: string,
    /** Whether the owner's token is the directory's token file, when it said so (false: it was given one). */
    readonly tokenFile?: boolean,
  ) {
    const by = pid === undefined ? 'a process too busy to say which' : `process ${pid}`;
    super(command === undefined ? `data directory ${dir} is in use by ${by}` : `data directory ${dir} is in use by assessd ${command} (${by}): try again once it has ended`);
  }
}

/** What the owner's answer tells whoever is refused the directory, once the server listens. */
export interface Advertised {
  url: string;
  /** Whether the server's token is the directory's token file (false: it was given one). */
  tokenFile?: boolean;
}

export interface Lock {
  readonly kind: LockKind;
  /** Makes the owner's answer carry the server's URL, for whoever is refused the directory. */
  advertise(info: Advertised): void;
  /** Gives up the directory: the socket closed and its file removed. */
  release(): Promise<void>;
}

interface Peer {
  name: string;
  pid?: number;
  answer?: Answer;
}

interface Candidate {
  name: string;
  answer: Answer;
  server: LockServer;
}

/** The directory being locked: its path, its sockets' addresses, its abstract name (Linux). */
interface LockDir {
  path: string;
  sockets: SocketDir;
  abstract?: string;
  log: (line: string) => void;
  /** Said in every answer of ours (an offline command's name). */
  command?: string;
}

/**
 * Takes the directory, or rejects with `DataDirInUseError` naming the live owner. Stale sockets
 * are removed with a log line.
 */
export async function acquireLock(path: string, log: (line: string) => void, options: LockOptions = {}): Promise<Lock> {
  let kind = options.kind ?? kindFromEnv();
  const abstract = process.platform === 'linux' ? abstractLockAddress(path) : undefined;
  if (kind === 'abstract' && abstract === undefined) throw new Error(`data directory ${path}: an abstract lock socket needs Linux`);
  const dir: LockDir = { path, sockets: openSocketDir(path, LONGEST_NAME), abstract, log, ...(options.command === undefined ? {} : { command: options.command }) };
  try {
    for (;;) {
      let owner: Candidate | undefined;
      try {
        owner = kind === 'abstract' ? await competeAbstract(dir) : await compete(dir);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code ?? '';
        if (kind !== 'file' || options.kind !== undefined || !NO_SOCKET_FILES.has(code)) throw describeListenError(path, err);
        if (abstract === undefined) {
          throw new Error(
            `data directory ${path}: its file system cannot hold the lock's socket file (${code}), and outside Linux there is no other lock: use a directory on a local file system`,
          );
        }
        log(`data directory ${path}: its file system cannot hold a socket file (${code}): locked by an abstract socket named after its device and inode instead`);
        kind = 'abstract';
        continue;
      }
      if (owner) return ownLock(dir, owner, kind);
      await watch(dir, undefined);
    }
  } catch (err) {
    dir.sockets.close();
    throw err;
  }
}

function kindFromEnv(): LockKind {
  const value = process.env.ASSESSD_LOCK_KIND;
  if (value === undefined || value === '' || value === 'file') return 'file';
  if (value === 'abstract') return 'abstract';
  throw new Error(`ASSESSD_LOCK_KIND must be file or abstract, not ${JSON.stringify(value)}`);
}

/**
 * `\0.assessd-lock-<device>-<inode>-___...`: the same for every path to the directory, on this
 * machine. Padded to fill sun_path (108 bytes), so that it is one address whether a runtime passes
 * the name's length or the whole sun_path to bind() and connect() (libuv's versions differ).
 */
export function abstractLockAddress(path: string): string {
  const { dev, ino } = statSync(path, { bigint: true });
  return `\0${LOCK_SOCKET_PREFIX}${dev.toString(16)}-${ino.toString(16)}-`.padEnd(ABSTRACT_LENGTH, '_');
}

/** What to do when the directory cannot be written (an archive mounted read-only, another user's directory). */
const UNWRITABLE_ADVICE: Record<string, string> = {
  EROFS: 'its file system is read-only',
  EACCES: 'this user may not write in it',
};

function describeListenError(path: string, err: unknown): Error {
  if (!(err instanceof Error) || !('syscall' in err)) return err as Error;
  const code = (err as NodeJS.ErrnoException).code;
  const why = code === undefined ? undefined : UNWRITABLE_ADVICE[code];
  // every command writes there, an export too (its lock; a journal's torn end is cut at the load)
  const advice = why === undefined ? '' : ` (${why}, and assessd writes in its data directory even to export from it: copy the directory with cp -a to a place this user may write, and name the copy with --data-dir)`;
  return Object.assign(new Error(`data directory ${path}: cannot create its lock socket: ${err.message}${advice}`), { code });
}

/** What a candidate answers while it starts (then as owner): its pid, and a command's name. */
function firstAnswer(dir: LockDir): Answer {
  return { pid: process.pid, state: 'starting', ...(dir.command === undefined ? {} : { command: dir.command }) };
}

/** The candidate, now owner; or undefined when it gave way to another one. */
async function compete(dir: LockDir): Promise<Candidate | undefined> {
  // unique among the candidates (a pid can repeat across containers): no secret, so no node:crypto at start
  const id = `${LOCK_SOCKET_PREFIX}${process.pid}-${Math.floor(Math.random() * 2 ** 32).toString(16).padStart(8, '0')}`;
  const candidate = { name: `${id}.sock`, answer: firstAnswer(dir) };
  const server = await listenAt(dir.sockets.address(`${id}.bind`), () => candidate.answer, dir.log);
  try {
    renameSync(join(dir.path, `${id}.bind`), join(dir.path, candidate.name));
  } catch (err) {
    await server.close();
    // a scan found it between bind() and listen() and removed it as stale: try again
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  return contend(dir, { ...candidate, server });
}

/** The abstract candidate, now owner; or undefined when another holds the name, or it gave way. */
async function competeAbstract(dir: LockDir): Promise<Candidate | undefined> {
  const answer = firstAnswer(dir);
  let server: LockServer;
  try {
    server = await listenAt(dir.abstract!, () => answer, dir.log);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
    // its holder may be between bind() and listen(), refusing connections: let it get there
    await new Promise((resolve) => setTimeout(resolve, RESCAN_MS * Math.random()));
    return undefined;
  }
  return contend(dir, { name: ABSTRACT_PEER, answer, server });
}

/** A listening candidate watches its peers: the owner it becomes, or undefined once it gave way. */
async function contend(dir: LockDir, candidate: Candidate): Promise<Candidate | undefined> {
  let won = false;
  try {
    won = await watch(dir, candidate.name);
  } finally {
    if (!won) await closeLockSocket(dir, candidate);
  }
  if (!won) return undefined;
  candidate.answer.state = 'owner';
  return candidate;
}

/**
 * Scans until nobody else is alive (true: for a candidate, it may own the directory), a live
 * owner shows (rejects naming it), or, for a candidate `own`, a smaller one is starting (false).
 */
async function watch(dir: LockDir, own: string | undefined): Promise<boolean> {
  for (;;) {
    const peers = await scan(dir, own);
    const holder = peers.find((peer) => peer.answer?.state !== 'starting');
    if (holder) throw new DataDirInUseError(dir.path, holder.answer?.pid ?? holder.pid, holder.answer?.url, holder.answer?.command, holder.answer?.tokenFile);
    if (peers.length === 0) return true;
    if (own !== undefined && peers.some((peer) => peer.name < own)) return false;
    await new Promise((resolve) => setTimeout(resolve, RESCAN_MS * (1 + Math.random())));
  }
}

/** The live lock sockets other than `own`, the abstract one included; the dead files are removed. */
async function scan(dir: LockDir, own: string | undefined): Promise<Peer[]> {
  const names = readdirSync(dir.path).filter((name) => name !== own && LOCK_NAME.test(name));
  let abstract = own !== ABSTRACT_PEER ? dir.abstract : undefined;
  // a file candidate binds the abstract name first: a name nobody holds needs no probe
  if (abstract !== undefined && own !== undefined && (await abstractNameFree(abstract))) abstract = undefined;
  const addresses = names.map((name) => dir.sockets.address(name));
  const probes = await Promise.all([...addresses, ...(abstract === undefined ? [] : [abstract])].map((address) => probe(address, ANSWER_WAIT_MS)));
  const peers: Peer[] = [];
  names.forEach((name, i) => {
    const [, pid, kind] = LOCK_NAME.exec(name)!;
    const result = probes[i];
    if (result.kind === 'dead') {
      if (removeIfThere(join(dir.path, name)) && kind === 'sock') dir.log(`taking over the stale lock of process ${pid} in ${dir.path}`);
    } else if (result.kind === 'live' && kind === 'sock') {
      peers.push({ name, pid: Number(pid), answer: result.answer });
    }
  });
  // an abstract name nobody listens on is gone with its process: nothing to remove
  const last = probes[names.length];
  if (abstract !== undefined && last.kind === 'live') peers.push({ name: ABSTRACT_PEER, answer: last.answer });
  return peers;
}

function ownLock(dir: LockDir, owner: Candidate, kind: LockKind): Lock {
  if (removeIfThere(join(dir.path, LEGACY_LOCK_FILE))) dir.log(`removed ${LEGACY_LOCK_FILE}, the pid file of an earlier version: the lock is now a socket`);
  let released: Promise<void> | undefined;
  return {
    kind,
    advertise(info) {
      owner.answer.url = info.url;
      if (info.tokenFile !== undefined) owner.answer.tokenFile = info.tokenFile;
    },
    release() {
      released ??= closeLockSocket(dir, owner).then(() => dir.sockets.close());
      return released;
    },
  };
}

async function closeLockSocket(dir: LockDir, candidate: Candidate): Promise<void> {
  if (candidate.name !== ABSTRACT_PEER) removeIfThere(join(dir.path, candidate.name));
  await candidate.server.close();
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
