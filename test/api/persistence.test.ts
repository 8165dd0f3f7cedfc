import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request, startServer, type TestServer } from '../helpers/server.ts';

/** Everything a client can read, for before/after comparisons. */
async function snapshot(server: TestServer) {
  const sessions = (await request(server.url, '/api/v1/sessions/')).json.data as { id: number }[];
  const targets: Record<number, unknown> = {};
  for (const s of sessions) targets[s.id] = (await request(server.url, `/api/v1/targets/?session_id=${s.id}`)).json.data;
  const configuration = (await request(server.url, '/api/v1/configuration')).json.data;
  return { sessions, targets, configuration };
}

test('a restart on the same data dir serves exactly the same state, and keeps counting ids', async () => {
  let server = await startServer();
  const { url } = server;
  assert.equal((await request(url, '/api/v1/sessions/', { method: 'POST', form: { name: 'alpha' } })).status, 201);
  assert.equal((await request(url, '/api/v1/targets/', { method: 'POST', form: { target_url: ['http://a.example/', 'https://10.1.1.1:8443/x'] } })).status, 201);
  assert.equal((await request(url, '/api/v1/sessions/', { method: 'POST', form: { name: 'beta' } })).status, 201);
  assert.equal((await request(url, '/api/v1/sessions/3/add', { method: 'PATCH', form: { target_id: '1' } })).status, 200);
  assert.equal((await request(url, '/api/v1/sessions/', { method: 'POST', form: { name: 'gamma' } })).status, 201);
  assert.equal((await request(url, '/api/v1/sessions/4', { method: 'DELETE' })).status, 200);
  assert.equal((await request(url, '/api/v1/configuration/', { method: 'PATCH', form: { THREADS: '8' } })).status, 200);
  const before = await snapshot(server);
  await server.stop();

  server = await startServer({ dataDir: server.dataDir });
  try {
    assert.deepEqual(await snapshot(server), before);
    assert.equal((await request(server.url, '/api/v1/sessions/', { method: 'POST', form: { name: 'delta' } })).status, 201);
    const ids = (await request(server.url, '/api/v1/sessions/')).json.data.map((s: { id: number }) => s.id);
    assert.deepEqual(ids, [1, 2, 3, 5], 'id 4 was deleted and is never reused');
  } finally {
    await server.close();
  }
});

test('100 concurrent creates with distinct names: all 201, all present after a restart', async () => {
  let server = await startServer();
  const names = Array.from({ length: 100 }, (_, i) => `parallel ${i}`);
  const statuses = await Promise.all(
    names.map((name) => request(server.url, '/api/v1/sessions/', { method: 'POST', form: { name } }).then((r) => r.status)),
  );
  assert.deepEqual(statuses, names.map(() => 201));
  await server.stop();
  server = await startServer({ dataDir: server.dataDir });
  try {
    const sessions = (await request(server.url, '/api/v1/sessions/')).json.data as { id: number; name: string; active: boolean }[];
    assert.equal(sessions.length, 101);
    assert.deepEqual(new Set(sessions.map((s) => s.name)), new Set(['default session', ...names]));
    assert.equal(sessions.filter((s) => s.active).length, 1);
    assert.deepEqual(sessions.map((s) => s.id), [...sessions.map((s) => s.id)].sort((a, b) => a - b));
  } finally {
    await server.close();
  }
});

test('25 concurrent creates of one name: exactly one 201, the rest 409', async () => {
  const server = await startServer();
  try {
    const responses = await Promise.all(
      Array.from({ length: 25 }, () => request(server.url, '/api/v1/sessions/', { method: 'POST', form: { name: 'same' } })),
    );
    const statuses = responses.map((r) => r.status).sort();
    assert.deepEqual(statuses, [201, ...Array(24).fill(409)]);
    for (const r of responses.filter((r) => r.status === 409)) {
      assert.equal(r.json.message, 'An unknown exception occurred when performing a DB operation');
    }
    const named = (await request(server.url, '/api/v1/sessions/')).json.data.filter((s: { name: string }) => s.name === 'same');
    assert.equal(named.length, 1);
  } finally {
    await server.close();
  }
});

test('concurrent configuration patches and session creates all land', async () => {
  let server = await startServer();
  const writes = [
    ...Array.from({ length: 20 }, (_, i) => request(server.url, '/api/v1/configuration/', { method: 'PATCH', form: { [i % 2 ? 'THREADS' : 'SMTP_PORT']: String(i) } })),
    ...Array.from({ length: 20 }, (_, i) => request(server.url, '/api/v1/sessions/', { method: 'POST', form: { name: `mix ${i}` } })),
  ];
  assert.ok((await Promise.all(writes)).every((r) => r.status === 200 || r.status === 201));
  await server.stop();
  server = await startServer({ dataDir: server.dataDir });
  try {
    const dirty = (await request(server.url, '/api/v1/configuration?dirty=true')).json.data.map((i: { key: string }) => i.key);
    assert.deepEqual(dirty, ['SMTP_PORT', 'THREADS']);
    assert.equal((await request(server.url, '/api/v1/sessions/')).json.data.length, 21);
  } finally {
    await server.close();
  }
});
