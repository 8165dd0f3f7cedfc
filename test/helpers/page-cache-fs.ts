/**
 * A disk that behaves like a page cache in front of a platter, and a power switch. Writes land in
 * the real directory at once (what every read sees), but only what was made durable survives a
 * cut: a file's data as of its last fsync/fdatasync, a directory's entries (creates, renames,
 * unlinks, subdirectories made) as of its last fsync. A cut rewrites the real directory (and its
 * subdirectories, one level deep) to that durable image, plus, at random, any subset of the entry
 * changes not yet fsynced and a torn tail of each file's unsynced writes; from then on every
 * write fails (EIO) and touches nothing, as a dead machine's.
 */
import { fstatSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { mkdir, open, rename, unlink, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join, relative } from 'node:path';
import { TEMP_MARKER, type AppendableFile, type FileSystem } from '../../src/store/atomic-file.ts';
import { LOCK_SOCKET_PREFIX } from '../../src/store/lock.ts';

/** The kinds of step a cut can land before. */
export type Step = 'create' | 'write' | 'fsync' | 'rename' | 'fsync dir' | 'open' | 'fdatasync' | 'truncate' | 'unlink' | 'mkdir';

export interface PowerSwitch {
  fs: FileSystem;
  /** Steps done so far. */
  readonly steps: number;
  /** The step the cut landed before, once it came (`idle`: cut between steps, by `cut()`). */
  readonly cutBefore: Step | 'idle' | undefined;
  readonly dead: boolean;
  /** Cuts the power now (if it is still on). */
  cut(): void;
  /** Resolves once the directory holds what survived the cut (the I/O in flight at the cut done). */
  readonly settled: Promise<void>;
}

export interface PowerOptions {
  /** The cut comes before this step (1: the first); never if undefined. */
  cutAt?: number;
  random: () => number;
  /** Called at the cut, before anything else sees the power gone. */
  onCut?: () => void;
}

let tempCounter = 0;

/** `dir`'s files are durable as they are now (a fresh boot); its lock sockets are not files. */
export function pageCacheDisk(dir: string, options: PowerOptions): PowerSwitch {
  const { random } = options;
  // Files are known by an id of ours, not by inode number: a file system reuses the number of a
  // file unlinked, while the directory's durable entries may still name the old file.
  let ids = 0;
  const idOfInode = new Map<number, number>();
  const idOf = (ino: number) => idOfInode.get(ino) ?? idOfInode.set(ino, ++ids).get(ino)!;
  /** A directory's entries (`''`: the data directory, else a subdirectory's name): name to file or directory. */
  const entries = (rel: string) => {
    const map = new Map<string, number>();
    for (const [name, ino] of inodes(join(dir, rel))) map.set(name, idOf(ino));
    return map;
  };
  /** The ids of directories (the subdirectories of the data directory). */
  const dirIds = new Set<number>();
  /** Each directory's entries as of its last fsync. */
  const durableEntries = new Map<string, Map<string, number>>();
  /** Each file's data as of its last fsync. */
  const durableData = new Map<number, Buffer>();
  const boot = (rel: string) => {
    durableEntries.set(rel, entries(rel));
    for (const [name, id] of durableEntries.get(rel)!) {
      const path = join(dir, rel, name);
      if (statSync(path).isDirectory()) {
        dirIds.add(id);
        if (rel === '') boot(name);
      } else durableData.set(id, readFileSync(path));
    }
  };
  boot('');
  let steps = 0;
  let cutBefore: Step | 'idle' | undefined;
  /** Real I/O under way: the image is written once none is, so that none lands on it. */
  let inFlight = 0;
  let settle!: () => void;
  const settled = new Promise<void>((resolve) => (settle = resolve));
  const writeImageOnceIdle = () => {
    if (cutBefore !== undefined && inFlight === 0) {
      writeImage();
      settle();
    }
  };

  const eio = (step: Step, path: string) => Object.assign(new Error(`EIO: the power is off (${step} ${basename(path)})`), { code: 'EIO' });
  /** Every write goes through here first: it may be the one the cut lands before. */
  const step = (what: Step, path: string) => {
    if (cutBefore !== undefined) throw eio(what, path);
    if (++steps === options.cutAt) {
      cut(what);
      throw eio(what, path);
    }
  };
  /** A step's I/O: if the power went while it was in flight, its result never reaches anyone. */
  const io = async <T>(what: Step, path: string, run: () => Promise<T>): Promise<T> => {
    step(what, path);
    inFlight++;
    try {
      const result = await run();
      if (cutBefore !== undefined) throw eio(what, path);
      return result;
    } finally {
      inFlight--;
      writeImageOnceIdle();
    }
  };
  /** A path in the data directory or one of its subdirectories. */
  const inDir = (path: string) => {
    const parent = relative(dir, dirname(path));
    if (parent.startsWith('..') || parent.includes('/') || !durableEntries.has(parent)) throw new Error(`${path} is outside the data directory ${dir}`);
    return path;
  };
  // synchronous, right after the fsync's check that the power is on: no cut can come in between
  const synced = (handle: FileHandle, path: string) => durableData.set(idOf(fstatSync(handle.fd).ino), readFileSync(path));
  /** A new file, whatever number its inode has (a dead file's, maybe): known as new even if the power went meanwhile. */
  const create = async (path: string, flags: string) => {
    const handle = await open(path, flags, 0o600);
    idOfInode.set(fstatSync(handle.fd).ino, ++ids);
    if (cutBefore !== undefined) await handle.close();
    return handle;
  };

  function cut(before: Step | 'idle'): void {
    // what is durable stops changing here; the image is written once the I/O in flight is done
    cutBefore = before;
    options.onCut?.();
    queueMicrotask(writeImageOnceIdle);
  }

  /** What survives of a directory's entries: files with their data, subdirectories with theirs. */
  function imageOf(rel: string): Map<string, Buffer | Map<string, unknown>> {
    const current = entries(rel);
    const durable = durableEntries.get(rel) ?? new Map<string, number>();
    const image = new Map<string, Buffer | Map<string, unknown>>();
    for (const name of new Set([...durable.keys(), ...current.keys()])) {
      const was = durable.get(name);
      const now = current.get(name);
      // an entry change not fsynced yet may have reached the disk anyway, or not
      const id = was !== now && random() < 0.5 ? now : was;
      if (id === undefined) continue;
      if (dirIds.has(id)) {
        image.set(name, now === id ? imageOf(join(rel, name)) : new Map());
        continue;
      }
      let data = durableData.get(id) ?? Buffer.alloc(0);
      const live = now === id ? readFileSync(join(dir, rel, name)) : undefined;
      // some of the unsynced bytes written after the durable ones: a torn tail
      if (live && live.length > data.length && live.subarray(0, data.length).equals(data) && random() < 0.5) {
        data = live.subarray(0, data.length + 1 + Math.floor(random() * (live.length - data.length)));
      }
      image.set(name, data);
    }
    return image;
  }

  function writeImage(): void {
    const image = imageOf('');
    for (const name of entries('').keys()) rmSync(join(dir, name), { force: true, recursive: true });
    const write = (at: string, files: Map<string, Buffer | Map<string, unknown>>) => {
      for (const [name, data] of files) {
        if (data instanceof Map) {
          mkdirSync(join(at, name), { mode: 0o700 });
          write(join(at, name), data as Map<string, Buffer | Map<string, unknown>>);
        } else writeFileSync(join(at, name), data, { mode: 0o600 });
      }
    };
    write(dir, image);
  }

  const fs: FileSystem = {
    async writeFileAtomic(path, data) {
      const temp = join(dirname(inDir(path)), `.${basename(path)}${TEMP_MARKER}power-${++tempCounter}`);
      const handle = await io('create', temp, () => create(temp, 'w'));
      try {
        for (const piece of typeof data === 'string' ? [data] : data) await io('write', temp, () => handle.writeFile(piece, 'utf8'));
        await io('fsync', temp, () => handle.sync());
        synced(handle, temp);
      } finally {
        await handle.close();
      }
      await io('rename', path, () => rename(temp, path));
    },

    async syncDir(path) {
      step('fsync dir', path);
      const rel = relative(dir, path);
      if (!durableEntries.has(rel)) throw new Error(`${path} is not the data directory nor one of its subdirectories`);
      durableEntries.set(rel, entries(rel));
    },

    async mkdir(path) {
      const rel = relative(dir, path);
      if (rel === '' || rel.startsWith('..') || rel.includes('/')) throw new Error(`${path} is not a subdirectory of the data directory ${dir}`);
      await io('mkdir', path, async () => {
        await mkdir(path, { mode: 0o700 }).catch((err: NodeJS.ErrnoException) => {
          if (err.code !== 'EEXIST') throw err;
        });
        dirIds.add(idOf(statSync(path).ino));
        if (!durableEntries.has(rel)) durableEntries.set(rel, new Map());
      });
    },

    async createFile(path) {
      const handle = await io('create', inDir(path), () => create(path, 'wx'));
      return {
        async write(data) {
          await io('write', path, () => handle.write(data, 0, data.length));
        },
        async sync() {
          await io('fsync', path, () => handle.sync());
          synced(handle, path);
        },
        close: () => handle.close(),
      };
    },

    async openAppendable(path) {
      let wasCreated = false;
      const handle = await io('open', inDir(path), () =>
        open(path, 'r+').catch((err: NodeJS.ErrnoException) => {
          if (err.code !== 'ENOENT') throw err;
          wasCreated = true;
          return create(path, 'w+');
        }),
      );
      const file: AppendableFile = {
        created: wasCreated,
        async writeAt(data, position) {
          await io('write', path, () => handle.write(data, 0, data.length, position));
          await io('fdatasync', path, () => handle.datasync());
          synced(handle, path);
        },
        async truncate(length) {
          await io('truncate', path, () => handle.truncate(length));
          await io('fsync', path, () => handle.sync());
          synced(handle, path);
        },
        close: () => handle.close(),
      };
      return file;
    },

    async remove(path) {
      await io('unlink', inDir(path), () =>
        unlink(path).catch((err: NodeJS.ErrnoException) => {
          if (err.code !== 'ENOENT') throw err;
        }),
      );
    },
  };

  return {
    fs,
    get steps() {
      return steps;
    },
    get cutBefore() {
      return cutBefore;
    },
    get dead() {
      return cutBefore !== undefined;
    },
    settled,
    cut() {
      if (cutBefore === undefined) cut('idle');
    },
  };
}

/** A directory's files and subdirectories, by name, with their inode numbers (lock sockets are no data). */
function inodes(dir: string): Map<string, number> {
  const map = new Map<string, number>();
  for (const name of readdirSync(dir)) {
    if (name.startsWith(LOCK_SOCKET_PREFIX)) continue;
    // a file an unlink in flight has just taken away is not there
    const stat = statSync(join(dir, name), { throwIfNoEntry: false });
    if (stat) map.set(name, stat.ino);
  }
  return map;
}
