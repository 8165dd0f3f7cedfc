/** POST /api/v1/targets/bulk: a partial add with a verdict per line; delete, attach, detach by ids or by search; one durable write each. */
import { afterEach, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { MESSAGES } from '../../src/api/messages.ts';
import { assertFail, assertSuccess } from '../helpers/jsend.ts';
import { request, startServer, type RequestOptions, type TestServer } from '../helpers/server.ts';

let server: TestServer;
beforeEach(async () => (server = await startServer()));
afterEach(() => server.close());

type Form = [string, string][];
const call = (path: string, options: RequestOptions = {}) => request(server.url, path, options);
const ok = async (path: string, options: RequestOptions = {}, status = 200) => assertSuccess(await call(path, options), status, `${options.method ?? 'GET'} ${path}`);
const bulk = (form: Form) => call('/api/v1/targets/bulk', { method: 'POST', form });
const bulkOk = async (form: Form) => assertSuccess(await bulk(form), 200, JSON.stringify(form));
const urlsOf = (urls: string[]): Form => urls.map((u) => ['target_url', u]);
const idsOf = (ids: (number | string)[]): Form => ids.map((id) => ['target_id', String(id)]);
const ids = async (sessionId: number) => ((await ok(`/api/v1/targets/?session_id=${sessionId}`)) as { id: number }[]).map((t) => t.id);
const newSession = (name: string) => ok('/api/v1/sessions/', { method: 'POST', form: { name } }, 201);
const batches = async () => (await ok('/debug/stats')).store.batches as number;

test('add creates the good lines, attaches them to the active session, and says why each other line was refused', async () => {
  const data = await bulkOk([['action', 'add'], ...urlsOf(['http://a.example/', 'not a url', ' http://b.example/ ', 'http://a.example/', 'ftp://c.example/'])]);
  assert.deepEqual(data, {
    session_id: 1,
    added: 2,
    created: 2,
    failed: [
      { index: 1, target_url: 'not a url', reason: 'invalid URL' },
      { index: 3, target_url: 'http://a.example/', reason: 'repeated in the request' },
      { index: 4, target_url: 'ftp://c.example/', reason: 'invalid URL' },
    ],
  });
  assert.deepEqual(await ids(1), [2, 1]);
  const again = await bulkOk([['action', 'add'], ...urlsOf(['http://b.example/', 'http://d.example/'])]);
  assert.deepEqual(again, { session_id: 1, added: 1, created: 1, failed: [{ index: 0, target_url: 'http://b.example/', reason: 'already in the session' }] });
});

test('add with session_id adds to that session, active or not; a URL of another session is attached, not created', async () => {
  await bulkOk([['action', 'add'], ...urlsOf(['http://a.example/'])]);
  await newSession('two');
  await ok('/api/v1/sessions/1/activate', { method: 'PATCH' });
  const data = await bulkOk([['action', 'add'], ['session_id', '2'], ...urlsOf(['http://a.example/', 'http://new.example/'])]);
  assert.deepEqual(data, { session_id: 2, added: 2, created: 1, failed: [] });
  assert.deepEqual(await ids(2), [2, 1]);
  assert.deepEqual(await ids(1), [1]);
  assert.equal((await ok('/api/v1/sessions/?active=true'))[0].id, 1, 'the active session stays the active one');
});

test('add refuses, changing nothing: no target_url, a bad or unknown session_id', async () => {
  const before = await batches();
  assertFail(await bulk([['action', 'add']]), 400, MESSAGES.incorrectQueryParameters);
  assertFail(await bulk([['action', 'add'], ['session_id', 'x'], ...urlsOf(['http://a.example/'])]), 400, MESSAGES.invalidParameterType);
  assertFail(await bulk([['action', 'add'], ['session_id', '9'], ...urlsOf(['http://a.example/'])]), 400, MESSAGES.invalidSessionId);
  assert.deepEqual(await ids(1), []);
  assert.equal(await batches(), before, 'no write');
});

test('delete by ids deletes them from every session and reports the ids that name no target', async () => {
  await bulkOk([['action', 'add'], ...urlsOf(['http://a.example/', 'http://b.example/', 'http://c.example/'])]);
  await newSession('two');
  await ok('/api/v1/sessions/2/add', { method: 'PATCH', form: { target_id: '1' } });
  const data = await bulkOk([['action', 'delete'], ...idsOf([1, 3, 3, 42])]);
  assert.deepEqual(data, { matched: 2, changed: 2, deleted: 2, missing: [42] });
  assert.deepEqual(await ids(1), [2]);
  assert.deepEqual(await ids(2), []);
  assertFail(await call('/api/v1/targets/1'), 400, MESSAGES.invalidTargetReference);
});

test('attach by ids counts only the targets not already there', async () => {
  await bulkOk([['action', 'add'], ...urlsOf(['http://a.example/', 'http://b.example/', 'http://c.example/'])]);
  await newSession('two');
  await ok('/api/v1/sessions/2/add', { method: 'PATCH', form: { target_id: '1' } });
  const data = await bulkOk([['action', 'attach'], ['session_id', '2'], ...idsOf([1, 2, 7])]);
  assert.deepEqual(data, { matched: 2, changed: 1, deleted: 0, missing: [7] });
  assert.deepEqual(await ids(2), [2, 1]);
});

test('detach by ids: a target left in no session is deleted, one still in another session stays', async () => {
  await bulkOk([['action', 'add'], ...urlsOf(['http://a.example/', 'http://b.example/', 'http://c.example/'])]);
  await newSession('two');
  await ok('/api/v1/sessions/2/add', { method: 'PATCH', form: { target_id: '1' } });
  const data = await bulkOk([['action', 'detach'], ['session_id', '1'], ...idsOf([1, 2])]);
  assert.deepEqual(data, { matched: 2, changed: 2, deleted: 1, missing: [] });
  assert.deepEqual(await ids(1), [3]);
  assert.deepEqual(await ids(2), [1]);
  assertFail(await call('/api/v1/targets/2'), 400, MESSAGES.invalidTargetReference);
  const none = await bulkOk([['action', 'detach'], ['session_id', '1'], ...idsOf([1])]);
  assert.deepEqual(none, { matched: 1, changed: 0, deleted: 0, missing: [] }, 'target 1 is not in session 1 any more');
});

test('a selection by filter_session_id and q takes every matching target of that session, however many', async () => {
  await bulkOk([['action', 'add'], ...urlsOf(['http://a.example/', 'http://10.0.0.1/', 'http://10.0.0.2/', 'http://B.example/'])]);
  await newSession('two');
  const attached = await bulkOk([['action', 'attach'], ['session_id', '2'], ['filter_session_id', '1'], ['q', 'example']]);
  assert.deepEqual(attached, { matched: 2, changed: 2, deleted: 0, missing: [] });
  assert.deepEqual(await ids(2), [4, 1]);
  const detached = await bulkOk([['action', 'detach'], ['session_id', '1'], ['filter_session_id', '1']]);
  assert.deepEqual(detached, { matched: 4, changed: 4, deleted: 2, missing: [] });
  assert.deepEqual(await ids(1), []);
  assert.deepEqual(await ids(2), [4, 1]);
  const deleted = await bulkOk([['action', 'delete'], ['filter_session_id', '2'], ['q', 'A.EXAMPLE']]);
  assert.deepEqual(deleted, { matched: 1, changed: 1, deleted: 1, missing: [] });
  assert.deepEqual(await ids(2), [4]);
});

test('each refusal is a 400 with the contract\'s message, and changes nothing', async () => {
  await bulkOk([['action', 'add'], ...urlsOf(['http://a.example/'])]);
  const before = await batches();
  const cases: [Form, string, string][] = [
    [[], MESSAGES.incorrectQueryParameters, 'action'],
    [[['action', 'purge'], ...idsOf([1])], MESSAGES.incorrectQueryParameters, 'action'],
    [[['action', 'DELETE'], ...idsOf([1])], MESSAGES.incorrectQueryParameters, 'action'],
    [[['action', 'delete']], MESSAGES.incorrectQueryParameters, 'target_id'],
    [[['action', 'delete'], ...idsOf([1]), ['filter_session_id', '1']], MESSAGES.incorrectQueryParameters, 'target_id'],
    [[['action', 'attach'], ...idsOf([1])], MESSAGES.incorrectQueryParameters, 'session_id'],
    [[['action', 'detach'], ['filter_session_id', '1']], MESSAGES.incorrectQueryParameters, 'session_id'],
    [[['action', 'delete'], ...idsOf(['x'])], MESSAGES.invalidParameterType, 'target_id'],
    [[['action', 'delete'], ...idsOf([1, '-2'])], MESSAGES.invalidParameterType, 'target_id'],
    [[['action', 'delete'], ['filter_session_id', '1.5']], MESSAGES.invalidParameterType, 'filter_session_id'],
    [[['action', 'attach'], ['session_id', 'two'], ...idsOf([1])], MESSAGES.invalidParameterType, 'session_id'],
    [[['action', 'attach'], ['session_id', '9'], ...idsOf([1])], MESSAGES.invalidSessionId, ''],
    [[['action', 'detach'], ['session_id', '1'], ['filter_session_id', '9']], MESSAGES.invalidSessionId, ''],
    [[['action', 'delete'], ['filter_session_id', '9']], MESSAGES.invalidSessionId, ''],
  ];
  for (const [form, message, key] of cases) {
    const body = assertFail(await bulk(form), 400, message, JSON.stringify(form));
    assert.deepEqual(Object.keys(body.data ?? {}), key ? [key] : [], JSON.stringify(form));
  }
  assert.deepEqual(await ids(1), [1]);
  assert.equal(await batches(), before, 'no write');
});

test('only POST: other methods are 405 with Allow: POST', async () => {
  for (const method of ['GET', 'PUT', 'DELETE', 'PATCH']) {
    const res = await call('/api/v1/targets/bulk', { method });
    assertFail(res, 405, 'Method not allowed', method);
    assert.deepEqual(String(res.headers.allow).split(',').map((m) => m.trim()), ['POST'], method);
  }
  assertSuccess(await call('/api/v1/targets/bulk/', { method: 'POST', form: { action: 'add', target_url: 'http://a.example/' } }));
});

test('a JSON body is 415, and changes nothing', async () => {
  assertFail(await call('/api/v1/targets/bulk', { method: 'POST', body: '{"action":"add"}', headers: { 'content-type': 'application/json' } }), 415);
  assert.deepEqual(await ids(1), []);
});

test('each bulk change is one durable write (one journal batch), whatever its size', async () => {
  const urls = Array.from({ length: 3000 }, (_, i) => `http://h${i}.example/`);
  let before = await batches();
  await bulkOk([['action', 'add'], ...urlsOf(urls)]);
  assert.equal(await batches(), before + 1);
  await newSession('two');
  before = await batches();
  assert.deepEqual(await bulkOk([['action', 'attach'], ['session_id', '2'], ['filter_session_id', '1']]), { matched: 3000, changed: 3000, deleted: 0, missing: [] });
  assert.equal(await batches(), before + 1);
  before = await batches();
  assert.equal((await bulkOk([['action', 'detach'], ['session_id', '2'], ...idsOf(Array.from({ length: 1500 }, (_, i) => i + 1))])).changed, 1500);
  assert.equal(await batches(), before + 1);
});

test('bulk changes survive a restart (the journal replays them exactly)', async () => {
  await bulkOk([['action', 'add'], ...urlsOf(['http://a.example/', 'bad', 'http://10.0.0.1/', 'http://10.0.0.2/', 'http://b.example/'])]);
  await newSession('two');
  await bulkOk([['action', 'attach'], ['session_id', '2'], ['filter_session_id', '1'], ['q', '10.0']]);
  await bulkOk([['action', 'detach'], ['session_id', '1'], ...idsOf([2, 4])]);
  await bulkOk([['action', 'add'], ['session_id', '1'], ...urlsOf(['http://c.example/'])]);
  await bulkOk([['action', 'delete'], ['filter_session_id', '1'], ['q', 'a.example']]);
  const snapshot = async () => ({
    overview: await ok('/api/v1/overview/sessions'),
    one: await ok('/api/v1/targets/?session_id=1&include=sessions'),
    two: await ok('/api/v1/targets/?session_id=2&include=sessions'),
  });
  const before = await snapshot();
  assert.deepEqual(before.one.map((t: { target_url: string }) => t.target_url), ['http://c.example/', 'http://10.0.0.2/']);
  assert.deepEqual(before.two.map((t: { target_url: string }) => t.target_url), ['http://10.0.0.2/', 'http://10.0.0.1/']);
  await server.stop();
  server = await startServer({ dataDir: server.dataDir });
  assert.deepEqual(await snapshot(), before);
  const next = await bulkOk([['action', 'add'], ...urlsOf(['http://d.example/'])]);
  assert.equal(next.created, 1);
  assert.deepEqual((await ok('/api/v1/targets/?session_id=2&limit=1'))[0].id, 6, 'target ids keep counting after the replay');
});
