/** GET /api/v1/targets/ extensions: q, sort, include=sessions and X-Total-Count; the old answers unchanged. */
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
const create = (...urls: string[]) => ok('/api/v1/targets/', { method: 'POST', form: { target_url: urls } }, 201);
const urls = async (query: string) => ((await ok(`/api/v1/targets/${query}`)) as { target_url: string }[]).map((t) => t.target_url);
const total = async (query: string) => {
  const res = await call(`/api/v1/targets/${query}`);
  assertSuccess(res);
  return res.headers['x-total-count'];
};

const A = {
  id: 1, target_url: 'http://a.example/', host_name: 'a.example', host_ip: '', port_number: '80', url_scheme: 'http',
  host_path: 'a.example/', ip_url: '', top_domain: 'example', top_url: 'http://a.example:80', alternative_ips: [],
  scope: true, max_user_rank: -1, max_owtf_rank: -1,
};
const B = {
  id: 2, target_url: 'https://10.0.0.9:8443/Admin', host_name: '10.0.0.9', host_ip: '10.0.0.9', port_number: '8443', url_scheme: 'https',
  host_path: '10.0.0.9/Admin', ip_url: 'https://10.0.0.9:8443/Admin', top_domain: '10.0.0.9', top_url: 'https://10.0.0.9:8443',
  alternative_ips: ['10.0.0.9'], scope: true, max_user_rank: -1, max_owtf_rank: -1,
};

test('without the new arguments the body is byte for byte the upstream answer, with X-Total-Count beside it', async () => {
  await create('http://a.example/', 'https://10.0.0.9:8443/Admin');
  for (const [query, data, count] of [
    ['', [B, A], '2'],
    ['?session_id=1', [B, A], '2'],
    ['?limit=1', [B], '2'],
    ['?limit=1&offset=1', [A], '2'],
    ['?host_name=a.example', [A], '1'],
    ['?session_id=99', [], '0'],
  ] as const) {
    const res = await call(`/api/v1/targets/${query}`);
    assert.equal(res.text, JSON.stringify({ status: 'success', data }), query);
    assert.equal(res.headers['x-total-count'], count, query);
  }
});

test('q matches a substring of the URL, the host name or the IP, ignoring case', async () => {
  await create('http://a.example/', 'https://10.0.0.9:8443/Admin', 'http://Shop.Example.org/cart', 'http://192.168.10.5/');
  assert.deepEqual(await urls('?q=admin'), ['https://10.0.0.9:8443/Admin']);
  assert.deepEqual(await urls('?q=SHOP'), ['http://Shop.Example.org/cart']);
  assert.deepEqual(await urls('?q=10.'), ['http://192.168.10.5/', 'https://10.0.0.9:8443/Admin']);
  assert.deepEqual(await urls('?q=example'), ['http://Shop.Example.org/cart', 'http://a.example/']);
  assert.deepEqual(await urls('?q=%20%20a.example%20'), ['http://a.example/'], 'surrounding white space is ignored');
  assert.deepEqual(await urls('?q='), ['http://192.168.10.5/', 'http://Shop.Example.org/cart', 'https://10.0.0.9:8443/Admin', 'http://a.example/']);
  assert.deepEqual(await urls('?q=nowhere'), []);
  assert.equal(await total('?q=example'), '2');
  assert.equal(await total('?q=nowhere'), '0');
});

test('q combines with the upstream filters and with limit and offset; the total counts before paging', async () => {
  await create(...Array.from({ length: 12 }, (_, i) => `http://h${i}.example/`), 'http://other.test/');
  assert.deepEqual(await urls('?q=example&limit=3'), ['http://h11.example/', 'http://h10.example/', 'http://h9.example/']);
  assert.deepEqual(await urls('?q=example&limit=3&offset=10'), ['http://h1.example/', 'http://h0.example/']);
  assert.equal(await total('?q=example&limit=3&offset=10'), '12');
  assert.deepEqual(await urls('?q=example&host_name=h3.example&host_name=other.test'), ['http://h3.example/']);
  assert.equal(await total('?q=example&host_name=h3.example'), '1');
  assert.equal(await total('?limit=1'), '13');
});

test('sort=host orders IPv4 addresses numerically first, then names; sort=newest is the default order', async () => {
  await create('http://b.example/', 'http://10.0.0.10/', 'http://a.example:81/', 'http://10.0.0.2/', 'http://a.example/', 'http://9.1.1.1/');
  assert.deepEqual(await urls('?sort=host'), [
    'http://9.1.1.1/', 'http://10.0.0.2/', 'http://10.0.0.10/', 'http://a.example/', 'http://a.example:81/', 'http://b.example/',
  ]);
  assert.deepEqual(await urls('?sort=HOST&q=a.example'), ['http://a.example/', 'http://a.example:81/'], 'ties newest first');
  assert.deepEqual(await urls('?sort=newest'), await urls(''));
  assert.deepEqual(await urls('?sort=host&limit=2&offset=1'), ['http://10.0.0.2/', 'http://10.0.0.10/']);
});

test('the order follows every change (a cached order is never served stale)', async () => {
  await create('http://b.example/');
  assert.deepEqual(await urls('?sort=host&q=example'), ['http://b.example/']);
  await create('http://a.example/');
  assert.deepEqual(await urls('?sort=host&q=example'), ['http://a.example/', 'http://b.example/']);
  await ok('/api/v1/targets/2', { method: 'DELETE' });
  assert.deepEqual(await urls('?sort=host&q=example'), ['http://b.example/']);
  assert.equal(await total('?sort=host&q=example'), '1');
});

test('include=sessions adds session_ids (ascending) to each target, and nothing else changes', async () => {
  await create('http://a.example/', 'https://10.0.0.9:8443/Admin');
  await ok('/api/v1/sessions/', { method: 'POST', form: { name: 'two' } }, 201);
  await ok('/api/v1/sessions/2/add', { method: 'PATCH', form: { target_id: '1' } });
  const res = await call('/api/v1/targets/?session_id=1&include=sessions');
  assert.equal(res.text, JSON.stringify({ status: 'success', data: [{ ...B, session_ids: [1] }, { ...A, session_ids: [1, 2] }] }));
  assert.deepEqual(await ok('/api/v1/targets/?session_id=2&include=Sessions'), [{ ...A, session_ids: [1, 2] }]);
});

test('a bad sort or include is 400 Invalid parameter type provided, naming the argument', async () => {
  for (const [query, key] of [['sort=oldest', 'sort'], ['sort=', 'sort'], ['include=targets', 'include'], ['include=sessions&include=x', 'include']]) {
    const body = assertFail(await call(`/api/v1/targets/?${query}`), 400, MESSAGES.invalidParameterType, query);
    assert.deepEqual(Object.keys(body.data), [key], query);
  }
});

test('a page of a 20,000-target session is the same slice of the whole list, whatever the page', async () => {
  const all = Array.from({ length: 20_000 }, (_, i) => `http://10.${(i >> 8) & 255}.${i & 255}.1/`);
  for (let i = 0; i < all.length; i += 5000) {
    const res = await call('/api/v1/targets/bulk', { method: 'POST', form: [['action', 'add'], ...all.slice(i, i + 5000).map((u) => ['target_url', u] as [string, string])] });
    assertSuccess(res);
  }
  const newest = (await ok('/api/v1/targets/?limit=3')).map((t: { id: number }) => t.id);
  assert.deepEqual(newest, [20_000, 19_999, 19_998]);
  assert.equal(await total('?limit=3'), '20000');
  const byHost = await urls('?sort=host&limit=2&offset=256');
  assert.deepEqual(byHost, ['http://10.1.0.1/', 'http://10.1.1.1/']);
  assert.equal(await total('?q=10.7.&limit=1'), String(all.filter((u) => u.includes('10.7.')).length));
});

test('many different searches in a row each get their own answer (the kept orders make room for new ones)', async () => {
  await create(...Array.from({ length: 30 }, (_, i) => `http://h${i}.example/`));
  for (let i = 0; i < 30; i++) {
    assert.deepEqual(await urls(`?q=h${i}.&sort=${i % 2 ? 'host' : 'newest'}`), [`http://h${i}.example/`], `search ${i}`);
  }
  assert.equal(await total('?q=h1'), '11');
});
