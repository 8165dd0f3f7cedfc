/**
 * Reading the data directory's own files (snapshots, journal segments, the token, the CA): anything
 * but a regular file at such a name stops the start naming it. A FIFO would hold the read until
 * something writes into it, for ever at start; a directory failed it with EISDIR and no name.
 */
import { mkdirSync, readFileSync, statSync, type Stats } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { DataFileError } from './state.js';

function kindOf(stats: Stats): string {
  if (stats.isDirectory()) return 'a directory';
  if (stats.isFIFO()) return 'a FIFO';
  if (stats.isSocket()) return 'a socket';
  if (stats.isCharacterDevice() || stats.isBlockDevice()) return 'a device';
  return 'not a file';
}

/** The size of the regular file at `file`, or undefined when there is nothing there; throws DataFileError for anything else. */
export function regularFileSize(file: string): number | undefined {
  const stats = statSync(file, { throwIfNoEntry: false });
  if (stats === undefined) return undefined;
  if (!stats.isFile()) throw new DataFileError(file, `${kindOf(stats)}, where a file of the data directory belongs: move it away`);
  return stats.size;
}

/** The bytes of the regular file at `file`, or undefined when there is none (also one removed meanwhile). */
export function readDataFile(file: string): Buffer | undefined {
  if (regularFileSize(file) === undefined) return undefined;
  try {
    return readFileSync(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/**
 * Makes `dir` and the directories above it that are missing, each with `mode`, one mkdir() at a
 * time. Node's recursive mkdir never returns where mkdir() answers ENOENT though the parent is
 * there (/proc, some FUSE file systems): it makes the parent again, and again. Here that ENOENT
 * is the error, naming the directory. An existing `dir` is left as it is.
 */
export function makeDirectories(dir: string, mode: number): void {
  const missing: string[] = [];
  for (let at = resolve(dir); statSync(at, { throwIfNoEntry: false }) === undefined; at = dirname(at)) {
    missing.push(at);
    if (dirname(at) === at) break;
  }
  for (const path of missing.reverse()) {
    try {
      mkdirSync(path, { mode });
    } catch (err) {
      // made meanwhile (another start): as good
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
}
