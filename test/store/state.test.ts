import { test } from 'node:test';
import assert from 'node:assert/strict';
import { applyOp } from '../../src/store/ops.ts';
import { emptyState, loadPart, serializePart, serializePartInPieces, FORMAT_VERSION, type State } from '../../src/store/state.ts';

/** The snapshot's format, written in one piece as the store always wrote it. */
function reference(state: State, seq: number): string {
  return JSON.stringify({
    version: FORMAT_VERSION,
    seq,
    nextSessionId: state.nextSessionId,
    activeSessionId: state.activeSessionId,
    nextTargetId: state.nextTargetId,
    nextWorkId: state.nextWorkId,
    nextOutputId: state.nextOutputId,
    nextErrorId: state.nextErrorId,
    sessions: [...state.sessions.values()].map((s) => ({ id: s.id, name: s.name, targets: s.targets ? [...s.targets] : [] })),
    targets: [...state.targets.values()].map((t) => t.target),
    works: [...state.works.values()].map((w) => [w.id, w.target, w.plugin, w.active]),
    outputs: [...state.outputs.values()],
    errors: [...state.errors.values()],
  });
}

test('a large snapshot written in pieces is the same text as in one piece, and loads back', () => {
  const state = emptyState();
  for (let i = 1; i <= 3000; i++) {
    assert.ok(applyOp(state, { op: 'createSession', name: `session ${i} ${'ü'.repeat(i % 7)} "quoted"` }).ok);
    if (i % 3 === 0) assert.ok(applyOp(state, { op: 'createTargets', urls: [`http://h${i}.example/path/${'x'.repeat(40)}`] }).ok);
  }
  applyOp(state, { op: 'deleteSession', id: 1500 });
  const pieces = [...serializePartInPieces(state, 'sessions', 42)];
  assert.ok(pieces.length > 2, `${pieces.length} pieces`);
  assert.equal(pieces.join(''), reference(state, 42));
  assert.equal(serializePart(state, 'sessions', 42), reference(state, 42));
  const loaded = emptyState();
  assert.equal(loadPart(loaded, 'sessions', 'sessions.json', pieces.join('')), 42);
  assert.equal(serializePart(loaded, 'sessions', 42), reference(state, 42));
});

test('an empty store and the configuration are one piece each', () => {
  const state = emptyState();
  assert.deepEqual([...serializePartInPieces(state, 'sessions', 0)], [reference(state, 0)]);
  assert.deepEqual([...serializePartInPieces(state, 'configuration', 3)], [JSON.stringify({ version: FORMAT_VERSION, seq: 3, items: [] })]);
});
