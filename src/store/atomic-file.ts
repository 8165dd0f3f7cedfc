/** writeFileAtomic: a temp file in the same directory, fsync, rename over the target, fsync the directory. */
import { open, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/**
 * The file operations the store needs, each doing exactly one fsync: a seam so tests can inject
 * a failing disk.
 */
export interface FileSystem {
  writeFileAtomic(path: string, data: string): Promise<void>;
  syncDir(dir: string): Promise<void>;
}

let tempCounter = 0;

/** The temp files' marker: a start-up sweep removes leftovers of a crash mid-write. */
export const TEMP_MARKER = '.tmp-';

export function tempPathFor(path: string): string {
  // rename is atomic only within one filesystem, so the temp file lives beside the target
  return join(dirname(path), `.${basename(path)}${TEMP_MARKER}${process.pid}-${++tempCounter}`);
}

export const nodeFileSystem: FileSystem = {
  async writeFileAtomic(path, data) {
    const temp = tempPathFor(path);
    const handle = await open(temp, 'w', 0o600);
    try {
      await handle.writeFile(data, 'utf8');
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
    const handle = await open(dir, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  },
};
