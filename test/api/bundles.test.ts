import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { BUNDLE_MESSAGES, HTTP_MESSAGES, MESSAGES } from '../../src/api/messages.ts';
import { DEFAULT_MAX_IMPORT_BODY } from '../../src/options.ts';
import { MAX_BUNDLE_DEPTH, MAX_OPEN_VALUES } from '../../src/store/bundle.ts';
import { assertFail, assertSuccess } from '../helpers/jsend.ts';
import { bundle, JSON_BODY, postBundle, storeBytes, visibleState, withoutId } from '../helpers/bundles.ts';
import { request, spawnServer, startServer, tempDir, type TestServer } from '../helpers/server.ts';

const form = (server: TestServer, method: string, path: string, fields: Record<string, string | string[]>) =>
  request(server.url, path, { method, form: fields });

/** Source box: "default session" (1, with 2 targets), "acme web" (2, active, 4 targets, one shared with session 1). */
async function seed(server: TestServer): Promise<void> {
  assert.equal((await form(server, 'POST', '/api/v1/targets/', { target_url: ['http://shared.example/', 'http://only-in-default.example/'] })).status, 201);
  assert.equal((await form(server, 'POST', '/api/v1/sessions/', { name: 'acme web' })).status, 201);
  assert.equal((await form(server, 'POST', '/api/v1/targets/', { target_url: ['https://app.acme.example/login', 'http://10.0.0.5:8080/x'] })).status, 201);
  assert.equal((await form(server, 'PATCH', '/api/v1/sessions/2/add', { target_id: '1' })).status, 200);
  assert.equal((await form(server, 'POST', '/api/v1/targets/', { target_url: 'https://[2001:db8::1]/admin' })).status, 201);
}

async function targetsOf(server: TestServer, sessionId: number): Promise<any[]> {
  return assertSuccess(await request(server.url, `/api/v1/targets/?session_id=${sessionId}`));
}

describe('export', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer();
    await seed(server);
  });
  after(() => server.close());

  test('GET /api/v1/bundles/<id> answers the session as a file: the fixed shape, not a JSend envelope', async () => {
    const res = await request(server.url, '/api/v1/bundles/2');
    assert.equal(res.status, 200);
    assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
    assert.equal(res.headers['content-disposition'], 'attachment; filename="acme-web.assessd.json"');
    assert.equal(res.headers['cache-control'], 'no-store');
    const body = res.json;
    assert.deepEqual(Object.keys(body), ['format', 'version', 'exported_at', 'session', 'targets']);
    assert.equal(body.format, 'assessd-session');
    assert.equal(body.version, 1);
    assert.match(body.exported_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.ok(Math.abs(Date.parse(body.exported_at) - Date.now()) < 60_000);
    assert.deepEqual(body.session, { name: 'acme web' });
  });

  test('the bundle holds each target full record, newest first, exactly as the targets list answers it, and its outputs', async () => {
    const { targets } = (await request(server.url, '/api/v1/bundles/2')).json;
    assert.deepEqual(targets.map(({ outputs: _outputs, ...target }: any) => target), await targetsOf(server, 2));
    assert.deepEqual(targets.map((t: any) => t.target_url), ['https://[2001:db8::1]/admin', 'http://10.0.0.5:8080/x', 'https://app.acme.example/login', 'http://shared.example/']);
    assert.equal(Object.keys(targets[0]).length, 15);
    assert.equal(Object.keys(targets[0]).at(-1), 'outputs');
    assert.deepEqual(targets.map((t: any) => t.outputs), [[], [], [], []], 'none run yet');
  });

  test('a session without targets exports an empty list', async () => {
    assert.equal((await form(server, 'POST', '/api/v1/sessions/', { name: 'empty' })).status, 201);
    assert.deepEqual((await request(server.url, '/api/v1/bundles/3')).json.targets, []);
  });

  test('an unknown session is 400 Invalid session id provided, as JSend', async () => {
    assertFail(await request(server.url, '/api/v1/bundles/999'), 400, MESSAGES.invalidSessionId);
    assertFail(await request(server.url, '/api/v1/bundles/99999999999999999999'), 400, MESSAGES.invalidSessionId);
  });

  test('the file name keeps ASCII letters, digits and .-_, collapses the rest, and falls back to the id', async () => {
    const names: [string, string][] = [
      ['Café déjà vu', 'Cafe-deja-vu'],
      ['../../etc/passwd', 'etc-passwd'],
      ['a  --  b__c..d', 'a-b-c-d'],
      ['"quoted"; evil=1', 'quoted-evil-1'],
      ['日本語', 'session-ID'],
      ['.hidden.', 'hidden'],
      ['x'.repeat(255), 'x'.repeat(100)],
    ];
    for (const [name, stem] of names) {
      assert.equal((await form(server, 'POST', '/api/v1/sessions/', { name })).status, 201, name);
      const id = (await request(server.url, '/api/v1/sessions/?active=true')).json.data[0].id;
      const res = await request(server.url, `/api/v1/bundles/${id}`);
      assert.equal(res.headers['content-disposition'], `attachment; filename="${stem.replace('ID', String(id))}.assessd.json"`, name);
      assert.equal(res.json.session.name, name);
    }
  });
});

describe('a round trip between two data directories through the API', () => {
  let source: TestServer;
  let target: TestServer;
  before(async () => {
    [source, target] = await Promise.all([startServer(), startServer()]);
    await seed(source);
  });
  after(async () => {
    await source.close();
    await target.close();
  });

  test('import creates the session with the same targets, derived fields recomputed, and keeps the active session', async () => {
    // the other box already knows one URL, in a session of its own
    assert.equal((await form(target, 'POST', '/api/v1/targets/', { target_url: 'http://shared.example/' })).status, 201);
    const file = (await request(source.url, '/api/v1/bundles/2')).text;
    const data = assertSuccess(await postBundle(target.url, file), 201);
    assert.deepEqual(data, { id: 2, targets: 4 });

    const sessions = assertSuccess(await request(target.url, '/api/v1/sessions/'));
    assert.deepEqual(sessions, [{ id: 1, name: 'default session', active: true }, { id: 2, name: 'acme web', active: false }]);
    const imported = await targetsOf(target, 2);
    assert.deepEqual(imported.map(withoutId), (await targetsOf(source, 2)).map(withoutId), 'same targets, same order');
    // the URL the box knew is attached, not created twice
    const shared = imported.find((t) => t.target_url === 'http://shared.example/');
    assert.equal(shared.id, 1);
    assert.deepEqual((await targetsOf(target, 1)).map((t) => t.id), [1]);
  });

  test('what an import made is durable: a restart serves the same', async () => {
    const before = await visibleState(target);
    await target.stop();
    target = await startServer({ dataDir: target.dataDir });
    const after = await visibleState(target);
    assert.deepEqual((after as any).sessions, (before as any).sessions);
    assert.deepEqual((after as any).targets, (before as any).targets);
  });

  test('derived fields in the file are ignored: every one comes again from target_url', async () => {
    const file = JSON.parse((await request(source.url, '/api/v1/bundles/2')).text);
    for (const t of file.targets) Object.assign(t, { id: 9999, host_ip: '6.6.6.6', port_number: '1', scope: false, max_user_rank: 10, alternative_ips: ['6.6.6.6'], top_url: 'x', extra: 'ignored' });
    const data = assertSuccess(await postBundle(target.url, JSON.stringify(file), '?name=tampered'), 201);
    assert.deepEqual((await targetsOf(target, data.id)).map(withoutId), (await targetsOf(source, 2)).map(withoutId));
  });

  test('the same round trip between two compiled servers in child processes', async () => {
    const [dirA, dirB] = await Promise.all([tempDir(), tempDir()]);
    const a = await spawnServer(['--port', '0', '--data-dir', dirA]);
    const b = await spawnServer(['--port', '0', '--data-dir', dirB]);
    try {
      assert.equal((await request(a.url, '/api/v1/sessions/', { method: 'POST', form: { name: 'child' } })).status, 201);
      assert.equal((await request(a.url, '/api/v1/targets/', { method: 'POST', form: { target_url: ['http://c1.example/', 'https://c2.example:8443/p'] } })).status, 201);
      const file = (await request(a.url, '/api/v1/bundles/2')).text;
      assert.deepEqual(assertSuccess(await postBundle(b.url, file), 201), { id: 2, targets: 2 });
      const listA = (await request(a.url, '/api/v1/targets/?session_id=2')).json.data;
      const listB = (await request(b.url, '/api/v1/targets/?session_id=2')).json.data;
      assert.deepEqual(listB, listA, 'a fresh box assigns the same ids');
    } finally {
      a.proc.kill('SIGTERM');
      b.proc.kill('SIGTERM');
      await Promise.all([a.exited, b.exited]);
    }
  });
});

describe('import', () => {
  let server: TestServer;
  before(async () => (server = await startServer()));
  after(() => server.close());

  test('the name argument wins over the bundle name, and stands in for a missing one', async () => {
    assert.deepEqual(assertSuccess(await postBundle(server.url, bundle('in the file', ['http://n1.example/']), '?name=%20from%20the%20query%20'), 201), { id: 2, targets: 1 });
    assert.deepEqual(assertSuccess(await postBundle(server.url, bundle(undefined, ['http://n2.example/']), '?name=no+session+in+file'), 201), { id: 3, targets: 1 });
    const names = assertSuccess(await request(server.url, '/api/v1/sessions/')).map((s: any) => s.name);
    assert.deepEqual(names, ['default session', 'from the query', 'no session in file']);
  });

  test('an empty targets list makes an empty session', async () => {
    const { id, targets } = assertSuccess(await postBundle(server.url, bundle('nothing yet', [])), 201);
    assert.equal(targets, 0);
    assert.deepEqual(await targetsOf(server, id), []);
  });

  test('a URL repeated in the bundle (after trimming) is one target, counted once', async () => {
    const { id, targets } = assertSuccess(await postBundle(server.url, bundle('repeats', ['http://r.example/', ' http://r.example/ ', 'http://s.example/', 'http://r.example/'])), 201);
    assert.equal(targets, 2);
    assert.deepEqual((await targetsOf(server, id)).map((t) => t.target_url), ['http://r.example/', 'http://s.example/']);
  });

  test('unknown fields anywhere are ignored, and so is one nested to the limit (64 levels with the bundle itself)', async () => {
    const deep = '['.repeat(MAX_BUNDLE_DEPTH - 1) + ']'.repeat(MAX_BUNDLE_DEPTH - 1);
    const body = bundle('with extras', ['http://x.example/']).slice(0, -1) + `,"comment":"hi [[[[ \\" [[[[ {{{{","nested":${deep}}`;
    assert.equal(assertSuccess(await postBundle(server.url, body), 201).targets, 1);
  });

  test('a leading byte-order mark and a charset parameter are accepted', async () => {
    const body = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(bundle('with bom', ['http://bom.example/']))]);
    assertSuccess(await postBundle(server.url, body, '', { 'content-type': 'Application/JSON; charset=utf-8' }), 201);
  });

  test('two imports of one name at once: one 201, one 409', async () => {
    const [a, b] = await Promise.all([postBundle(server.url, bundle('race', ['http://race.example/'])), postBundle(server.url, bundle('race', ['http://race2.example/']))]);
    assert.deepEqual([a.status, b.status].sort(), [201, 409]);
  });

  test('a 2 MiB bundle goes through while a 2 MiB form is still refused: the import has a limit of its own', async () => {
    const big = bundle('two megabytes', ['http://big.example/']) + ' '.repeat(2 * 1024 * 1024);
    assertSuccess(await postBundle(server.url, big), 201);
    assertFail(await request(server.url, '/api/v1/sessions/', { method: 'POST', form: { name: 'x'.repeat(2 * 1024 * 1024) } }), 413, HTTP_MESSAGES.payloadTooLarge);
  });
});

describe('every refusal leaves the store byte for byte unchanged', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer();
    assert.equal((await form(server, 'POST', '/api/v1/targets/', { target_url: 'http://kept.example/' })).status, 201);
    assert.equal((await form(server, 'POST', '/api/v1/sessions/', { name: 'taken' })).status, 201);
  });
  after(() => server.close());

  const ok = (i: number) => `http://ok${i}.example/`;
  const cases: { name: string; body: string | Buffer; query?: string; headers?: Record<string, string>; status: number; message: string; data?: Record<string, string> }[] = [
    { name: 'a body that is not JSON', body: '{"format":', status: 400, message: BUNDLE_MESSAGES.notJson, data: { body: 'not valid JSON' } },
    { name: 'an empty body', body: '', status: 400, message: BUNDLE_MESSAGES.notJson },
    { name: 'bytes that are not UTF-8', body: Buffer.concat([Buffer.from('{"format":"assessd-session","version":1,"session":{"name":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"},"targets":[]}')]), status: 400, message: BUNDLE_MESSAGES.notUtf8 },
    { name: 'a JSON array', body: '[]', status: 400, message: BUNDLE_MESSAGES.notObject },
    { name: 'JSON null', body: 'null', status: 400, message: BUNDLE_MESSAGES.notObject },
    { name: 'a JSON string', body: '"assessd-session"', status: 400, message: BUNDLE_MESSAGES.notObject },
    // bounded before JSON.parse builds it: brackets held the server ~30 s, `{},` 200 s (MAX_OPEN_VALUES)
    { name: 'a deeply nested array', body: '['.repeat(1_000_000) + ']'.repeat(1_000_000), status: 400, message: BUNDLE_MESSAGES.tooDeep, data: { body: 'at most 64 levels deep' } },
    { name: 'a field nested 65 levels deep', body: bundle('n', [ok(1)]).slice(0, -1) + `,"note":"[[[[{{{{","x":${'['.repeat(MAX_BUNDLE_DEPTH)}${']'.repeat(MAX_BUNDLE_DEPTH)}}`, status: 400, message: BUNDLE_MESSAGES.tooDeep },
    { name: '2,000,000 empty objects as targets', body: bundle('n', []).replace('"targets":[]', `"targets":[${'{},'.repeat(2_000_000)}{}]`), status: 400, message: BUNDLE_MESSAGES.tooManyValues, data: { body: 'at most 250000 values open at once' } },
    { name: 'more values open at once than the bound, over nested arrays (escaped quotes and commas in strings do not count)', body: bundle('n', [ok(1)]).slice(0, -1) + `,"x":["\\\",,,",${'0,'.repeat(MAX_OPEN_VALUES / 2)}[${'0,'.repeat(MAX_OPEN_VALUES / 2)}0]]}`, status: 400, message: BUNDLE_MESSAGES.tooManyValues },
    { name: 'no format', body: JSON.stringify({ version: 1, session: { name: 'n' }, targets: [] }), status: 400, message: BUNDLE_MESSAGES.format, data: { format: 'must be "assessd-session"' } },
    { name: 'another format', body: bundle('n', [], { format: 'owtf-targets' }), status: 400, message: BUNDLE_MESSAGES.format },
    { name: 'the format only in __proto__', body: '{"__proto__":{"format":"assessd-session","version":1},"session":{"name":"n"},"targets":[]}', status: 400, message: BUNDLE_MESSAGES.format },
    { name: 'a version this build does not know', body: bundle('n', [], { version: 2 }), status: 400, message: 'Bundle version 2 is not supported: this build reads version 1', data: { version: 'must be 1' } },
    { name: 'version 0', body: bundle('n', [], { version: 0 }), status: 400, message: 'Bundle version 0 is not supported: this build reads version 1' },
    { name: 'a version as a string', body: bundle('n', [], { version: '1' }), status: 400, message: 'Bundle "version" must be a number: this build reads version 1' },
    { name: 'no version', body: JSON.stringify({ format: 'assessd-session', session: { name: 'n' }, targets: [] }), status: 400, message: 'Bundle "version" must be a number: this build reads version 1' },
    { name: 'a session that is not an object', body: bundle(undefined, [], { session: 'n' }), status: 400, message: BUNDLE_MESSAGES.session },
    { name: 'a session name that is not a string', body: bundle(undefined, [], { session: { name: 42 } }), status: 400, message: BUNDLE_MESSAGES.nameType, data: { 'session.name': 'must be a string' } },
    { name: 'no name anywhere', body: bundle(undefined, [ok(1)]), status: 400, message: BUNDLE_MESSAGES.noName, data: { name: 'required' } },
    { name: 'the name only in __proto__', body: '{"format":"assessd-session","version":1,"session":{"__proto__":{"name":"n"}},"targets":[]}', status: 400, message: BUNDLE_MESSAGES.noName },
    { name: 'an empty name in the bundle', body: bundle('', [ok(1)]), status: 400, message: BUNDLE_MESSAGES.invalidName, data: { 'session.name': 'must be 1 to 255 characters' } },
    { name: 'a white-space name in the bundle', body: bundle(' \t\n ', [ok(1)]), status: 400, message: BUNDLE_MESSAGES.invalidName },
    { name: 'a 256-character name in the bundle', body: bundle('n'.repeat(256), [ok(1)]), status: 400, message: BUNDLE_MESSAGES.invalidName },
    { name: 'an empty name argument', body: bundle('fine', [ok(1)]), query: '?name=', status: 400, message: BUNDLE_MESSAGES.invalidName, data: { name: 'must be 1 to 255 characters' } },
    { name: 'a 256-character name argument', body: bundle('fine', [ok(1)]), query: `?name=${'n'.repeat(256)}`, status: 400, message: BUNDLE_MESSAGES.invalidName },
    { name: 'no targets list', body: JSON.stringify({ format: 'assessd-session', version: 1, session: { name: 'n' } }), status: 400, message: BUNDLE_MESSAGES.targets },
    { name: 'targets as an object', body: bundle('n', [], { targets: { 0: { target_url: ok(0) } } }), status: 400, message: BUNDLE_MESSAGES.targets },
    { name: 'a target that is a string', body: bundle('n', [], { targets: [{ target_url: ok(0) }, ok(1)] }), status: 400, message: 'targets[1] must be an object', data: { 'targets[1]': 'must be an object' } },
    { name: 'a target without target_url', body: bundle('n', [], { targets: [{ target_url: ok(0) }, { target_url: ok(1) }, { url: ok(2) }] }), status: 400, message: 'targets[2].target_url is missing', data: { 'targets[2].target_url': 'is missing' } },
    { name: 'a target_url only in __proto__', body: bundle('n', [ok(0)]).replace('"targets":[', '"targets":[{"__proto__":{"target_url":"http://p.example/"}},'), status: 400, message: 'targets[0].target_url is missing' },
    { name: 'a numeric target_url', body: bundle('n', [ok(0), ok(1), ok(2), 42]), status: 400, message: 'targets[3].target_url must be a string', data: { 'targets[3].target_url': 'must be a string' } },
    { name: 'a null target_url', body: bundle('n', [null]), status: 400, message: 'targets[0].target_url must be a string' },
    {
      name: 'a target given more outputs than there are plugins (5,001 made codes, over two entries of its URL)',
      body: bundle('n', [], {
        targets: [2_000, 3_001].map((count, part) => ({
          target_url: ok(7),
          outputs: Array.from({ length: count }, (_, i) => ({ plugin_key: `external@M${part}x${i}`, plugin_code: `M${part}x${i}`, plugin_group: 'web', plugin_type: 'external', status: 'Successful' })),
        })),
      }),
      status: 400,
      message: 'targets[1].outputs gives its target more than 5000 outputs (one per plugin)',
      data: { 'targets[1].outputs': 'at most 5000 a target' },
    },
    { name: 'an array target_url', body: bundle('n', [[ok(0)]]), status: 400, message: 'targets[0].target_url must be a string' },
    { name: 'a relative target_url', body: bundle('n', [ok(0), 'app.acme.example']), status: 400, message: 'targets[1].target_url is not an absolute http(s) URL', data: { 'targets[1].target_url': 'is not an absolute http(s) URL' } },
    { name: 'an ftp target_url', body: bundle('n', ['ftp://a.example/']), status: 400, message: 'targets[0].target_url is not an absolute http(s) URL' },
    { name: 'a javascript: target_url', body: bundle('n', ['javascript:alert(1)']), status: 400, message: 'targets[0].target_url is not an absolute http(s) URL' },
    { name: 'a target_url with a line break', body: bundle('n', ['http://a.example/\nhttp://b.example/']), status: 400, message: 'targets[0].target_url is not an absolute http(s) URL' },
    { name: 'a 2,049-character target_url', body: bundle('n', [`http://a.example/${'p'.repeat(2049 - 17)}`]), status: 400, message: 'targets[0].target_url is not an absolute http(s) URL' },
    { name: 'an empty target_url', body: bundle('n', ['']), status: 400, message: 'targets[0].target_url is not an absolute http(s) URL' },
    { name: 'the first bad target is the one named', body: bundle('n', [ok(0), 'nope', 7]), status: 400, message: 'targets[1].target_url is not an absolute http(s) URL' },
    { name: 'more than 100,000 targets', body: bundle('n', Array.from({ length: 100_001 }, (_, i) => ok(i))), status: 400, message: 'Bundle has 100001 targets: at most 100000 can be imported at once' },
    { name: 'a name in use', body: bundle('taken', [ok(1), 'http://kept.example/']), status: 409, message: MESSAGES.dbError, data: { name: 'already exists' } },
    { name: 'a name in use, given with surrounding blanks as the argument', body: bundle('free', [ok(1)]), query: '?name=%20taken%20', status: 409, message: MESSAGES.dbError },
    { name: 'a form body', body: 'name=x', headers: { 'content-type': 'application/x-www-form-urlencoded' }, status: 415, message: BUNDLE_MESSAGES.mediaType },
    { name: 'a bundle sent as text/plain', body: bundle('n', [ok(1)]), headers: { 'content-type': 'text/plain' }, status: 415, message: BUNDLE_MESSAGES.mediaType },
    { name: 'a bundle with no content type', body: bundle('n', [ok(1)]), headers: {}, status: 415, message: BUNDLE_MESSAGES.mediaType },
  ];

  for (const c of cases) {
    test(`${c.name}: ${c.status} ${c.message}`, async () => {
      const bytesBefore = await storeBytes(server.dataDir);
      const before = await visibleState(server);
      const res = await postBundle(server.url, c.body, c.query ?? '', c.headers ?? JSON_BODY);
      const body = assertFail(res, c.status, c.message);
      if (c.data) assert.deepEqual(body.data, c.data);
      assert.deepEqual(await visibleState(server), before);
      assert.deepEqual(await storeBytes(server.dataDir), bytesBefore);
    });
  }
});

/** One request over a raw socket: the head and as much body as given, then whatever answer comes. */
function rawPost(port: number, head: string, body: Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let answer = '';
    socket.on('data', (chunk) => (answer += chunk.toString('latin1')));
    socket.on('error', (err: NodeJS.ErrnoException) => (err.code === 'EPIPE' || err.code === 'ECONNRESET' ? resolve(answer) : reject(err)));
    socket.on('close', () => resolve(answer));
    socket.write(head);
    socket.end(body);
  });
}

describe('the import body limit, 64 MiB by default', () => {
  let server: TestServer;
  before(async () => (server = await startServer()));
  after(() => server.close());

  test('the default is 64 MiB', () => assert.equal(DEFAULT_MAX_IMPORT_BODY, 64 * 1024 * 1024));

  test('a bundle of exactly 64 MiB is imported', async () => {
    const text = bundle('exactly the limit', ['http://limit.example/']);
    const body = Buffer.alloc(DEFAULT_MAX_IMPORT_BODY, 0x20);
    body.write(text, 0);
    assertSuccess(await postBundle(server.url, body), 201);
  });

  test('64 MiB + 1 byte declared is 413 Request body too large before a byte is read, and nothing changes', async () => {
    const bytesBefore = await storeBytes(server.dataDir);
    const head = `POST /api/v1/bundles/ HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${DEFAULT_MAX_IMPORT_BODY + 1}\r\n\r\n`;
    const answer = await rawPost(server.port, head, Buffer.from(bundle('over', [])));
    assert.match(answer, /^HTTP\/1\.1 413 /);
    assert.match(answer, /^connection: close$/im);
    assert.equal(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)).message, HTTP_MESSAGES.payloadTooLarge);
    assert.deepEqual(await storeBytes(server.dataDir), bytesBefore);
  });

  test('64 MiB + 1 byte sent chunked is 413 too, and nothing changes', async () => {
    const bytesBefore = await storeBytes(server.dataDir);
    const size = DEFAULT_MAX_IMPORT_BODY + 1;
    const chunk = Buffer.alloc(size, 0x20);
    Buffer.from(bundle('over chunked', [])).copy(chunk);
    const head = 'POST /api/v1/bundles/ HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n';
    const answer = await rawPost(server.port, head, Buffer.concat([Buffer.from(`${size.toString(16)}\r\n`), chunk, Buffer.from('\r\n0\r\n\r\n')]));
    assert.match(answer, /^HTTP\/1\.1 413 /);
    assert.deepEqual(await storeBytes(server.dataDir), bytesBefore);
  });

  test('--max-import-body sets another limit, and leaves the form limit alone', async () => {
    const small = await startServer({ maxImportBody: 200 });
    try {
      assertFail(await postBundle(small.url, bundle('x', ['http://a.example/']) + ' '.repeat(200)), 413, HTTP_MESSAGES.payloadTooLarge);
      assertSuccess(await postBundle(small.url, bundle('x', ['http://a.example/'])), 201);
      assertSuccess(await request(small.url, '/api/v1/sessions/', { method: 'POST', form: { name: 'y'.repeat(250) } }), 201);
    } finally {
      await small.close();
    }
  });
});

test('5,000 targets import as one durable write: one batch, one journal line', async () => {
  const server = await startServer();
  try {
    const urls = Array.from({ length: 5000 }, (_, i) => `https://host-${i}.big.example:${1000 + (i % 5000)}/app/${i}`);
    const statsBefore = (await request(server.url, '/debug/stats')).json.data.store;
    const { readFile } = await import('node:fs/promises');
    const { join } = await import('node:path');
    const journalBefore = await readFile(join(server.dataDir, 'journal.jsonl'), 'utf8');
    const res = await postBundle(server.url, bundle('five thousand', urls));
    assert.deepEqual(assertSuccess(res, 201), { id: 2, targets: 5000 });
    const statsAfter = (await request(server.url, '/debug/stats')).json.data.store;
    assert.equal(statsAfter.batches - statsBefore.batches, 1);
    assert.equal(statsAfter.acknowledged - statsBefore.acknowledged, 1);
    const added = (await readFile(join(server.dataDir, 'journal.jsonl'), 'utf8')).slice(journalBefore.length).trimEnd().split('\n');
    assert.equal(added.length, 1);
    assert.deepEqual(JSON.parse(added[0]).ops.map((op: { op: string }) => op.op), ['importSession']);
    const listed = await targetsOf(server, 2);
    assert.equal(listed.length, 5000);
    assert.equal(listed[0].target_url, urls[0], 'newest first, as in the bundle');
    assert.equal(listed[4999].target_url, urls[4999]);
  } finally {
    await server.close();
  }
});
