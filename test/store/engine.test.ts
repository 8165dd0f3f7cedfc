import { test } from 'node:test';
import assert from 'node:assert/strict';
import { applyOp } from '../../src/store/ops.ts';
import { emptyState, loadPart, serializePart, type State } from '../../src/store/state.ts';
import { MAX_NOTES } from '../../src/store/engine.ts';

const PLUGIN = (key: string) => {
  const [type, code] = key.split('@');
  return { key, code, group: 'web', type };
};

/** A state with a session and `n` targets (ids 1..n). */
function withTargets(n: number): State {
  const state = emptyState();
  assert.ok(applyOp(state, { op: 'createSession', name: 's' }).ok);
  assert.ok(applyOp(state, { op: 'createTargets', urls: Array.from({ length: n }, (_, i) => `http://t${i + 1}.example/`) }).ok);
  return state;
}

const queueOrder = (state: State) => [...state.works.values()].map((w) => `${w.target} ${w.plugin}`);

test('queueWorks: targets outer, plugins inner; a pair already queued is skipped, and so is one already run unless forced', () => {
  const state = withTargets(2);
  assert.deepEqual(applyOp(state, { op: 'queueWorks', targets: [1, 2], plugins: ['external@A', 'external@B'], force: false }), { ok: true, queued: 4, skipped: 0, ran: 0 });
  assert.deepEqual(queueOrder(state), ['1 external@A', '1 external@B', '2 external@A', '2 external@B']);
  assert.deepEqual(applyOp(state, { op: 'queueWorks', targets: [1], plugins: ['external@A'], force: true }), { ok: true, queued: 0, skipped: 1, ran: 0 });
  const first = [...state.works.values()][0];
  const started = applyOp(state, { op: 'startRun', work: first.id, plugin: PLUGIN('external@A'), outputPath: '', at: 1000 });
  assert.ok(started.ok);
  // running: never queued twice, even forced
  assert.deepEqual(applyOp(state, { op: 'queueWorks', targets: [1], plugins: ['external@A'], force: true }), { ok: true, queued: 0, skipped: 1, ran: 0 });
  assert.ok(applyOp(state, { op: 'endRun', output: started.output, at: 2000, status: 'Successful', owtfRank: -1, findings: [], exitCode: null, error: null }).ok);
  assert.deepEqual(applyOp(state, { op: 'queueWorks', targets: [1], plugins: ['external@A'], force: false }), { ok: true, queued: 0, skipped: 1, ran: 1 });
  assert.deepEqual(applyOp(state, { op: 'queueWorks', targets: [1], plugins: ['external@A'], force: true }), { ok: true, queued: 1, skipped: 0, ran: 0 });
  assert.deepEqual(applyOp(state, { op: 'queueWorks', targets: [1, 99], plugins: ['external@C'], force: false }), { ok: false, reason: 'unknown-target' });
});

test('a run: its output replaces the last one (keeping the tester\'s rank and notes), ranks follow, a crash is listed, a requeue goes to the head', () => {
  const state = withTargets(1);
  applyOp(state, { op: 'queueWorks', targets: [1], plugins: ['semi_passive@X', 'semi_passive@Y'], force: false });
  const [x, y] = [...state.works.values()];
  const run = applyOp(state, { op: 'startRun', work: x.id, plugin: PLUGIN('semi_passive@X'), outputPath: '', at: 10 });
  assert.ok(run.ok);
  assert.equal(state.outputs.get(run.output)!.status, 'Running');
  assert.ok(applyOp(state, { op: 'runStarted', output: run.output, pid: 4242, pidStart: '777' }).ok);
  assert.deepEqual(state.outputs.get(run.output)!.run, { work: x.id, active: true, pid: 4242, pidStart: '777' });
  const findings = [{ rank: 3, title: 'TRACE echoes', detail: 'TRACE / HTTP/1.1' }];
  assert.ok(applyOp(state, { op: 'endRun', output: run.output, at: 20, status: 'Successful', owtfRank: 3, findings, exitCode: null, error: null, summary: 'sum' }).ok);
  assert.equal(state.targets.get(1)!.target.max_owtf_rank, 3);
  assert.ok(applyOp(state, { op: 'rankOutput', target: 1, key: 'semi_passive@X', userRank: 5, notes: '<b>n</b>' }).ok);
  assert.equal(state.targets.get(1)!.target.max_user_rank, 5);
  assert.deepEqual(applyOp(state, { op: 'rankOutput', target: 1, key: 'semi_passive@X', userRank: 6 }), { ok: false, reason: 'invalid-rank' });
  assert.equal(applyOp(state, { op: 'rankOutput', target: 1, key: 'semi_passive@X', notes: 'x'.repeat(MAX_NOTES + 5) }).ok, true);
  assert.equal(state.outputs.get(run.output)!.user_notes.length, MAX_NOTES);

  // a crash is listed among the errors
  const crash = applyOp(state, { op: 'startRun', work: y.id, plugin: PLUGIN('semi_passive@Y'), outputPath: '1/web/semi_passive/Y', at: 30 });
  assert.ok(crash.ok);
  applyOp(state, { op: 'endRun', output: crash.output, at: 40, status: 'Crashed', owtfRank: -1, findings: [], exitCode: null, error: 'died', crash: { message: 'm', traceback: 't' } });
  assert.deepEqual([...state.errors.values()], [{ id: 1, owtf_message: 'm', traceback: 't', user_message: '', reported: false, github_issue_url: null }]);

  // a rerun replaces the output and keeps the tester's rank; a stop requeues it at the head, paused as it was
  applyOp(state, { op: 'queueWorks', targets: [1], plugins: ['semi_passive@Z', 'semi_passive@X'], force: true });
  const rerun = [...state.works.values()].find((w) => w.plugin === 'semi_passive@X')!;
  applyOp(state, { op: 'setWorkActive', id: rerun.id, active: false });
  const again = applyOp(state, { op: 'startRun', work: rerun.id, plugin: PLUGIN('semi_passive@X'), outputPath: '', at: 50 });
  assert.ok(again.ok);
  assert.equal(state.outputs.has(run.output), false);
  assert.equal(state.outputs.get(again.output)!.user_rank, 5);
  assert.ok(applyOp(state, { op: 'requeueRun', output: again.output, at: 60, reason: 'stopped' }).ok);
  assert.deepEqual(queueOrder(state), ['1 semi_passive@X', '1 semi_passive@Z']);
  assert.deepEqual(state.works.get(rerun.id), { id: rerun.id, target: 1, plugin: 'semi_passive@X', active: false, taken: again.output });
  assert.equal(state.outputs.get(again.output)!.status, 'Aborted');
  assert.equal(state.outputs.get(again.output)!.error, 'stopped');
  assert.deepEqual(applyOp(state, { op: 'endRun', output: again.output, at: 70, status: 'Successful', owtfRank: 0, findings: [], exitCode: 0, error: null }), { ok: false, reason: 'unknown-output' });
});

test('works a stop puts back keep the order they were taken in, whatever order their runs end; a stop after the next start does the same', () => {
  const state = withTargets(1);
  applyOp(state, { op: 'queueWorks', targets: [1], plugins: ['active@A', 'active@B', 'active@C', 'active@D', 'active@E'], force: false });
  const start = (key: string, at: number) => {
    const work = [...state.works.values()].find((w) => w.plugin === key)!;
    const run = applyOp(state, { op: 'startRun', work: work.id, plugin: PLUGIN(key), outputPath: '', at });
    assert.ok(run.ok);
    return run.output;
  };
  // three workers take A, B and C; the stop ends C first, then A, then B
  const [a, b, c] = [start('active@A', 1), start('active@B', 2), start('active@C', 3)];
  for (const output of [c, a, b]) assert.ok(applyOp(state, { op: 'requeueRun', output, at: 4, reason: 'the server stopped' }).ok);
  assert.deepEqual(queueOrder(state), ['1 active@A', '1 active@B', '1 active@C', '1 active@D', '1 active@E']);
  // through a snapshot, the marks kept
  const loaded = emptyState();
  loadPart(loaded, 'sessions', 'sessions.json', serializePart(state, 'sessions', 1));
  assert.deepEqual([...loaded.works.values()], [...state.works.values()]);
  // the next start: two workers take A and B; a stop puts them back ahead of C, which was behind them
  const again = [start('active@A', 5), start('active@B', 6)];
  assert.equal([...state.works.values()].some((w) => w.taken !== undefined), false, 'a start clears the marks');
  for (const output of [again[1]!, again[0]!]) applyOp(state, { op: 'requeueRun', output, at: 7, reason: 'the server stopped' });
  assert.deepEqual(queueOrder(state), ['1 active@A', '1 active@B', '1 active@C', '1 active@D', '1 active@E']);
});

test('the snapshot carries the worklist (in its order), outputs with their runs, and errors, and loads back the same', () => {
  const state = withTargets(3);
  applyOp(state, { op: 'queueWorks', targets: [3, 1, 2], plugins: ['external@A', 'active@N'], force: false });
  const works = [...state.works.values()];
  const running = applyOp(state, { op: 'startRun', work: works[1].id, plugin: PLUGIN('active@N'), outputPath: '3/web/active/N', at: 5 });
  assert.ok(running.ok);
  applyOp(state, { op: 'runStarted', output: running.output, pid: 99, pidStart: '12345' });
  applyOp(state, { op: 'requeueRun', output: running.output, at: 6, reason: 'r' });
  const again = applyOp(state, { op: 'startRun', work: works[1].id, plugin: PLUGIN('active@N'), outputPath: '3/web/active/N', at: 7 });
  assert.ok(again.ok);
  applyOp(state, { op: 'setWorkActive', id: works[2].id, active: false });
  const text = serializePart(state, 'sessions', 9);
  const loaded = emptyState();
  assert.equal(loadPart(loaded, 'sessions', 'sessions.json', text), 9);
  assert.equal(serializePart(loaded, 'sessions', 9), text);
  assert.deepEqual(queueOrder(loaded), queueOrder(state));
  assert.deepEqual(loaded.outputs.get(again.output)!.run, { work: works[1].id, active: true, pid: null, pidStart: null });
  // deleting a target forgets its works and outputs
  assert.ok(applyOp(loaded, { op: 'deleteTarget', id: 3 }).ok);
  assert.equal([...loaded.works.values()].some((w) => w.target === 3), false);
  assert.equal(loaded.outputsByTarget.has(3), false);
  assert.equal([...loaded.outputs.values()].some((o) => o.target_id === 3), false);
});

test('a crash that cut a run short is counted on its work, through a stop, a snapshot and a reload; an ordinary requeue neither counts nor forgets it', () => {
  const state = withTargets(1);
  applyOp(state, { op: 'queueWorks', targets: [1], plugins: ['active@N'], force: false });
  const run = (at: number) => {
    const started = applyOp(state, { op: 'startRun', work: [...state.works.values()][0]!.id, plugin: PLUGIN('active@N'), outputPath: '1/web/active/N', at });
    assert.ok(started.ok);
    return started.output;
  };
  applyOp(state, { op: 'requeueRun', output: run(1), at: 2, reason: 'crashed', crashed: true });
  assert.equal([...state.works.values()][0]!.crashes, 1);
  applyOp(state, { op: 'requeueRun', output: run(3), at: 4, reason: 'the server stopped' });
  assert.equal([...state.works.values()][0]!.crashes, 1, 'a stop in between neither counts nor forgets');
  const output = run(5);
  assert.equal(state.outputs.get(output)!.run!.crashes, 1, 'the run knows how many crashes came before it');
  const loaded = emptyState();
  loadPart(loaded, 'sessions', 'sessions.json', serializePart(state, 'sessions', 1));
  assert.equal(loaded.outputs.get(output)!.run!.crashes, 1);
  applyOp(loaded, { op: 'requeueRun', output, at: 6, reason: 'crashed', crashed: true });
  const again = emptyState();
  loadPart(again, 'sessions', 'sessions.json', serializePart(loaded, 'sessions', 2));
  assert.equal([...again.works.values()][0]!.crashes, 2);
});

test('a snapshot whose engine rows are wrong stops the load naming the problem', () => {
  const state = withTargets(1);
  const doc = JSON.parse(serializePart(state, 'sessions', 1));
  for (const [change, problem] of [
    [{ works: [[1, 7, 'external@A', true]] }, /work \[1,7/],
    [{ works: [[5, 1, 'external@A', true]] }, /below "nextWorkId"/],
    [{ outputs: [{ id: 1, target_id: 1 }] }, /below "nextOutputId"|wrong type/],
    [{ nextOutputId: 2, outputs: [{ id: 1, target_id: 1, status: 'Weird' }] }, /output 1 has a field of the wrong type/],
    [{ errors: [{ id: 1 }] }, /each error/],
  ] as const) {
    assert.throws(() => loadPart(emptyState(), 'sessions', 'sessions.json', JSON.stringify({ ...doc, ...change })), problem, JSON.stringify(change));
  }
});
