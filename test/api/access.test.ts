import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { stat, readFile, writeFile, chmod } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { HTTP_MESSAGES } from '../../src/api/messages.ts';
import { start } from '../../src/index.ts';
import { assertFail, assertSuccess } from '../helpers/jsend.ts';
import { request, startServer, tempDir, type RequestOptions, type TestServer } from '../helpers/server.ts';

const names = async (url: string, headers: Record<string, string> = {}) =>
  assertSuccess(await request(url, '/api/v1/sessions/', { headers })).map((s: { name: string }) => s.name);

describe('Host check (DNS rebinding)', () => {
  let server: TestServer;
  before(async () => (server = await startServer({ allowedHosts: ['assessd.lab.example', '.corp.example'] })));
  after(() => server.close());

  for (const host of ['attacker.example', 'attacker.example:8009', 'localhost.attacker.example', '127.0.0.1.nip.io', 'corp.example.attacker.example', 'xassessd.lab.example']) {
    test(`Host ${JSON.stringify(host)} is 403 "Host not allowed" on the API, the page, its files and the redirect`, async () => {
      for (const path of ['/api/v1/sessions/', '/', '/sessions', '/static/app.js', '/output_files/x.txt', '/debug/health', '/api/v1/nope']) {
        const res = await request(server.url, path, { headers: { host } });
        assertFail(res, 403, HTTP_MESSAGES.hostNotAllowed, `${host} ${path}`);
        assert.equal(res.headers.location, undefined);
        assert.doesNotMatch(res.text, /default session|<html/i, 'no data, no page');
      }
    });
  }

  test('a write with a foreign Host changes nothing', async () => {
    const res = await request(server.url, '/api/v1/sessions/', { method: 'POST', form: { name: 'rebound' }, headers: { host: 'attacker.example:8009' } });
    assertFail(res, 403, HTTP_MESSAGES.hostNotAllowed);
    assert.ok(!(await names(server.url)).includes('rebound'));
  });

  for (const host of [
    '127.0.0.1', '127.0.0.1:8009', '10.1.2.3:80', '[::1]:8009', '[fe80::1]', 'localhost', 'LOCALHOST:8009', 'localhost.',
    'app.localhost:8009', 'assessd.lab.example', 'ASSESSD.LAB.EXAMPLE:8009', 'corp.example', 'a.b.corp.example:8009',
    `${hostname()}:8009`,
  ]) {
    test(`Host ${JSON.stringify(host)} is allowed`, async () => {
      assert.equal((await request(server.url, '/api/v1/sessions/', { headers: { host } })).status, 200);
    });
  }

  test('the redirect names the allowed host it was asked by, never another', async () => {
    const res = await request(server.url, '/output_files/r.html', { headers: { host: 'assessd.lab.example:8009' } });
    assert.equal(res.status, 301);
    assert.equal(res.headers.location, 'http://assessd.lab.example:8010/r.html');
  });

  test('--allowed-hosts * turns the check off', async () => {
    const open = await startServer({ allowedHosts: '*' });
    try {
      assert.equal((await request(open.url, '/api/v1/sessions/', { headers: { host: 'anything.example' } })).status, 200);
    } finally {
      await open.close();
    }
  });
});

describe('cross-origin writes', () => {
  let server: TestServer;
  before(async () => (server = await startServer()));
  after(() => server.close());

  const origin = () => server.url; // http://127.0.0.1:PORT, what the request's Host names
  const foreign: [string, Record<string, string>][] = [
    ['a foreign Origin', { origin: 'http://evil.example' }],
    ['another port', { origin: 'http://127.0.0.1:1' }],
    ['another scheme', { origin: '' }],
    ['Origin null', { origin: 'null' }],
    ['Sec-Fetch-Site: cross-site', { 'sec-fetch-site': 'cross-site' }],
    ['Sec-Fetch-Site: same-site', { 'sec-fetch-site': 'same-site' }],
  ];
  const headersFor = (headers: Record<string, string>) =>
    headers.origin === '' ? { origin: origin().replace('http:', 'https:') } : headers;

  async function snapshot() {
    const sessions = assertSuccess(await request(server.url, '/api/v1/sessions/'));
    const targets = assertSuccess(await request(server.url, '/api/v1/targets/?session_id=1'));
    const config = assertSuccess(await request(server.url, '/api/v1/configuration?key=THREADS'));
    return JSON.stringify({ sessions, targets, config });
  }

  before(async () => {
    await request(server.url, '/api/v1/targets/', { method: 'POST', form: { target_url: 'http://kept.example/' } });
  });

  for (const [what, headers] of foreign) {
    test(`${what}: POST, PATCH and DELETE are 403 "Cross-origin request refused" and change nothing`, async () => {
      const before = await snapshot();
      const writes: [string, RequestOptions][] = [
        ['/api/v1/sessions/', { method: 'POST', form: { name: 'csrf' } }],
        ['/api/v1/targets/', { method: 'POST', form: { target_url: 'http://csrf.example/' } }],
        ['/api/v1/sessions/1/activate', { method: 'PATCH' }],
        ['/api/v1/configuration/', { method: 'PATCH', form: { THREADS: '99' } }],
        ['/api/v1/targets/1', { method: 'DELETE' }],
        ['/api/v1/sessions/1', { method: 'DELETE' }],
      ];
      for (const [path, options] of writes) {
        const res = await request(server.url, path, { ...options, headers: headersFor(headers) });
        assertFail(res, 403, HTTP_MESSAGES.crossOrigin, `${options.method} ${path}`);
        assert.equal(Object.keys(res.headers).filter((h) => h.startsWith('access-control-')).length, 0);
      }
      assert.equal(await snapshot(), before);
    });
  }

  test('same-origin writes, Sec-Fetch-Site none (typed address), and curl-style writes (neither header) pass', async () => {
    assertSuccess(await request(server.url, '/api/v1/sessions/', { method: 'POST', form: { name: 'same origin' }, headers: { origin: origin() } }), 201);
    assertSuccess(await request(server.url, '/api/v1/sessions/', { method: 'POST', form: { name: 'sfs same' }, headers: { 'sec-fetch-site': 'same-origin', origin: origin() } }), 201);
    assertSuccess(await request(server.url, '/api/v1/sessions/', { method: 'POST', form: { name: 'sfs none' }, headers: { 'sec-fetch-site': 'none' } }), 201);
    assertSuccess(await request(server.url, '/api/v1/sessions/', { method: 'POST', form: { name: 'curl' } }), 201);
  });

  test('the default port written or not is one origin (scheme, host and port compared); anything past the port is not an origin', async () => {
    const write = (host: string, origin: string, name: string) => request(server.url, '/api/v1/sessions/', { method: 'POST', form: { name }, headers: { host, origin } });
    assertSuccess(await write('localhost', 'http://localhost:80', 'default port in the Origin'), 201);
    assertSuccess(await write('localhost:80', 'http://localhost', 'default port in the Host'), 201);
    for (const origin of ['http://localhost:80/', 'http://localhost/x', 'http://localhost:8080', 'https://localhost:80']) {
      assertFail(await write('localhost', origin, `refused ${origin}`), 403, HTTP_MESSAGES.crossOrigin);
    }
  });

  test('reads are not refused for their Origin, and no Access-Control-Allow-* header is ever sent', async () => {
    for (const headers of [{ origin: 'http://evil.example' }, { 'sec-fetch-site': 'cross-site' }] as Record<string, string>[]) {
      const res = await request(server.url, '/api/v1/sessions/', { headers });
      assert.equal(res.status, 200);
      assert.deepEqual(Object.keys(res.headers).filter((h) => h.startsWith('access-control-')), []);
    }
    const preflight = await request(server.url, '/api/v1/sessions/', { method: 'OPTIONS', headers: { origin: 'http://evil.example', 'access-control-request-method': 'DELETE' } });
    assert.deepEqual(Object.keys(preflight.headers).filter((h) => h.startsWith('access-control-')), []);
  });
});

describe('token', () => {
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

  test('beyond loopback a token is generated (43 base64url characters), kept in DATA_DIR/token with mode 0600, and reused', async () => {
    const dataDir = await tempDir();
    const first = await start({ host: '0.0.0.0', port: 0, dataDir, log: () => {} });
    let token: string;
    try {
      token = (await readFile(join(dataDir, 'token'), 'utf8')).trim();
      assert.match(token, /^[A-Za-z0-9_-]{43}$/);
      assert.equal(first.token, token);
      assert.equal((await stat(join(dataDir, 'token'))).mode & 0o777, 0o600);
      assert.equal(first.loginUrl, `http://127.0.0.1:${first.port}/?token=${token}`);
      const url = `http://127.0.0.1:${first.port}`;
      assertFail(await request(url, '/api/v1/sessions/'), 401, HTTP_MESSAGES.authenticationRequired);
      assert.deepEqual(await names(url, bearer(token)), ['default session']);
    } finally {
      await first.close();
    }
    const again = await start({ host: '0.0.0.0', port: 0, dataDir, log: () => {} });
    try {
      assert.equal(again.token, token, 'the same token after a restart');
      assert.equal((await request(`http://127.0.0.1:${again.port}`, '/api/v1/sessions/', { headers: bearer(token) })).status, 200);
    } finally {
      await again.close();
    }
  });

  test('on loopback too a token is generated and required (the API runs programs); --no-token serves loopback without one, with a warning, and is refused beyond it', async () => {
    const dataDir = await tempDir();
    const local = await start({ port: 0, dataDir, log: () => {} });
    try {
      assert.ok(local.token && local.token.length >= 43);
      assert.equal((await stat(join(dataDir, 'token'))).mode & 0o777, 0o600);
      assert.equal(local.loginUrl, `${local.url}/?token=${encodeURIComponent(local.token)}`);
      const refused = await request(local.url, '/api/v1/sessions/');
      assert.equal(refused.status, 401);
      assert.equal(refused.json.message, 'Authentication required');
      assert.equal((await request(local.url, '/api/v1/sessions/', { headers: { authorization: `Bearer ${local.token}` } })).status, 200);
    } finally {
      await local.close();
    }
    const logs: string[] = [];
    const open = await start({ port: 0, dataDir, noToken: true, log: (l) => logs.push(l) });
    try {
      assert.equal(open.token, undefined);
      assert.equal((await request(open.url, '/api/v1/sessions/')).status, 200);
      assert.match(logs.join('\n'), /warning: serving 127\.0\.0\.1 without a token/);
    } finally {
      await open.close();
    }
    await assert.rejects(start({ host: '0.0.0.0', port: 0, dataDir, noToken: true, log: () => {} }), (err: NodeJS.ErrnoException) => {
      assert.equal(err.code, 'ERR_INVALID_OPTION');
      assert.match(err.message, /noToken is for a loopback host only/);
      return true;
    });
  });

  test('a token file others can read is narrowed to 0600; one holding no token stops the start naming it', async () => {
    const dataDir = await tempDir();
    await writeFile(join(dataDir, 'token'), 'kept-token-123\n', { mode: 0o644 });
    await chmod(join(dataDir, 'token'), 0o644);
    const logs: string[] = [];
    const server = await start({ host: '0.0.0.0', port: 0, dataDir, log: (l) => logs.push(l) });
    await server.close();
    assert.equal(server.token, 'kept-token-123');
    assert.equal((await stat(join(dataDir, 'token'))).mode & 0o777, 0o600);
    assert.match(logs.join('\n'), /mode is now 0600/);
    await writeFile(join(dataDir, 'token'), '   \n');
    await assert.rejects(start({ host: '0.0.0.0', port: 0, dataDir, log: () => {} }), (err: NodeJS.ErrnoException) => {
      assert.equal(err.code, 'ERR_DATA_FILE');
      assert.ok(err.message.includes(join(dataDir, 'token')));
      return true;
    });
  });

  describe('with a token', () => {
    const token = 'correct-horse-battery-staple-0123456789';
    let server: TestServer;
    before(async () => (server = await startServer({ token })));
    after(() => server.close());

    test('every API request without it is 401 "Authentication required" with WWW-Authenticate, and changes nothing', async () => {
      const calls: [string, RequestOptions][] = [
        ['/api/v1/sessions/', {}],
        ['/api/v1/sessions/1', {}],
        ['/api/v1/targets/', {}],
        ['/api/v1/configuration', {}],
        ['/debug/stats', {}],
        ['/api/v1/nope', {}],
        ['/output_files/x.txt', {}],
        ['/api/v1/auth', {}],
        ['/api/v1/sessions/', { method: 'POST', form: { name: 'no token' } }],
        ['/api/v1/configuration/', { method: 'PATCH', form: { THREADS: '7' } }],
        ['/api/v1/sessions/1', { method: 'DELETE' }],
        ['/debug/health', { method: 'POST' }],
      ];
      for (const credentials of [{}, bearer('wrong'), bearer(token.slice(0, -1)), bearer(`${token}x`), bearer(`${token} junk`), { authorization: `Basic ${token}` }, { cookie: `assessd-${server.port}=${token}` }] as Record<string, string>[]) {
        for (const [path, options] of calls) {
          const res = await request(server.url, path, { ...options, headers: credentials });
          assertFail(res, 401, HTTP_MESSAGES.authenticationRequired, `${options.method ?? 'GET'} ${path} ${JSON.stringify(credentials)}`);
          assert.equal(res.headers['www-authenticate'], 'Bearer realm="assessd"');
        }
      }
      assert.deepEqual(await names(server.url, bearer(token)), ['default session']);
      assert.equal(assertSuccess(await request(server.url, '/api/v1/configuration?key=THREADS', { headers: bearer(token) }))[0].dirty, false);
    });

    test('health (GET, HEAD), the page and its static files stay open', async () => {
      assertSuccess(await request(server.url, '/debug/health'));
      assert.equal((await request(server.url, '/debug/health', { method: 'HEAD' })).status, 200);
      for (const path of ['/', '/sessions', '/targets?session=2', '/static/app.js', '/static/app.css']) {
        assert.equal((await request(server.url, path)).status, 200, path);
      }
    });

    test('with the bearer token everything works (any case of "Bearer")', async () => {
      assertSuccess(await request(server.url, '/api/v1/sessions/', { method: 'POST', form: { name: 'with token' }, headers: bearer(token) }), 201);
      assert.ok((await names(server.url, { authorization: `bearer ${token}` })).includes('with token'));
      assert.deepEqual(assertSuccess(await request(server.url, '/api/v1/auth', { headers: bearer(token) })), { token_required: true });
    });

    test('the login: POST /api/v1/auth with the token sets an HttpOnly SameSite=Strict cookie that then works; a wrong one is 401', async () => {
      const wrong = await request(server.url, '/api/v1/auth', { method: 'POST', form: { token: 'nope' } });
      assertFail(wrong, 401, HTTP_MESSAGES.invalidToken);
      assert.equal(wrong.headers['set-cookie'], undefined);
      assertFail(await request(server.url, '/api/v1/auth', { method: 'POST' }), 401, HTTP_MESSAGES.invalidToken);
      const login = await request(server.url, '/api/v1/auth', { method: 'POST', form: { token } });
      assert.deepEqual(assertSuccess(login), { token_required: true });
      const [cookie] = login.headers['set-cookie'] ?? [];
      assert.match(cookie, new RegExp(`^assessd-${server.port}=[A-Za-z0-9_-]+; Path=/; HttpOnly; SameSite=Strict; Max-Age=\\d+$`));
      const pair = cookie.split(';')[0];
      assert.ok(!pair.includes(token), 'the cookie is not the token itself');
      assert.equal((await request(server.url, '/api/v1/sessions/', { headers: { cookie: `other=1; ${pair}` } })).status, 200);
      // a cross-origin login is refused like any write: no login CSRF
      assertFail(await request(server.url, '/api/v1/auth', { method: 'POST', form: { token }, headers: { origin: 'http://evil.example' } }), 403, HTTP_MESSAGES.crossOrigin);
      const logout = await request(server.url, '/api/v1/auth', { method: 'DELETE', headers: { cookie: pair } });
      assertSuccess(logout);
      assert.match(logout.headers['set-cookie']?.[0] ?? '', new RegExp(`^assessd-${server.port}=; .*Max-Age=0`));
    });

    test('refused tokens are logged: the first at once, then at most one line a minute, never the token', async () => {
      const fresh = await startServer({ token });
      try {
        for (let i = 0; i < 20; i++) await request(fresh.url, '/api/v1/sessions/', { headers: bearer(`guess-${i}`) });
        const lines = fresh.logs.filter((l) => l.startsWith('refused'));
        assert.equal(lines.length, 1, lines.join('\n'));
        assert.match(lines[0], /refused a wrong token \(GET \/api\/v1\/sessions\/\) from 127\.0\.0\.1/);
        assert.ok(fresh.logs.every((l) => !l.includes(token)));
      } finally {
        await fresh.close();
      }
    });

    test('a login ends: Log out ends that browser\'s login for good (its cookie value no longer works anywhere), not the others; a restart keeps a login; a new token ends them all', async () => {
      const dataDir = await tempDir();
      let own = await startServer({ token, dataDir });
      const logIn = async (url: string) => {
        const login = await request(url, '/api/v1/auth', { method: 'POST', form: { token }, auth: false });
        return login.headers['set-cookie']![0]!.split(';')[0]!;
      };
      // the cookie's name is the server's port: a restart here gets another port, a user's keeps its own
      const works = async (url: string, pair: string) => {
        const cookie = pair.replace(/^assessd-\d+=/, `assessd-${new URL(url).port}=`);
        return (await request(url, '/api/v1/sessions/', { headers: { cookie }, auth: false })).status === 200;
      };
      try {
        const [one, two] = [await logIn(own.url), await logIn(own.url)];
        assert.notEqual(one, two, 'each login its own value');
        assert.ok((await works(own.url, one)) && (await works(own.url, two)));
        assertSuccess(await request(own.url, '/api/v1/auth', { method: 'DELETE', headers: { cookie: one }, auth: false }));
        assert.equal(await works(own.url, one), false, 'the value a logged-out browser held (and any server it went to) no longer works');
        assert.ok(await works(own.url, two), 'another browser stays logged in');
        await own.stop();
        own = await startServer({ token, dataDir });
        assert.ok(await works(own.url, two), 'a restart keeps a login');
        assert.equal(await works(own.url, one), false, 'and keeps the logout');
        assert.equal((await stat(join(dataDir, 'logins'))).mode & 0o777, 0o600);
        assert.ok(!(await readFile(join(dataDir, 'logins'), 'utf8')).includes(two.split('=')[1]!), 'the file holds digests, not the cookies');
        await own.stop();
        own = await startServer({ token: `${token}-new`, dataDir });
        assert.equal(await works(own.url, two), false, 'a new token ends every login');
      } finally {
        await own.close();
      }
    });

    test('the token tried in an API request\'s query (as the login URL carries it) is refused and not written to the log', async () => {
      const fresh = await startServer({ token });
      try {
        assert.equal((await request(fresh.url, `/api/v1/sessions/?token=${token}`, { auth: false })).status, 401);
        const lines = fresh.logs.filter((l) => l.startsWith('refused'));
        assert.equal(lines.length, 1, lines.join('\n'));
        assert.match(lines[0], /refused a request without the token \(GET \/api\/v1\/sessions\/\?…\) from 127\.0\.0\.1/);
        assert.ok(fresh.logs.every((l) => !l.includes(token)), fresh.logs.join('\n'));
      } finally {
        await fresh.close();
      }
    });

    test("a proxy's Basic Authorization header does not hide the login cookie", async () => {
      const login = await request(server.url, '/api/v1/auth', { method: 'POST', form: { token } });
      const pair = (login.headers['set-cookie'] ?? [])[0].split(';')[0];
      assert.equal((await request(server.url, '/api/v1/sessions/', { headers: { cookie: pair, authorization: 'Basic dXNlcjpwYXNz' } })).status, 200);
      assert.equal((await request(server.url, '/api/v1/sessions/', { headers: { authorization: 'Basic dXNlcjpwYXNz' } })).status, 401);
      // a wrong Bearer is a wrong credential, whatever cookie comes with it
      assert.equal((await request(server.url, '/api/v1/sessions/', { headers: { cookie: pair, authorization: 'Bearer wrong' } })).status, 401);
    });
  });

  test('without a token configured, GET /api/v1/auth says so and POST is a harmless no-op', async () => {
    const server = await startServer();
    try {
      assert.deepEqual(assertSuccess(await request(server.url, '/api/v1/auth')), { token_required: false });
      assert.deepEqual(assertSuccess(await request(server.url, '/api/v1/auth', { method: 'POST', form: { token: 'x' } })), { token_required: false });
    } finally {
      await server.close();
    }
  });

});
