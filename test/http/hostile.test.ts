import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { failingDisk, journalWrites } from '../helpers/failing-fs.ts';
import { request, startServer, type TestServer } from '../helpers/server.ts';
import { harOf } from '../evidence/helpers.ts';

let server: TestServer;
// good.example stands for a name the user allowed (--allowed-hosts)
before(async () => (server = await startServer({ maxBody: 1024, headersTimeout: 400, requestTimeout: 1500, allowedHosts: ['good.example'] })));
after(() => server.close());

/** Sends raw bytes, returns everything the server answers until it closes (or `waitMs` passes). */
function raw(data: string | Buffer, { waitMs = 3000, keepOpen = false } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(server.port, '127.0.0.1');
    let out = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(out);
    }, waitMs);
    socket.on('data', (chunk) => (out += chunk.toString('latin1')));
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(out);
    });
    socket.on('error', reject);
    socket.write(data);
    if (!keepOpen) socket.end();
  });
}

function parse(response: string) {
  const [head, body] = response.split('\r\n\r\n');
  return { status: Number(head.split(' ')[1]), head, body, json: body ? JSON.parse(body) : undefined };
}

test('a declared body over the limit is refused 413 at once, before it is sent', async () => {
  const res = parse(
    await raw('POST /api/v1/sessions/ HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 5000000\r\n\r\n', { keepOpen: true }),
  );
  assert.equal(res.status, 413);
  assert.deepEqual(res.json, { status: 'fail', message: 'Request body too large', code: 413 });
  assert.match(res.head, /connection: close/i);
});

test('a chunked body growing over the limit is refused 413', async () => {
  const chunk = 'name=' + 'x'.repeat(2000);
  const res = parse(
    await raw(`POST /api/v1/sessions/ HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n${chunk.length.toString(16)}\r\n${chunk}\r\n`, { keepOpen: true }),
  );
  assert.equal(res.status, 413);
  assert.equal((await request(server.url, '/api/v1/sessions/')).json.data.length, 1, 'nothing was created');
});

test('a body within the limit, chunked, is read', async () => {
  const body = 'name=chunked';
  const res = parse(await raw(`POST /api/v1/sessions/ HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`, { keepOpen: true }));
  assert.equal(res.status, 201);
  const names = (await request(server.url, '/api/v1/sessions/')).json.data.map((s: { name: string }) => s.name);
  assert.ok(names.includes('chunked'));
});

test('a request line over 8 KiB is 414, headers over 16 KiB are 431, both JSON', async () => {
  const long = await request(server.url, `/api/v1/sessions/?x=${'a'.repeat(9000)}`);
  assert.equal(long.status, 414);
  assert.equal(long.json.message, 'Request URI too long');
  const big = parse(await raw(`GET /debug/health HTTP/1.1\r\nHost: localhost\r\nX-Big: ${'b'.repeat(20000)}\r\n\r\n`));
  assert.equal(big.status, 431);
  assert.equal(big.json.code, 431);
});

test('a request line past node\'s 16 KiB head limit is still 414 (the request line is what is too long); a long header after a short line still 431', async () => {
  for (const length of [17_000, 70_000]) {
    const line = `GET /api/v1/sessions/?x=${'a'.repeat(length)} HTTP/1.1\r\nHost: localhost\r\n\r\n`;
    const whole = parse(await raw(line));
    assert.equal(whole.status, 414, `${length}: ${whole.status}`);
    assert.equal(whole.json.message, 'Request URI too long');
  }
  const big = parse(await raw(`GET /debug/health HTTP/1.1\r\nHost: localhost\r\nX-Big: ${'b'.repeat(70_000)}\r\n\r\n`));
  assert.equal(big.status, 431);
});

test('Content-Length together with Transfer-Encoding is refused 400 (no request smuggling)', async () => {
  const res = parse(
    await raw('POST /api/v1/sessions/ HTTP/1.1\r\nHost: localhost\r\nContent-Length: 9\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /debug/health HTTP/1.1\r\nHost: localhost\r\n\r\n'),
  );
  assert.equal(res.status, 400);
  assert.equal(res.json.status, 'fail');
  assert.equal((await request(server.url, '/debug/health')).status, 200);
});

test('a client too slow to send its headers gets 408 and is disconnected', async () => {
  const started = Date.now();
  const out = await raw('GET /debug/health HTTP/1.1\r\nHost: localhost\r\n', { keepOpen: true, waitMs: 5000 });
  assert.match(out, /^HTTP\/1\.1 408 /);
  assert.ok(Date.now() - started < 4500, 'closed by the server, not by the test');
});

test('a stalled upload blocks neither other requests nor writes', async () => {
  const stalled = raw('POST /api/v1/sessions/ HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\nname=sl', { keepOpen: true, waitMs: 3000 });
  await new Promise((r) => setTimeout(r, 50));
  const created = await request(server.url, '/api/v1/sessions/', { method: 'POST', form: { name: 'not blocked' } });
  assert.equal(created.status, 201);
  assert.equal((await request(server.url, '/api/v1/configuration/', { method: 'PATCH', form: { THREADS: '2' } })).status, 200);
  const timedOut = await stalled;
  assert.match(timedOut, /^HTTP\/1\.1 408 /, 'the stalled upload is cut off by the request timeout');
  // this server's headers time limit is 400 ms: on a loaded machine (a fresh-clone CI run) a plain
  // GET can itself be a 408; asked again then
  let list = await request(server.url, '/api/v1/sessions/');
  for (let i = 0; i < 3 && list.status === 408; i++) list = await request(server.url, '/api/v1/sessions/');
  assert.equal(list.status, 200, list.text);
  const names = list.json.data.map((s: { name: string }) => s.name);
  assert.ok(!names.includes('sl'));
});

test('malformed percent-encoding matches nothing (404 under /api, the page elsewhere); NUL and control characters never match an id', async () => {
  const bad = await request(server.url, '/api/v1/sessions/%E0%A4%A');
  assert.equal(bad.status, 404);
  assert.deepEqual(bad.json, { status: 'fail', message: 'Not found', code: 404 });
  const page = await request(server.url, '/%zz/%');
  assert.equal(page.status, 200);
  assert.match(String(page.headers['content-type']), /^text\/html/);
  for (const path of ['/api/v1/sessions/1%00', '/api/v1/sessions/%00', '/api/v1/sessions/1%0A', '/api/v1/targets/%7F']) {
    const res = await request(server.url, path);
    assert.equal(res.status, 404, path);
    assert.equal(res.json.message, 'Not found');
  }
  const ctl = parse(await raw('GET /api/v1/sessions/\x01 HTTP/1.1\r\nHost: localhost\r\n\r\n'));
  assert.equal(ctl.status, 400);
});

test('ids beyond Number.MAX_SAFE_INTEGER are unknown ids; negative and decimal ids do not match', async () => {
  const huge = '9007199254740993';
  assert.equal((await request(server.url, `/api/v1/sessions/${huge}`)).json.message, 'Invalid session id provided');
  assert.equal((await request(server.url, `/api/v1/sessions/${huge}/activate`, { method: 'PATCH' })).json.message, 'Invalid parameter type provided');
  assert.equal((await request(server.url, `/api/v1/sessions/${huge}`, { method: 'DELETE' })).json.message, 'Invalid session id provided');
  assert.equal((await request(server.url, `/api/v1/targets/${'9'.repeat(400)}`)).json.message, 'Invalid target reference provided');
  const add = await request(server.url, '/api/v1/sessions/1/add', { method: 'PATCH', form: { target_id: huge } });
  assert.equal(add.json.message, 'Invalid target reference provided');
  for (const path of ['/api/v1/sessions/-1', '/api/v1/sessions/1.5', '/api/v1/targets/-2', '/api/v1/targets/1e3']) {
    assert.equal((await request(server.url, path)).status, 404, path);
  }
});

test('no path leaves the served folder: static, output files and the page handler', async () => {
  for (const path of ['/static/../package.json', '/static/%2e%2e/package.json', '/static/..%2fpackage.json', '/static/%2e%2e%2f%2e%2e%2fetc%2fpasswd', '/static/./app.js/..']) {
    const res = await request(server.url, path);
    assert.equal(res.status, 404, path);
    assert.equal(res.json.message, 'Not found');
  }
  for (const path of ['/output_files/../etc/passwd', '/output_files/%2e%2e/x', '/output_files/a/..%2f..%2fb', '/output_files/..%5c..%5cwin.ini']) {
    const res = await request(server.url, path);
    assert.equal(res.status, 400, path);
    assert.equal(res.headers.location, undefined);
  }
  const page = await request(server.url, '/../../etc/passwd');
  assert.equal(page.status, 200);
  assert.match(String(page.headers['content-type']), /^text\/html/);
  assert.doesNotMatch(page.text, /root:/);
});

test('/output_files/ keeps the file path exactly, trailing slash included, and needs one', async () => {
  assert.equal((await request(server.url, '/output_files/dir/')).headers.location, `http://127.0.0.1:8010/dir/`);
  for (const path of ['/output_files', '/output_files/']) assert.equal((await request(server.url, path)).status, 404, path);
});

test('two Host headers are refused: a redirect could otherwise name a host the client did not mean', async () => {
  const res = parse(await raw('GET /output_files/x HTTP/1.1\r\nHost: good.example\r\nHost: evil.example\r\nConnection: close\r\n\r\n'));
  assert.equal(res.status, 400);
  assert.doesNotMatch(res.head, /location:/i);
});

test('a non-form body is refused (415) only where arguments are read, after the checks before it', async () => {
  const json = { body: '{"name":"x"}', headers: { 'content-type': 'application/json' } };
  assert.equal((await request(server.url, '/api/v1/sessions/', { method: 'POST', ...json })).status, 415);
  assert.equal((await request(server.url, '/api/v1/sessions/99', { method: 'DELETE', ...json })).json.message, 'Invalid session id provided');
  assert.equal((await request(server.url, '/api/v1/sessions/1/foo', { method: 'GET', ...json })).json.message, 'Action must be None');
  assert.equal((await request(server.url, '/debug/health', json)).status, 200);
});

test('/output_files/ never redirects to another host than the request named', async () => {
  for (const host of ['evil.example@good.example', 'good.example/evil.example', 'good.example\\evil', '', 'a b', '//evil.example']) {
    const res = parse(await raw(`GET /output_files/x HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`));
    assert.ok(res.status === 400 || res.status === 403, `Host ${JSON.stringify(host)} gave ${res.status}`);
    assert.doesNotMatch(res.head, /location:/i);
  }
  const ok = await request(server.url, '/output_files/%2F%2Fevil.example/x', { headers: { Host: 'good.example:8009' } });
  assert.equal(ok.status, 301);
  assert.equal(ok.headers.location, 'http://good.example:8010/%2F%2Fevil.example/x');
  const absolute = parse(await raw('GET http://evil.example/output_files/x HTTP/1.1\r\nHost: good.example\r\nConnection: close\r\n\r\n'));
  assert.match(absolute.head, /location: http:\/\/good\.example:8010\/x/i);
});

test('security headers on every kind of answer, and no banner', async () => {
  const answers = await Promise.all([
    request(server.url, '/debug/health'),
    request(server.url, '/api/v1/nope'),
    request(server.url, '/api/v1/sessions/', { method: 'PUT' }),
    request(server.url, '/'),
    request(server.url, '/static/app.js'),
    request(server.url, '/output_files/x'),
    request(server.url, '/api/v1/sessions/', { method: 'POST', body: 'x'.repeat(2000), headers: { 'content-type': 'application/x-www-form-urlencoded' } }),
  ]);
  for (const res of answers) {
    assert.equal(res.headers['x-content-type-options'], 'nosniff');
    assert.equal(res.headers['referrer-policy'], 'no-referrer');
    assert.equal(res.headers.server, undefined);
    assert.equal(res.headers['x-powered-by'], undefined);
  }
  for (const res of [answers[0], answers[1], answers[2], answers[6]]) assert.equal(res.headers['cache-control'], 'no-store');
  const page = answers[3];
  assert.equal(page.headers['x-frame-options'], 'SAMEORIGIN');
  const csp = String(page.headers['content-security-policy']);
  assert.match(csp, /script-src 'self'(;|$)/);
  assert.match(csp, /frame-ancestors 'self'/);
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
});

test('a write that cannot be made durable answers 500 to its whole batch, is rolled back, and the server recovers', async () => {
  const disk = failingDisk();
  const broken = await startServer({ fs: disk.fs });
  try {
    disk.fail('EIO');
    const answers = await Promise.all([
      request(broken.url, '/api/v1/sessions/', { method: 'POST', form: { name: 'doomed 1' } }),
      request(broken.url, '/api/v1/sessions/', { method: 'POST', form: { name: 'doomed 2' } }),
      request(broken.url, '/api/v1/configuration/', { method: 'PATCH', form: { THREADS: '99' } }),
    ]);
    for (const res of answers) {
      assert.equal(res.status, 500);
      assert.deepEqual(res.json, { status: 'error', message: 'Internal server error', code: 500 });
      assert.doesNotMatch(res.text, /EIO|\/tmp|at /);
    }
    assert.match(broken.logs.join('\n'), /EIO/, 'the details go to the log');
    assert.deepEqual((await request(broken.url, '/api/v1/sessions/')).json.data, [{ id: 1, name: 'default session', active: true }]);
    assert.equal((await request(broken.url, '/api/v1/configuration?key=THREADS')).json.data[0].value, '1');
    assert.equal((await request(broken.url, '/debug/health')).status, 200);
    disk.fail(undefined);
    assert.equal((await request(broken.url, '/api/v1/sessions/', { method: 'POST', form: { name: 'doomed 1' } })).status, 201);
  } finally {
    await broken.stop();
  }
  const reopened = await startServer({ dataDir: broken.dataDir });
  try {
    const names = (await request(reopened.url, '/api/v1/sessions/')).json.data.map((s: { name: string }) => s.name);
    assert.deepEqual(names, ['default session', 'doomed 1']);
  } finally {
    await reopened.close();
  }
});

test('32 concurrent writers share fsyncs: well under one per acknowledged write', async () => {
  // a disk whose every journal write takes 50 ms: the writes that arrive meanwhile must wait and
  // share the next one (on a fast disk how many do depends on the machine's load, not on the code)
  const slow = await startServer({ fs: journalWrites(async (real, data, position) => {
    await sleep(50);
    await real(data, position);
  }) });
  try {
    const before = (await request(slow.url, '/debug/stats')).json.data.store;
    const results = [];
    for (let batch = 0; batch < 8; batch++) {
      results.push(...(await Promise.all(Array.from({ length: 32 }, (_, i) => request(slow.url, '/api/v1/sessions/', { method: 'POST', form: { name: `grouped ${batch}.${i}` } })))));
    }
    assert.ok(results.every((r) => r.status === 201));
    const afterStats = (await request(slow.url, '/debug/stats')).json.data.store;
    const acks = afterStats.acknowledged - before.acknowledged;
    const fsyncs = afterStats.fsyncs - before.fsyncs;
    assert.equal(acks, 256);
    assert.ok(fsyncs / acks < 0.5, `${fsyncs} fsyncs for ${acks} acknowledged writes`);
  } finally {
    await slow.close();
  }
});

/** Sends `head` then `pieces` one every `everyMs` on one connection; resolves with what came back once the server closed it. */
function trickle(head: string, pieces: Buffer[], everyMs: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(server.port, '127.0.0.1');
    let got = '';
    socket.on('data', (chunk) => (got += chunk));
    socket.on('error', () => {});
    socket.on('close', () => resolve(got));
    socket.write(head);
    let i = 0;
    const timer = setInterval(() => {
      if (i === pieces.length || socket.destroyed) return clearInterval(timer);
      socket.write(pieces[i++]);
    }, everyMs);
  });
}

test('a HAR import that keeps coming may take longer than the request time (1.5 s here): only a stall as long ends it, 408, nothing stored; a form body that keeps coming is still cut at the request time', async () => {
  await request(server.url, '/api/v1/targets/', { method: 'POST', form: { target_url: 'https://slow-upload.example/' } });
  const id = (await request(server.url, '/api/v1/targets/')).json.data.find((t: { target_url: string }) => t.target_url === 'https://slow-upload.example/').id;
  const har = Buffer.from(harOf(Array.from({ length: 12 }, (_, i) => ({ url: `https://slow-upload.example/page/${i}`, responseBody: `page ${i}` }))));
  const pieces = Array.from({ length: 12 }, (_, i) => har.subarray(Math.floor((i * har.length) / 12), Math.floor(((i + 1) * har.length) / 12)));
  const head = (path: string, length: number) => `POST ${path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\nConnection: close\r\n\r\n`;
  // 12 pieces 300 ms apart: ~3.6 s in all, never 1.5 s without a byte
  const steady = await trickle(head(`/api/v1/targets/${id}/transactions/`, har.length), pieces, 300);
  assert.match(steady, /^HTTP\/1\.1 201 /, steady.slice(0, 300));
  assert.match(steady, /"imported":12/);
  // half of it, then nothing
  const stalled = await trickle(head(`/api/v1/targets/${id}/transactions/`, har.length), pieces.slice(0, 6), 100);
  assert.match(stalled, /^HTTP\/1\.1 408 /, stalled.slice(0, 300));
  assert.equal((await request(server.url, `/api/v1/targets/${id}/transactions/`)).json.data.length, 12, 'the stalled import stored nothing');
  // a form body is read whole before its handler runs: the request's 1.5 s hold, however steadily it comes
  const form = Buffer.from(`name=${'x'.repeat(200)}`);
  const formPieces = Array.from({ length: 10 }, (_, i) => form.subarray(i * 20, i === 9 ? form.length : (i + 1) * 20));
  const slowForm = await trickle(head('/api/v1/sessions/', form.length).replace('application/json', 'application/x-www-form-urlencoded'), formPieces, 300);
  assert.match(slowForm, /^HTTP\/1\.1 408 /, slowForm.slice(0, 300));
});
