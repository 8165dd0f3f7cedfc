import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFile, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { DefaultItem } from '../../src/store/configuration.ts';
import { scanJournal, type JournalRecord } from '../../src/store/journal.ts';
import { listSessions } from '../../src/store/sessions.ts';
import { DataFileError, serializePart } from '../../src/store/state.ts';
import { nodeFileSystem } from '../../src/store/atomic-file.ts';
import { openStore } from '../../src/store/store.ts';
import { failingDisk, journalWrites } from '../helpers/failing-fs.ts';

/** A whole segment's records, and the bytes of whole records. */
function parseJournal(bytes: Buffer, file: string): { records: JournalRecord[]; validLength: number } {
  const records: JournalRecord[] = [];
  const validLength = scanJournal(bytes, file, 0, (record) => void records.push(record));
  return { records, validLength };
}
import { tempDir } from '../helpers/server.ts';

const DEFAULTS: DefaultItem[] = [{ key: 'K', value: 'v', section: 'S', descrip: '' }];

test('each batch is one journal line, replayed on open', async () => {
  const dir = await tempDir();
  const store = await openStore({ dir, defaults: DEFAULTS });
  // an idle store writes the first change at once; the ones arriving meanwhile share the next line
  await Promise.all([
    store.change({ op: 'createSession', name: 'a' }),
    store.change({ op: 'createSession', name: 'b' }),
    store.change({ op: 'patchConfig', values: [['K', 'w']] }),
  ]);
  const expected = serializePart(store.state, 'sessions', 0) + serializePart(store.state, 'configuration', 0);
  await store.close();
  const lines = (await readFile(join(dir, 'journal.jsonl'), 'utf8')).trimEnd().split('\n').map((l) => JSON.parse(l));
  assert.deepEqual(lines, [
    { seq: 1, ops: [{ op: 'createSession', name: 'a' }] },
    { seq: 2, ops: [{ op: 'createSession', name: 'b' }, { op: 'patchConfig', values: [['K', 'w']] }] },
  ]);
  const reopened = await openStore({ dir, defaults: DEFAULTS });
  assert.equal(serializePart(reopened.state, 'sessions', 0) + serializePart(reopened.state, 'configuration', 0), expected);
  await reopened.close();
});

test('the journal is folded into the snapshots once it outgrows them (by the worker thread, from the sources), and nothing changes', async () => {
  const dir = await tempDir();
  const store = await openStore({ dir, defaults: DEFAULTS, compactAfter: 256 });
  for (let i = 0; i < 40; i++) await store.change({ op: 'createSession', name: `session number ${i}` });
  await store.change({ op: 'deleteSession', id: 5 });
  const expected = serializePart(store.state, 'sessions', 0);
  // close waits for the compaction under way
  await store.close();
  assert.ok(store.stats.compactions >= 1, `${store.stats.compactions} compactions`);
  assert.equal(store.stats.failedCompactions, 0);
  const segments = (await readdir(dir)).filter((f) => f.startsWith('journal'));
  assert.equal(segments.length, 1, `the folded segments are deleted: ${segments}`);
  // the snapshot holds the first records, the live segment exactly the ones after them
  const snapshot = JSON.parse(await readFile(join(dir, 'sessions.json'), 'utf8'));
  const { records } = parseJournal(await readFile(join(dir, segments[0])), segments[0]);
  assert.ok(snapshot.seq > 0, `snapshot seq ${snapshot.seq}`);
  assert.deepEqual(records.map((r) => r.seq), Array.from({ length: 41 - snapshot.seq }, (_, i) => snapshot.seq + 1 + i));
  const reopened = await openStore({ dir, defaults: DEFAULTS });
  assert.equal(serializePart(reopened.state, 'sessions', 0), expected);
  await reopened.close();
});

test('records already in a snapshot are skipped on replay (a crash between snapshot and journal reset)', async () => {
  const dir = await tempDir();
  const store = await openStore({ dir, defaults: DEFAULTS });
  await store.change({ op: 'createSession', name: 'once' });
  const state = serializePart(store.state, 'sessions', 1);
  await store.close();
  // the snapshot says it holds record 1, the journal still has it
  await writeFile(join(dir, 'sessions.json'), state);
  const reopened = await openStore({ dir, defaults: DEFAULTS });
  assert.deepEqual(listSessions(reopened.state).map((s) => s.name), ['default session', 'once']);
  await reopened.close();
});

test('a torn last line (an unacknowledged write) is ignored with a log line, and cut before the next append', async () => {
  const dir = await tempDir();
  const store = await openStore({ dir, defaults: DEFAULTS });
  await store.change({ op: 'createSession', name: 'kept' });
  await store.close();
  await appendFile(join(dir, 'journal.jsonl'), '{"seq":2,"ops":[{"op":"createSes');
  const logs: string[] = [];
  const reopened = await openStore({ dir, defaults: DEFAULTS, log: (l) => logs.push(l) });
  assert.match(logs.join('\n'), /ignoring 32 bytes of an unfinished write at the end of journal\.jsonl/);
  assert.deepEqual(listSessions(reopened.state).map((s) => s.name), ['default session', 'kept']);
  await reopened.change({ op: 'createSession', name: 'next' });
  await reopened.close();
  const lines = (await readFile(join(dir, 'journal.jsonl'), 'utf8')).trimEnd().split('\n');
  assert.deepEqual(lines.map((l) => JSON.parse(l).seq), [1, 2]);
});

test('a corrupt line before the end stops the open, naming the journal, and leaves it untouched', async () => {
  const dir = await tempDir();
  const store = await openStore({ dir, defaults: DEFAULTS });
  await store.change({ op: 'createSession', name: 'a' });
  await store.close();
  const corrupt = 'garbage\n' + (await readFile(join(dir, 'journal.jsonl'), 'utf8'));
  await writeFile(join(dir, 'journal.jsonl'), corrupt);
  await assert.rejects(openStore({ dir, defaults: DEFAULTS }), (err: Error) => {
    assert.ok(err instanceof DataFileError);
    assert.equal(err.message, `${join(dir, 'journal.jsonl')}: line 1 is not a journal record`);
    return true;
  });
  assert.equal(await readFile(join(dir, 'journal.jsonl'), 'utf8'), corrupt);
});

test('journal records must be in sequence, with known ops', () => {
  const file = 'j';
  assert.throws(() => parseJournal(Buffer.from('{"seq":2,"ops":[]}\n{"seq":1,"ops":[]}\n'), file), /sequence 1 does not follow 2/);
  assert.throws(() => parseJournal(Buffer.from('{"seq":1,"ops":[{"op":"dropTables"}]}\n{"seq":2,"ops":[]}\n'), file), /line 1 is not a journal record/);
  assert.deepEqual(parseJournal(Buffer.from('{"seq":1,"ops":[]}\n{"seq":2,"ops":[]}'), file).validLength, 19);
});

test('a record that does not apply to the snapshots is corruption', async () => {
  const dir = await tempDir();
  (await openStore({ dir, defaults: DEFAULTS })).close();
  await new Promise((r) => setTimeout(r, 50));
  await writeFile(join(dir, 'journal.jsonl'), '{"seq":1,"ops":[{"op":"deleteSession","id":42}]}\n');
  await assert.rejects(openStore({ dir, defaults: DEFAULTS }), /record 1: deleteSession does not apply/);
});

test('a half-written failed append is never visible, even after a restart', async () => {
  const dir = await tempDir();
  const disk = failingDisk();
  const store = await openStore({ dir, defaults: DEFAULTS, fs: disk.fs });
  await store.change({ op: 'createSession', name: 'durable' });
  disk.fail('EIO');
  await assert.rejects(store.change({ op: 'createSession', name: 'half written' }), /EIO/);
  await assert.rejects(store.change({ op: 'createSession', name: 'also failed' }), /EIO/);
  assert.deepEqual(listSessions(store.state).map((s) => s.name), ['default session', 'durable']);
  disk.fail(undefined);
  await store.change({ op: 'createSession', name: 'after recovery' });
  await store.close();
  const reopened = await openStore({ dir, defaults: DEFAULTS });
  assert.deepEqual(listSessions(reopened.state).map((s) => s.name), ['default session', 'durable', 'after recovery']);
  await reopened.close();
});

test('a change arriving while a failed write is handled is refused or kept, never acknowledged and lost', async () => {
  const dir = await tempDir();
  let failNext = false;
  let late: Promise<unknown> | undefined;
  const fs = journalWrites(async (real, data, position) => {
    if (failNext) {
      failNext = false;
      setImmediate(() => (late = store.change({ op: 'addTarget', session: 1, target: 1 }).then((r) => r, () => 'rejected')));
      throw Object.assign(new Error('EIO injected'), { code: 'EIO' });
    }
    return real(data, position);
  });
  const store = await openStore({ dir, defaults: DEFAULTS, fs });
  await store.change({ op: 'createSession', name: 's2' });
  failNext = true;
  await assert.rejects(store.change({ op: 'createTargets', urls: ['http://a.example/'] }), /EIO/);
  await new Promise((r) => setTimeout(r, 100));
  const lateResult = await late!;
  const inMemory = store.state.targets.size;
  await store.close();
  const reopened = await openStore({ dir, defaults: DEFAULTS });
  assert.equal(reopened.state.targets.size, inMemory, 'memory and disk agree');
  if (lateResult !== 'rejected') assert.deepEqual(lateResult, { ok: false, reason: 'unknown-target' });
  await reopened.close();
});

test('a write whose data landed but whose fsync failed is cut at once: answered 500, never seen after a restart', async () => {
  const dir = await tempDir();
  let failOnce = false;
  const fs = journalWrites(async (real, data, position) => {
    await real(data, position);
    if (failOnce) {
      failOnce = false;
      throw Object.assign(new Error('EIO injected after the data landed'), { code: 'EIO' });
    }
  });
  const store = await openStore({ dir, defaults: DEFAULTS, fs });
  failOnce = true;
  await assert.rejects(store.change({ op: 'createSession', name: 'ghost' }), /EIO/);
  await store.close();
  const reopened = await openStore({ dir, defaults: DEFAULTS });
  assert.deepEqual(listSessions(reopened.state).map((s) => s.name), ['default session']);
  await reopened.close();
});

test('sessions.json gone after a compaction left the journal empty: the start stops naming it all the same', async () => {
  const { compactSegments } = await import('../../src/store/compaction.ts');
  const dir = await tempDir();
  const store = await openStore({ dir, defaults: DEFAULTS, compactAfter: 1, compactor: (job) => compactSegments(job, nodeFileSystem) });
  await store.change({ op: 'createSession', name: 'acme' });
  // the write that made the journal due is acknowledged as its compaction begins, with the seal
  assert.equal(store.stats.compacting, true, 'compacting from the seal on');
  while (store.stats.compacting) await new Promise((resolve) => setTimeout(resolve, 5));
  assert.equal(store.stats.compactions, 1);
  await store.close();
  await rm(join(dir, 'sessions.json'));
  const before = await readdir(dir);
  assert.ok(before.includes('journal.1.jsonl'), `${before}`);
  await assert.rejects(openStore({ dir, defaults: DEFAULTS }), (err: DataFileError) =>
    err.code === 'ERR_DATA_FILE' && err.file === join(dir, 'sessions.json') && /missing, while the directory was written to after it \(its journal compacted since\)/.test(err.message));
  assert.deepEqual(await readdir(dir), before, 'no snapshot written');
});

test('a complete last line this build cannot read is corruption, not a torn write; malformed ops name the journal', async () => {
  for (const [line, problem] of [
    ['{"seq":1,"ops":[{"op":"renameSession","id":1}]}\n', /line 1 is not a journal record/],
    ['{"seq":1,"ops":[{"op":"createSession"}]}\n', /record 1: a malformed createSession/],
    // a filtered delete whose filter is no list: refused, not read as no filter (every output deleted)
    ['{"seq":1,"ops":[{"op":"deleteOutputsWhere","target":1,"statuses":"Skipped"}]}\n', /record 1: a malformed deleteOutputsWhere/],
    ['{"seq":1,"ops":[{"op":"deleteOutputsWhere","target":1,"userRanks":["5"]}]}\n', /record 1: a malformed deleteOutputsWhere/],
    // a field misspelled, or no filter: refused too (the server writes neither)
    ['{"seq":1,"ops":[{"op":"deleteOutputsWhere","target":1,"status":["Crashed"]}]}\n', /record 1: a malformed deleteOutputsWhere/],
    ['{"seq":1,"ops":[{"op":"deleteOutputsWhere","target":1}]}\n', /record 1: a malformed deleteOutputsWhere/],
  ] as const) {
    const dir = await tempDir();
    await (await openStore({ dir, defaults: DEFAULTS })).close();
    await writeFile(join(dir, 'journal.jsonl'), line);
    await assert.rejects(openStore({ dir, defaults: DEFAULTS }), (err: Error) => {
      assert.ok(err instanceof DataFileError, err.message);
      assert.ok(err.message.startsWith(join(dir, 'journal.jsonl')));
      assert.match(err.message, problem);
      return true;
    });
    assert.equal(await readFile(join(dir, 'journal.jsonl'), 'utf8'), line);
  }
});

test("the journal's file: a close waits for the writes in flight, and no write goes out once it is closing (the descriptor may be another file's then)", async () => {
  const dir = await tempDir();
  const path = join(dir, 'journal.jsonl');
  const file = await nodeFileSystem.openAppendable(path);
  assert.equal(file.created, true);
  const lines = Array.from({ length: 20 }, (_, i) => Buffer.from(`{"line":${i}}\n`));
  let position = 0;
  const writes = lines.map((line) => {
    const write = file.writeAt(line, position);
    position += line.length;
    return write;
  });
  const closed = file.close();
  assert.equal(file.close(), closed, 'one close');
  await Promise.all(writes);
  await closed;
  assert.equal(await readFile(path, 'utf8'), lines.join(''));
  await assert.rejects(file.writeAt(Buffer.from('late\n'), position), { code: 'EBADF' });
  await assert.rejects(file.truncate(0), { code: 'EBADF' });
  assert.equal(await readFile(path, 'utf8'), lines.join(''));
  // opened again: there already, so not created; a truncate is two calls (ftruncate, then fsync),
  // the second made after the close was asked for: it must still go out, on this file
  const again = await nodeFileSystem.openAppendable(path);
  assert.equal(again.created, false);
  const truncated = again.truncate(lines[0]!.length);
  await Promise.all([truncated, again.close()]);
  assert.equal(await readFile(path, 'utf8'), lines[0]!.toString());
});

test("a start that fails after the journal is open (its directory's fsync) closes the journal's file", async () => {
  const dir = await tempDir();
  let opened = 0;
  let closed = 0;
  const fs = {
    ...nodeFileSystem,
    async openAppendable(path: string) {
      const file = await nodeFileSystem.openAppendable(path);
      opened++;
      return { ...file, created: file.created, close: () => (closed++, file.close()) };
    },
    async syncDir(path: string) {
      if (opened > 0) throw Object.assign(new Error(`EIO: injected failure, fsync ${path}`), { code: 'EIO' });
      return nodeFileSystem.syncDir(path);
    },
  };
  await assert.rejects(openStore({ dir, defaults: DEFAULTS, fs }), { code: 'EIO' });
  assert.deepEqual({ opened, closed }, { opened: 1, closed: 1 });
  // and the directory is free again
  await (await openStore({ dir, defaults: DEFAULTS })).close();
});

test('records missing from the journal stop the open, naming the gap, and change nothing: a file deleted, a line deleted, a sealed file cut, a snapshot gone', async () => {
  const { compactSegments } = await import('../../src/store/compaction.ts');
  const record = (seq: number, name: string) => `${JSON.stringify({ seq, ops: [{ op: 'createSession', name }] })}\n`;
  const cases: { name: string; files: Record<string, string>; gap: RegExp }[] = [
    { name: 'a sealed file deleted', files: { 'journal.jsonl': record(1, 'a'), 'journal.2.jsonl': record(3, 'c') }, gap: /journal\.2\.jsonl: record 3 comes after record 1: record 2 is missing/ },
    { name: 'a line deleted', files: { 'journal.jsonl': record(1, 'a') + record(2, 'b') + record(5, 'e') }, gap: /journal\.jsonl: record 5 comes after record 2: records 3-4 are missing/ },
    // its last record cut: a torn write? No: the next file goes on past it
    { name: 'a sealed file cut', files: { 'journal.jsonl': record(1, 'a') + record(2, 'b').slice(0, 20), 'journal.1.jsonl': record(3, 'c') }, gap: /journal\.1\.jsonl: record 3 comes after record 1: record 2 is missing/ },
  ];
  for (const { name, files, gap } of cases) {
    const dir = await tempDir();
    await (await openStore({ dir, defaults: DEFAULTS })).close();
    for (const [file, text] of Object.entries(files)) await writeFile(join(dir, file), text);
    const before = await Promise.all(Object.keys(files).map((file) => readFile(join(dir, file), 'utf8')));
    await assert.rejects(openStore({ dir, defaults: DEFAULTS }), (err: DataFileError) => err.code === 'ERR_DATA_FILE' && gap.test(err.message) && /start on a complete copy/.test(err.message), name);
    assert.deepEqual(await Promise.all(Object.keys(files).map((file) => readFile(join(dir, file), 'utf8'))), before, `${name}: untouched`);
  }
  // a compacted store whose sessions.json is gone: the folded records are nowhere else
  const dir = await tempDir();
  const store = await openStore({ dir, defaults: DEFAULTS, compactAfter: 300, compactor: (job) => compactSegments(job, nodeFileSystem) });
  for (let i = 0; i < 20; i++) await store.change({ op: 'createSession', name: `s${i}` });
  await store.close();
  assert.ok(!(await readdir(dir)).includes('journal.jsonl'), 'compacted');
  await rm(join(dir, 'sessions.json'));
  // refused either way, as the last compaction had or had not sealed the journal when the store closed
  await assert.rejects(
    openStore({ dir, defaults: DEFAULTS }),
    /record \d+ comes after the snapshots, which end at record 0: records 1-\d+ are missing|sessions\.json: missing, while the directory was written to after it \(its journal compacted since\)/,
  );
});

test('sessions.json gone beside a journal not yet compacted: the start stops naming it, rather than renumbering the sessions; the directory untouched', async () => {
  const dir = await tempDir();
  const store = await openStore({ dir, defaults: DEFAULTS });
  await store.change({ op: 'createSession', name: 'acme' });
  await store.close();
  await rm(join(dir, 'sessions.json'));
  const before = await readdir(dir);
  await assert.rejects(openStore({ dir, defaults: DEFAULTS }), (err: DataFileError) =>
    err.code === 'ERR_DATA_FILE' && err.file === join(dir, 'sessions.json') && /missing, while the journal holds records written after it \(1-1\)/.test(err.message));
  assert.deepEqual(await readdir(dir), before, 'no snapshot written');
  // without records (a new directory's), a missing snapshot is a fresh one, as before
  const fresh = await tempDir();
  await (await openStore({ dir: fresh, defaults: DEFAULTS })).close();
  await rm(join(fresh, 'sessions.json'));
  const reopened = await openStore({ dir: fresh, defaults: DEFAULTS });
  assert.deepEqual(listSessions(reopened.state).map((s) => s.name), ['default session']);
  await reopened.close();
});

test('a compaction that rewrote one snapshot (the other had nothing newer) leaves no gap: the store opens whole', async () => {
  const { compactSegments } = await import('../../src/store/compaction.ts');
  const dir = await tempDir();
  let store = await openStore({ dir, defaults: DEFAULTS, compactAfter: 300, compactor: (job) => compactSegments(job, nodeFileSystem) });
  for (let i = 0; i < 20; i++) await store.change({ op: 'createSession', name: `s${i}` });
  await store.close();
  const seq = async (file: string) => JSON.parse(await readFile(join(dir, file), 'utf8')).seq as number;
  assert.ok((await seq('configuration.json')) < (await seq('sessions.json')) && !(await readdir(dir)).includes('journal.jsonl'), 'compacted, the configuration left as it was');
  store = await openStore({ dir, defaults: DEFAULTS });
  await store.change({ op: 'patchConfig', values: [['K', 'late']] });
  await store.close();
  store = await openStore({ dir, defaults: DEFAULTS });
  assert.equal(listSessions(store.state).length, 21);
  assert.equal(store.state.config.get('K')?.value, 'late');
  await store.close();
});
