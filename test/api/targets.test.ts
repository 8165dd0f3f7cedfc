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



const post = (...urls: string[]) => call('/api/v1/targets/', { method: 'POST', form: { target_url: urls } });
async function create(...urls: string[]): Promise<void> {
  const res = await post(...urls);
  assert.equal(res.status, 201, res.text);
  assert.deepEqual(res.json, { status: 'success', data: {} });
}
const list = (query = '') => ok(`/api/v1/targets/${query}`);
const ids = async (query = '') => ((await list(query)) as { id: number }[]).map((t) => t.id);
const urls = async (query = '') => ((await list(query)) as { target_url: string }[]).map((t) => t.target_url);
const newSession = (name: string) => ok('/api/v1/sessions/', { method: 'POST', form: { name } }, 201);

const TARGET_KEYS = [
  'id', 'target_url', 'host_name', 'host_ip', 'port_number', 'url_scheme', 'host_path', 'ip_url', 'top_domain', 'top_url',
  'alternative_ips', 'scope', 'max_user_rank', 'max_owtf_rank',
].sort();

test('a fresh server has no targets', async () => {
  assert.deepEqual(await list(), []);
});

test('POST derives the fields of an http host-name URL (a name that resolves nowhere: .invalid)', async () => {
  await create('http://www.example.invalid/x');
  const expected = {
    id: 1,
    target_url: 'http://www.example.invalid/x',
    host_name: 'www.example.invalid',
    host_ip: '',
    port_number: '80',
    url_scheme: 'http',
    host_path: 'www.example.invalid/x',
    ip_url: '',
    top_domain: 'example.invalid',
    top_url: 'http://www.example.invalid:80',
    alternative_ips: [],
    scope: true,
    max_user_rank: -1,
    max_owtf_rank: -1,
  };
  assert.deepEqual(await ok('/api/v1/targets/1'), expected);
  assert.deepEqual(await list(), [expected]);
});

test('POST derives the fields of an https IP-literal URL', async () => {
  await create('https://10.0.0.1');
  assert.deepEqual(await ok('/api/v1/targets/1'), {
    id: 1,
    target_url: 'https://10.0.0.1',
    host_name: '10.0.0.1',
    host_ip: '10.0.0.1',
    port_number: '443',
    url_scheme: 'https',
    host_path: '10.0.0.1',
    ip_url: 'https://10.0.0.1',
    top_domain: '10.0.0.1',
    top_url: 'https://10.0.0.1:443',
    alternative_ips: ['10.0.0.1'],
    scope: true,
    max_user_rank: -1,
    max_owtf_rank: -1,
  });
});

test('an explicit port is the port_number, as a string', async () => {
  await create('http://www.example.invalid:8080/app');
  const target = await ok('/api/v1/targets/1');
  assert.equal(target.port_number, '8080');
  assert.equal(target.top_url, 'http://www.example.invalid:8080');
  assert.equal(target.host_name, 'www.example.invalid');
});

test('a target has exactly the fourteen contract keys with their types', async () => {
  await create('http://a.example/', 'https://192.168.1.1:8443/x');
  for (const target of await list()) {
    assert.deepEqual(Object.keys(target).sort(), TARGET_KEYS);
    assert.equal(typeof target.id, 'number');
    for (const key of ['target_url', 'host_name', 'host_ip', 'port_number', 'url_scheme', 'host_path', 'ip_url', 'top_domain', 'top_url']) {
      assert.equal(typeof target[key], 'string', key);
    }
    assert.ok(Array.isArray(target.alternative_ips));
    assert.equal(target.scope, true);
  }
});

for (const url of ['ftp://x', 'example.com', 'http://', 'javascript:alert(1)', 'https://', '/relative/path', 'mailto:a@example.com', 'file:///etc/passwd', 'http:example.com', 'http://exa mple.com/', 'http:///path', 'https:////x4.com', 'http://\\evil.example/', 'http:/\\a.example/', 'http://a.example\\@b.example/']) {
  test(`POST target_url=${JSON.stringify(url)} is 400 Invalid target URL provided and creates nothing`, async () => {
    assertFail(await post(url), 400, MESSAGES.invalidTargetUrl);
    assert.deepEqual(await list(), []);
  });
}

test('POST without target_url is 400 Incorrect query parameters', async () => {
  assertFail(await call('/api/v1/targets/', { method: 'POST' }), 400, MESSAGES.incorrectQueryParameters);
  assertFail(await call('/api/v1/targets/', { method: 'POST', form: { url: 'http://a.example/' } }), 400, MESSAGES.incorrectQueryParameters);
});

test('POST of an empty target_url is 400 and creates nothing', async () => {
  const res = await post('');
  assert.equal(res.status, 400, res.text);
  assert.ok([MESSAGES.invalidTargetUrl, MESSAGES.incorrectQueryParameters].includes(res.json.message), res.text);
  assert.deepEqual(await list(), []);
});

test('POST of several target_url values creates them all, attached to the active session', async () => {
  await create('http://a.example/', 'http://b.example/', 'http://c.example/');
  assert.deepEqual(await urls(), ['http://c.example/', 'http://b.example/', 'http://a.example/']);
});

test('POST of several URLs with one invalid is 400 and creates none of them', async () => {
  assertFail(await post('http://a.example/', 'ftp://b.example/', 'http://c.example/'), 400, MESSAGES.invalidTargetUrl);
  assert.deepEqual(await list(), []);
  await create('http://a.example/');
  assert.deepEqual(await ids(), [1], 'the refused POST used no target id');
});

test('POST of several URLs with one already in the active session is 409 and creates none of them', async () => {
  await create('http://a.example/');
  assertFail(await post('http://new.example/', 'http://a.example/'), 409, MESSAGES.dbError);
  assert.deepEqual(await urls(), ['http://a.example/']);
});

test('POST of the same URL twice in one request is 409 and creates nothing', async () => {
  assertFail(await post('http://a.example/', 'http://a.example/'), 409, MESSAGES.dbError);
  assert.deepEqual(await list(), []);
});

test('POST of a URL already in another session attaches the same target to the active session', async () => {
  await create('http://a.example/');
  await newSession('two');
  assert.deepEqual(await list(), []);
  await create('http://a.example/');
  assert.deepEqual(await ids(), [1]);
  assert.deepEqual(await ids('?session_id=1'), [1]);
  assert.deepEqual(await ids('?session_id=2'), [1]);
});

test('target_url values from the query string and the body are all created', async () => {
  const res = await call('/api/v1/targets/?target_url=http%3A%2F%2Fq.example%2F', { method: 'POST', form: { target_url: 'http://b.example/' } });
  assert.equal(res.status, 201, res.text);
  assert.deepEqual((await urls()).sort(), ['http://b.example/', 'http://q.example/']);
});

test('the list is the active session\'s targets, newest first', async () => {
  await create('http://a.example/');
  await create('http://b.example/');
  await newSession('two');
  await create('http://c.example/');
  assert.deepEqual(await ids(), [3]);
  await ok('/api/v1/sessions/1/activate', { method: 'PATCH' });
  assert.deepEqual(await ids(), [2, 1]);
  await ok('/api/v1/sessions/1/add', { method: 'PATCH', form: { target_id: '3' } });
  assert.deepEqual(await ids(), [3, 2, 1]);
});

test('session_id lists another session\'s targets; an unknown one lists []', async () => {
  await create('http://a.example/');
  await newSession('two');
  await create('http://b.example/');
  assert.deepEqual(await ids('?session_id=1'), [1]);
  assert.deepEqual(await ids('?session_id=2'), [2]);
  assert.deepEqual(await ids('?session_id=99'), []);
  // an unsigned integer past 2^53 names no session either: not a wrong type
  assert.deepEqual(await ids('?session_id=9007199254740992'), []);
  assert.deepEqual(await ids(`?session_id=${'9'.repeat(40)}`), []);
  assert.deepEqual(await ids('?id=9007199254740993'), []);
});

test('session_id=abc is 400 Invalid parameter type provided', async () => {
  assertFail(await call('/api/v1/targets/?session_id=abc'), 400, MESSAGES.invalidParameterType);
  assertFail(await call('/api/v1/targets/?session_id=-1'), 400, MESSAGES.invalidParameterType);
});

test('filters target_url, host_name, host_ip and id are repeatable and any-of', async () => {
  await create('http://a.example/', 'https://10.0.0.1', 'http://b.example:81/', 'http://10.0.0.2/');
  assert.deepEqual(await urls('?target_url=http%3A%2F%2Fa.example%2F'), ['http://a.example/']);
  assert.deepEqual(await urls('?target_url=http%3A%2F%2Fa.example%2F&target_url=https%3A%2F%2F10.0.0.1'), ['https://10.0.0.1', 'http://a.example/']);
  assert.deepEqual(await urls('?host_name=b.example'), ['http://b.example:81/']);
  assert.deepEqual(await urls('?host_name=b.example&host_name=a.example'), ['http://b.example:81/', 'http://a.example/']);
  assert.deepEqual(await urls('?host_ip=10.0.0.1&host_ip=10.0.0.2'), ['http://10.0.0.2/', 'https://10.0.0.1']);
  assert.deepEqual(await ids('?id=1&id=3'), [3, 1]);
  assert.deepEqual(await ids('?id=99'), []);
  assert.deepEqual(await ids('?host_name=nowhere.example'), []);
});

test('filters combine as all-of across different arguments', async () => {
  await create('http://a.example/', 'http://b.example/');
  assert.deepEqual(await ids('?host_name=a.example&id=2'), []);
  assert.deepEqual(await ids('?host_name=a.example&id=1'), [1]);
});

test('scope=true keeps every (in-scope) target, scope=false none', async () => {
  await create('http://a.example/', 'http://b.example/');
  assert.deepEqual(await ids('?scope=true'), [2, 1]);
  assert.deepEqual(await ids('?scope=false'), []);
});

test('limit and offset page the newest-first list', async () => {
  await create('http://a.example/', 'http://b.example/', 'http://c.example/', 'http://d.example/');
  assert.deepEqual(await ids('?limit=2'), [4, 3]);
  assert.deepEqual(await ids('?limit=2&offset=2'), [2, 1]);
  assert.deepEqual(await ids('?offset=3'), [1]);
  assert.deepEqual(await ids('?offset=10'), []);
  assert.deepEqual(await ids('?limit=0'), []);
  assert.deepEqual(await ids('?limit=100'), [4, 3, 2, 1]);
  // past 2^53: as large as can be, not a wrong type
  assert.deepEqual(await ids('?limit=9007199254740992'), [4, 3, 2, 1]);
  assert.deepEqual(await ids(`?offset=${'9'.repeat(40)}`), []);
});

test('a negative or non-integer limit or offset is 400 Invalid parameter type provided', async () => {
  for (const query of ['limit=-1', 'limit=1.5', 'limit=abc', 'limit=', 'offset=-1', 'offset=2.0', 'offset=x']) {
    assertFail(await call(`/api/v1/targets/?${query}`), 400, MESSAGES.invalidParameterType);
  }
});

test('GET of an unknown target is 400 Invalid target reference provided', async () => {
  assertFail(await call('/api/v1/targets/1'), 400, MESSAGES.invalidTargetReference);
  assertFail(await call('/api/v1/targets/99999999999999999999999'), 400, MESSAGES.invalidTargetReference);
});

test('DELETE of a target removes it from every session', async () => {
  await create('http://a.example/', 'http://b.example/');
  await newSession('two');
  await ok('/api/v1/sessions/2/add', { method: 'PATCH', form: { target_id: '1' } });
  assert.deepEqual(await ok('/api/v1/targets/1', { method: 'DELETE' }), {});
  assertFail(await call('/api/v1/targets/1'), 400, MESSAGES.invalidTargetReference);
  assert.deepEqual(await ids('?session_id=1'), [2]);
  assert.deepEqual(await ids('?session_id=2'), []);
});

test('a deleted target\'s URL can be created again, with a new id', async () => {
  await create('http://a.example/');
  await ok('/api/v1/targets/1', { method: 'DELETE' });
  await create('http://a.example/');
  assert.deepEqual(await ids(), [2]);
});

test('DELETE of an unknown target is 400 Invalid target reference provided', async () => {
  assertFail(await call('/api/v1/targets/7', { method: 'DELETE' }), 400, MESSAGES.invalidTargetReference);
});

test('deleting a session deletes the targets left in no session', async () => {
  await newSession('two');
  await create('http://a.example/');
  await ok('/api/v1/sessions/2', { method: 'DELETE' });
  assertFail(await call('/api/v1/targets/1'), 400, MESSAGES.invalidTargetReference);
});

test('remove that leaves a target in no session deletes it', async () => {
  await create('http://a.example/');
  await ok('/api/v1/sessions/1/remove', { method: 'PATCH', form: { target_id: '1' } });
  assertFail(await call('/api/v1/targets/1'), 400, MESSAGES.invalidTargetReference);
});

test('a target added by name gets its addresses as the box resolves it (/etc/hosts: localhost), kept through a restart', async () => {
  await create('http://localhost:8080/app?x=1', 'http://never.resolves.invalid/');
  const target = await ok('/api/v1/targets/1');
  assert.equal(target.host_name, 'localhost');
  assert.equal(target.host_ip, '127.0.0.1');
  assert.ok(target.alternative_ips.includes('127.0.0.1'), JSON.stringify(target.alternative_ips));
  assert.equal(target.alternative_ips[0], '127.0.0.1', 'IPv4 first');
  assert.equal(target.ip_url, 'http://127.0.0.1:8080/app?x=1');
  const unresolved = await ok('/api/v1/targets/2');
  assert.deepEqual([unresolved.host_ip, unresolved.ip_url, unresolved.alternative_ips], ['', '', []]);
  // the addresses are in the journal's op: a replay looks nothing up
  await server.stop();
  server = await startServer({ dataDir: server.dataDir });
  assert.deepEqual(await ok('/api/v1/targets/1'), target);
});

test('targets survive a restart', async () => {
  await create('http://a.example/', 'https://10.0.0.1');
  const before = await list();
  await server.stop();
  server = await startServer({ dataDir: server.dataDir });
  assert.deepEqual(await list(), before);
});

test('unsupported methods are 405 Method not allowed with an Allow header', async () => {
  await create('http://a.example/');
  for (const [method, path, allowed] of [
    ['PUT', '/api/v1/targets/', ['GET', 'POST']],
    ['DELETE', '/api/v1/targets/', ['GET', 'POST']],
    ['PATCH', '/api/v1/targets/1', ['GET', 'DELETE']],
    ['POST', '/api/v1/targets/1', ['GET', 'DELETE']],
  ] as const) {
    const res = await call(path, { method });
    assertFail(res, 405, 'Method not allowed');
    const allow = String(res.headers.allow).split(',').map((m) => m.trim());
    for (const m of allowed) assert.ok(allow.includes(m), `${method} ${path} Allow: ${res.headers.allow}`);
    assert.ok(!allow.includes(method), `${method} ${path} Allow: ${res.headers.allow}`);
  }
  assert.deepEqual(await ids(), [1]);
});
