/** The durable store: state in memory, persisted as JSON files, changes committed in groups. */
import { mkdir, readdir, readFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { nodeFileSystem, TEMP_MARKER, type FileSystem } from './atomic-file.js';
import { mergeDefaults, type DefaultItem } from './configuration.js';
import { acquireLock, type Lock } from './lock.js';
import { ensureDefaultSession } from './sessions.js';
import { emptyState, loadPart, PART_FILES, serializePart, type Part, type State } from './state.js';

export interface StoreOptions {
  dir: string;
  defaults: DefaultItem[];
  fs?: FileSystem;
  log?: (line: string) => void;
}

export interface StoreStats {
  /** Changes acknowledged as durable. */
  acknowledged: number;
  /** Batches written (one or more files, then the directory, fsynced). */
  batches: number;
  fsyncs: number;
  failedBatches: number;
}

export interface Store {
  /** Read it, never keep it: a failed write replaces its contents. */
  readonly state: State;
  /** Bumped on every change (and rollback): a key for caches of serialized answers. */
  readonly generation: number;
  readonly stats: StoreStats;
  /**
   * Applies `apply` to the state at once; if it succeeds, resolves once the change is durable
   * (rejects, with the state rolled back, if it cannot be made durable). A refusal changes nothing.
   */
  change<T extends { ok: boolean }>(part: Part, apply: (state: State) => T): Promise<T>;
  /** Waits for writes in flight, then releases the data directory. */
  close(): Promise<void>;
}

interface Waiter {
  resolve(): void;
  reject(err: unknown): void;
}

/** Opens (creating if need be) the data directory: lock, sweep, load, merge defaults, persist. */
export async function openStore(options: StoreOptions): Promise<Store> {
  const { dir, defaults } = options;
  const fs = options.fs ?? nodeFileSystem;
  const log = options.log ?? (() => {});
  await mkdir(dir, { recursive: true });
  const lock = await acquireLock(dir, log);
  try {
    return await loadStore(dir, defaults, fs, log, lock);
  } catch (err) {
    await lock.release();
    throw err;
  }
}

async function sweepTempFiles(dir: string, log: (line: string) => void): Promise<void> {
  for (const name of await readdir(dir)) {
    if (name.startsWith('.') && name.includes(TEMP_MARKER)) {
      await unlink(join(dir, name));
      log(`removed the leftover temp file ${name}`);
    }
  }
}

async function loadStore(dir: string, defaults: DefaultItem[], fs: FileSystem, log: (line: string) => void, lock: Lock): Promise<Store> {
  await sweepTempFiles(dir, log);
  const state = emptyState();
  const durable = new Map<Part, string>();
  const toWrite = new Set<Part>();
  for (const part of Object.keys(PART_FILES) as Part[]) {
    const file = join(dir, PART_FILES[part]);
    const text = await readFile(file, 'utf8').catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return undefined;
      throw err;
    });
    if (text === undefined) toWrite.add(part);
    else {
      loadPart(state, part, file, text);
      durable.set(part, text);
    }
  }
  if (ensureDefaultSession(state)) toWrite.add('sessions');
  if (mergeDefaults(state, defaults)) toWrite.add('configuration');
  for (const part of toWrite) {
    const text = serializePart(state, part);
    await fs.writeFileAtomic(join(dir, PART_FILES[part]), text);
    durable.set(part, text);
  }
  if (toWrite.size > 0) await fs.syncDir(dir);

  const stats: StoreStats = { acknowledged: 0, batches: 0, fsyncs: 0, failedBatches: 0 };
  let generation = 0;
  let dirty = new Set<Part>();
  let waiting: Waiter[] = [];
  let flushing: Promise<void> | undefined;

  function rollback(): void {
    for (const [part, text] of durable) loadPart(state, part, PART_FILES[part], text);
    generation++;
  }

  async function writeBatch(parts: Set<Part>): Promise<void> {
    // Serialize now, synchronously: changes applied during the write go into the next batch.
    const texts = [...parts].map((part) => [part, serializePart(state, part)] as const);
    await Promise.all(texts.map(([part, text]) => fs.writeFileAtomic(join(dir, PART_FILES[part]), text)));
    await fs.syncDir(dir);
    stats.fsyncs += texts.length + 1;
    for (const [part, text] of texts) durable.set(part, text);
  }

  async function flushLoop(): Promise<void> {
    while (waiting.length > 0) {
      const batch = waiting;
      const parts = dirty;
      waiting = [];
      dirty = new Set();
      try {
        await writeBatch(parts);
        stats.batches++;
        stats.acknowledged += batch.length;
        for (const w of batch) w.resolve();
      } catch (err) {
        stats.failedBatches++;
        // Changes queued behind the failed batch were applied on top of it: they fail with it.
        const failed = [...batch, ...waiting];
        waiting = [];
        dirty = new Set();
        rollback();
        log(`write failed, rolled back to the last durable state: ${(err as Error).message}`);
        for (const w of failed) w.reject(err);
      }
    }
    flushing = undefined;
  }

  return {
    state,
    get generation() {
      return generation;
    },
    stats,

    change(part, apply) {
      const result = apply(state);
      if (!result.ok) return Promise.resolve(result);
      generation++;
      dirty.add(part);
      return new Promise((resolve, reject) => {
        waiting.push({ resolve: () => resolve(result), reject });
        flushing ??= flushLoop();
      });
    },

    async close() {
      while (flushing) await flushing;
      await lock.release();
    },
  };
}
