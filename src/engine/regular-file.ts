/**
 * Reads a file a tool left in its output directory. The tool may have put anything there: a FIFO
 * (opening it for reading would wait for a writer for ever, holding a libuv thread), a socket, a
 * device, a symlink to elsewhere. Only a regular file is read, and only its first `maxBytes`.
 */
import { constants, type Stats } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { fsPromises } from '../lazy-builtins.js';

export type RegularFileRead =
  | { ok: true; bytes: Buffer; size: number }
  | { ok: false; reason: string; code?: string };

/** What kind of file a stat describes, for a refusal that says it. */
export function fileKind(stats: Stats): string {
  if (stats.isFIFO()) return 'a named pipe (FIFO)';
  if (stats.isSocket()) return 'a socket';
  if (stats.isCharacterDevice() || stats.isBlockDevice()) return 'a device';
  if (stats.isDirectory()) return 'a directory';
  if (stats.isSymbolicLink()) return 'a symbolic link';
  return 'not a regular file';
}

/**
 * The first `maxBytes` of `path` (its last, with `tail`) when it is a regular file. Opened with
 * O_NONBLOCK (a FIFO opens at once instead of waiting for a writer) and O_NOFOLLOW (a symlink is
 * refused), then checked with fstat on the open descriptor, so the file read is the one checked
 * (a hard link, a file with another name too, is refused as well).
 */
export async function readRegularFile(path: string, maxBytes: number, { tail = false, under }: { tail?: boolean; under?: string } = {}): Promise<RegularFileRead> {
  const opened = await openRegularFile(path, under);
  if (!opened.ok) return opened;
  const { handle, stats } = opened;
  try {
    const bytes = Buffer.alloc(Math.max(0, Math.min(stats.size, maxBytes)));
    const start = tail ? stats.size - bytes.length : 0;
    let filled = 0;
    // a file that shrinks while read gives what is there; one that grows is cut at the size seen
    while (filled < bytes.length) {
      const { bytesRead } = await handle.read(bytes, filled, bytes.length - filled, start + filled);
      if (bytesRead === 0) break;
      filled += bytesRead;
    }
    return { ok: true, bytes: bytes.subarray(0, filled), size: stats.size };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return { ok: false, reason: code ?? (err as Error).message, ...(code ? { code } : {}) };
  } finally {
    await handle.close().catch(() => {});
  }
}

export type RegularFileOpen = { ok: true; handle: FileHandle; stats: Stats } | { ok: false; reason: string; code?: string };

/** Whether `path` still names the file `opened` describes, and names it alone. */
async function sameFile(path: string, opened: Stats): Promise<boolean> {
  const now = await fsPromises().lstat(path).catch(() => undefined);
  return now !== undefined && now.isFile() && now.dev === opened.dev && now.ino === opened.ino && now.nlink === 1;
}

/**
 * Whether the open file is `path` itself, with no symlink on the way from `under` (O_NOFOLLOW sees
 * the last part of a path only: a run's directory, or one in it, swapped for a symlink by the tool
 * that wrote it led elsewhere). What the descriptor names (Linux's /proc/self/fd; elsewhere the
 * path's realpath) against `under`'s realpath joined with the rest of `path`: `under`'s own
 * ancestors may be symlinks (a data directory on another volume).
 */
async function openedAsNamed(handle: FileHandle, path: string, under: string): Promise<boolean> {
  const { readlink, realpath } = fsPromises();
  try {
    const expected = join(await realpath(under), relative(under, path));
    const real = await readlink(`/proc/self/fd/${handle.fd}`).catch(() => realpath(path));
    return real === expected;
  } catch {
    return false;
  }
}

/**
 * `path` opened for reading when it is a regular file (O_NOFOLLOW, O_NONBLOCK, then fstat on the
 * descriptor), and with `under`, reached from there through no symlink (else EXDEV): the caller
 * reads it and closes the handle.
 */
export async function openRegularFile(path: string, under?: string): Promise<RegularFileOpen> {
  let handle: FileHandle;
  try {
    handle = await fsPromises().open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const reason = code === 'ELOOP' ? 'a symbolic link (not followed)' : code === 'ENOENT' ? 'missing' : (code ?? (err as Error).message);
    return { ok: false, reason, ...(code ? { code } : {}) };
  }
  try {
    const stats = await handle.stat();
    // A second name for a file elsewhere (`ln /etc/shadow x`, by the tool that wrote the
    // directory): O_NOFOLLOW cannot tell a hard link from the file, its link count can. The name
    // must still be the file opened, its only one: a link removed between the open and the fstat
    // (`ln F x; rm x`, in a loop) left a count of 1 on the file elsewhere.
    if (stats.isFile() && stats.nlink === 1 && (await sameFile(path, stats))) {
      if (under === undefined || (await openedAsNamed(handle, path, under))) return { ok: true, handle, stats };
      await handle.close().catch(() => {});
      return { ok: false, reason: 'outside the output directory', code: 'EXDEV' };
    }
    if (stats.isFile()) {
      await handle.close().catch(() => {});
      return { ok: false, reason: 'a hard link (a file that has another name elsewhere), not read', code: 'ENOTREG' };
    }
    await handle.close().catch(() => {});
    return { ok: false, reason: `${fileKind(stats)}, not read`, code: 'ENOTREG' };
  } catch (err) {
    await handle.close().catch(() => {});
    const code = (err as NodeJS.ErrnoException).code;
    return { ok: false, reason: code ?? (err as Error).message, ...(code ? { code } : {}) };
  }
}
