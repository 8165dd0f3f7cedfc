/** A disk that can be made to fail every write (ENOSPC, EIO, EACCES...) and then to recover. */
import { nodeFileSystem, type FileSystem } from '../../src/store/atomic-file.ts';

export interface FailingDisk {
  fs: FileSystem;
  /** Every write fails with this code from now on; `undefined` to recover. */
  fail(code: string | undefined): void;
}

export function failingDisk(): FailingDisk {
  let code: string | undefined;
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
        async writeAt(data, position) {
          // a failing disk may take part of the write before it fails
          if (code) await file.writeAt(data.subarray(0, data.length >> 1), position);
          check(`write ${path}`);
          return file.writeAt(data, position);
        },
        async truncate(length) {
          check(`truncate ${path}`);
          return file.truncate(length);
        },
        close: () => file.close(),
      };
    },
  };
  return { fs, fail: (c) => (code = c) };
}
