/**
 * The web application's logins, kept in `DATA_DIR/logins` (mode 0600, written atomically): for
 * each browser logged in, a digest of its cookie's value and when the login expires. A login ends
 * when its browser logs out or when it expires; a restart keeps it. Read with the first login or
 * cookie that needs it, not at start.
 */
import { join } from 'node:path';
import { nodeFileSystem } from './atomic-file.js';
import { readDataFile } from './data-file.js';
import { DataFileError } from './state.js';

export const LOGINS_FILE = 'logins';
/** Logins kept at most: a new one past this ends the one that expires first. */
export const MAX_LOGINS = 100;

/** What the access check needs of the logins (src/http/access.ts): digests in, nothing about files. */
export interface LoginKeeper {
  /** Whether `digest` is a login that has not ended. */
  has(digest: string): boolean;
  /** Keeps a new login until `expires` (ms since the epoch); resolves once it is on disk. */
  add(digest: string, expires: number): Promise<void>;
  /** Ends a login; resolves once that is on disk. */
  remove(digest: string): Promise<void>;
}

/** Logins in memory only: a library server without a data directory's file, and the tests of the access check. */
export function memoryLogins(now: () => number = Date.now): LoginKeeper {
  return keeper(new Map(), now, async () => {});
}

function keeper(logins: Map<string, number>, now: () => number, save: (logins: Map<string, number>) => Promise<void>): LoginKeeper {
  const prune = () => {
    const t = now();
    for (const [digest, expires] of logins) if (expires <= t) logins.delete(digest);
  };
  return {
    has(digest) {
      const expires = logins.get(digest);
      return expires !== undefined && expires > now();
    },
    async add(digest, expires) {
      prune();
      while (logins.size >= MAX_LOGINS) {
        let first: string | undefined;
        for (const [d, e] of logins) if (first === undefined || e < logins.get(first)!) first = d;
        logins.delete(first!);
      }
      logins.set(digest, expires);
      await save(logins);
    },
    async remove(digest) {
      if (!logins.delete(digest)) return;
      await save(logins);
    },
  };
}

/**
 * The logins of the data directory `dir`. A file that cannot be read or is not what this writes
 * is logged and taken as no logins (the browsers then log in again); one that cannot be written
 * is logged, and the change holds until the server stops.
 */
export function fileLogins(dir: string, log: (line: string) => void, now: () => number = Date.now): LoginKeeper {
  const file = join(dir, LOGINS_FILE);
  let loaded: LoginKeeper | undefined;
  // one write at a time, each of the whole list as it is then
  let writing: Promise<void> = Promise.resolve();
  const save = (logins: Map<string, number>) => {
    const text = `${JSON.stringify({ logins: [...logins].map(([digest, expires]) => ({ digest, expires })) })}\n`;
    writing = writing
      .then(() => nodeFileSystem.writeFileAtomic(file, text))
      .catch((err: NodeJS.ErrnoException) => log(`the web application's logins could not be written to ${file} (${err.code ?? err.message}): the change holds until the server stops`));
    return writing;
  };
  const load = (): LoginKeeper => {
    const logins = new Map<string, number>();
    let text: string | undefined;
    try {
      text = readDataFile(file)?.toString('utf8');
    } catch (err) {
      log(`${file} could not be read (${err instanceof DataFileError ? err.problem : (err as NodeJS.ErrnoException).code}): browsers log in again`);
    }
    if (text !== undefined) {
      try {
        const list = (JSON.parse(text) as { logins?: unknown }).logins;
        if (!Array.isArray(list)) throw new Error('no list of logins');
        for (const entry of list as { digest?: unknown; expires?: unknown }[]) {
          if (typeof entry?.digest !== 'string' || !/^[0-9a-f]{64}$/.test(entry.digest) || typeof entry.expires !== 'number') throw new Error('a login that is not a digest and a time');
          logins.set(entry.digest, entry.expires);
        }
      } catch (err) {
        logins.clear();
        log(`${file} is not a list of logins (${(err as Error).message}): browsers log in again`);
      }
    }
    return keeper(logins, now, save);
  };
  return {
    has: (digest) => (loaded ??= load()).has(digest),
    add: (digest, expires) => (loaded ??= load()).add(digest, expires),
    remove: (digest) => (loaded ??= load()).remove(digest),
  };
}
