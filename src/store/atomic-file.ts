/** The store's file operations: atomic replacement of a file, and a journal appended in place. */
import { close, closeSync, constants, fdatasync, fstat, fstatSync, fsync, ftruncate, open as openFd, openSync, stat, write, type Stats } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { fsPromises } from '../lazy-builtins.js';

/** A file written at explicit offsets, each write made durable before it resolves. */
export interface AppendableFile {
  /** Whether opening it created it: its directory entry then needs an fsync of the directory. */
  readonly created: boolean;
  /**
   * Writes `data` at `position`, durably (as write + fdatasync) before it resolves; rejects (code
   * ERR_DATA_DIR_REPLACED) when the file is no longer the one at its path: its directory was
   * removed or replaced meanwhile, and what it holds is lost with the old one.
   */
  writeAt(data: Buffer, position: number): Promise<void>;
  /** Cuts the file to `length`, then fsync. */
  truncate(length: number): Promise<void>;
  close(): Promise<void>;
}

/** A new file written front to back; nothing of it is durable before `sync()`. */
export interface NewFile {
  /** Appends `data` (to the page cache: no fsync). */
  write(data: Buffer): Promise<void>;
  /** fsync: what was written is durable (the file's directory entry needs a directory fsync). */
  sync(): Promise<void>;
  close(): Promise<void>;
}

/**
 * What the store needs of a disk, each durable write doing exactly one fsync: a seam so tests
 * can inject a failing disk.
 */
export interface FileSystem {
  /** A temp file in the same directory (`data` written piece by piece), fsync, rename over `path`. */
  writeFileAtomic(path: string, data: string | Iterable<string>): Promise<void>;
  syncDir(dir: string): Promise<void>;
  /**
   * Opens (creating if missing) a file for in-place appends; `atStart`: with synchronous calls
   * (nothing is served yet, and the thread pool's first calls cost a start ~3-5 ms: the pool
   * started, and two round trips to it).
   */
  openAppendable(path: string, options?: { atStart?: boolean }): Promise<AppendableFile>;
  /** Deletes a file (a missing one is no error). */
  remove(path: string): Promise<void>;
  /** Creates a file that must not exist yet (mode 0600), for writing front to back. */
  createFile(path: string): Promise<NewFile>;
  /** Creates a directory (mode 0700) if it is missing; its entry needs a directory fsync of its parent. */
  mkdir(path: string): Promise<void>;
}

/**
 * O_DSYNC: each write is as durable as write + fdatasync when it returns, in one system call and
 * one round trip through the thread pool instead of two (each a thread woken on a machine whose
 * cores the event loop and its clients already use). Where there is none (Windows), an fdatasync.
 */
const DATA_SYNC = constants.O_DSYNC ?? 0;
const READ_WRITE = constants.O_RDWR;

let tempCounter = 0;

/** The temp files' marker: a start-up sweep removes leftovers of a crash mid-write. */
export const TEMP_MARKER = '.tmp-';

/** This module's copy in this thread (each thread loads its own): two threads' temp files never share a name. */
const THREAD = Math.floor(Math.random() * 2 ** 32).toString(36);

function tempPathFor(path: string): string {
  // rename is atomic only within one filesystem, so the temp file lives beside the target
  return join(dirname(path), `.${basename(path)}${TEMP_MARKER}${process.pid}-${THREAD}-${++tempCounter}`);
}

/** The process that wrote `name` (a file in `path`'s directory) as a temp file of `path`; undefined when it is none. */
export function tempFileWriter(path: string, name: string): number | undefined {
  const prefix = `.${basename(path)}${TEMP_MARKER}`;
  if (!name.startsWith(prefix)) return undefined;
  const pid = Number(name.slice(prefix.length).split('-')[0]);
  return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
}

// the journal's calls on a plain descriptor: node:fs/promises (~2 ms to load) waits for a first write
const descriptorCalls = {
  open: promisify(openFd),
  fstat: promisify(fstat),
  write: promisify(write),
  truncate: promisify(ftruncate),
  fsync: promisify(fsync),
  fdatasync: promisify(fdatasync),
  stat: promisify(stat),
  close: promisify(close),
};

/** The error of a write to a file no longer at its path (the data directory removed or replaced). */
function replacedError(path: string): Error {
  return Object.assign(
    new Error(`${path} is no longer the file at that path: the data directory was removed or replaced while the server ran; nothing more is written (restart the server on the directory it should use)`),
    { code: 'ERR_DATA_DIR_REPLACED' },
  );
}

export const nodeFileSystem: FileSystem = {
  async writeFileAtomic(path, data) {
    const { open, rename, unlink } = fsPromises();
    const temp = tempPathFor(path);
    const handle = await open(temp, 'w', 0o600);
    try {
      // each writeFile goes on from where the previous one ended
      for (const piece of typeof data === 'string' ? [data] : data) await handle.writeFile(piece, 'utf8');
      await handle.sync();
    } catch (err) {
      await handle.close().catch(() => {});
      await unlink(temp).catch(() => {});
      throw err;
    }
    await handle.close();
    try {
      await rename(temp, path);
    } catch (err) {
      await unlink(temp).catch(() => {});
      throw err;
    }
  },

  async syncDir(dir) {
    const handle = await fsPromises().open(dir, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  },

  async openAppendable(path, { atStart = false } = {}) {
    // while the server runs, on the thread pool: a hung mount then holds a pool thread, not every request
    const open = atStart ? async (flags: number, mode?: number) => openSync(path, flags, mode) : (flags: number, mode?: number) => descriptorCalls.open(path, flags, mode);
    const stat = atStart ? async (fd: number) => fstatSync(fd) : descriptorCalls.fstat;
    // not 'a': O_APPEND ignores the position, and a failed write must be overwritable
    let created = false;
    let descriptor: number;
    try {
      descriptor = await open(READ_WRITE | DATA_SYNC);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      created = true;
      descriptor = await open(READ_WRITE | DATA_SYNC | constants.O_CREAT | constants.O_EXCL, 0o600);
    }
    // which file it is: a write checks the path still names it before the write counts as durable
    let opened: Stats;
    try {
      opened = await stat(descriptor);
    } catch (err) {
      closeSync(descriptor);
      throw err;
    }
    // as a FileHandle: nothing once closing, and the close waits for calls in flight (the number is reused)
    let closing: Promise<void> | undefined;
    let inFlight = 0;
    let settled: (() => void) | undefined;
    const call = async <T>(run: () => Promise<T>): Promise<T> => {
      if (closing) throw Object.assign(new Error(`${path}: the file is closed`), { code: 'EBADF' });
      inFlight++;
      try {
        return await run();
      } finally {
        if (--inFlight === 0) settled?.();
      }
    };
    return {
      created,
      writeAt: (data, position) =>
        call(async () => {
          let written = 0;
          while (written < data.length) {
            const { bytesWritten } = await descriptorCalls.write(descriptor, data, written, data.length - written, position + written);
            written += bytesWritten;
          }
          if (DATA_SYNC === 0) await descriptorCalls.fdatasync(descriptor);
          const now = await descriptorCalls.stat(path).catch(() => undefined);
          if (now?.ino !== opened.ino || now.dev !== opened.dev) throw replacedError(path);
        }),
      truncate: (length) =>
        call(async () => {
          await descriptorCalls.truncate(descriptor, length);
          await descriptorCalls.fsync(descriptor);
        }),
      close: () => (closing ??= (inFlight === 0 ? Promise.resolve() : new Promise<void>((resolve) => (settled = resolve))).then(() => descriptorCalls.close(descriptor))),
    };
  },

  async remove(path) {
    await fsPromises().unlink(path).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
    });
  },

  async createFile(path) {
    const handle = await fsPromises().open(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
    return {
      async write(data) {
        let written = 0;
        while (written < data.length) written += (await handle.write(data, written, data.length - written)).bytesWritten;
      },
      sync: () => handle.sync(),
      close: () => handle.close(),
    };
  },

  async mkdir(path) {
    await fsPromises().mkdir(path, { mode: 0o700 }).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'EEXIST') throw err;
    });
  },
};
