/**
 * A target is one host. Tools read a host their own way (nmap expands `10.0.0.*`, `10.0.0.1-255`,
 * `192.168.0-255.1-254` into up to 65,024 addresses), so anything that is not plainly a DNS name,
 * an IPv4 or an IPv6 address is refused wherever a target comes in: POST /targets, the bulk add,
 * a bundle import; and a target stored before the rule is Skipped before a tool sees it.
 */
import { afterEach, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { MESSAGES } from '../../src/api/messages.ts';
import { notOneHost } from '../../src/store/targets.ts';
import { assertFail, assertSuccess } from '../helpers/jsend.ts';
import { request, startServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
beforeEach(async () => (server = await startServer()));
afterEach(() => server.close());

const post = (...urls: string[]) => request(server.url, '/api/v1/targets/', { method: 'POST', form: { target_url: urls } });
const list = async () => assertSuccess(await request(server.url, '/api/v1/targets/'), 200) as { target_url: string }[];

const SEVERAL_HOSTS = [
  'http://10.0.0.*/',
  'http://10.0.0.1-255/',
  'http://192.168.0-255.1-254/',
  'https://10.0.0.1,2,3/',
  'http://*.example.com/',
  'http://10.0.0.0-255/',
  'http://host-.example/',
  'http://-oX/',
  'http://a..b/',
  `http://${'a'.repeat(64)}.example/`,
];

for (const url of SEVERAL_HOSTS) {
  test(`POST target_url=${url} is 400 Invalid target URL provided, saying it is not one host; nothing is created`, async () => {
    const body = assertFail(await post(url), 400, MESSAGES.invalidTargetUrl);
    assert.match(body.data.target_url, /is not one host/);
    assert.deepEqual(await list(), []);
  });
}

const ONE_HOST = ['http://example.com/', 'https://app.example.com:8443/x', 'http://10.0.0.1/', 'http://[::1]:8080/', 'http://localhost/', 'http://my_host.lab/', 'http://example.com./', 'https://bücher.example/'];

test('DNS names, IPv4 and IPv6 addresses are one host each: all created', async () => {
  const res = await post(...ONE_HOST);
  assert.equal(res.status, 201, res.text);
  assert.equal((await list()).length, ONE_HOST.length);
});

test('the bulk add refuses each line that is not one host, saying so, and adds the others', async () => {
  const res = await request(server.url, '/api/v1/targets/bulk', { method: 'POST', form: { action: 'add', target_url: ['http://10.0.0.*/', 'http://ok.example/'] } });
  const data = assertSuccess(res, 200);
  assert.equal(data.added, 1);
  assert.deepEqual(data.failed.map((f: { index: number; reason: string }) => [f.index, f.reason]), [[0, 'not one host (a DNS name, an IPv4 or an IPv6 address; no *, ranges or lists)']]);
});

test('a bundle holding a target that is not one host is refused whole, naming it', async () => {
  const bundle = { format: 'assessd-session', version: 1, session: { name: 'imported' }, targets: [{ target_url: 'http://ok.example/' }, { target_url: 'http://10.0.0.1-255/' }] };
  const res = await request(server.url, '/api/v1/bundles/', { method: 'POST', body: JSON.stringify(bundle), headers: { 'content-type': 'application/json' } });
  assert.equal(res.status, 400, res.text);
  assert.match(res.json.message, /targets\[1\]\.target_url is not one host/);
  assert.deepEqual(await list(), []);
});

test('notOneHost: names, addresses and what a tool would expand', () => {
  for (const host of ['example.com', 'a.b.c', 'localhost', '10.0.0.1', '::1', 'fe80::1', 'xn--bcher-kva.example', 'example.com.', 'host_1.lab']) {
    assert.equal(notOneHost(host), undefined, host);
  }
  for (const host of ['10.0.0.*', '10.0.0.1-255', '192.168.0-255.1-254', '1-2', '*', '', 'a b', '-x', 'x-', 'a..b', `${'a'.repeat(254)}`]) {
    assert.ok(notOneHost(host), host);
  }
});
