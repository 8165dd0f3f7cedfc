import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { buildBundle, parseBundle, snapshotSession } from '../../src/store/bundle.ts';
import type { DefaultItem } from '../../src/store/configuration.ts';
import { importSession, type ImportedOutput } from '../../src/store/import.ts';
import { applyOp } from '../../src/store/ops.ts';
import { createSession } from '../../src/store/sessions.ts';
import { emptyState, serializePart, type State } from '../../src/store/state.ts';
import { openStore } from '../../src/store/store.ts';
import { createTargets } from '../../src/store/targets.ts';
import { turnsDuring } from '../helpers/event-loop.ts';
import { tempDir } from '../helpers/server.ts';

const DEFAULTS: DefaultItem[] = [{ key: 'A_KEY', value: 'a', section: 'S', descrip: '' }];
const AT = Date.UTC(2026, 10, 21, 10, 0, 0);

function stateWith(): State {
  const state = emptyState();
  createSession(state, 'default session', AT);
  createTargets(state, ['http://a.example/']);
  return state;
}

test('importSession makes the session without activating it, creates new URLs and attaches known ones', () => {
  const state = stateWith();
  const result = importSession(state, '  imported ', ['http://b.example/', 'http://a.example/', 'http://b.example/'], AT + 1);
  assert.deepEqual(result, { ok: true, id: 2, targets: 2 });
  assert.equal(state.activeSessionId, 1);
  const row = state.sessions.get(2)!;
  assert.equal(row.name, 'imported');
  assert.equal(row.createdAt, AT + 1);
  assert.deepEqual([...row.targets!].sort(), [1, 2]);
  assert.deepEqual([...state.targets.get(1)!.sessions].sort(), [1, 2]);
  assert.equal(state.targets.get(2)!.target.target_url, 'http://b.example/');
});

test('a refused importSession changes nothing at all', () => {
  for (const [name, urls] of [['default session', ['http://new.example/']], ['', ['http://new.example/']], ['fine', ['http://new.example/', 'nope']]] as const) {
    const state = stateWith();
    const before = serializePart(state, 'sessions', 0);
    const counters = [state.nextSessionId, state.nextTargetId];
    assert.equal(importSession(state, name, [...urls]).ok, false, name);
    assert.equal(serializePart(state, 'sessions', 0), before, name);
    assert.deepEqual([state.nextSessionId, state.nextTargetId], counters);
  }
});

test('the same importSession op replayed on the same state gives the same state, whatever the clock says', () => {
  const op = { op: 'importSession' as const, name: 'replayed', urls: ['http://x.example/', 'http://a.example/'], at: AT };
  const [one, two] = [stateWith(), stateWith()];
  applyOp(one, op);
  applyOp(two, op);
  assert.equal(serializePart(one, 'sessions', 0), serializePart(two, 'sessions', 0));
});

test('an import and creation times survive a reopen through the journal, then through the snapshots', async () => {
  const dir = await tempDir();
  let store = await openStore({ dir, defaults: DEFAULTS });
  const created = store.state.sessions.get(1)!.createdAt!;
  assert.ok(Math.abs(created - Date.now()) < 60_000, 'the default session of a new directory is stamped');
  await store.change({ op: 'createSession', name: 'made', at: AT });
  await store.change({ op: 'importSession', name: 'imported', urls: ['http://i.example/'], at: AT + 5 });
  const expected = serializePart(store.state, 'sessions', 0);
  await store.close();

  const journal = await readFile(join(dir, 'journal.jsonl'), 'utf8');
  assert.match(journal, /"op":"importSession","name":"imported","urls":\["http:\/\/i\.example\/"\],"at":\d+/);
  store = await openStore({ dir, defaults: DEFAULTS });
  assert.equal(serializePart(store.state, 'sessions', 0), expected, 'replayed from the journal');
  assert.equal(store.state.sessions.get(2)!.createdAt, AT);
  assert.equal(store.state.sessions.get(3)!.createdAt, AT + 5);
  await store.close();

  store = await openStore({ dir, defaults: DEFAULTS, compactAfter: 0 });
  await store.change({ op: 'activateSession', id: 1 });
  await store.close();
  const snapshot = JSON.parse(await readFile(join(dir, 'sessions.json'), 'utf8'));
  assert.deepEqual(snapshot.sessions.map((s: { created_at?: number }) => s.created_at), [created, AT, AT + 5]);
  store = await openStore({ dir, defaults: DEFAULTS });
  assert.equal(store.state.sessions.get(3)!.createdAt, AT + 5, 'read back from the snapshot');
  await store.close();
});

test('deleting the last session re-creates the default one stamped with the op time, so a replay matches', async () => {
  const dir = await tempDir();
  let store = await openStore({ dir, defaults: DEFAULTS });
  await store.change({ op: 'deleteSession', id: 1, at: AT });
  assert.equal(store.state.sessions.get(2)!.createdAt, AT);
  await store.close();
  store = await openStore({ dir, defaults: DEFAULTS });
  assert.equal(store.state.sessions.get(2)!.createdAt, AT);
  await store.close();
});

test('a snapshot without creation times still loads; a malformed one names the session', async () => {
  const dir = await tempDir();
  const doc = { version: 1, seq: 0, nextSessionId: 2, activeSessionId: 1, nextTargetId: 1, sessions: [{ id: 1, name: 'old', targets: [] }], targets: [] };
  await writeFile(join(dir, 'sessions.json'), JSON.stringify(doc));
  const store = await openStore({ dir, defaults: DEFAULTS });
  assert.equal(store.state.sessions.get(1)!.createdAt, undefined);
  await store.close();
  doc.sessions[0] = { ...doc.sessions[0], created_at: 'yesterday' } as never;
  await writeFile(join(dir, 'sessions.json'), JSON.stringify(doc));
  await assert.rejects(openStore({ dir, defaults: DEFAULTS }), /session 1: "created_at" must be milliseconds since the epoch/);
});

test('a journal op with a malformed time is refused at start, never written into a snapshot', async () => {
  const dir = await tempDir();
  const store = await openStore({ dir, defaults: DEFAULTS });
  await store.close();
  await writeFile(join(dir, 'journal.jsonl'), `${JSON.stringify({ seq: 1, ops: [{ op: 'createSession', name: 'x', at: 'noon' }] })}\n`);
  await assert.rejects(openStore({ dir, defaults: DEFAULTS }), /record 1: a malformed createSession/);
});

test('an op with a malformed time changes nothing at all, even one that would delete before it creates', () => {
  const state = emptyState();
  createSession(state, 'only', 1);
  const before = serializePart(state, 'sessions', 0);
  // deleting the last session re-creates the default one, stamped with the op's time
  assert.throws(() => applyOp(state, { op: 'deleteSession', id: 1, at: -5 }), /"at" must be milliseconds/);
  assert.throws(() => applyOp(state, { op: 'importSession', name: 'n', urls: ['http://a.example/'], at: 1.5 }), /"at" must be milliseconds/);
  assert.equal(serializePart(state, 'sessions', 0), before);
});

test('a bundle built from a state parses back to its URLs, oldest first', () => {
  const state = stateWith();
  createTargets(state, ['http://b.example/', 'http://c.example/']);
  const text = buildBundle(snapshotSession(state, 1)!, new Map(), new Date(AT));
  assert.equal(JSON.parse(text).exported_at, '2026-11-21T10:00:00.000Z');
  assert.deepEqual(parseBundle(Buffer.from(text)), { ok: true, name: 'default session', urls: ['http://a.example/', 'http://b.example/', 'http://c.example/'], outputs: [], transactions: [] });
  assert.equal(snapshotSession(state, 9), undefined);
});

test('a bundle written a piece at a time is the very text JSON.stringify of it all wrote: targets with and without transactions, in order', async () => {
  const state = stateWith();
  createTargets(state, ['http://b.example/', 'http://c.example/']);
  const snapshot = snapshotSession(state, 1)!;
  const [newest, , oldest] = snapshot.targets.map(({ target }) => target.id);
  const entries = (n: number) => Array.from({ length: n }, (_, i) => ({ request: { url: `http://x/${i}`, headers: [{ name: 'q"\\', value: '\u2028' }] }, response: { status: 200 } }));
  const transactions = new Map([[newest!, entries(3)], [oldest!, entries(1)]]);
  const text = buildBundle(snapshot, new Map(), new Date(AT), transactions);
  // JSON.stringify of the parsed text writes the same keys in the same order: the pieces are it, byte for byte
  assert.equal(JSON.stringify(JSON.parse(text)), text);
  const doc = JSON.parse(text);
  assert.deepEqual(doc.targets.map((t: { transactions?: unknown[] }) => t.transactions?.length), [3, undefined, 1]);
  assert.deepEqual(Object.keys(doc.targets[0]).slice(-2), ['outputs', 'transactions']);
  assert.equal(buildBundle({ name: 'empty', targets: [] }, new Map(), new Date(AT)), JSON.stringify({ format: 'assessd-session', version: 1, exported_at: '2026-11-21T10:00:00.000Z', session: { name: 'empty' }, targets: [] }));
});

test('an export of many transactions lets the event loop in while its text is built (480,000 of them blocked it 7.5 s)', async () => {
  const { exportSession } = await import('../../src/engine/bundle-outputs.ts');
  const state = stateWith();
  const [target] = snapshotSession(state, 1)!.targets.map(({ target }) => target.id);
  const entries = Array.from({ length: 200_000 }, (_, i) => ({ request: { method: 'GET', url: `http://a.example/${i}` }, response: { status: 200 } }));
  const { result: exported, turns } = await turnsDuring(() => exportSession(state, undefined, 1, () => new Date(AT), async () => new Map([[target!, entries]])));
  assert.equal(JSON.parse(exported!.text).targets[0].transactions.length, 200_000);
  assert.ok(turns > 1, `the event loop had ${turns} turn(s) while the bundle was built`);
});

const OUTPUT: ImportedOutput = {
  url: 'http://a.example/',
  plugin_key: 'external@OWTF-IG-001',
  plugin_code: 'OWTF-IG-001',
  plugin_group: 'web',
  plugin_type: 'external',
  status: 'Successful',
  owtf_rank: 2,
  user_rank: 4,
  user_notes: 'notes',
  findings: [{ rank: 2, title: 't', detail: 'd' }],
  exit_code: 0,
  error: null,
  started_at: AT - 2000,
  ended_at: AT - 1000,
  output: 'text',
};

test('importSession adds each output to its target, with the next ids, and the ranks follow', () => {
  const state = stateWith();
  state.nextOutputId = 7;
  const second = { ...OUTPUT, url: 'http://b.example/', plugin_key: 'passive@OWTF-IG-002', plugin_code: 'OWTF-IG-002', plugin_type: 'passive', owtf_rank: 5, user_rank: -1 };
  const result = importSession(state, 'with outputs', ['http://a.example/', 'http://b.example/'], AT, [OUTPUT, second]);
  assert.deepEqual(result, { ok: true, id: 2, targets: 2 });
  const a = state.outputs.get(7)!;
  assert.deepEqual(a, {
    id: 7, target_id: 1, plugin_key: 'external@OWTF-IG-001', plugin_code: 'OWTF-IG-001', plugin_group: 'web', plugin_type: 'external',
    status: 'Successful', owtf_rank: 2, user_rank: 4, user_notes: 'notes', output_path: '', started_at: AT - 2000, ended_at: AT - 1000,
    error: null, findings: [{ rank: 2, title: 't', detail: 'd' }], exit_code: 0, summary: 'text',
  });
  assert.equal(state.outputs.get(8)!.target_id, 2);
  assert.equal(state.nextOutputId, 9);
  assert.deepEqual([state.targets.get(1)!.target.max_owtf_rank, state.targets.get(1)!.target.max_user_rank], [2, 4]);
  assert.deepEqual([state.targets.get(2)!.target.max_owtf_rank, state.targets.get(2)!.target.max_user_rank], [5, -1]);
});

test("importSession keeps a target's own output of a plugin, and stamps missing times with the op's", () => {
  const state = stateWith();
  importSession(state, 'first', ['http://a.example/'], AT, [OUTPUT]);
  const own = structuredClone(state.outputs.get(1));
  const result = importSession(state, 'second', ['http://a.example/'], AT + 9, [{ ...OUTPUT, user_rank: 5 }, { ...OUTPUT, plugin_key: 'external@OWTF-IG-002', plugin_code: 'OWTF-IG-002', started_at: null, ended_at: null }]);
  assert.equal(result.ok, true);
  assert.deepEqual(state.outputs.get(1), own);
  assert.deepEqual([state.outputs.get(2)!.started_at, state.outputs.get(2)!.ended_at], [AT + 9, AT + 9]);
  assert.equal(state.targets.get(1)!.target.max_user_rank, 4);
});

test('an importSession op with outputs replays to the same state, and one naming a URL it does not attach changes nothing', () => {
  const op = { op: 'importSession' as const, name: 'replayed', urls: ['http://x.example/', 'http://a.example/'], at: AT, outputs: [OUTPUT, { ...OUTPUT, url: 'http://x.example/' }] };
  const [one, two] = [stateWith(), stateWith()];
  applyOp(one, op);
  applyOp(two, structuredClone(op));
  assert.equal(serializePart(one, 'sessions', 0), serializePart(two, 'sessions', 0));
  const state = stateWith();
  const before = serializePart(state, 'sessions', 0);
  assert.deepEqual(applyOp(state, { ...op, outputs: [{ ...OUTPUT, url: 'http://elsewhere.example/' }] }), { ok: false, reason: 'invalid-url' });
  assert.equal(serializePart(state, 'sessions', 0), before);
});

test('imported outputs survive a reopen through the journal, then through the snapshots', async () => {
  const dir = await tempDir();
  let store = await openStore({ dir, defaults: DEFAULTS });
  await store.change({ op: 'importSession', name: 'imported', urls: ['http://a.example/'], at: AT, outputs: [OUTPUT] });
  const expected = serializePart(store.state, 'sessions', 0);
  await store.close();
  store = await openStore({ dir, defaults: DEFAULTS, compactAfter: 0 });
  assert.equal(serializePart(store.state, 'sessions', 0), expected, 'replayed from the journal');
  await store.change({ op: 'activateSession', id: 1 });
  await store.close();
  store = await openStore({ dir, defaults: DEFAULTS });
  assert.deepEqual(store.state.outputs.get(1)!.summary, 'text', 'read back from the snapshot');
  assert.equal(store.state.targets.get(1)!.target.max_user_rank, 4);
  await store.close();
});
