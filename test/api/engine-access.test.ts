/**
 * Access control on the engine's routes: with a token every one needs it; a cross-origin write
 * (which could set a tool path and run it) is refused before anything changes; a foreign Host is
 * refused. Each refusal leaves the worklist, the workers and the configuration as they were.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { HTTP_MESSAGES as H } from '../../src/api/messages.ts';
import { addTarget, assertFail, get, ok, queue, waitForOutput, type Api } from '../helpers/engine.ts';
import { request, startServer, type TestServer } from '../helpers/server.ts';

const TOKEN = 'engine-access-token-0123456789abcdefghijkl';

interface Route {
  method: string;
  path: string;
  form?: Record<string, string>;
}

const ROUTES: Route[] = [
  { method: 'GET', path: '/api/v1/plugins/' },
  { method: 'GET', path: '/api/v1/plugins/web/external/OWTF-IG-001' },
  { method: 'GET', path: '/api/v1/plugins/progress' },
  { method: 'GET', path: '/api/v1/worklist/' },
  { method: 'GET', path: '/api/v1/worklist/search/' },
  { method: 'POST', path: '/api/v1/worklist/', form: { id: '1', type: 'external', code: 'OWTF-IG-002' } },
  { method: 'PATCH', path: '/api/v1/worklist/0/pause' },
  { method: 'DELETE', path: '/api/v1/worklist/0' },
  { method: 'GET', path: '/api/v1/workers/' },
  { method: 'POST', path: '/api/v1/workers/' },
  { method: 'PATCH', path: '/api/v1/workers/0/pause' },
  { method: 'PATCH', path: '/api/v1/workers/0/abort' },
  { method: 'DELETE', path: '/api/v1/workers/1' },
  { method: 'GET', path: '/api/v1/targets/1/poutput/' },
  { method: 'GET', path: '/api/v1/targets/1/poutput/names' },
  { method: 'PATCH', path: '/api/v1/targets/1/poutput/web/external/OWTF-IG-001', form: { user_rank: '5' } },
  { method: 'DELETE', path: '/api/v1/targets/1/poutput/' },
  { method: 'GET', path: '/api/v1/dashboard/severitypanel' },
  { method: 'GET', path: '/api/v1/errors/' },
  { method: 'PATCH', path: '/api/v1/configuration/', form: { TOOL_NMAP: '/tmp/evil' } },
];

const WRITES = ROUTES.filter((r) => r.method !== 'GET');

/** Everything a refused request must leave as it was. */
async function snapshot(api: Api): Promise<unknown> {
  return {
    worklist: await get(api, '/api/v1/worklist/'),
    workers: await get(api, '/api/v1/workers/'),
    outputs: await get(api, '/api/v1/targets/1/poutput/'),
    nmap: await get(api, '/api/v1/configuration?key=TOOL_NMAP'),
  };
}

describe('the engine\'s routes with a token', () => {
  let server: TestServer;
  let api: Api;
  let before_: unknown;
  before(async () => {
    server = await startServer({ workers: 1, token: TOKEN });
    api = { url: server.url, headers: { authorization: `Bearer ${TOKEN}` } };
    const id = await addTarget(api, 'http://a.example/');
    await queue(api, { id: String(id), type: 'external', code: 'OWTF-IG-001' });
    await waitForOutput(api, id, 'external@OWTF-IG-001', ['Successful']);
    await ok(api, 'PATCH', '/api/v1/workers/0/pause');
    await queue(api, { id: String(id), type: 'external', code: 'OWTF-IG-003' });
    before_ = await snapshot(api);
  });
  after(() => server.close());

  for (const route of ROUTES) {
    test(`${route.method} ${route.path} without the token is 401 Authentication required, nothing changes`, async () => {
      const res = await request(server.url, route.path, { method: route.method, form: route.form });
      assertFail(res, 401, 'Authentication required');
      assert.equal(res.headers['www-authenticate'], 'Bearer realm="assessd"');
      assert.deepEqual(await snapshot(api), before_);
    });
    test(`${route.method} ${route.path} with a wrong token is 401`, async () => {
      const res = await request(server.url, route.path, { method: route.method, form: route.form, headers: { authorization: `Bearer ${TOKEN}x` } });
      assertFail(res, 401, 'Authentication required');
      assert.deepEqual(await snapshot(api), before_);
    });
  }

  for (const route of WRITES) {
    for (const [name, headers] of [
      ['Origin of another site', { origin: 'http://evil.example' }],
      ['Origin null', { origin: 'null' }],
      ['Sec-Fetch-Site cross-site', { 'sec-fetch-site': 'cross-site' }],
    ] as const) {
      test(`${route.method} ${route.path} with ${name} is 403 Cross-origin request refused, nothing changes`, async () => {
        const res = await request(server.url, route.path, { method: route.method, form: route.form, headers: { authorization: `Bearer ${TOKEN}`, ...headers } });
        assertFail(res, 403, H.crossOrigin);
        assert.deepEqual(await snapshot(api), before_);
      });
    }
  }

  for (const route of ROUTES.slice(0, 6)) {
    test(`${route.method} ${route.path} with a foreign Host is 403 Host not allowed`, async () => {
      const res = await request(server.url, route.path, { method: route.method, form: route.form, headers: { authorization: `Bearer ${TOKEN}`, host: 'evil.example' } });
      assertFail(res, 403, H.hostNotAllowed);
      assert.deepEqual(await snapshot(api), before_);
    });
  }
});
