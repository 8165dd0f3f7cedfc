import { afterEach, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { MESSAGES } from '../../src/api/messages.ts';
import { assertFail, assertSuccess } from '../helpers/jsend.ts';
import { request, startServer, type RequestOptions, type TestServer } from '../helpers/server.ts';

let server: TestServer;
beforeEach(async () => (server = await startServer()));
afterEach(() => server.close());

const call = (path: string, options: RequestOptions = {}) => request(server.url, path, options);
const ok = async (path: string, options: RequestOptions = {}, status = 200) => assertSuccess(await call(path, options), status, `${options.method ?? 'GET'} ${path}`);



const sessions = () => ok('/api/v1/sessions/');
const create = async (name: string) => assert.deepEqual(await ok('/api/v1/sessions/', { method: 'POST', form: { name } }, 201), {});
const activate = (id: number) => ok(`/api/v1/sessions/${id}/activate`, { method: 'PATCH' });
const remove = (id: number) => ok(`/api/v1/sessions/${id}`, { method: 'DELETE' });
const addTarget = (url: string) => ok('/api/v1/targets/', { method: 'POST', form: { target_url: url } }, 201);
const targetIds = async (sessionId: number) => ((await ok(`/api/v1/targets/?session_id=${sessionId}`)) as { id: number }[]).map((t) => t.id);
const s = (id: number, name: string, active = false) => ({ id, name, active });

async function assertOneActive(): Promise<void> {
  const list = await sessions();
  assert.equal(list.filter((x: { active: boolean }) => x.active).length, 1, JSON.stringify(list));
}

test('a fresh data directory has exactly "default session" (id 1), active', async () => {
  assert.deepEqual(await sessions(), [s(1, 'default session', true)]);
  assert.deepEqual(await ok('/api/v1/sessions/1'), s(1, 'default session', true));
});

test('a session has exactly the keys id, name and active', async () => {
  await create('keys');
  for (const session of await sessions()) assert.deepEqual(Object.keys(session).sort(), ['active', 'id', 'name']);
  assert.deepEqual(Object.keys(await ok('/api/v1/sessions/2')).sort(), ['active', 'id', 'name']);
});

test('POST creates the session with the next id and makes it the only active one', async () => {
  await create('alpha');
  assert.deepEqual(await sessions(), [s(1, 'default session'), s(2, 'alpha', true)]);
  await create('beta');
  assert.deepEqual(await sessions(), [s(1, 'default session'), s(2, 'alpha'), s(3, 'beta', true)]);
});

test('the session list is ordered by id', async () => {
  for (const name of ['c', 'a', 'b']) await create(name);
  await activate(1);
  assert.deepEqual((await sessions()).map((x: { id: number }) => x.id), [1, 2, 3, 4]);
});

test('ids are never reused after a delete', async () => {
  await create('two');
  await remove(2);
  await create('three');
  assert.deepEqual(await sessions(), [s(1, 'default session'), s(3, 'three', true)]);
});

test('ids are never reused after a restart', async () => {
  await create('two');
  await remove(2);
  await server.stop();
  server = await startServer({ dataDir: server.dataDir });
  await create('after restart');
  assert.deepEqual(await sessions(), [s(1, 'default session'), s(3, 'after restart', true)]);
});

test('the active session survives a restart', async () => {
  await create('two');
  await activate(1);
  await server.stop();
  server = await startServer({ dataDir: server.dataDir });
  assert.deepEqual(await sessions(), [s(1, 'default session', true), s(2, 'two')]);
});

test('deleting the active session activates the remaining session with the highest id', async () => {
  for (const name of ['two', 'three', 'four']) await create(name);
  await activate(2);
  await remove(2);
  assert.deepEqual(await sessions(), [s(1, 'default session'), s(3, 'three'), s(4, 'four', true)]);
  await remove(4);
  assert.deepEqual(await sessions(), [s(1, 'default session'), s(3, 'three', true)]);
});

test('deleting an inactive session leaves the active one active', async () => {
  for (const name of ['two', 'three']) await create(name);
  await activate(2);
  await remove(3);
  assert.deepEqual(await sessions(), [s(1, 'default session'), s(2, 'two', true)]);
});

test('deleting the last session re-creates "default session" with a new id, active', async () => {
  await remove(1);
  assert.deepEqual(await sessions(), [s(2, 'default session', true)]);
  await create('x');
  await remove(2);
  await remove(3);
  assert.deepEqual(await sessions(), [s(4, 'default session', true)]);
});

test('exactly one session is active after every kind of change', async () => {
  await assertOneActive();
  await create('a');
  await assertOneActive();
  await create('b');
  await activate(1);
  await assertOneActive();
  await remove(1);
  await assertOneActive();
  await remove(3);
  await assertOneActive();
  await remove(2);
  await assertOneActive();
});

test('a name is trimmed before it is stored', async () => {
  await create('  padded name \t\n');
  assert.deepEqual(await ok('/api/v1/sessions/2'), s(2, 'padded name', true));
});

test('a name of 255 characters after trimming is accepted', async () => {
  const name = 'n'.repeat(255);
  await create(`  ${name}  `);
  assert.deepEqual(await ok('/api/v1/sessions/2'), s(2, name, true));
});

test('a name of 255 astral code points is accepted (characters, not UTF-16 units)', async () => {
  const name = '😀'.repeat(255);
  await create(name);
  assert.deepEqual(await ok('/api/v1/sessions/2'), s(2, name, true));
});

test('a name of 256 characters is 400 Incorrect query parameters and creates nothing', async () => {
  assertFail(await call('/api/v1/sessions/', { method: 'POST', form: { name: 'n'.repeat(256) } }), 400, MESSAGES.incorrectQueryParameters);
  assertFail(await call('/api/v1/sessions/', { method: 'POST', form: { name: '😀'.repeat(256) } }), 400, MESSAGES.incorrectQueryParameters);
  assert.deepEqual(await sessions(), [s(1, 'default session', true)]);
});

test('an empty or white-space-only name is 400 Incorrect query parameters', async () => {
  for (const name of ['', ' ', '\t\n  ']) {
    assertFail(await call('/api/v1/sessions/', { method: 'POST', form: { name } }), 400, MESSAGES.incorrectQueryParameters);
  }
  assertFail(await call('/api/v1/sessions/', { method: 'POST' }), 400, MESSAGES.incorrectQueryParameters);
  assert.deepEqual(await sessions(), [s(1, 'default session', true)]);
});

test('a duplicate exact name is 409 and changes nothing, not even which session is active', async () => {
  await create('dup');
  await activate(1);
  const res = await call('/api/v1/sessions/', { method: 'POST', form: { name: 'dup' } });
  assertFail(res, 409, MESSAGES.dbError);
  assert.deepEqual(await sessions(), [s(1, 'default session', true), s(2, 'dup')]);
});

test('a name that differs only in case is a different name', async () => {
  await create('Dup');
  await create('dup');
  await create('DUP');
  assert.deepEqual((await sessions()).map((x: { name: string }) => x.name), ['default session', 'Dup', 'dup', 'DUP']);
});

test('a name freed by a delete can be used again, with a new id', async () => {
  await create('again');
  await remove(2);
  await create('again');
  assert.deepEqual(await sessions(), [s(1, 'default session'), s(3, 'again', true)]);
});

test('the name may come from the query string', async () => {
  assert.deepEqual(await ok('/api/v1/sessions/?name=from%20query', { method: 'POST' }, 201), {});
  assert.deepEqual(await ok('/api/v1/sessions/2'), s(2, 'from query', true));
});

test('a name keeps its UTF-8 and "+" decodes to a space', async () => {
  await ok('/api/v1/sessions/', { method: 'POST', body: 'name=caf%C3%A9+%E2%9C%93', headers: { 'content-type': 'application/x-www-form-urlencoded' } }, 201);
  assert.deepEqual(await ok('/api/v1/sessions/2'), s(2, 'café ✓', true));
});

for (const [value, expected] of [
  ['true', [2]],
  ['1', [2]],
  ['yes', [2]],
  ['false', [1, 3]],
  ['0', [1, 3]],
  ['no', [1, 3]],
] as const) {
  test(`GET ?active=${value} lists the sessions whose active is ${expected.length === 1}`, async () => {
    await create('two');
    await create('three');
    await activate(2);
    const list = await ok(`/api/v1/sessions/?active=${value}`);
    assert.deepEqual(list.map((x: { id: number }) => x.id), expected);
  });
}

test('GET ?active=maybe is 400 Invalid parameter type provided', async () => {
  assertFail(await call('/api/v1/sessions/?active=maybe'), 400, MESSAGES.invalidParameterType);
  assertFail(await call('/api/v1/sessions/?active='), 400, MESSAGES.invalidParameterType);
});

test('GET of one session says whether it is active', async () => {
  await create('two');
  assert.deepEqual(await ok('/api/v1/sessions/1'), s(1, 'default session', false));
  assert.deepEqual(await ok('/api/v1/sessions/2'), s(2, 'two', true));
});

test('GET of an unknown session is 400 Invalid session id provided', async () => {
  assertFail(await call('/api/v1/sessions/2'), 400, MESSAGES.invalidSessionId);
  assertFail(await call('/api/v1/sessions/0'), 400, MESSAGES.invalidSessionId);
});

test('GET with an action is 400 Action must be None', async () => {
  assertFail(await call('/api/v1/sessions/1/activate'), 400, MESSAGES.actionMustBeNone);
  assertFail(await call('/api/v1/sessions/1/frobnicate'), 400, MESSAGES.actionMustBeNone);
});

test('PATCH activate makes that session the only active one; activating the active one is a no-op', async () => {
  await create('two');
  assert.deepEqual(await activate(1), {});
  assert.deepEqual(await sessions(), [s(1, 'default session', true), s(2, 'two')]);
  assert.deepEqual(await activate(1), {});
  assert.deepEqual(await sessions(), [s(1, 'default session', true), s(2, 'two')]);
});

test('PATCH add attaches an existing target to the session', async () => {
  await addTarget('http://a.example/');
  await create('two');
  assert.deepEqual(await ok('/api/v1/sessions/2/add', { method: 'PATCH', form: { target_id: '1' } }), {});
  assert.deepEqual(await targetIds(2), [1]);
  assert.deepEqual(await targetIds(1), [1]);
});

test('PATCH add of a target already in the session is a no-op success', async () => {
  await addTarget('http://a.example/');
  assert.deepEqual(await ok('/api/v1/sessions/1/add', { method: 'PATCH', form: { target_id: '1' } }), {});
  assert.deepEqual(await targetIds(1), [1]);
});

test('PATCH add takes target_id from the query string too', async () => {
  await addTarget('http://a.example/');
  await create('two');
  await ok('/api/v1/sessions/2/add?target_id=1', { method: 'PATCH' });
  assert.deepEqual(await targetIds(2), [1]);
});

test('PATCH add with an unknown or non-integer target_id is 400 Invalid target reference provided and attaches nothing', async () => {
  await addTarget('http://a.example/');
  await create('two');
  for (const targetId of ['2', 'abc', '-1', '1.0', '1e0', '0x1']) {
    assertFail(await call('/api/v1/sessions/2/add', { method: 'PATCH', form: { target_id: targetId } }), 400, MESSAGES.invalidTargetReference);
  }
  assert.deepEqual(await targetIds(2), []);
});

test('PATCH add/remove without or with an empty target_id is 400 Incorrect query parameters', async () => {
  for (const action of ['add', 'remove']) {
    assertFail(await call(`/api/v1/sessions/1/${action}`, { method: 'PATCH' }), 400, MESSAGES.incorrectQueryParameters);
    assertFail(await call(`/api/v1/sessions/1/${action}`, { method: 'PATCH', form: { target_id: '' } }), 400, MESSAGES.incorrectQueryParameters);
  }
});

test('PATCH remove detaches a target that stays in another session', async () => {
  await addTarget('http://a.example/');
  await create('two');
  await ok('/api/v1/sessions/2/add', { method: 'PATCH', form: { target_id: '1' } });
  assert.deepEqual(await ok('/api/v1/sessions/1/remove', { method: 'PATCH', form: { target_id: '1' } }), {});
  assert.deepEqual(await targetIds(1), []);
  assert.deepEqual(await targetIds(2), [1]);
  assert.equal((await ok('/api/v1/targets/1')).id, 1);
});

test('PATCH remove that leaves a target in no session deletes the target', async () => {
  await addTarget('http://a.example/');
  await ok('/api/v1/sessions/1/remove', { method: 'PATCH', form: { target_id: '1' } });
  assert.deepEqual(await targetIds(1), []);
  assertFail(await call('/api/v1/targets/1'), 400, MESSAGES.invalidTargetReference);
});

test('PATCH remove of a target not attached to that session is 400 Invalid target reference provided', async () => {
  await addTarget('http://a.example/');
  await create('two');
  assertFail(await call('/api/v1/sessions/2/remove', { method: 'PATCH', form: { target_id: '1' } }), 400, MESSAGES.invalidTargetReference);
  assert.deepEqual(await targetIds(1), [1]);
});

test('PATCH with a known action on an unknown session is 400 Invalid parameter type provided', async () => {
  await addTarget('http://a.example/');
  for (const [action, form] of [['activate', undefined], ['add', { target_id: '1' }], ['remove', { target_id: '1' }]] as const) {
    assertFail(await call(`/api/v1/sessions/9/${action}`, { method: 'PATCH', form }), 400, MESSAGES.invalidParameterType);
  }
  assert.deepEqual(await sessions(), [s(1, 'default session', true)]);
});

test('PATCH with no action or an unknown action is 200 {} and changes nothing, even for an unknown session', async () => {
  await addTarget('http://a.example/');
  await create('two');
  const before = [await sessions(), await targetIds(1), await targetIds(2)];
  for (const path of ['/api/v1/sessions/1', '/api/v1/sessions/1/frobnicate', '/api/v1/sessions/99/frobnicate', '/api/v1/sessions/99', '/api/v1/sessions/1/Activate']) {
    assert.deepEqual(await ok(path, { method: 'PATCH', form: { target_id: '1', name: 'renamed' } }), {}, path);
  }
  assert.deepEqual([await sessions(), await targetIds(1), await targetIds(2)], before);
});

test('PATCH without a session id is 400 Incorrect query parameters', async () => {
  assertFail(await call('/api/v1/sessions/', { method: 'PATCH' }), 400, MESSAGES.incorrectQueryParameters);
  assertFail(await call('/api/v1/sessions/activate', { method: 'PATCH' }), 400, MESSAGES.incorrectQueryParameters);
});

test('DELETE of an unknown session is 400 Invalid session id provided and changes nothing', async () => {
  assertFail(await call('/api/v1/sessions/5', { method: 'DELETE' }), 400, MESSAGES.invalidSessionId);
  assert.deepEqual(await sessions(), [s(1, 'default session', true)]);
});

test('DELETE without a session id or with an action is 400 Incorrect query parameters and deletes nothing', async () => {
  assertFail(await call('/api/v1/sessions/', { method: 'DELETE' }), 400, MESSAGES.incorrectQueryParameters);
  assertFail(await call('/api/v1/sessions', { method: 'DELETE' }), 400, MESSAGES.incorrectQueryParameters);
  assertFail(await call('/api/v1/sessions/1/activate', { method: 'DELETE' }), 400, MESSAGES.incorrectQueryParameters);
  assert.deepEqual(await sessions(), [s(1, 'default session', true)]);
});

test('deleting a session deletes its targets that are in no other session and keeps the shared ones', async () => {
  await create('two');
  await addTarget('http://only.example/');
  await addTarget('http://shared.example/');
  await ok('/api/v1/sessions/1/add', { method: 'PATCH', form: { target_id: '2' } });
  await remove(2);
  assertFail(await call('/api/v1/targets/1'), 400, MESSAGES.invalidTargetReference);
  assert.equal((await ok('/api/v1/targets/2')).target_url, 'http://shared.example/');
  assert.deepEqual(await targetIds(1), [2]);
});

test('deleting the last session also deletes its targets', async () => {
  await addTarget('http://a.example/');
  await remove(1);
  assert.deepEqual(await targetIds(2), []);
  assertFail(await call('/api/v1/targets/1'), 400, MESSAGES.invalidTargetReference);
});

test('PUT is 405 Method not allowed with an Allow header', async () => {
  for (const path of ['/api/v1/sessions/', '/api/v1/sessions/1', '/api/v1/sessions/1/activate']) {
    const res = await call(path, { method: 'PUT', form: { name: 'x' } });
    assertFail(res, 405, 'Method not allowed');
    const allow = String(res.headers.allow).split(',').map((m) => m.trim());
    for (const m of ['GET', 'POST', 'PATCH', 'DELETE']) assert.ok(allow.includes(m), `${path} Allow: ${res.headers.allow}`);
    assert.ok(!allow.includes('PUT'));
  }
  assert.deepEqual(await sessions(), [s(1, 'default session', true)]);
});
