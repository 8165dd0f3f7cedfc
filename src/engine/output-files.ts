/**
 * The files a run left in its output directory, listed and opened for reading, never outside it:
 * a name is plain path segments (no `..`, no separator inside one), a symlink is neither listed
 * nor followed (the file is opened with O_NOFOLLOW and fstat'ed, and the path the descriptor names
 * is checked to lie inside the directory, so a directory swapped for a symlink leads nowhere), and
 * a FIFO or device is never opened for reading.
 */
import type { Stats } from 'node:fs';
import { join } from 'node:path';
import { fsPromises } from '../lazy-builtins.js';
import { openRegularFile, type RegularFileOpen } from './regular-file.js';

export interface OutputFile {
  /** The path under the output directory, segments joined by `/`. */
  name: string;
  size: number;
  /** ISO 8601. */
  modified: string;
}

/** Files listed per output at most, and directory levels walked. */
export const MAX_LISTED = 10_000;
/**
 * Directories opened per listing at most, and entries of any kind looked at: each directory is a
 * read of its own (~0.2 ms), and 200,000 empty ones took 20 s a listing.
 */
export const MAX_DIRECTORIES = 5_000;
const MAX_VISITED = 10 * MAX_LISTED;
const MAX_DEPTH = 16;
/** lstat calls listOutputFiles has under way at once. */
const LSTAT_AT_ONCE = 32;

/** Why `segments` do not name a file under an output directory, or undefined when they can. */
export function badFileName(segments: readonly string[]): string | undefined {
  if (segments.length === 0 || segments.length > MAX_DEPTH) return 'a file of the output directory is named by 1 to 16 path segments';
  for (const s of segments) {
    if (s === '' || s === '.' || s === '..') return 'no empty, "." or ".." segment';
    // a segment decoded from %2f or %5c, or holding a NUL: never a separator nor a C string's end
    if (s.includes('/') || s.includes('\\') || s.includes('\0')) return 'no "/", "\\" or NUL inside a segment';
  }
  return undefined;
}

/**
 * The regular files under `dir` (symlinks, FIFOs, sockets and devices left out), at most
 * MAX_LISTED, by name; nor a name the files route refuses (a backslash in it) or cannot be given
 * (bytes that are not UTF-8: read as U+FFFD, the name found is not the file's, and its lstat fails).
 */
export async function listOutputFiles(dir: string): Promise<{ files: OutputFile[]; more: boolean }> {
  const files: OutputFile[] = [];
  let more = false;
  /** Files found, in every directory, to be looked at; entries of any kind met; directories opened. */
  let taken = 0;
  let visited = 0;
  let opened = 0;
  const { lstat, opendir } = fsPromises();
  const root = await lstat(dir).catch(() => undefined);
  if (!root?.isDirectory()) return { files, more };
  const walk = async (path: string, prefix: string, depth: number): Promise<void> => {
    let handle;
    try {
      handle = await opendir(path);
    } catch {
      return; // gone meanwhile, or not readable
    }
    const names: string[] = [];
    for await (const entry of handle) {
      // past the bound nothing more is read (200,000 files took 5.8 s to list 10,000 of them)
      if (more) break;
      if (++visited > MAX_VISITED) {
        more = true;
        break;
      }
      if (entry.name.includes('\\')) continue;
      if (entry.isDirectory() && depth < MAX_DEPTH) {
        if (++opened > MAX_DIRECTORIES) {
          more = true;
          break;
        }
        await walk(join(path, entry.name), `${prefix}${entry.name}/`, depth + 1);
      } else if (entry.isFile()) {
        if (taken >= MAX_LISTED) {
          more = true;
          break;
        }
        taken++;
        names.push(entry.name);
      }
    }
    // looked at LSTAT_AT_ONCE at a time: one after another, 10,000 took ~1 s
    for (let at = 0; at < names.length; at += LSTAT_AT_ONCE) {
      const batch = names.slice(at, at + LSTAT_AT_ONCE);
      const stats = await Promise.all(batch.map((name) => lstat(join(path, name)).catch(() => undefined)));
      batch.forEach((name, i) => {
        const found: Stats | undefined = stats[i];
        // (a hard link is not listed: it is not read either)
        if (found?.isFile() && found.nlink === 1) files.push({ name: prefix + name, size: found.size, modified: found.mtime.toISOString() });
      });
    }
  };
  await walk(dir, '', 1);
  files.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { files, more };
}

/**
 * The file `segments` name under `dir` (an output's directory under `outputsDir`), open for
 * reading, when it is a regular file inside `dir`; the caller closes it. `code` ENOENT (missing),
 * ENOTREG (not a regular file: a FIFO, a directory), ELOOP (a symlink), EXDEV (a path that leads
 * out of the directory: through a symlink in it, or `dir` itself, or one of its parents, swapped
 * for one by the tool that wrote it).
 */
export function openOutputFile(outputsDir: string, dir: string, segments: readonly string[]): Promise<RegularFileOpen> {
  return openRegularFile(join(dir, ...segments), outputsDir);
}
