import { afterEach, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { HTTP_MESSAGES, MESSAGES } from '../../src/api/messages.ts';
import { assertFail, assertSuccess, JSON_TYPE } from '../helpers/jsend.ts';
import { request, startServer, type RequestOptions, type TestServer } from '../helpers/server.ts';

let server: TestServer;
beforeEach(async () => (server = await startServer()));
afterEach(() => server.close());

const call = (path: string, options: RequestOptions = {}) => request(server.url, path, options);
const FORM_TYPE = 'application/x-www-form-urlencoded';



const sessionNames = async () => (assertSuccess(await call('/api/v1/sessions/'), 200) as { name: string }[]).map((s) => s.name);

/** One request written byte for byte on a socket: the head of the answer and its body. */
function rawRequest(head: string): Promise<{ head: string; body: string }> {
  const { port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    let data = '';
    const socket = connect(Number(port), '127.0.0.1', () => socket.write(head));
    socket.on('data', (chunk) => (data += chunk));
    socket.on('end', () => {
      const at = data.indexOf('\r\n\r\n');
      resolve({ head: data.slice(0, at), body: data.slice(at + 4) });
    });
    socket.on('error', reject);
  });
}

test('a success is exactly {"status":"success","data":...}; a call that returns nothing has data {}', async () => {
  assert.deepEqual(assertSuccess(await call('/api/v1/sessions/', { method: 'POST', form: { name: 'two' } }), 201), {});
  assert.deepEqual(assertSuccess(await call('/api/v1/sessions/1/activate', { method: 'PATCH' }), 200), {});
  assert.deepEqual(assertSuccess(await call('/api/v1/targets/', { method: 'POST', form: { target_url: 'http://a.example/' } }), 201), {});
  assert.deepEqual(assertSuccess(await call('/api/v1/targets/1', { method: 'DELETE' }), 200), {});
  assert.deepEqual(assertSuccess(await call('/api/v1/configuration/', { method: 'PATCH', form: { TOOL_NMAP: 'x' } }), 200), {});
  assert.deepEqual(assertSuccess(await call('/api/v1/sessions/2', { method: 'DELETE' }), 200), {});
  assert.ok(Array.isArray(assertSuccess(await call('/api/v1/sessions/'), 200)));
  assert.deepEqual(assertSuccess(await call('/debug/health'), 200), { status: 'ok' });
});

test('a client error is {"status":"fail","message","code"} with code equal to the HTTP status', async () => {
  assertFail(await call('/api/v1/sessions/9'), 400, MESSAGES.invalidSessionId);
  assertFail(await call('/api/v1/sessions/', { method: 'POST', form: { name: 'default session' } }), 409, MESSAGES.dbError);
  assertFail(await call('/api/nope'), 404, HTTP_MESSAGES.notFound);
  assertFail(await call('/api/v1/sessions/', { method: 'PUT' }), 405, HTTP_MESSAGES.methodNotAllowed);
});

test('a 4xx data, when present, names the offending submitted field', async () => {
  const body = assertFail(await call('/api/v1/sessions/', { method: 'POST' }), 400, MESSAGES.incorrectQueryParameters);
  if ('data' in body) assert.deepEqual(Object.keys(body.data), ['name']);
  const config = assertFail(await call('/api/v1/configuration', { method: 'PATCH', form: { NOPE: '1' } }), 400, MESSAGES.invalidConfigurationItem);
  assert.deepEqual(Object.keys(config.data), ['NOPE']);
});

test('every /api and /debug answer, errors included, is application/json; charset=utf-8', async () => {
  const cases: [string, string, RequestOptions?][] = [
    ['GET', '/debug/health'],
    ['GET', '/debug/health/'],
    ['GET', '/debug/nope'],
    ['DELETE', '/debug/health'],
    ['GET', '/api/v1/sessions'],
    ['GET', '/api/v1/sessions/?active=maybe'],
    ['GET', '/api/v1/sessions/1'],
    ['GET', '/api/v1/sessions/1/activate'],
    ['POST', '/api/v1/sessions/', { form: { name: 'x' } }],
    ['POST', '/api/v1/sessions/', { form: { name: 'x' } }],
    ['POST', '/api/v1/sessions/', { body: '{"name":"y"}', headers: { 'content-type': 'application/json' } }],
    ['PUT', '/api/v1/sessions/1'],
    ['PATCH', '/api/v1/sessions/1/add'],
    ['DELETE', '/api/v1/sessions/77'],
    ['GET', '/api/v1/targets/'],
    ['GET', '/api/v1/targets/5'],
    ['GET', '/api/v1/targets/?limit=-1'],
    ['POST', '/api/v1/targets/', { form: { target_url: 'ftp://x' } }],
    ['GET', '/api/v1/configuration'],
    ['PATCH', '/api/v1/configuration'],
    ['POST', '/api/v1/configuration'],
    ['GET', '/api'],
    ['GET', '/api/'],
    ['GET', '/api/v1/sessions/x1'],
    ['GET', '/api/v1/sessions/%zz'],
    ['GET', '/api/v1/sessions/%'],
    ['GET', '/debug/%E0%A4%A'],
    ['HEAD', '/api/v1/sessions/'],
    ['HEAD', '/api/nope'],
    ['OPTIONS', '/api/v1/sessions/'],
    ['GET', `/api/v1/sessions/?name=${'x'.repeat(20000)}`],
  ];
  for (const [method, path, options] of cases) {
    const res = await call(path, { method, ...options });
    const what = `${method} ${path.slice(0, 60)} -> ${res.status}`;
    assert.equal(res.headers['content-type'], JSON_TYPE, what);
    if (method === 'HEAD') continue;
    const body = res.json;
    if (res.status < 400) assert.equal(body.status, 'success', what);
    else {
      assert.equal(body.status, res.status >= 500 ? 'error' : 'fail', what);
      assert.equal(body.code, res.status, what);
    }
  }
});

test('a request body over the limit is a JSON 413', async () => {
  const small = await startServer({ maxBody: 64 });
  try {
    const res = await request(small.url, '/api/v1/sessions/', { method: 'POST', form: { name: 'n'.repeat(200) } });
    assertFail(res, 413);
  } finally {
    await small.close();
  }
});

test('an /api request without a Host header (HTTP/1.1 or 1.0) is a JSON 403 Host not allowed; two Host headers a JSON 400', async () => {
  for (const version of ['1.1', '1.0']) {
    const answer = await rawRequest(`GET /api/v1/sessions/ HTTP/${version}\r\nConnection: close\r\n\r\n`);
    assert.match(answer.head, /^HTTP\/1\.1 403 /, version);
    assert.match(answer.head, /^content-type: application\/json; charset=utf-8$/im);
    assert.equal(JSON.parse(answer.body).message, 'Host not allowed');
  }
  const two = await rawRequest('GET /api/v1/sessions/ HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
  assert.match(two.head, /^HTTP\/1\.1 400 /);
});

test('an /api request line the parser refuses still gets a JSON 400', async () => {
  const answer = await rawRequest('GET /api/v1/sessions/ HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n');
  assert.match(answer.head, /^HTTP\/1\.1 400 /);
  assert.match(answer.head, /^content-type: application\/json; charset=utf-8$/im);
  assert.equal(JSON.parse(answer.body).status, 'fail');
});

for (const [plain, slashed] of [
  ['/api/v1/sessions', '/api/v1/sessions/'],
  ['/api/v1/sessions/1', '/api/v1/sessions/1/'],
  ['/api/v1/sessions/1/activate', '/api/v1/sessions/1/activate/'],
  ['/api/v1/sessions/9', '/api/v1/sessions/9/'],
  ['/api/v1/targets', '/api/v1/targets/'],
  ['/api/v1/targets/1', '/api/v1/targets/1/'],
  ['/api/v1/configuration', '/api/v1/configuration/'],
  ['/debug/health', '/debug/health/'],
]) {
  test(`GET ${slashed} answers exactly like GET ${plain}`, async () => {
    await call('/api/v1/targets/', { method: 'POST', form: { target_url: 'http://a.example/' } });
    const a = await call(plain);
    const b = await call(slashed);
    assert.equal(b.status, a.status);
    assert.notEqual(a.status, 404, `${plain} is a known path`);
    assert.equal(b.headers['content-type'], JSON_TYPE);
    assert.equal(b.text, a.text);
  });
}

test('every write path also answers with one trailing slash, and /api/v1/sessions without it', async () => {
  assertSuccess(await call('/api/v1/sessions', { method: 'POST', form: { name: 'two' } }), 201);
  assertSuccess(await call('/api/v1/sessions/', { method: 'POST', form: { name: 'three' } }), 201);
  assertSuccess(await call('/api/v1/sessions/2/activate/', { method: 'PATCH' }), 200);
  assertSuccess(await call('/api/v1/targets', { method: 'POST', form: { target_url: 'http://a.example/' } }), 201);
  assertSuccess(await call('/api/v1/sessions/3/add/', { method: 'PATCH', form: { target_id: '1' } }), 200);
  assertSuccess(await call('/api/v1/sessions/3/remove/', { method: 'PATCH', form: { target_id: '1' } }), 200);
  assertSuccess(await call('/api/v1/sessions/3/', { method: 'DELETE' }), 200);
  assertSuccess(await call('/api/v1/targets/1/', { method: 'DELETE' }), 200);
  assertSuccess(await call('/api/v1/configuration', { method: 'PATCH', form: { TOOL_NMAP: 'a' } }), 200);
  assertSuccess(await call('/api/v1/configuration/', { method: 'PATCH', form: { TOOL_LBD: 'b' } }), 200);
  assert.deepEqual(await sessionNames(), ['default session', 'two']);
  const sessions = assertSuccess(await call('/api/v1/sessions/'), 200);
  assert.equal(sessions.find((s: { active: boolean }) => s.active).name, 'two');
  assert.deepEqual(assertSuccess(await call('/api/v1/targets/?session_id=2'), 200), []);
  const dirty = assertSuccess(await call('/api/v1/configuration?dirty=true'), 200);
  assert.deepEqual(dirty.map((i: { key: string; value: string }) => [i.key, i.value]), [['TOOL_LBD', 'b'], ['TOOL_NMAP', 'a']]);
});

for (const [method, path] of [
  ['GET', '/api/v1/sessions//'],
  ['POST', '/api/v1/sessions//'],
  ['GET', '/api/v1/sessions/1//'],
  ['PATCH', '/api/v1/sessions/1/activate//'],
  ['DELETE', '/api/v1/sessions/1//'],
  ['GET', '/api/v1/targets//'],
  ['GET', '/api/v1/configuration//'],
  ['GET', '/debug/health//'],
  ['GET', '/api//v1/sessions/'],
  ['GET', '/api/v1//sessions'],
]) {
  test(`${method} ${path} (two slashes) is 404 Not found and changes nothing`, async () => {
    assertFail(await call(path, { method, form: method === 'POST' ? { name: 'slashes' } : undefined }), 404, HTTP_MESSAGES.notFound);
    assert.deepEqual(assertSuccess(await call('/api/v1/sessions/'), 200), [{ id: 1, name: 'default session', active: true }]);
  });
}

test('path segments are percent-decoded: /api/v1/sessions/%31 is session 1', async () => {
  assert.deepEqual(assertSuccess(await call('/api/v1/sessions/%31'), 200), { id: 1, name: 'default session', active: true });
  assert.deepEqual(assertSuccess(await call('/api/v1/%73essions/%31/'), 200), { id: 1, name: 'default session', active: true });
  assert.equal(assertSuccess(await call('/%61pi/v1/sessions'), 200).length, 1);
  assert.deepEqual(assertSuccess(await call('/debug/%68ealth'), 200), { status: 'ok' });
  assert.equal(assertSuccess(await call('/api/v1/%63onfiguration?key=TOOL_NMAP'), 200).length, 1);
});

test('percent-decoded segments work for writes and actions too', async () => {
  assertSuccess(await call('/api/v1/sessions/', { method: 'POST', form: { name: 'two' } }), 201);
  assertSuccess(await call('/api/v1/sessions/%31/%61ctivate', { method: 'PATCH' }), 200);
  assert.equal(assertSuccess(await call('/api/v1/sessions/1'), 200).active, true);
  assertFail(await call('/api/v1/sessions/%31/%61ctivate'), 400, MESSAGES.actionMustBeNone);
  assertSuccess(await call('/api/v1/targets/', { method: 'POST', form: { target_url: 'http://a.example/' } }), 201);
  assert.equal(assertSuccess(await call('/api/v1/targets/%31'), 200).id, 1);
  assertSuccess(await call('/api/v1/sessions/%32', { method: 'DELETE' }), 200);
  assert.deepEqual(await sessionNames(), ['default session']);
});

test('segments are decoded once only: %2531 is not session 1, and an encoded slash does not split a segment', async () => {
  for (const path of ['/api/v1/sessions/%2531', '/api/v1/sessions%2F1', '/api/v1/sessions/1%2Factivate']) {
    assertFail(await call(path), 404, HTTP_MESSAGES.notFound, path);
  }
});

test('malformed percent-encoding under /api is a JSON 4xx, not a crash', async () => {
  for (const path of ['/api/v1/sessions/%zz', '/api/v1/sessions/%', '/api/v1/sessions/%E0%A4%A', '/api/v1/sessions/%C0%AF']) {
    const res = await call(path);
    assert.ok(res.status === 400 || res.status === 404, `${path} answered ${res.status}`);
    assertFail(res, res.status, undefined, path);
  }
});

for (const [contentType, body] of [
  ['application/json', '{"name":"json"}'],
  ['text/plain', 'name=plain'],
  ['multipart/form-data; boundary=x', '--x\r\nContent-Disposition: form-data; name="name"\r\n\r\nmultipart\r\n--x--\r\n'],
]) {
  test(`a ${contentType.split(';')[0]} body is 415 JSON and creates nothing`, async () => {
    const res = await call('/api/v1/sessions/', { method: 'POST', body, headers: { 'content-type': contentType } });
    assertFail(res, 415);
    assert.deepEqual(await sessionNames(), ['default session']);
  });
}

test('a JSON body on PATCH configuration is 415 and changes nothing', async () => {
  const res = await call('/api/v1/configuration', { method: 'PATCH', body: '{"TOOL_NMAP":"x"}', headers: { 'content-type': 'application/json' } });
  assertFail(res, 415);
  assert.deepEqual(assertSuccess(await call('/api/v1/configuration?dirty=true'), 200), []);
});

test('a form body is read with a charset parameter or an upper-case media type', async () => {
  for (const [contentType, name] of [[`${FORM_TYPE}; charset=UTF-8`, 'with charset'], ['Application/X-WWW-Form-URLEncoded', 'upper case']]) {
    assertSuccess(await call('/api/v1/sessions/', { method: 'POST', body: `name=${encodeURIComponent(name)}`, headers: { 'content-type': contentType } }), 201, contentType);
  }
  assert.deepEqual(await sessionNames(), ['default session', 'with charset', 'upper case']);
});

test('query and body arguments merge, the query first: POST ?name=q with body name=b creates q', async () => {
  assertSuccess(await call('/api/v1/sessions/?name=from%20query', { method: 'POST', form: { name: 'from body' } }), 201);
  assert.deepEqual(await sessionNames(), ['default session', 'from query']);
});

test('the first value counts even when it is empty: POST ?name= with body name=b is 400 and creates nothing', async () => {
  assertFail(await call('/api/v1/sessions/?name=', { method: 'POST', form: { name: 'from body' } }), 400, MESSAGES.incorrectQueryParameters);
  assert.deepEqual(await sessionNames(), ['default session']);
});

test('query first for target_id: a valid query value wins over a bad body value, and a bad query value over a good body value', async () => {
  assertSuccess(await call('/api/v1/targets/', { method: 'POST', form: { target_url: 'http://a.example/' } }), 201);
  assertSuccess(await call('/api/v1/sessions/', { method: 'POST', form: { name: 'two' } }), 201);
  assertFail(await call('/api/v1/sessions/2/add?target_id=999', { method: 'PATCH', form: { target_id: '1' } }), 400, MESSAGES.invalidTargetReference);
  assert.deepEqual(assertSuccess(await call('/api/v1/targets/?session_id=2'), 200), []);
  assertSuccess(await call('/api/v1/sessions/2/add?target_id=1', { method: 'PATCH', form: { target_id: '999' } }), 200);
  assert.deepEqual(assertSuccess(await call('/api/v1/targets/?session_id=2'), 200).map((t: { id: number }) => t.id), [1]);
});

test('query first for configuration values', async () => {
  assertSuccess(await call('/api/v1/configuration?TOOL_NMAP=q', { method: 'PATCH', form: { TOOL_NMAP: 'b', TOOL_LBD: 'only in body' } }), 200);
  const items = assertSuccess(await call('/api/v1/configuration?dirty=true'), 200);
  assert.deepEqual(items.map((i: { key: string; value: string }) => [i.key, i.value]), [['TOOL_LBD', 'only in body'], ['TOOL_NMAP', 'q']]);
});

test('a body argument counts on GET too (arguments are query plus body)', async () => {
  assertSuccess(await call('/api/v1/sessions/', { method: 'POST', form: { name: 'two' } }), 201);
  const res = await call('/api/v1/sessions/', { method: 'GET', form: { active: 'false' } });
  assert.deepEqual(assertSuccess(res, 200), [{ id: 1, name: 'default session', active: false }]);
});

test('a form body decodes + as a space and percent-escapes as UTF-8', async () => {
  assertSuccess(await call('/api/v1/sessions/', { method: 'POST', body: 'name=a+b%20c%C3%A9%F0%9F%98%80', headers: { 'content-type': FORM_TYPE } }), 201);
  assert.deepEqual(await sessionNames(), ['default session', 'a b cé😀']);
});
