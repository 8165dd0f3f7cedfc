/** One owner per data directory: a lock file holding the owner's pid. */
import { open, readFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';

export const LOCK_FILE = 'assessd.lock';

export class DataDirInUseError extends Error {}

export interface Lock {
  release(): Promise<void>;
}

function isAlive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Takes the lock, taking over a stale one (its process is gone) with a log line. */
export async function acquireLock(dir: string, log: (line: string) => void): Promise<Lock> {
  const path = join(dir, LOCK_FILE);
  for (let attempt = 0; ; attempt++) {
    try {
      const handle = await open(path, 'wx', 0o644);
      await handle.writeFile(`${process.pid}\n`);
      await handle.sync();
      await handle.close();
      return { release: () => unlink(path).catch(() => {}) };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) throw err;
    }
    const pid = Number.parseInt(await readFile(path, 'utf8').catch(() => ''), 10);
    if (Number.isSafeInteger(pid) && pid > 0 && isAlive(pid)) {
      throw new DataDirInUseError(`data directory ${dir} is in use by process ${pid}`);
    }
    log(`taking over the stale lock of ${Number.isNaN(pid) ? 'an unknown process' : `process ${pid}`} in ${dir}`);
    await unlink(path).catch(() => {});
  }
}
