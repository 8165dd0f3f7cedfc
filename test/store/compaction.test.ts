import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { nodeFileSystem, type FileSystem } from '../../src/store/atomic-file.ts';
import { compactSegments, type CompactionJob, type Compactor } from '../../src/store/compaction.ts';
import { workerCompactor } from '../../src/store/compactor.ts';
import type { DefaultItem } from '../../src/store/configuration.ts';
import { DataDirInUseError } from '../../src/store/lock.ts';
import { listSessions } from '../../src/store/sessions.ts';
import { serializePart, type State } from '../../src/store/state.ts';
import { openStore, type Store, type StoreOptions } from '../../src/store/store.ts';
import { journalWrites } from '../helpers/failing-fs.ts';
import { tempDir } from '../helpers/server.ts';

const DEFAULTS: DefaultItem[] = [{ key: 'K', value: 'v', section: 'S', descrip: '' }];

/** Everything the store holds, to compare before and after a reopen. */
const contents = (state: State) => serializePart(state, 'sessions', 0) + serializePart(state, 'configuration', 0);

const journalFiles = async (dir: string) => (await readdir(dir)).filter((f) => f.startsWith('journal')).sort();

/** Compactions run in-process, each held until `release()`. */
function gatedCompactor(fs: FileSystem = nodeFileSystem) {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const jobs: CompactionJob[] = [];
  const compactor: Compactor = async (job) => {
    jobs.push(job);
    await gate;
    return compactSegments(job, fs);
  };
  return { compactor, jobs, release: () => open() };
}

async function until(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500 && !condition(); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(condition(), `timed out waiting until ${what}`);
}

/** Sessions and configuration changes, one batch each, until `condition` holds. */
async function writeUntil(store: Store, condition: () => boolean, prefix = 's'): Promise<number> {
  let n = 0;
  while (!condition()) {
    await store.change({ op: 'createSession', name: `${prefix} ${n}` });
    await store.change({ op: 'patchConfig', values: [['K', `${prefix} ${n}`]] });
    n++;
    assert.ok(n < 1000, 'the condition never came');
  }
  return n;
}

async function reopened(dir: string, options: Partial<StoreOptions> = {}): Promise<string> {
  const store = await openStore({ dir, defaults: DEFAULTS, ...options });
  const text = contents(store.state);
  await store.close();
  return text;
}

test('writes go on into a new segment while a compaction runs; the folded segments are deleted once the snapshots hold them', async () => {
  const dir = await tempDir();
  const gated = gatedCompactor();
  const store = await openStore({ dir, defaults: DEFAULTS, compactAfter: 300, compactor: gated.compactor });
  await writeUntil(store, () => gated.jobs.length > 0);
  assert.deepEqual(gated.jobs, [{ dir, segments: [0] }]);
  assert.deepEqual(await journalFiles(dir), ['journal.1.jsonl', 'journal.jsonl']);
  // the compaction is held: writes are acknowledged all the same, into the new segment, and no second compaction starts
  await writeUntil(store, () => store.state.sessions.size > 40, 'during');
  assert.equal(gated.jobs.length, 1);
  assert.equal(store.stats.compacting, true);
  const live = await readFile(join(dir, 'journal.1.jsonl'), 'utf8');
  assert.ok(live.includes('"during 0"'), 'the writes made during the compaction are in the new segment');
  assert.ok(!(await readFile(join(dir, 'journal.jsonl'), 'utf8')).includes('during'), 'the sealed segment is not written to');

  gated.release();
  await until(() => !store.stats.compacting, 'the compaction is done');
  assert.equal(store.stats.compactions, 1);
  assert.deepEqual(await journalFiles(dir), ['journal.1.jsonl']);
  const expected = contents(store.state);
  await store.close();
  assert.equal(await reopened(dir), expected);
});

// What a crash at each point of a compaction leaves: the compaction stops there and its segments stay.
const CRASH_POINTS: [string, (fs: FileSystem) => FileSystem, Partial<FileSystem>?][] = [
  ['before the worker writes anything', (fs) => ({ ...fs, writeFileAtomic: () => Promise.reject(new Error('crash')) })],
  ['between the two snapshots', (fs) => {
    let writes = 0;
    return { ...fs, writeFileAtomic: (path, data) => (++writes === 2 ? Promise.reject(new Error('crash')) : fs.writeFileAtomic(path, data)) };
  }],
  ['after both snapshots, before the directory fsync', (fs) => ({ ...fs, syncDir: () => Promise.reject(new Error('crash')) })],
  // the store's own file system: the segments cannot be deleted, so they stay behind snapshots that include them
  ['after the snapshots are durable, before the segments are deleted', (fs) => fs, { remove: () => Promise.reject(new Error('crash')) }],
];

for (const [point, worker, storeFs] of CRASH_POINTS) {
  test(`a compaction stopped ${point} loses nothing and replays nothing twice`, async () => {
    const dir = await tempDir();
    const logs: string[] = [];
    const compactor: Compactor = (job) => compactSegments(job, worker(nodeFileSystem));
    const store = await openStore({ dir, defaults: DEFAULTS, compactAfter: 300, compactor, fs: { ...nodeFileSystem, ...storeFs }, log: (l) => logs.push(l) });
    await writeUntil(store, () => store.stats.compactions + store.stats.failedCompactions > 0);
    await writeUntil(store, () => store.state.sessions.size > 30, 'after');
    const expected = contents(store.state);
    await store.close();
    assert.ok((await journalFiles(dir)).length >= 2, 'the sealed segment stayed');
    assert.match(logs.join('\n'), /crash/);
    // and what a killed worker leaves: a half-written snapshot under a temp name
    await writeFile(join(dir, '.sessions.json.tmp-999999-1-1'), '{"version":1,"seq":99,"sessions":[{"id":1,');
    assert.equal(await reopened(dir), expected);
    assert.ok(!(await readdir(dir)).some((f) => f.includes('.tmp-')), 'the temp file is swept');
    // and the next compaction, whole this time, folds the leftovers too
    const again = await openStore({ dir, defaults: DEFAULTS, compactAfter: 300, compactor: (job) => compactSegments(job, nodeFileSystem) });
    await writeUntil(again, () => again.stats.compactions > 0, 'next');
    const after = contents(again.state);
    await again.close();
    assert.equal((await journalFiles(dir)).length, 1);
    assert.equal(await reopened(dir), after);
  });
}

test('a failed compaction blocks no write, and the next one folds its segments too', async () => {
  const dir = await tempDir();
  let attempts = 0;
  const compactor: Compactor = (job) => (++attempts === 1 ? Promise.reject(new Error('EIO: injected')) : compactSegments(job, nodeFileSystem));
  const logs: string[] = [];
  const store = await openStore({ dir, defaults: DEFAULTS, compactAfter: 300, compactor, log: (l) => logs.push(l) });
  await writeUntil(store, () => store.stats.failedCompactions > 0);
  assert.match(logs.join('\n'), /compaction failed, its journal segments wait for the next one: EIO: injected/);
  await writeUntil(store, () => store.stats.compactions > 0, 'later');
  await until(() => !store.stats.compacting, 'the compaction is done');
  // one live segment left, past both sealed ones (a busy box may have sealed a third meanwhile)
  const left = await journalFiles(dir);
  assert.ok(left.length === 1 && /^journal\.([2-9]|\d\d+)\.jsonl$/.test(left[0]!), `both sealed segments were folded, then deleted: ${left}`);
  const expected = contents(store.state);
  await store.close();
  assert.equal(await reopened(dir), expected);
});

test('a compactor that throws at once (no worker could start) fails the compaction, not the writes', async () => {
  const dir = await tempDir();
  const compactor: Compactor = () => {
    throw new Error('ERR_WORKER_INIT_FAILED: injected');
  };
  const logs: string[] = [];
  const store = await openStore({ dir, defaults: DEFAULTS, compactAfter: 300, compactor, log: (l) => logs.push(l) });
  await writeUntil(store, () => store.stats.failedCompactions > 1);
  assert.match(logs.join('\n'), /compaction failed, its journal segments wait for the next one: ERR_WORKER_INIT_FAILED/);
  const expected = contents(store.state);
  await store.close();
  assert.equal(await reopened(dir), expected);
});

test('a new segment that cannot be made durable puts the compaction off; appends stay in the live segment, and after a restart go to the empty one left', async () => {
  const dir = await tempDir();
  let failSeal = false;
  const fs: FileSystem = {
    ...nodeFileSystem,
    syncDir: (d) => (failSeal ? Promise.reject(new Error('EIO: injected at the seal')) : nodeFileSystem.syncDir(d)),
    remove: () => Promise.reject(new Error('EIO: cannot delete either')),
  };
  const logs: string[] = [];
  const store = await openStore({ dir, defaults: DEFAULTS, compactAfter: 300, fs, compactor: () => assert.fail('no compaction may start'), log: (l) => logs.push(l) });
  failSeal = true;
  await writeUntil(store, () => store.stats.failedCompactions > 1);
  assert.match(logs.join('\n'), /could not start a new journal segment, compaction put off: EIO: injected at the seal/);
  assert.equal(store.stats.compactions, 0);
  assert.deepEqual(await journalFiles(dir), ['journal.1.jsonl', 'journal.jsonl']);
  assert.equal((await stat(join(dir, 'journal.1.jsonl'))).size, 0);
  const expected = contents(store.state);
  await store.close();
  assert.equal(await reopened(dir), expected);

  failSeal = false;
  const restarted = await openStore({ dir, defaults: DEFAULTS, fs, compactor: () => assert.fail('not due') });
  await restarted.change({ op: 'createSession', name: 'after the restart' });
  const after = contents(restarted.state);
  await restarted.close();
  assert.match(await readFile(join(dir, 'journal.1.jsonl'), 'utf8'), /after the restart/);
  assert.equal(await reopened(dir), after);
});

test('close waits for a running compaction before releasing the data directory', async () => {
  const dir = await tempDir();
  const gated = gatedCompactor();
  const store = await openStore({ dir, defaults: DEFAULTS, compactAfter: 300, compactor: gated.compactor });
  await writeUntil(store, () => gated.jobs.length > 0);
  const expected = contents(store.state);
  let closed = false;
  const closing = store.close().then(() => (closed = true));
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(closed, false);
  await assert.rejects(openStore({ dir, defaults: DEFAULTS }), DataDirInUseError);
  gated.release();
  await closing;
  assert.deepEqual(await journalFiles(dir), ['journal.1.jsonl']);
  assert.equal(await reopened(dir), expected);
});

test('a failed write during a compaction rolls back to the snapshots and every segment, sealed and live', async () => {
  const dir = await tempDir();
  const gated = gatedCompactor();
  let failNext = false;
  const fs = journalWrites(async (real, data, position) => {
    if (failNext) {
      failNext = false;
      throw Object.assign(new Error('EIO injected'), { code: 'EIO' });
    }
    return real(data, position);
  });
  const store = await openStore({ dir, defaults: DEFAULTS, compactAfter: 300, compactor: gated.compactor, fs });
  await writeUntil(store, () => gated.jobs.length > 0);
  await store.change({ op: 'createSession', name: 'in the live segment' });
  const durable = contents(store.state);
  failNext = true;
  await assert.rejects(store.change({ op: 'createSession', name: 'refused' }), /EIO/);
  assert.equal(contents(store.state), durable);
  gated.release();
  await store.close();
  assert.equal(await reopened(dir), durable);
});

test('a compaction rewrites only the snapshots its records change', async () => {
  const dir = await tempDir();
  const store = await openStore({ dir, defaults: DEFAULTS, compactor: () => assert.fail('not due') });
  for (let i = 0; i < 5; i++) await store.change({ op: 'patchConfig', values: [['K', `v${i}`]] });
  const expected = contents(store.state);
  await store.close();
  const sessionsBefore = await stat(join(dir, 'sessions.json'));
  const result = await compactSegments({ dir, segments: [0] }, nodeFileSystem);
  assert.deepEqual(result.written, ['configuration']);
  assert.equal(result.seq, 5);
  assert.equal((await stat(join(dir, 'sessions.json'))).ino, sessionsBefore.ino, 'sessions.json is left as it was');
  assert.equal(JSON.parse(await readFile(join(dir, 'configuration.json'), 'utf8')).seq, 5);
  // the segment is still there (the store deletes it): its records are all skipped now
  assert.equal(await reopened(dir), expected);
});

test('a torn write at the end of a segment before the last (never acknowledged) is ignored with a log line', async () => {
  const dir = await tempDir();
  const store = await openStore({ dir, defaults: DEFAULTS });
  await store.change({ op: 'createSession', name: 'one' });
  await store.close();
  await writeFile(join(dir, 'journal.jsonl'), (await readFile(join(dir, 'journal.jsonl'), 'utf8')) + '{"seq":2,"ops":[{"op":"crea');
  await writeFile(join(dir, 'journal.1.jsonl'), '{"seq":2,"ops":[{"op":"createSession","name":"two"}]}\n');
  const logs: string[] = [];
  const reopenedStore = await openStore({ dir, defaults: DEFAULTS, log: (l) => logs.push(l) });
  assert.deepEqual(listSessions(reopenedStore.state).map((s) => s.name), ['default session', 'one', 'two']);
  await reopenedStore.close();
  assert.match(logs.join('\n'), /ignoring 27 bytes of an unfinished write at the end of .*journal\.jsonl/);
});

test('records out of sequence across segments are corruption', async () => {
  const dir = await tempDir();
  await (await openStore({ dir, defaults: DEFAULTS })).close();
  await writeFile(join(dir, 'journal.jsonl'), '{"seq":1,"ops":[{"op":"createSession","name":"a"}]}\n');
  await writeFile(join(dir, 'journal.1.jsonl'), '{"seq":1,"ops":[{"op":"createSession","name":"b"}]}\n');
  await assert.rejects(openStore({ dir, defaults: DEFAULTS }), /journal\.1\.jsonl: line 1: sequence 1 does not follow 1/);
});

test('the compaction worker thread answers a job it cannot do with the reason', async () => {
  const dir = await tempDir();
  await writeFile(join(dir, 'journal.jsonl'), '{"seq":1,"ops":[{"op":"createSession","name":"a"}]}\n');
  await assert.rejects(workerCompactor({ dir, segments: [0] }), /sessions\.json is missing/);
});
