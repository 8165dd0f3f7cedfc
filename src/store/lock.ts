/** One owner per data directory: a lock file holding the owner's pid. */
import { linkSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { unlink } from 'node:fs/promises';
import { join } from 'node:path';

export const LOCK_FILE = 'assessd.lock';

export class DataDirInUseError extends Error {
  readonly code = 'ERR_DATA_DIR_IN_USE';
}

export interface Lock {
  release(): Promise<void>;
}

/** Lock files this process holds: its own pid in a lock file it does not hold is a past run's. */
const held = new Set<string>();

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function ownerOf(path: string): number | undefined {
  let text = '';
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    // gone: no owner
  }
  const pid = Number.parseInt(text, 10);
  return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
}

function removeIfThere(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // already gone
  }
}

function inUse(dir: string, pid: number): DataDirInUseError {
  return new DataDirInUseError(`data directory ${dir} is in use by process ${pid}`);
}

/**
 * Takes the lock, taking over a stale one (its process is gone) with a log line. The lock file is
 * linked into place already holding the pid, so nobody ever reads it empty. Synchronous file
 * calls: this runs once, at start-up, before anything is served.
 */
export async function acquireLock(dir: string, log: (line: string) => void): Promise<Lock> {
  const path = join(dir, LOCK_FILE);
  if (held.has(path)) throw inUse(dir, process.pid);
  const draft = join(dir, `.${LOCK_FILE}.${process.pid}`);
  writeFileSync(draft, `${process.pid}\n`, { mode: 0o644 });
  try {
    for (let takeover = false; ; takeover = true) {
      try {
        linkSync(draft, path);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || takeover) throw err;
        const pid = ownerOf(path);
        if (pid !== undefined && pid !== process.pid && isAlive(pid)) throw inUse(dir, pid);
        log(`taking over the stale lock of ${pid === undefined ? 'an unknown process' : `process ${pid}`} in ${dir}`);
        removeIfThere(path);
        continue;
      }
      if (takeover) {
        // two servers may have found the same stale lock: the one whose pid is in the file wins
        await new Promise((resolve) => setTimeout(resolve, 50));
        const owner = ownerOf(path);
        if (owner !== process.pid) throw inUse(dir, owner ?? 0);
      }
      held.add(path);
      return {
        async release() {
          held.delete(path);
          await unlink(path).catch(() => {});
        },
      };
    }
  } finally {
    removeIfThere(draft);
  }
}
