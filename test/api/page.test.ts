import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { HTTP_MESSAGES } from '../../src/api/messages.ts';
import { assertFail, JSON_TYPE } from '../helpers/jsend.ts';
import { request, startServer, type RequestOptions, type Response, type TestServer } from '../helpers/server.ts';

let server: TestServer;
let page: string;
before(async () => {
  // example.org stands for a name the user allowed (--allowed-hosts): the redirect keeps it
  server = await startServer({ allowedHosts: ['example.org'] });
  page = (await call('/')).text;
});
after(() => server.close());

const call = (path: string, options: RequestOptions = {}) => request(server.url, path, options);
const HTML = 'text/html; charset=UTF-8';


function assertVaryAcceptEncoding(res: Response): void {
  const vary = String(res.headers.vary ?? '').split(',').map((v) => v.trim().toLowerCase());
  assert.ok(vary.includes('accept-encoding'), `Vary: ${res.headers.vary}`);
}

function assertPlainPage(res: Response, what: string): void {
  assert.equal(res.status, 200, what);
  assert.equal(res.headers['content-type'], HTML, what);
  assert.ok(res.headers['content-encoding'] === undefined || res.headers['content-encoding'] === 'identity', `${what}: Content-Encoding ${res.headers['content-encoding']}`);
  assert.match(res.text, /^<!doctype html>/i, what);
  assert.equal(res.headers['content-length'], String(res.raw.length), what);
}

test('GET / is the HTML page, 200, text/html; charset=UTF-8', async () => {
  const res = await call('/');
  assertPlainPage(res, 'GET /');
  assert.match(res.text, /<\/html>\s*$/i);
});

for (const path of ['/sessions', '/sessions/3', '/targets/1/plugins', '/apix', '/api-docs', '/staticx', '/debugger', '/logsx', '/output_filesx', '/index.html', '/a%20b', '/?tab=targets', '/deep/er/path/']) {
  test(`GET ${path} (not under /api, /debug, /static, /output_files, /logs) is the page`, async () => {
    const res = await call(path);
    assertPlainPage(res, path);
    assert.equal(res.text, page);
  });
}

for (const path of ['/api', '/api/', '/api/x', '/api/v2/sessions', '/debug', '/debug/', '/debug/x', '/static', '/static/', '/static/nope.js', '/static/index.html', '/logs', '/logs/', '/logs/server.log']) {
  test(`GET ${path} is a JSON 404 Not found, not the page`, async () => {
    assertFail(await call(path), 404, HTTP_MESSAGES.notFound);
  });
}

for (const acceptEncoding of ['gzip', 'gzip, deflate, br', 'br;q=1.0, gzip;q=0.8', 'GZIP', 'deflate, gzip;q=0.1', '*']) {
  test(`Accept-Encoding: ${acceptEncoding} gets the page gzip-encoded with Vary: Accept-Encoding`, async () => {
    const res = await call('/', { headers: { 'accept-encoding': acceptEncoding } });
    assert.equal(res.status, 200);
    assert.equal(res.headers['content-type'], HTML);
    assert.equal(res.headers['content-encoding'], 'gzip');
    assertVaryAcceptEncoding(res);
    assert.equal(res.headers['content-length'], String(res.raw.length));
    assert.equal(gunzipSync(res.raw).toString('utf8'), page);
  });
}

for (const acceptEncoding of ['gzip;q=0', 'gzip; q=0.0', 'identity', 'deflate', 'br', '', 'gzip;q=0, *', '*;q=0']) {
  test(`Accept-Encoding: ${JSON.stringify(acceptEncoding)} gets the page plain`, async () => {
    const res = await call('/', { headers: { 'accept-encoding': acceptEncoding } });
    assertPlainPage(res, acceptEncoding);
    assert.equal(res.text, page);
    assertVaryAcceptEncoding(res);
  });
}

test('no Accept-Encoding gets the page plain, with Vary: Accept-Encoding', async () => {
  const res = await call('/');
  assertPlainPage(res, 'no Accept-Encoding');
  assertVaryAcceptEncoding(res);
});

test('HEAD of the page answers the GET headers without a body, plain and gzip', async () => {
  for (const headers of [{}, { 'accept-encoding': 'gzip' }] as Record<string, string>[]) {
    const get = await call('/sessions', { headers });
    const head = await call('/sessions', { method: 'HEAD', headers });
    assert.equal(head.status, 200);
    assert.equal(head.raw.length, 0);
    for (const name of ['content-type', 'content-length', 'content-encoding', 'vary']) {
      assert.equal(head.headers[name], get.headers[name], name);
    }
  }
});

for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
  test(`${method} of a page path is 405 Method not allowed with Allow: GET, HEAD`, async () => {
    for (const path of ['/', '/sessions']) {
      const res = await call(path, { method, form: { name: 'x' } });
      assertFail(res, 405, HTTP_MESSAGES.methodNotAllowed);
      const allow = String(res.headers.allow).split(',').map((m) => m.trim()).sort();
      assert.deepEqual(allow, ['GET', 'HEAD']);
    }
  });
}

test('the page loads nothing from another origin, and every asset it names is served', async () => {
  const refs = [...page.matchAll(/\b(?:src|href)\s*=\s*["']([^"']*)["']/gi)].map((m) => m[1]);
  assert.ok(refs.length > 0, 'the page names its assets');
  for (const ref of refs) {
    assert.ok(!/^([a-z][a-z0-9+.-]*:)?\/\//i.test(ref) || ref.startsWith(server.url), `external reference ${ref}`);
    if (ref.startsWith('#') || ref.startsWith('data:')) continue;
    const res = await call(new URL(ref, `${server.url}/`).pathname);
    assert.equal(res.status, 200, `${ref} is served`);
    if (res.headers['content-type']?.startsWith('text/css')) {
      assert.ok(!/url\(\s*["']?(https?:)?\/\//i.test(res.text) && !/@import\s+(url\()?\s*["']?(https?:)?\/\//i.test(res.text), `${ref} loads from another origin`);
    }
  }
  assert.ok(!/<link[^>]+fonts\.googleapis|cdn\./i.test(page));
});

test('GET /static/app.js serves the script, plain or gzip', async () => {
  const plain = await call('/static/app.js');
  assert.equal(plain.status, 200);
  assert.match(String(plain.headers['content-type']), /^(text|application)\/javascript\b/);
  assert.ok(plain.raw.length > 0);
  assert.equal(plain.headers['content-length'], String(plain.raw.length));
  const gzip = await call('/static/app.js', { headers: { 'accept-encoding': 'gzip' } });
  assert.equal(gzip.status, 200);
  assert.equal(gzip.headers['content-encoding'], 'gzip');
  assert.equal(gunzipSync(gzip.raw).toString('utf8'), plain.text);
});

for (const path of [
  '/static/../build.js',
  '/static/%2e%2e/build.js',
  '/static/%2E%2E/build.js',
  '/static/..%2fbuild.js',
  '/static/..%2Fbuild.js',
  '/static/%2e%2e%2fbuild.js',
  '/static/..%5cbuild.js',
  '/static/../../../package.json',
  '/static/%2e%2e/%2e%2e/%2e%2e/package.json',
  '/static/%2e%2e%2f%2e%2e%2f%2e%2e%2fpackage.json',
  '/static/./app.js/../../build.js',
  '/static//etc/passwd',
  '/static/%2fetc%2fpasswd',
  '/static/..',
  '/static/%2e%2e',
]) {
  test(`GET ${path} never leaves the static folder`, async () => {
    const res = await call(path);
    assert.ok(res.status === 404 || res.status === 400, `${path} answered ${res.status}`);
    assert.equal(res.headers['content-type'], JSON_TYPE);
    assert.equal(res.json.status, 'fail');
  });
}

test('GET /output_files/<file_url> is 301 to the file server port on the host the request named', async () => {
  const res = await call('/output_files/a%20b/c.txt', { headers: { host: 'example.org:8009' } });
  assert.equal(res.status, 301);
  assert.equal(res.headers.location, 'http://example.org:8010/a%20b/c.txt');
});

test('the /output_files/ redirect keeps the named host when the Host header has no port', async () => {
  const res = await call('/output_files/report.html', { headers: { host: 'example.org' } });
  assert.equal(res.status, 301);
  assert.equal(res.headers.location, 'http://example.org:8010/report.html');
});

test('the /output_files/ redirect works for IPv4 and bracketed IPv6 hosts', async () => {
  const v4 = await call('/output_files/x.txt', { headers: { host: '192.0.2.7:8009' } });
  assert.equal(v4.headers.location, 'http://192.0.2.7:8010/x.txt');
  const v6 = await call('/output_files/x.txt', { headers: { host: '[::1]:8009' } });
  assert.equal(v6.status, 301);
  assert.equal(v6.headers.location, 'http://[::1]:8010/x.txt');
});

test('the /output_files/ redirect URL-escapes the file path', async () => {
  const utf8 = await call('/output_files/r%C3%A9sum%C3%A9/%E2%9C%93.txt', { headers: { host: 'example.org' } });
  assert.equal(utf8.headers.location, 'http://example.org:8010/r%C3%A9sum%C3%A9/%E2%9C%93.txt');
  const special = await call('/output_files/a%3Cb%3E%22c%23d%3Fe.txt', { headers: { host: 'example.org' } });
  assert.equal(special.status, 301);
  const location = new URL(String(special.headers.location));
  assert.equal(location.host, 'example.org:8010');
  assert.equal(decodeURIComponent(location.pathname), '/a<b>"c#d?e.txt');
  assert.equal(location.search, '');
  assert.equal(location.hash, '');
});

test('an encoded CR LF in the file path cannot inject a header', async () => {
  const res = await call('/output_files/a%0d%0aSet-Cookie:%20x=1', { headers: { host: 'example.org' } });
  assert.ok(res.status === 301 || res.status === 400, `answered ${res.status}`);
  assert.equal(res.headers['set-cookie'], undefined);
  if (res.status === 301) assert.equal(new URL(String(res.headers.location)).host, 'example.org:8010');
});

test('the /output_files/ redirect goes to the --file-server-port', async () => {
  const other = await startServer({ fileServerPort: 9123, allowedHosts: ['example.org'] });
  try {
    const res = await request(other.url, '/output_files/x/y.txt', { headers: { host: 'example.org:8009' } });
    assert.equal(res.status, 301);
    assert.equal(res.headers.location, 'http://example.org:9123/x/y.txt');
  } finally {
    await other.close();
  }
});

for (const path of [
  '/output_files/../etc/passwd',
  '/output_files/a/../../etc/passwd',
  '/output_files/a/..',
  '/output_files/..',
  '/output_files/%2e%2e/etc/passwd',
  '/output_files/a/%2E%2E/b',
  '/output_files/%2e%2e',
  '/output_files/..%2fetc%2fpasswd',
  '/output_files/a%2f..%2fb',
  '/output_files/..%5cwin.ini',
  '/output_files/a/.%2e/b',
]) {
  test(`GET ${path} is 400 and redirects nowhere`, async () => {
    const res = await call(path, { headers: { host: 'example.org:8009' } });
    assert.equal(res.status, 400, `${path} answered ${res.status} ${res.headers.location ?? ''}`);
    assert.equal(res.headers.location, undefined);
    assert.equal(res.headers['content-type'], JSON_TYPE);
    assert.equal(res.json.status, 'fail');
  });
}

for (const host of [
  'example.org@evil.example',
  'example.org:8009@evil.example',
  'example.org:@evil.example',
  'example.org\\@evil.example',
  'example.org/@evil.example',
  'example.org#@evil.example',
  'example.org?@evil.example',
  'example.org%40evil.example',
  'example.org/.evil.example',
  'example.org,evil.example',
  'example.org evil.example',
  'example.org:8009/evil.example',
  'example.org:evil.example',
]) {
  test(`a hostile Host header ${JSON.stringify(host)} never redirects to another host`, async () => {
    const res = await call('/output_files/x.txt', { headers: { host } });
    assert.ok(res.status === 301 || res.status === 400 || res.status === 403, `answered ${res.status}`);
    if (res.status === 301) {
      const location = String(res.headers.location);
      assert.equal(new URL(location).hostname, 'example.org', `Location: ${location}`);
    } else {
      assert.equal(res.headers.location, undefined);
    }
  });
}

/** One request written byte for byte on a socket (the HTTP client always adds a Host header). */
function rawRequest(head: string): Promise<string> {
  const { port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    let data = '';
    const socket = connect(Number(port), '127.0.0.1', () => socket.write(head));
    socket.on('data', (chunk) => (data += chunk));
    socket.on('end', () => resolve(data));
    socket.on('error', reject);
  });
}

for (const [what, head] of [
  ['an empty Host header', 'GET /output_files/x.txt HTTP/1.1\r\nHost:\r\nConnection: close\r\n\r\n'],
  ['no Host header (HTTP/1.0)', 'GET /output_files/x.txt HTTP/1.0\r\n\r\n'],
  ['no Host header (HTTP/1.1)', 'GET /output_files/x.txt HTTP/1.1\r\nConnection: close\r\n\r\n'],
]) {
  test(`${what} gets a 400 (403 for an empty name) and no redirect`, async () => {
    const answer = await rawRequest(head);
    assert.match(answer, /^HTTP\/1\.[01] 40[03] /);
    assert.doesNotMatch(answer.split('\r\n\r\n')[0], /^location:/im);
  });
}

test('X-Forwarded-Host cannot change the redirect host', async () => {
  const res = await call('/output_files/x.txt', { headers: { host: 'example.org:8009', 'x-forwarded-host': 'evil.example' } });
  assert.equal(res.status, 301);
  assert.equal(res.headers.location, 'http://example.org:8010/x.txt');
});
