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
  /** Keeps a new login until `expires` (ms since the epoch); resolves once it is written, or could not be (then written again until it is). */
  add(digest: string, expires: number): Promise<void>;
  /** Ends a login; resolves as `add` does. */
  remove(digest: string): Promise<void>;
  /** Stops writing the list again (a last try first, when one is due): the server stops. */
  close?(): Promise<void>;
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

/** A failed write of the logins is tried again after this, doubling up to RETRY_MAX_MS. */
export const RETRY_FIRST_MS = 1000;
const RETRY_MAX_MS = 30_000;

/**
 * The logins of the data directory `dir`. A file that cannot be read or is not what this writes
 * is logged and taken as no logins (the browsers then log in again). One that cannot be written
 * (a full disk) is logged, the change holds in memory, and the list is written again, after 1 s,
 * then less often, until it lands: a logout answered while the disk was full is not undone by
 * the next restart once there is room again.
 */
export function fileLogins(dir: string, log: (line: string) => void, now: () => number = Date.now, retryFirstMs = RETRY_FIRST_MS): LoginKeeper {
  const file = join(dir, LOGINS_FILE);
  let loaded: LoginKeeper | undefined;
  // one write at a time, each of the whole list as it is then
  let writing: Promise<void> = Promise.resolve();
  /** While the list is not on disk as it is in memory: the retry's timer, its next delay, and the list. */
  let retry: { timer?: NodeJS.Timeout; delay: number; logins: Map<string, number> } | undefined;
  let closed = false;
  const save = (logins: Map<string, number>): Promise<void> => {
    clearTimeout(retry?.timer);
    writing = writing
      .then(() => nodeFileSystem.writeFileAtomic(file, `${JSON.stringify({ logins: [...logins].map(([digest, expires]) => ({ digest, expires })) })}\n`))
      .then(
        () => {
          // a timer set by a write that failed before this one began: this one wrote what it would
          clearTimeout(retry?.timer);
          if (retry) log(`the web application's logins are written to ${file} now`);
          retry = undefined;
        },
        (err: NodeJS.ErrnoException) => {
          const delay = retry?.delay ?? retryFirstMs;
          if (!retry) log(`the web application's logins could not be written to ${file} (${err.code ?? err.message}): the change holds in memory, and is written again until it lands`);
          clearTimeout(retry?.timer);
          // the list as it is then: changes made meanwhile go with it; none once the server stops
          // (a later server on the directory would have its logout undone by it)
          // (a timer set before close() does nothing after it: close() makes the last try itself)
          const timer = closed ? undefined : setTimeout(() => {
            if (!closed) void save(logins);
          }, delay);
          // a server stopping does not wait for it (close() tries once more)
          timer?.unref();
          retry = { ...(timer ? { timer } : {}), delay: Math.min(delay * 2, RETRY_MAX_MS), logins };
        },
      );
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
    async close() {
      closed = true;
      // every write chained before now, then one last try of a list not yet written
      for (let last: Promise<void> | undefined; last !== writing; ) await (last = writing);
      if (retry) await save(retry.logins);
      clearTimeout(retry?.timer);
    },
  };
}
