import { test } from 'node:test';
import assert from 'node:assert/strict';
import { addTargetsPartial, bulkTargets } from '../../src/store/bulk.ts';
import { applyOp, type Op } from '../../src/store/ops.ts';
import { ensureDefaultSession } from '../../src/store/sessions.ts';
import { emptyState, serializePart, type State } from '../../src/store/state.ts';
import { orderSessionTargets, queryTargets } from '../../src/store/target-query.ts';

function fresh(): State {
  const state = emptyState();
  // one fixed creation time: both runs of a replay start from the very same state
  ensureDefaultSession(state, 1_763_719_200_000);
  return state;
}

const urls = (n: number, prefix = 'h') => Array.from({ length: n }, (_, i) => `http://${prefix}${i}.example/`);

test('addTargetsPartial refuses an unknown session and changes nothing', () => {
  const state = fresh();
  const before = serializePart(state, 'sessions', 0);
  assert.deepEqual(addTargetsPartial(state, 9, ['http://a.example/']), { ok: false, reason: 'unknown-session' });
  assert.equal(serializePart(state, 'sessions', 0), before);
});

test('bulkTargets refuses an unknown action or session before it changes anything', () => {
  const state = fresh();
  addTargetsPartial(state, 1, urls(3));
  const before = serializePart(state, 'sessions', 0);
  assert.deepEqual(bulkTargets(state, { action: 'purge' as 'delete', select: { ids: [1] } }), { ok: false, reason: 'unknown-action' });
  assert.deepEqual(bulkTargets(state, { action: 'attach', session: 5, select: { ids: [1] } }), { ok: false, reason: 'unknown-session' });
  assert.deepEqual(bulkTargets(state, { action: 'attach', select: { ids: [1] } }), { ok: false, reason: 'unknown-session' });
  assert.deepEqual(bulkTargets(state, { action: 'delete', select: { filter: { session: 5 } } }), { ok: false, reason: 'unknown-session' });
  assert.equal(serializePart(state, 'sessions', 0), before);
});

test('detaching a whole session by filter reads the selection before changing the set it comes from', () => {
  const state = fresh();
  addTargetsPartial(state, 1, urls(1000));
  const result = bulkTargets(state, { action: 'detach', session: 1, select: { filter: { session: 1 } } });
  assert.deepEqual(result, { ok: true, matched: 1000, changed: 1000, deleted: 1000, missing: [] });
  assert.equal(state.targets.size, 0);
  assert.equal(state.targetIdByUrl.size, 0);
  assert.equal(state.sessions.get(1)!.targets?.size ?? 0, 0);
});

test('a replay of the same ops on the same start gives the same state, byte for byte', () => {
  const ops: Op[] = [
    { op: 'addTargetsPartial', session: 1, urls: [...urls(50), 'bad', 'http://h3.example/', 'http://10.0.0.1/'] },
    { op: 'createSession', name: 'two' },
    { op: 'bulkTargets', action: 'attach', session: 2, select: { filter: { session: 1, q: 'h1' } } },
    { op: 'bulkTargets', action: 'detach', session: 1, select: { ids: [2, 11, 12, 99] } },
    { op: 'addTargetsPartial', session: 2, urls: urls(5, 'n') },
    { op: 'bulkTargets', action: 'delete', select: { filter: { session: 2, q: 'N' } } },
    { op: 'bulkTargets', action: 'delete', select: { ids: [1, 3] } },
  ];
  const live = fresh();
  const results = ops.map((op) => applyOp(live, op));
  assert.ok(results.every((r) => r.ok));
  const replayed = fresh();
  // what the journal holds is JSON: replay from the parsed text, as a restart does
  for (const op of JSON.parse(JSON.stringify(ops)) as Op[]) assert.equal(applyOp(replayed, op).ok, true);
  assert.equal(serializePart(replayed, 'sessions', 0), serializePart(live, 'sessions', 0));
  assert.deepEqual(orderSessionTargets(replayed, 2, 'host'), orderSessionTargets(live, 2, 'host'));
});

test('queryTargets: the total counts every match, the page is the slice asked for', () => {
  const state = fresh();
  addTargetsPartial(state, 1, urls(30));
  const { total, page } = queryTargets(state, { sessionId: 1, q: 'h1', limit: 3, offset: 2 });
  assert.equal(total, 11);
  assert.deepEqual(page.map((t) => t.target_url), ['http://h17.example/', 'http://h16.example/', 'http://h15.example/']);
  assert.deepEqual(queryTargets(state, { sessionId: 7 }), { total: 0, page: [] });
});
