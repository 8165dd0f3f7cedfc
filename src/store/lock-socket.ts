/** The lock's Unix-domain sockets: addresses that fit sun_path, a server that answers one line, a probe. */
import { closeSync, constants, existsSync, openSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { join } from 'node:path';

/** sun_path holds 104 bytes on macOS (108 on Linux), the NUL included; libuv truncates a longer path silently. */
export const MAX_SOCKET_PATH = 103;

/** What a lock socket answers on every connection, as one JSON line. */
export interface Answer {
  pid: number;
  state: 'starting' | 'owner';
  url?: string;
  /** An offline command's name (`import`, `export`...), when the owner is one rather than a server. */
  command?: string;
  /** Whether the server's token is the data directory's token file (false: it was given one). */
  tokenFile?: boolean;
}

/** The lock sockets' addresses in one directory. */
export interface SocketDir {
  /** The path to bind or connect for the socket `name` in the directory. */
  address(name: string): string;
  close(): void;
}

/**
 * Plain paths when they fit; on Linux a longer one goes through `/proc/self/fd/<fd of the
 * directory>/<name>`, which reaches the same file; elsewhere it is an error naming the limit.
 */
export function openSocketDir(dir: string, longestName: number): SocketDir {
  const length = Buffer.byteLength(join(dir, 'x')) - 1 + longestName;
  if (length <= MAX_SOCKET_PATH) return { address: (name) => join(dir, name), close() {} };
  if (process.platform !== 'linux' || !existsSync('/proc/self/fd')) {
    throw new Error(
      `data directory ${dir}: the path is too long for its lock socket (${length} bytes with the socket's name, at most ${MAX_SOCKET_PATH}): use a shorter path`,
    );
  }
  const fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY);
  return { address: (name) => `/proc/self/fd/${fd}/${name}`, close: () => closeSync(fd) };
}

/** A listening lock socket. */
export interface LockServer {
  /** Stops listening, hanging up on connections still open. */
  close(): Promise<void>;
}

/** Listens at `path`, answering each connection with `answer()` and hanging up; never keeps the process alive. */
export async function listenAt(path: string, answer: () => Answer, log: (line: string) => void): Promise<LockServer> {
  const open = new Set<Socket>();
  const server = createServer((conn) => {
    open.add(conn);
    conn.on('close', () => open.delete(conn));
    conn.on('error', () => {});
    conn.unref();
    // unref'd, the connection could wait forever for the prober's FIN: hang up once the line is out
    conn.end(`${JSON.stringify(answer())}\n`, () => conn.destroy());
  });
  server.unref();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => {
      server.off('error', reject);
      resolve();
    });
  });
  // an accept() that fails (EMFILE) only costs that prober its answer: it counts us as alive anyway
  server.on('error', (err) => log(`lock socket: ${err.message}`));
  return {
    close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const conn of open) conn.destroy();
      return closed;
    },
  };
}

/**
 * `dead`: nobody listens (the file may go). `closed`: it hung up unanswered, its owner closing it.
 * `live`: a process holds it, with its answer if it came in time.
 */
export type Probe = { kind: 'dead' } | { kind: 'closed' } | { kind: 'live'; answer?: Answer };

// ENOTSOCK: macOS's answer for a file that is no socket (Linux says ECONNREFUSED)
const NOBODY_LISTENS = new Set(['ECONNREFUSED', 'ENOENT', 'ENOTSOCK']);

/**
 * Connects to the socket at `path`. A connection the kernel accepts means its process is alive
 * even when its event loop is too busy to answer: after `waitMs` it counts as live, unanswered.
 */
export function probe(path: string, waitMs: number): Promise<Probe> {
  return new Promise((resolve, reject) => {
    const socket = connect(path);
    let text = '';
    const settle = (result: Probe | Error) => {
      clearTimeout(timer);
      socket.destroy();
      if (result instanceof Error) reject(result);
      else resolve(result);
    };
    const timer = setTimeout(() => settle({ kind: 'live' }), waitMs);
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      text += chunk;
      if (text.includes('\n')) settle({ kind: 'live', answer: parseAnswer(text.slice(0, text.indexOf('\n'))) });
    });
    socket.on('close', () => settle({ kind: 'closed' }));
    socket.on('error', (err: NodeJS.ErrnoException) => {
      if (NOBODY_LISTENS.has(err.code ?? '')) settle({ kind: 'dead' });
      // EAGAIN: Linux's answer when the listener's backlog is full, so somebody is listening
      else if (err.code === 'EAGAIN') settle({ kind: 'live' });
      else if (err.code === 'ECONNRESET' || err.code === 'EPIPE') settle({ kind: 'closed' });
      else settle(err);
    });
  });
}

/**
 * Whether nobody holds the abstract `address`, learnt by binding it (undone at once): a bind that
 * succeeds proves what a refused connect() would, for a fraction of a probe's cost (the refusal
 * builds node's first socket error, ~4 ms). False (a name in use, any failure): probe it.
 */
export async function abstractNameFree(address: string): Promise<boolean> {
  const server = createServer();
  server.unref();
  const bound = await new Promise<boolean>((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(address, () => resolve(true));
  });
  // a connection taken meanwhile (a prober) is hung up on by the close: it reads as nobody there
  if (bound) await new Promise((resolve) => server.close(resolve));
  return bound;
}

function parseAnswer(line: string): Answer | undefined {
  try {
    const value = JSON.parse(line) as Partial<Answer>;
    if (!Number.isSafeInteger(value.pid) || (value.state !== 'starting' && value.state !== 'owner')) return undefined;
    return {
      pid: value.pid!,
      state: value.state,
      ...(typeof value.url === 'string' ? { url: value.url } : {}),
      ...(typeof value.command === 'string' && /^[a-z-]{1,32}$/.test(value.command) ? { command: value.command } : {}),
      ...(typeof value.tokenFile === 'boolean' ? { tokenFile: value.tokenFile } : {}),
    };
  } catch {
    return undefined;
  }
}
