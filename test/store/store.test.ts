import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { listConfig, type DefaultItem } from '../../src/store/configuration.ts';
import { DataDirInUseError } from '../../src/store/lock.ts';
import { listSessions } from '../../src/store/sessions.ts';
import { DataFileError, serializePart } from '../../src/store/state.ts';
import { openStore, type Store } from '../../src/store/store.ts';
import { failingDisk } from '../helpers/failing-fs.ts';
import { tempDir } from '../helpers/server.ts';

const DEFAULTS: DefaultItem[] = [
  { key: 'B_KEY', value: 'b', section: 'S1', descrip: 'second' },
  { key: 'A_KEY', value: 'a', section: 'S2', descrip: '' },
];

async function withStore<T>(fn: (store: Store, dir: string) => Promise<T>, dir?: string): Promise<T> {
  const d = dir ?? (await tempDir());
  const store = await openStore({ dir: d, defaults: DEFAULTS });
  try {
    return await fn(store, d);
  } finally {
    await store.close();
  }
}

test('a fresh data dir gets the default session, active, and the defaults ordered by key', async () => {
  await withStore(async (store, dir) => {
    assert.deepEqual(listSessions(store.state), [{ id: 1, name: 'default session', active: true }]);
    assert.deepEqual(listConfig(store.state).map((i) => i.key), ['A_KEY', 'B_KEY']);
    const files = (await readdir(dir)).sort();
    assert.deepEqual(files.slice(1), ['configuration.json', 'journal.jsonl', 'sessions.json']);
    assert.match(files[0], new RegExp(`^\\.assessd-lock-${process.pid}-[0-9a-f]+\\.sock$`));
    for (const f of ['configuration.json', 'sessions.json']) {
      assert.equal(JSON.parse(await readFile(join(dir, f), 'utf8')).version, 1);
    }
  });
});

test('everything survives a reopen, and ids are never reused', async () => {
  const dir = await tempDir();
  let before = '';
  await withStore(async (store) => {
    await store.change({ op: 'createSession', name: 'one' });
    await store.change({ op: 'createSession', name: 'two' });
    await store.change({ op: 'deleteSession', id: 3 });
    await store.change({ op: 'patchConfig', values: [['A_KEY', 'changed']] });
    return serializePart(store.state, 'sessions', 0);
  }, dir).then((text) => (before = text));
  await withStore(async (store) => {
    assert.equal(serializePart(store.state, 'sessions', 0), before);
    assert.deepEqual(listSessions(store.state), [
      { id: 1, name: 'default session', active: false },
      { id: 2, name: 'one', active: true },
    ]);
    const created = await store.change({ op: 'createSession', name: 'three' });
    assert.deepEqual(created, { ok: true, id: 4 });
    assert.equal(listConfig(store.state, { key: ['A_KEY'] })[0].value, 'changed');
  }, dir);
});

test('start-up merge: new keys added, clean items take the default, dirty items keep the user value', async () => {
  const dir = await tempDir();
  await withStore(async (store) => {
    await store.change({ op: 'patchConfig', values: [['A_KEY', 'mine']] });
  }, dir);
  const newDefaults: DefaultItem[] = [
    { key: 'A_KEY', value: 'a2', section: 'S2', descrip: 'now described' },
    { key: 'B_KEY', value: 'b2', section: 'S1', descrip: 'second' },
    { key: 'C_KEY', value: 'c', section: 'S3', descrip: '' },
  ];
  const store = await openStore({ dir, defaults: newDefaults });
  try {
    assert.deepEqual(listConfig(store.state), [
      { key: 'A_KEY', value: 'mine', section: 'S2', descrip: 'now described', dirty: true },
      { key: 'B_KEY', value: 'b2', section: 'S1', descrip: 'second', dirty: false },
      { key: 'C_KEY', value: 'c', section: 'S3', descrip: '', dirty: false },
    ]);
  } finally {
    await store.close();
  }
});

test('a second store on the same dir is refused, naming the dir and the owner pid', async () => {
  await withStore(async (_store, dir) => {
    await assert.rejects(openStore({ dir, defaults: DEFAULTS }), (err: Error) => {
      assert.ok(err instanceof DataDirInUseError);
      assert.equal(err.message, `data directory ${dir} is in use by process ${process.pid}`);
      return true;
    });
  });
});

test('leftover temp files are swept at start, the lock socket is not', async () => {
  const dir = await tempDir();
  await writeFile(join(dir, '.sessions.json.tmp-123-1'), '{"half":');
  await withStore(async () => {
    assert.deepEqual((await readdir(dir)).filter((f) => f.includes('.tmp-')), []);
    await assert.rejects(openStore({ dir, defaults: DEFAULTS }), DataDirInUseError);
  }, dir);
  assert.deepEqual((await readdir(dir)).filter((f) => f.startsWith('.')), []);
});

for (const [name, content, problem] of [
  ['not JSON', '{"version":1,', /sessions\.json: not valid JSON/],
  ['the wrong shape', '{"version":1,"sessions":"nope"}', /sessions\.json: unexpected shape/],
  ['a newer version', '{"version":99}', /sessions\.json: format version 99 is newer than this build reads \(1\)/],
  ['no version', '[]', /sessions\.json: unexpected shape: expected a JSON object/],
  [
    'two sessions of one name',
    '{"version":1,"nextSessionId":3,"activeSessionId":1,"nextTargetId":1,"sessions":[{"id":1,"name":"twin","targets":[]},{"id":2,"name":"twin","targets":[]}],"targets":[]}',
    /sessions\.json: unexpected shape: session 2: its name is listed twice/,
  ],
] as const) {
  test(`a data file with ${name} stops the start, naming the file, and is left untouched`, async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'sessions.json'), content);
    await assert.rejects(openStore({ dir, defaults: DEFAULTS }), (err: Error) => {
      assert.ok(err instanceof DataFileError);
      assert.match(err.message, problem);
      assert.ok(err.message.includes(join(dir, 'sessions.json')));
      return true;
    });
    assert.equal(await readFile(join(dir, 'sessions.json'), 'utf8'), content);
    // the lock is released: a fixed file can be opened at once
    await rm(join(dir, 'sessions.json'));
    await withStore(async () => {}, dir);
  });
}

test('concurrent changes are committed in groups, every one acknowledged and kept', async () => {
  const dir = await tempDir();
  await withStore(async (store) => {
    const results = await Promise.all(
      Array.from({ length: 64 }, (_, i) => store.change({ op: 'createSession', name: `s${i}` })),
    );
    assert.ok(results.every((r) => r.ok));
    assert.equal(store.stats.acknowledged, 64);
    assert.ok(store.stats.batches < 64 / 4, `expected grouped batches, got ${store.stats.batches}`);
  }, dir);
  await withStore(async (store) => assert.equal(store.state.sessions.size, 65), dir);
});

test('a failed write rejects its batch, rolls back to the last durable state, and the store recovers', async () => {
  const dir = await tempDir();
  const disk = failingDisk();
  const logs: string[] = [];
  const store = await openStore({ dir, defaults: DEFAULTS, fs: disk.fs, log: (l) => logs.push(l) });
  try {
    await store.change({ op: 'createSession', name: 'kept' });
    disk.fail('ENOSPC');
    const attempts = await Promise.allSettled([
      store.change({ op: 'createSession', name: 'lost-1' }),
      store.change({ op: 'createSession', name: 'lost-2' }),
    ]);
    assert.deepEqual(attempts.map((a) => a.status), ['rejected', 'rejected']);
    assert.deepEqual(listSessions(store.state).map((s) => s.name), ['default session', 'kept']);
    assert.equal(listSessions(store.state, true)[0].name, 'kept');
    assert.match(logs.join('\n'), /rolling back/);
    disk.fail(undefined);
    const again = await store.change({ op: 'createSession', name: 'lost-1' });
    assert.ok(again.ok);
  } finally {
    await store.close();
  }
  const reopened = await openStore({ dir, defaults: DEFAULTS });
  assert.deepEqual(listSessions(reopened.state).map((s) => s.name), ['default session', 'kept', 'lost-1']);
  await reopened.close();
});

test('while the disk has no room, changes are refused unapplied after one shared probe, not applied and undone each (a reload of the store each); with room again, the next change lands', async () => {
  const dir = await tempDir();
  const disk = failingDisk();
  const logs: string[] = [];
  const store = await openStore({ dir, defaults: DEFAULTS, fs: disk.fs, log: (l) => logs.push(l) });
  try {
    disk.fail('ENOSPC');
    await assert.rejects(store.change({ op: 'createSession', name: 'first' }), { code: 'ENOSPC' });
    const generation = store.generation;
    const attempts = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => store.change({ op: 'createSession', name: `s${i}` })));
    assert.ok(attempts.every((a) => a.status === 'rejected' && (a.reason as NodeJS.ErrnoException).code === 'ENOSPC'));
    assert.equal(store.stats.failedBatches, 1, 'one write failed: the others never reached the disk');
    assert.equal(logs.filter((l) => /rolling back/.test(l)).length, 1, 'one reload');
    assert.equal(store.generation, generation, 'nothing applied, nothing undone');
    assert.deepEqual(listSessions(store.state).map((s) => s.name), ['default session']);
    disk.fail(undefined);
    // changes made together once there is room: each lands, in the order made
    const made = await Promise.all(['a', 'b', 'c'].map((name) => store.change({ op: 'createSession', name })));
    assert.ok(made.every((m) => m.ok));
    assert.deepEqual(listSessions(store.state).map((s) => s.name), ['default session', 'a', 'b', 'c']);
    assert.deepEqual((await readdir(dir)).filter((f) => f.includes('room-probe')), [], 'the probe leaves nothing');
  } finally {
    await store.close();
  }
});

test('a change waiting on the probe of a full disk when the store closes is refused, never applied to a store let go', async () => {
  const dir = await tempDir();
  const disk = failingDisk();
  const store = await openStore({ dir, defaults: DEFAULTS, fs: disk.fs, log: () => {} });
  disk.fail('ENOSPC');
  await assert.rejects(store.change({ op: 'createSession', name: 'first' }), { code: 'ENOSPC' });
  disk.fail(undefined);
  const refused = assert.rejects(store.change({ op: 'createSession', name: 'late' }), /the store is closed/);
  await store.close();
  await refused;
  assert.deepEqual(listSessions(store.state).map((s) => s.name), ['default session']);
  const reopened = await openStore({ dir, defaults: DEFAULTS });
  assert.deepEqual(listSessions(reopened.state).map((s) => s.name), ['default session']);
  await reopened.close();
});

test('a probe that fails for another reason than room lets the next change try, and say that reason', async () => {
  const dir = await tempDir();
  const disk = failingDisk();
  const store = await openStore({ dir, defaults: DEFAULTS, fs: disk.fs, log: () => {} });
  try {
    disk.fail('ENOSPC');
    await assert.rejects(store.change({ op: 'createSession', name: 'first' }), { code: 'ENOSPC' });
    disk.fail('EIO');
    await assert.rejects(store.change({ op: 'createSession', name: 'second' }), { code: 'EIO' });
    assert.equal(store.stats.failedBatches, 2, 'the second change reached the disk');
  } finally {
    disk.fail(undefined);
    await store.close();
  }
});

test('a refused change writes nothing', async () => {
  await withStore(async (store) => {
    const batches = store.stats.batches;
    const result = await store.change({ op: 'createSession', name: 'default session' });
    assert.deepEqual(result, { ok: false, reason: 'duplicate-name' });
    assert.equal(store.stats.batches, batches);
  });
});
