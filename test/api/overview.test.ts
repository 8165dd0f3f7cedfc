/** GET /api/v1/overview/sessions: every session with its target count in one request, filtered by name. */
import { afterEach, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { assertFail, assertSuccess } from '../helpers/jsend.ts';
import { request, startServer, type RequestOptions, type TestServer } from '../helpers/server.ts';

let server: TestServer;
beforeEach(async () => (server = await startServer()));
afterEach(() => server.close());

const call = (path: string, options: RequestOptions = {}) => request(server.url, path, options);
const ok = async (path: string, options: RequestOptions = {}, status = 200) => assertSuccess(await call(path, options), status, `${options.method ?? 'GET'} ${path}`);
const newSession = (name: string) => ok('/api/v1/sessions/', { method: 'POST', form: { name } }, 201);

test('a fresh server: the default session, active, with no target', async () => {
  assert.deepEqual(await ok('/api/v1/overview/sessions'), [{ id: 1, name: 'default session', active: true, target_count: 0 }]);
});

test('every session in id order, the active one flagged, each with its target count', async () => {
  await ok('/api/v1/targets/', { method: 'POST', form: { target_url: ['http://a.example/', 'http://b.example/'] } }, 201);
  await newSession('Acme retest');
  await ok('/api/v1/sessions/2/add', { method: 'PATCH', form: { target_id: '1' } });
  await newSession('globex');
  assert.deepEqual(await ok('/api/v1/overview/sessions/'), [
    { id: 1, name: 'default session', active: false, target_count: 2 },
    { id: 2, name: 'Acme retest', active: false, target_count: 1 },
    { id: 3, name: 'globex', active: true, target_count: 0 },
  ]);
  await ok('/api/v1/targets/1', { method: 'DELETE' });
  assert.deepEqual((await ok('/api/v1/overview/sessions')).map((s: { target_count: number }) => s.target_count), [1, 0, 0], 'counts follow every change');
});

test('name keeps the sessions whose name holds it, ignoring case; empty keeps all', async () => {
  for (const name of ['Acme web', 'acme retest', 'Globex']) await newSession(name);
  const names = async (query: string) => (await ok(`/api/v1/overview/sessions${query}`)).map((s: { name: string }) => s.name);
  assert.deepEqual(await names('?name=ACME'), ['Acme web', 'acme retest']);
  assert.deepEqual(await names('?name=%20glo%20'), ['Globex']);
  assert.deepEqual(await names('?name=nothing'), []);
  assert.deepEqual(await names('?name='), ['default session', 'Acme web', 'acme retest', 'Globex']);
});

test('300 sessions with their counts come in one answer', async () => {
  for (let i = 0; i < 299; i++) await newSession(`client ${i}`);
  const all = await ok('/api/v1/overview/sessions');
  assert.equal(all.length, 300);
  assert.deepEqual(Object.keys(all[0]), ['id', 'name', 'active', 'target_count']);
  assert.deepEqual(all.filter((s: { active: boolean }) => s.active).map((s: { name: string }) => s.name), ['client 298']);
});

test('the upstream sessions list keeps exactly its three keys', async () => {
  await ok('/api/v1/targets/', { method: 'POST', form: { target_url: 'http://a.example/' } }, 201);
  const res = await call('/api/v1/sessions/');
  assert.equal(res.text, '{"status":"success","data":[{"id":1,"name":"default session","active":true}]}');
});

test('only GET (and HEAD): other methods are 405', async () => {
  const res = await call('/api/v1/overview/sessions', { method: 'POST', form: { name: 'x' } });
  assertFail(res, 405, 'Method not allowed');
  assert.equal(res.headers.allow, 'GET, HEAD');
  assertFail(await call('/api/v1/overview'), 404, 'Not found');
  assertFail(await call('/api/v1/overview/targets'), 404, 'Not found');
});
