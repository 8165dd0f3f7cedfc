/** A disk that can be made to fail every write (ENOSPC, EIO, EACCES...) and then to recover. */
import { nodeFileSystem, type FileSystem } from '../../src/store/atomic-file.ts';

export interface FailingDisk {
  fs: FileSystem;
  /**
   * Every write fails with this code from now on (`undefined` to recover): `'partial'` fails
   * journal writes halfway through and truncates before they start; `'after'` fails each
   * operation once its data is written, as a failed fsync does.
   */
  fail(code: string | undefined, how?: 'partial' | 'after'): void;
}

export function failingDisk(): FailingDisk {
  let code: string | undefined;
  let mode: 'partial' | 'after' = 'partial';
  const check = (what: string) => {
    if (code) throw Object.assign(new Error(`${code}: injected failure, ${what}`), { code });
  };
  const fs: FileSystem = {
    async writeFileAtomic(path, data) {
      check(`write ${path}`);
      return nodeFileSystem.writeFileAtomic(path, data);
    },
    async syncDir(dir) {
      check(`fsync ${dir}`);
      return nodeFileSystem.syncDir(dir);
    },
    async openAppendable(path) {
      const file = await nodeFileSystem.openAppendable(path);
      return {
        created: file.created,
        async writeAt(data, position) {
          // a failing disk may take part of the write, or all of it, before it fails
          if (code) await file.writeAt(mode === 'after' ? data : data.subarray(0, data.length >> 1), position);
          check(`write ${path}`);
          return file.writeAt(data, position);
        },
        async truncate(length) {
          if (code && mode === 'after') await file.truncate(length);
          check(`truncate ${path}`);
          return file.truncate(length);
        },
        close: () => file.close(),
      };
    },
    async remove(path) {
      check(`unlink ${path}`);
      return nodeFileSystem.remove(path);
    },
    async createFile(path) {
      check(`create ${path}`);
      const file = await nodeFileSystem.createFile(path);
      return {
        async write(data) {
          check(`write ${path}`);
          return file.write(data);
        },
        async sync() {
          check(`fsync ${path}`);
          return file.sync();
        },
        close: () => file.close(),
      };
    },
    async mkdir(path) {
      check(`mkdir ${path}`);
      return nodeFileSystem.mkdir(path);
    },
  };
  return {
    fs,
    fail(c, how = 'partial') {
      code = c;
      mode = how;
    },
  };
}

/** The real file system, every journal write going through `write`, which may fail or act around the real one. */
export function journalWrites(write: (real: (data: Buffer, position: number) => Promise<void>, data: Buffer, position: number) => Promise<void>): FileSystem {
  return {
    ...nodeFileSystem,
    async openAppendable(path) {
      const file = await nodeFileSystem.openAppendable(path);
      return { ...file, writeAt: (data, position) => write((d, p) => file.writeAt(d, p), data, position) };
    },
  };
}
