import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { request, startServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
before(async () => (server = await startServer()));
after(() => server.close());

test('GET /debug/health is 200 {"status":"ok"} as JSON', async () => {
  for (const path of ['/debug/health', '/debug/health/']) {
    const res = await request(server.url, path);
    assert.equal(res.status, 200);
    assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
    assert.deepEqual(res.json, { status: 'success', data: { status: 'ok' } });
  }
});

test('HEAD /debug/health answers the GET headers without a body', async () => {
  const res = await request(server.url, '/debug/health', { method: 'HEAD' });
  assert.equal(res.status, 200);
  assert.equal(res.text, '');
  assert.equal(res.headers['content-length'], String('{"status":"success","data":{"status":"ok"}}'.length));
});

test('the health check has no version prefix: /api/v1/debug/health is a 404', async () => {
  const res = await request(server.url, '/api/v1/debug/health');
  assert.equal(res.status, 404);
  assert.deepEqual(res.json, { status: 'fail', message: 'Not found', code: 404 });
});
