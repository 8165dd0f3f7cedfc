/**
 * The engine's routes and the conventions: every path also answers with one trailing slash (and
 * without it), percent-decoded segments, 405 with Allow for a method a known path does not take,
 * the JSend envelope and content type on every answer.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { HTTP_MESSAGES as H, MESSAGES as M } from '../../src/api/messages.ts';
import { addTarget, assertFail, assertSuccess, get, queue, send, waitForOutput } from '../helpers/engine.ts';
import { request, startServer, type TestServer } from '../helpers/server.ts';

describe('the engine\'s routes', () => {
  let server: TestServer;
  let workId: number;
  before(async () => {
    server = await startServer({ workers: 1 });
    const id = await addTarget(server, 'http://a.example/');
    await queue(server, { id: String(id), type: 'external', code: 'OWTF-IG-001' });
    await waitForOutput(server, id, 'external@OWTF-IG-001', ['Successful']);
    await send(server, 'PATCH', '/api/v1/workers/0/pause');
    await queue(server, { id: String(id), type: 'external', code: 'OWTF-IG-002' });
    workId = (await get(server, '/api/v1/worklist/'))[0].id;
  });
  after(() => server.close());

  const paths = () => [
    '/api/v1/plugins',
    '/api/v1/plugins/web',
    '/api/v1/plugins/web/external',
    '/api/v1/plugins/web/external/OWTF-IG-001',
    '/api/v1/plugins/progress',
    '/api/v1/worklist',
    `/api/v1/worklist/${workId}`,
    '/api/v1/worklist/search',
    '/api/v1/workers',
    '/api/v1/workers/1',
    '/api/v1/targets/1/poutput',
    '/api/v1/targets/1/poutput/web/external',
    '/api/v1/targets/1/poutput/names',
    '/api/v1/dashboard/severitypanel',
    '/api/v1/errors',
  ];

  test('every GET path answers the same with and without one trailing slash', async () => {
    for (const path of paths()) {
      const bare = assertSuccess(await send(server, 'GET', path), 200, path);
      const slashed = assertSuccess(await send(server, 'GET', `${path}/`), 200, `${path}/`);
      assert.deepEqual(slashed, bare, `${path}/ answers as ${path}`);
    }
  });

  test('GET /plugins/progress/ is the progress, not a plugin group named "progress"', async () => {
    assert.deepEqual(await get(server, '/api/v1/plugins/progress/'), { complete_count: 1, left_count: 1 });
  });

  test('GET /targets/1/poutput/names/ is the names, not a group named "names"', async () => {
    const names = await get(server, '/api/v1/targets/1/poutput/names/');
    assert.deepEqual(Object.keys(names), ['OWTF-IG-001']);
  });

  test('path segments are percent-decoded once', async () => {
    assert.equal((await get(server, '/api/v1/plugins/web/external/OWTF%2DIG%2D001')).key, 'external@OWTF-IG-001');
    assert.equal((await get(server, '/api/v1/plugins/%77eb/external/OWTF-IG-001')).key, 'external@OWTF-IG-001');
  });

  test('a target id that is not an unsigned integer does not match: 404 Not found', async () => {
    for (const path of ['/api/v1/targets/abc/poutput/', '/api/v1/targets/-1/poutput/', '/api/v1/targets/1.5/poutput/names']) {
      assertFail(await send(server, 'GET', path), 404, H.notFound, path);
    }
  });

  for (const path of ['/api/v1/plugins/web/external/OWTF-IG-001/extra', '/api/v1/targets/1/poutput/web/external/OWTF-IG-001/extra']) {
    test(`GET ${path} (a segment past <code>) is an unknown path: 404 Not found`, async () => {
      assertFail(await send(server, 'GET', path), 404, H.notFound, path);
    });
  }

  test('DELETE of a poutput path with a segment past <code> deletes nothing: 404 Not found', async () => {
    const before = await get(server, '/api/v1/targets/1/poutput/');
    assert.equal(before.length, 1);
    assertFail(await send(server, 'DELETE', '/api/v1/targets/1/poutput/web/external/OWTF-IG-001/extra'), 404, H.notFound);
    assert.deepEqual(await get(server, '/api/v1/targets/1/poutput/'), before);
  });

  const notAllowed: { method: string; path: string; allow: string[] }[] = [
    { method: 'PUT', path: '/api/v1/plugins/', allow: ['GET'] },
    { method: 'POST', path: '/api/v1/plugins/', allow: ['GET'] },
    { method: 'DELETE', path: '/api/v1/plugins/web/external/OWTF-IG-001', allow: ['GET'] },
    { method: 'POST', path: '/api/v1/plugins/progress', allow: ['GET'] },
    { method: 'PUT', path: '/api/v1/worklist/', allow: ['GET', 'POST', 'PATCH', 'DELETE'] },
    { method: 'PUT', path: '/api/v1/workers/', allow: ['GET', 'POST', 'PATCH', 'DELETE'] },
    { method: 'POST', path: '/api/v1/dashboard/severitypanel', allow: ['GET'] },
    { method: 'POST', path: '/api/v1/errors/', allow: ['GET'] },
    { method: 'PUT', path: '/api/v1/errors/1', allow: ['GET', 'PATCH', 'DELETE'] },
    { method: 'POST', path: '/api/v1/targets/1/poutput/', allow: ['GET', 'PATCH', 'DELETE'] },
  ];
  for (const { method, path, allow } of notAllowed) {
    test(`${method} ${path} is 405 Method not allowed with Allow listing ${allow.join(', ')}`, async () => {
      const res = await send(server, method, path, method === 'GET' ? undefined : {});
      assertFail(res, 405, H.methodNotAllowed);
      const listed = String(res.headers.allow ?? '').split(',').map((m) => m.trim()).filter((m) => m && m !== 'HEAD');
      assert.deepEqual(listed.sort(), [...allow].sort(), String(res.headers.allow));
    });
  }

  test('a body of another content type on POST /worklist/ is 415 (or 400), nothing queued', async () => {
    const before = await get(server, '/api/v1/worklist/');
    const json = await request(server.url, '/api/v1/worklist/', { method: 'POST', body: JSON.stringify({ id: '1', code: 'OWTF-IG-003' }), headers: { 'content-type': 'application/json' } });
    assert.ok(json.status === 415 || json.status === 400, json.text);
    assert.equal(json.json.status, 'fail');
    assert.deepEqual(await get(server, '/api/v1/worklist/'), before);
  });

  test('GET /worklist/?active=maybe is 400 Invalid parameter type provided', async () => {
    assertFail(await send(server, 'GET', '/api/v1/worklist/?active=maybe'), 400, M.invalidParameterType);
  });
});
