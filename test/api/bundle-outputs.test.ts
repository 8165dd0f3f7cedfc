/** Session bundles carry each target's outputs: export with their text, import checked field by field. */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { MAX_NOTES, MAX_SUMMARY } from '../../src/store/engine.ts';
import { assertFail, assertSuccess } from '../helpers/jsend.ts';
import { bundle, postBundle, storeBytes, visibleState } from '../helpers/bundles.ts';
import { request, runCli, startServer, tempDir, type TestServer } from '../helpers/server.ts';

const form = (server: TestServer, method: string, path: string, fields: Record<string, string | string[]>) =>
  request(server.url, path, { method, form: fields });

const CODES = ['OWTF-IG-001', 'OWTF-IG-002', 'OWTF-CM-001'];
const NOTES = 'check <b>markup</b> & "quotes" \u00e9\n2nd line';

/** Queues web/external plugins of `codes` for a target and waits until none is queued or running. */
async function runExternal(server: TestServer, targetId: number, codes = CODES): Promise<void> {
  const queued = assertSuccess(await form(server, 'POST', '/api/v1/worklist/', { id: String(targetId), group: 'web', type: 'external', code: codes }), 201);
  assert.equal(queued.queued, codes.length);
  for (let i = 0; i < 500; i++) {
    const { left_count } = assertSuccess(await request(server.url, '/api/v1/plugins/progress'));
    const outputs = assertSuccess(await request(server.url, `/api/v1/targets/${targetId}/poutput/`));
    if (left_count === 0 && outputs.length >= codes.length && outputs.every((o: any) => o.status !== 'Running')) return;
    await sleep(20);
  }
  assert.fail('the plugins did not end');
}

const outputsOf = async (server: TestServer, targetId: number): Promise<any[]> => assertSuccess(await request(server.url, `/api/v1/targets/${targetId}/poutput/`));
const targetsOf = async (server: TestServer, sessionId: number): Promise<any[]> => assertSuccess(await request(server.url, `/api/v1/targets/?session_id=${sessionId}`));

/** An output without what belongs to one box: its id and its target's. */
function portable(output: any): any {
  const { id: _id, target_id: _target, ...rest } = output;
  return rest;
}

/** A bundled output with every field; `fields` override. */
function output(fields: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    plugin_key: 'external@OWTF-IG-001',
    plugin_code: 'OWTF-IG-001',
    plugin_group: 'web',
    plugin_type: 'external',
    status: 'Successful',
    owtf_rank: 3,
    user_rank: -1,
    user_notes: '',
    findings: [{ rank: 3, title: 'Admin path listed in robots.txt', detail: 'Disallow: /admin' }],
    exit_code: 0,
    error: null,
    started_at: '2026-11-20T09:00:00.000Z',
    ended_at: '2026-11-20T09:00:01.500Z',
    output: 'the text',
    ...fields,
  };
}

/** A bundle whose targets are `[url, outputs]` pairs. */
function withOutputs(name: string, targets: [string, unknown][]): string {
  return bundle(name, [], { targets: targets.map(([target_url, outputs]) => ({ target_url, outputs })) });
}

describe('a session round trip over HTTP keeps its outputs', () => {
  let server: TestServer;
  let targetId: number;
  let before_: any[];
  let file: string;
  before(async () => {
    server = await startServer();
    assert.equal((await form(server, 'POST', '/api/v1/sessions/', { name: 'acme web' })).status, 201);
    assert.equal((await form(server, 'POST', '/api/v1/targets/', { target_url: ['https://app.acme.example/login', 'http://other.acme.example/'] })).status, 201);
    targetId = (await targetsOf(server, 2)).find((t) => t.target_url === 'https://app.acme.example/login').id;
    await runExternal(server, targetId);
    assertSuccess(await form(server, 'PATCH', `/api/v1/targets/${targetId}/poutput/web/external/OWTF-IG-002`, { user_rank: '4', user_notes: NOTES }));
    before_ = await outputsOf(server, targetId);
  });
  after(() => server.close());

  test('the export holds each target outputs, with their text and ISO 8601 times', async () => {
    const res = await request(server.url, '/api/v1/bundles/2');
    assert.equal(res.status, 200);
    file = res.text;
    const doc = JSON.parse(file);
    assert.deepEqual(Object.keys(doc), ['format', 'version', 'exported_at', 'session', 'targets']);
    assert.equal(doc.version, 1);
    const target = doc.targets.find((t: any) => t.target_url === 'https://app.acme.example/login');
    assert.equal(target.max_user_rank, 4);
    assert.deepEqual(doc.targets.find((t: any) => t.target_url === 'http://other.acme.example/').outputs, []);
    assert.equal(target.outputs.length, CODES.length);
    for (const o of target.outputs) {
      assert.deepEqual(Object.keys(o), ['plugin_key', 'plugin_code', 'plugin_group', 'plugin_type', 'status', 'owtf_rank', 'user_rank', 'user_notes', 'findings', 'exit_code', 'error', 'started_at', 'ended_at', 'output']);
      const shown = before_.find((b) => b.plugin_key === o.plugin_key);
      for (const key of Object.keys(o)) assert.deepEqual(o[key], shown[key], `${o.plugin_key} ${key}`);
      assert.match(o.started_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      assert.ok(o.output.length > 100, 'the checklist, rendered for the target');
      assert.match(o.output, /app\.acme\.example/);
    }
    assert.equal(target.outputs.find((o: any) => o.plugin_code === 'OWTF-IG-002').user_notes, NOTES);
  });

  test('deleted and imported again, the session shows the same outputs; the target ranks follow them', async () => {
    assertSuccess(await request(server.url, '/api/v1/sessions/2', { method: 'DELETE' }));
    assertFail(await request(server.url, `/api/v1/targets/${targetId}/poutput/`), 400);
    const { id } = assertSuccess(await postBundle(server.url, file), 201);
    const target = (await targetsOf(server, id)).find((t) => t.target_url === 'https://app.acme.example/login');
    assert.equal(target.max_user_rank, 4);
    assert.equal(target.max_owtf_rank, -1);
    const after_ = await outputsOf(server, target.id);
    assert.deepEqual(after_.map(portable), before_.map(portable));
    assert.equal(after_.find((o) => o.plugin_code === 'OWTF-IG-002').output.includes('app.acme.example'), true);
  });

  test('what the import made survives a restart: the op replays from the journal', async () => {
    const sessions = assertSuccess(await request(server.url, '/api/v1/sessions/'));
    const id = sessions.at(-1).id;
    const target = (await targetsOf(server, id)).find((t) => t.target_url === 'https://app.acme.example/login');
    const shown = await outputsOf(server, target.id);
    const journal = await readFile(join(server.dataDir, 'journal.jsonl'), 'utf8');
    const op = journal.trimEnd().split('\n').map((line) => JSON.parse(line)).flatMap((r) => r.ops).findLast((o: any) => o.op === 'importSession');
    assert.equal(op.outputs.length, CODES.length);
    assert.equal(typeof op.outputs[0].started_at, 'number', 'times in ms since the epoch');
    await server.stop();
    server = await startServer({ dataDir: server.dataDir });
    assert.deepEqual(await outputsOf(server, target.id), shown);
    assert.equal((await targetsOf(server, id)).find((t) => t.id === target.id).max_user_rank, 4);
  });
});

describe('import', () => {
  let server: TestServer;
  before(async () => (server = await startServer()));
  after(() => server.close());

  test('a version-1 bundle without outputs imports as before: no outputs, unranked, the same op', async () => {
    const journal = join(server.dataDir, 'journal.jsonl');
    const length = (await readFile(journal, 'utf8')).length;
    const { id } = assertSuccess(await postBundle(server.url, bundle('plain', ['http://plain.example/'])), 201);
    const [target] = await targetsOf(server, id);
    assert.deepEqual([target.max_owtf_rank, target.max_user_rank], [-1, -1]);
    assert.deepEqual(await outputsOf(server, target.id), []);
    const record = JSON.parse((await readFile(journal, 'utf8')).slice(length));
    assert.deepEqual(Object.keys(record.ops[0]), ['op', 'name', 'urls', 'at']);
    assertSuccess(await postBundle(server.url, withOutputs('empty outputs', [['http://plain2.example/', []]])), 201);
  });

  test('an imported output exports again as it came, findings, times and text included', async () => {
    const sent = [
      output(),
      output({ plugin_key: 'passive@OWTF-IG-002', plugin_code: 'OWTF-IG-002', plugin_type: 'passive', status: 'Crashed', owtf_rank: -1, user_rank: 5, user_notes: 'n', findings: [], exit_code: null, error: 'no such program', output: '' }),
      output({ plugin_key: 'active@PTES-001', plugin_code: 'PTES-001', plugin_group: 'network', plugin_type: 'active', status: 'Skipped', findings: [{ rank: -1, title: 't', detail: '' }], error: 'nmap is not installed' }),
    ];
    const { id } = assertSuccess(await postBundle(server.url, withOutputs('again', [['http://again.example/', sent]])), 201);
    const [target] = await targetsOf(server, id);
    assert.deepEqual([target.max_owtf_rank, target.max_user_rank], [3, 5]);
    const exported = JSON.parse((await request(server.url, `/api/v1/bundles/${id}`)).text);
    assert.deepEqual(exported.targets[0].outputs, sent);
    const shown = await outputsOf(server, target.id);
    assert.deepEqual(shown.map((o) => [o.plugin_key, o.output, o.output_path, o.run_time]), [
      ['external@OWTF-IG-001', 'the text', '', '1s, 500ms'],
      ['passive@OWTF-IG-002', '', '', '1s, 500ms'],
      ['active@PTES-001', 'the text', '', '1s, 500ms'],
    ]);
  });

  test('a running output imports as Aborted, "was running when exported"; missing optional fields take their defaults', async () => {
    const minimal = { plugin_key: 'external@OWTF-IG-003', plugin_code: 'OWTF-IG-003', plugin_group: 'web', plugin_type: 'external', status: 'Successful' };
    const running = output({ plugin_key: 'external@OWTF-IG-004', plugin_code: 'OWTF-IG-004', status: 'Running', ended_at: null, error: null, exit_code: null });
    const before = Date.now();
    const { id } = assertSuccess(await postBundle(server.url, withOutputs('running', [['http://running.example/', [minimal, running]]])), 201);
    const [target] = await targetsOf(server, id);
    const [a, b] = await outputsOf(server, target.id);
    assert.deepEqual([a.status, a.owtf_rank, a.user_rank, a.user_notes, a.findings, a.exit_code, a.error, a.output], ['Successful', -1, -1, '', [], null, null, '']);
    assert.ok(Date.parse(a.started_at) >= before - 1000 && a.ended_at === a.started_at, 'no times: the import time');
    assert.deepEqual([b.status, b.error, b.started_at, b.ended_at], ['Aborted', 'was running when exported', '2026-11-20T09:00:00.000Z', '2026-11-20T09:00:00.000Z']);
  });

  test("the box's own output of a plugin is kept; the others are added, and the ranks follow both", async () => {
    assert.equal((await form(server, 'POST', '/api/v1/targets/', { target_url: 'http://kept.example/' })).status, 201);
    const kept = (await targetsOf(server, 1)).find((t) => t.target_url === 'http://kept.example/');
    await runExternal(server, kept.id, ['OWTF-IG-001']);
    assertSuccess(await form(server, 'PATCH', `/api/v1/targets/${kept.id}/poutput/web/external/OWTF-IG-001`, { user_rank: '2', user_notes: 'mine' }));
    const own = (await outputsOf(server, kept.id))[0];
    const sent = [output({ user_rank: 5, user_notes: 'theirs' }), output({ plugin_key: 'external@OWTF-IG-002', plugin_code: 'OWTF-IG-002', owtf_rank: 4 })];
    assertSuccess(await postBundle(server.url, withOutputs('kept', [['http://kept.example/', sent]])), 201);
    const shown = await outputsOf(server, kept.id);
    assert.deepEqual(shown[0], own);
    assert.deepEqual([shown[1].plugin_key, shown[1].owtf_rank], ['external@OWTF-IG-002', 4]);
    const target = (await targetsOf(server, 1)).find((t) => t.id === kept.id);
    assert.deepEqual([target.max_owtf_rank, target.max_user_rank], [4, 2]);
  });

  test('a URL repeated in the bundle takes the outputs of each of its entries', async () => {
    const { id } = assertSuccess(await postBundle(server.url, withOutputs('repeated url', [
      ['http://twice.example/', [output()]],
      ['http://twice.example/ ', [output({ plugin_key: 'external@OWTF-IG-002', plugin_code: 'OWTF-IG-002' })]],
    ])), 201);
    const [target] = await targetsOf(server, id);
    assert.deepEqual((await outputsOf(server, target.id)).map((o) => o.plugin_key).sort(), ['external@OWTF-IG-001', 'external@OWTF-IG-002']);
  });
});

describe('every bad output refuses the whole bundle, naming the first bad field, and changes nothing', () => {
  let server: TestServer;
  before(async () => (server = await startServer()));
  after(() => server.close());

  const good = (i: number) => [`http://ok${i}.example/`, [output()]] as [string, unknown];
  const one = (fields: Record<string, unknown>) => withOutputs('n', [['http://bad.example/', [output(fields)]]]);
  const without = (field: string) => {
    const o = output();
    delete o[field];
    return withOutputs('n', [['http://bad.example/', [o]]]);
  };
  const P = 'targets[0].outputs[0]';
  const cases: [name: string, body: string, field: string, detail: string][] = [
    ['the example of the issue', withOutputs('n', [good(0), good(1), ['http://bad.example/', [output({ user_rank: '4' })]]]), 'targets[2].outputs[0].user_rank', 'must be an integer from -1 to 5'],
    ['outputs that are not an array', withOutputs('n', [['http://bad.example/', { 0: output() }]]), 'targets[0].outputs', 'must be an array'],
    ['outputs null', withOutputs('n', [['http://bad.example/', null]]), 'targets[0].outputs', 'must be an array'],
    ['an output that is not an object', withOutputs('n', [['http://bad.example/', [output(), 'x']]]), 'targets[0].outputs[1]', 'must be an object'],
    ['no plugin_key', without('plugin_key'), `${P}.plugin_key`, 'is missing'],
    ['a plugin_key that is not a string', one({ plugin_key: 7 }), `${P}.plugin_key`, 'must be "<plugin_type>@<plugin_code>"'],
    ['a plugin_key of another plugin', one({ plugin_key: 'external@OWTF-IG-002' }), `${P}.plugin_key`, 'must be "<plugin_type>@<plugin_code>"'],
    ['a plugin_key without its type', one({ plugin_key: 'OWTF-IG-001' }), `${P}.plugin_key`, 'must be "<plugin_type>@<plugin_code>"'],
    ['no plugin_code', without('plugin_code'), `${P}.plugin_code`, 'is missing'],
    ['a plugin_code with a slash', one({ plugin_code: '../x', plugin_key: 'external@../x' }), `${P}.plugin_code`, 'must be a code such as OWTF-IG-001'],
    ['an unknown plugin_group', one({ plugin_group: 'mobile' }), `${P}.plugin_group`, 'must be one of web, network, auxiliary'],
    ['a plugin_group "__proto__"', one({ plugin_group: '__proto__' }), `${P}.plugin_group`, 'must be one of web, network, auxiliary'],
    ['a plugin_type of another group', one({ plugin_type: 'bruteforce', plugin_key: 'bruteforce@OWTF-IG-001' }), `${P}.plugin_type`, 'must be a type of its plugin_group'],
    ['no status', without('status'), `${P}.status`, 'is missing'],
    ['an unknown status', one({ status: 'Done' }), `${P}.status`, 'must be one of Successful, Aborted, Crashed, Skipped, Running'],
    ['an owtf_rank of 6', one({ owtf_rank: 6 }), `${P}.owtf_rank`, 'must be an integer from -1 to 5'],
    ['a user_rank of -2', one({ user_rank: -2 }), `${P}.user_rank`, 'must be an integer from -1 to 5'],
    ['a user_rank of 2.5', one({ user_rank: 2.5 }), `${P}.user_rank`, 'must be an integer from -1 to 5'],
    ['notes that are null', one({ user_notes: null }), `${P}.user_notes`, `must be a string of at most ${MAX_NOTES} bytes of UTF-8`],
    ['notes of 32,769 two-byte characters (65,538 bytes), as PATCH counts them', one({ user_notes: '\u00e9'.repeat(MAX_NOTES / 2 + 1) }), `${P}.user_notes`, `must be a string of at most ${MAX_NOTES} bytes of UTF-8`],
    ['notes of 65,537 characters', one({ user_notes: 'n'.repeat(MAX_NOTES + 1) }), `${P}.user_notes`, `must be a string of at most ${MAX_NOTES} bytes of UTF-8`],
    ['findings that are not an array', one({ findings: {} }), `${P}.findings`, 'must be an array of at most 1000 findings'],
    ['1,001 findings', one({ findings: Array.from({ length: 1001 }, () => ({ rank: 1, title: 't', detail: 'd' })) }), `${P}.findings`, 'must be an array of at most 1000 findings'],
    ['a finding that is not an object', one({ findings: [{ rank: 1, title: 't', detail: 'd' }, 'x'] }), `${P}.findings[1]`, 'must be an object'],
    ['a finding without rank', one({ findings: [{ title: 't', detail: 'd' }] }), `${P}.findings[0].rank`, 'is missing'],
    ['a finding ranked 7', one({ findings: [{ rank: 7, title: 't', detail: 'd' }] }), `${P}.findings[0].rank`, 'must be an integer from -1 to 5'],
    ['a finding title of 4,097 characters', one({ findings: [{ rank: 1, title: 't'.repeat(4097), detail: 'd' }] }), `${P}.findings[0].title`, 'must be a string of at most 4096 characters'],
    ['a finding without detail', one({ findings: [{ rank: 1, title: 't' }] }), `${P}.findings[0].detail`, 'is missing'],
    ['a finding detail of 65,537 characters', one({ findings: [{ rank: 1, title: 't', detail: 'd'.repeat(MAX_NOTES + 1) }] }), `${P}.findings[0].detail`, `must be a string of at most ${MAX_NOTES} characters`],
    ['an exit_code of 1.5', one({ exit_code: 1.5 }), `${P}.exit_code`, 'must be an integer or null'],
    ['an exit_code as a string', one({ exit_code: '0' }), `${P}.exit_code`, 'must be an integer or null'],
    ['an error that is a number', one({ error: 42 }), `${P}.error`, `must be a string of at most ${MAX_NOTES} characters, or null`],
    ['a started_at that is no time', one({ started_at: 'yesterday' }), `${P}.started_at`, 'must be an ISO 8601 time or null'],
    ['a started_at in ms', one({ started_at: 1_700_000_000_000 }), `${P}.started_at`, 'must be an ISO 8601 time or null'],
    ['a started_at without an offset', one({ started_at: '2026-11-20T09:00:00' }), `${P}.started_at`, 'must be an ISO 8601 time or null'],
    ['a started_at before 1970', one({ started_at: '1969-12-31T23:59:59Z' }), `${P}.started_at`, 'must be an ISO 8601 time or null'],
    ['a started_at on a day its month has not (Date.parse reads March 3rd)', one({ started_at: '2026-02-31T00:00:00Z' }), `${P}.started_at`, 'must be an ISO 8601 time or null'],
    ['an ended_at before started_at', one({ ended_at: '2026-11-20T08:59:59.999Z' }), `${P}.ended_at`, 'must be an ISO 8601 time, not before started_at, or null'],
    ['an ended_at in month 13', one({ ended_at: '2026-13-20T08:59:59Z' }), `${P}.ended_at`, 'must be an ISO 8601 time, not before started_at, or null'],
    ['an output text of 1 MiB + 1 characters', one({ output: 'x'.repeat(MAX_SUMMARY + 1) }), `${P}.output`, `must be a string of at most ${MAX_SUMMARY} bytes of UTF-8`],
    ['an output text of 1 MiB + 2 bytes in 3-byte characters', one({ output: '\u20ac'.repeat(Math.floor(MAX_SUMMARY / 3) + 1) }), `${P}.output`, `must be a string of at most ${MAX_SUMMARY} bytes of UTF-8`],
    ['an output text that is null', one({ output: null }), `${P}.output`, `must be a string of at most ${MAX_SUMMARY} bytes of UTF-8`],
    ['a plugin twice in one target', withOutputs('n', [['http://bad.example/', [output(), output({ user_rank: 1 })]]]), 'targets[0].outputs[1].plugin_key', 'repeats another output of the same target'],
    ['a plugin twice in a repeated URL', withOutputs('n', [['http://bad.example/', [output()]], [' http://bad.example/', [output()]]]), 'targets[1].outputs[0].plugin_key', 'repeats another output of the same target'],
    ['the first bad field of the first bad output', withOutputs('n', [['http://bad.example/', [output(), output({ plugin_key: 'external@OWTF-IG-009', plugin_code: 'OWTF-IG-009', status: 'x', user_rank: 9 })]], ['nope', []]]), 'targets[0].outputs[1].status', 'must be one of Successful, Aborted, Crashed, Skipped, Running'],
  ];

  for (const [name, body, field, detail] of cases) {
    test(`${name}: 400 "${field} ${detail.slice(0, 40)}"`, async () => {
      const bytesBefore = await storeBytes(server.dataDir);
      const before = await visibleState(server);
      const res = assertFail(await postBundle(server.url, body), 400, `${field} ${detail}`);
      assert.deepEqual(res.data, { [field]: detail });
      assert.deepEqual(await visibleState(server), before);
      assert.deepEqual(await storeBytes(server.dataDir), bytesBefore);
    });
  }

  test('the largest fields allowed go through', async () => {
    const body = withOutputs('largest', [['http://largest.example/', [output({
      user_notes: 'n'.repeat(MAX_NOTES),
      output: 'x'.repeat(MAX_SUMMARY),
      findings: Array.from({ length: 1000 }, () => ({ rank: 5, title: 't'.repeat(4096), detail: 'd' })),
      started_at: '2026-11-20T10:00:00.123456+01:00',
      ended_at: null,
    })]]]);
    const { id } = assertSuccess(await postBundle(server.url, body), 201);
    const [target] = await targetsOf(server, id);
    const [shown] = await outputsOf(server, target.id);
    assert.equal(shown.user_notes.length, MAX_NOTES);
    assert.equal(shown.output.length, MAX_SUMMARY);
    assert.equal(shown.findings.length, 1000);
    assert.deepEqual([shown.started_at, shown.ended_at], ['2026-11-20T09:00:00.123Z', '2026-11-20T09:00:00.123Z']);
    assert.equal(target.max_owtf_rank, 3);
  });
});

test('a running output is exported with its current fields, and imports elsewhere as Aborted', async () => {
  // no workers: the work stays queued until a run is started by hand
  const source = await startServer({ workers: 0 });
  const other = await startServer();
  try {
    assert.equal((await form(source, 'POST', '/api/v1/targets/', { target_url: 'http://busy.example/' })).status, 201);
    assertSuccess(await form(source, 'POST', '/api/v1/worklist/', { id: '1', group: 'web', type: 'external', code: 'OWTF-IG-001' }), 201);
    const [work] = source.store.state.works.values();
    const plugin = { key: 'external@OWTF-IG-001', code: 'OWTF-IG-001', group: 'web', type: 'external' };
    assert.equal((await source.store.change({ op: 'startRun', work: work.id, plugin, outputPath: '', at: Date.UTC(2026, 10, 20, 9) })).ok, true);
    const file = (await request(source.url, '/api/v1/bundles/1')).text;
    const [exported] = JSON.parse(file).targets[0].outputs;
    assert.deepEqual([exported.status, exported.started_at, exported.ended_at, exported.error], ['Running', '2026-11-20T09:00:00.000Z', null, null]);
    assert.match(exported.output, /busy\.example/);

    const { id } = assertSuccess(await postBundle(other.url, file, '?name=elsewhere'), 201);
    const [target] = await targetsOf(other, id);
    const [shown] = await outputsOf(other, target.id);
    assert.deepEqual([shown.status, shown.error, shown.ended_at, shown.output], ['Aborted', 'was running when exported', '2026-11-20T09:00:00.000Z', exported.output]);
    const workers = assertSuccess(await request(other.url, '/api/v1/workers'));
    assert.ok(workers.length > 0);
    assert.deepEqual(workers.filter((w: any) => w.busy), [], 'nothing runs on the box that imported it');
  } finally {
    await source.close();
    await other.close();
  }
});

describe('the offline commands carry outputs too', () => {
  let dir: string;
  let shown: any[];
  before(async () => {
    const server = await startServer();
    dir = server.dataDir;
    assert.equal((await form(server, 'POST', '/api/v1/sessions/', { name: 'offline' })).status, 201);
    assert.equal((await form(server, 'POST', '/api/v1/targets/', { target_url: 'http://offline.example/' })).status, 201);
    await runExternal(server, 1);
    assertSuccess(await form(server, 'PATCH', '/api/v1/targets/1/poutput/web/external/OWTF-IG-001', { user_rank: '3', user_notes: NOTES }));
    shown = await outputsOf(server, 1);
    await server.stop();
  });

  test('assessd export writes the outputs and their text; assessd import reads them into another directory', async () => {
    const run = await runCli(['export', '--data-dir', dir, '--session', '2']);
    assert.equal(run.code, 0, run.stderr);
    const doc = JSON.parse(run.stdout);
    const [target] = doc.targets;
    assert.equal(target.max_user_rank, 3);
    assert.deepEqual(target.outputs.map((o: any) => [o.plugin_key, o.status, o.user_rank, o.user_notes, o.output]), shown.map((o) => [o.plugin_key, o.status, o.user_rank, o.user_notes, o.output]));

    const file = join(await tempDir(), 'offline.assessd.json');
    const { writeFile } = await import('node:fs/promises');
    await writeFile(file, run.stdout);
    const fresh = await tempDir();
    const imported = await runCli(['import', file, '--data-dir', fresh]);
    assert.equal(imported.code, 0, imported.stderr);
    assert.equal(imported.stdout, `imported "offline" as session 2 with 1 target into ${fresh}\n`);
    const server = await startServer({ dataDir: fresh });
    try {
      assert.deepEqual((await outputsOf(server, 1)).map(portable), shown.map(portable));
      assert.equal((await targetsOf(server, 2))[0].max_user_rank, 3);
    } finally {
      await server.close();
    }
  });

  test('assessd import refuses a bad output in one line naming the field', async () => {
    const file = join(await tempDir(), 'bad.json');
    const { writeFile } = await import('node:fs/promises');
    await writeFile(file, withOutputs('n', [['http://x.example/', [output({ owtf_rank: 'high' })]]]));
    const run = await runCli(['import', file, '--data-dir', await tempDir()]);
    assert.equal(run.code, 1);
    assert.equal(run.stderr, `assessd: import: ${file}: targets[0].outputs[0].owtf_rank must be an integer from -1 to 5\n`);
  });
});

test('many outputs with many findings (a tarpit\'s thousand ports a run) are listed a row at a time: past 1 MiB the list and the names are sent as written, chunked, the same JSON; a small list is one body with its length (150 such outputs made a 395 MB string: 9-13 s held, 5 GB, and a 500)', async () => {
  const server = await startServer();
  try {
    const findings = Array.from({ length: 1000 }, (_, i) => ({ rank: 1, title: `open port ${i}`, detail: `${'banner '.repeat(40)}${i}` }));
    const codes = ['OWTF-IG-001', 'OWTF-IG-002', 'OWTF-CM-001', 'OWTF-CM-002', 'OWTF-CM-003', 'OWTF-CM-004'];
    const many = codes.map((code) => output({ plugin_key: `external@${code}`, plugin_code: code, findings, output: `text of ${code}` }));
    const imported = assertSuccess(await postBundle(server.url, withOutputs('many', [['http://many.example/', many], ['http://few.example/', [output()]]])), 201);
    const [manyTarget, fewTarget] = (await targetsOf(server, imported.id)).map((t) => t.id);

    const list = await request(server.url, `/api/v1/targets/${manyTarget}/poutput/`);
    assert.equal(list.headers['transfer-encoding'], 'chunked');
    assert.equal(list.headers['content-length'], undefined);
    const rows = assertSuccess(list) as any[];
    assert.deepEqual(rows.map((o) => [o.plugin_code, o.findings.length, o.output]), codes.map((code) => [code, 1000, `text of ${code}`]));
    assert.deepEqual(rows[5].findings[999], findings[999]);

    const names = await request(server.url, `/api/v1/targets/${manyTarget}/poutput/names`);
    assert.equal(names.headers['transfer-encoding'], 'chunked');
    const byCode = assertSuccess(names);
    assert.deepEqual(Object.keys(byCode), [...codes].sort());
    for (const code of codes) {
      assert.deepEqual(Object.keys(byCode[code]), ['data', 'details']);
      assert.equal(byCode[code].data[0].findings.length, 1000);
      assert.equal(byCode[code].details.code, code);
    }

    const few = await request(server.url, `/api/v1/targets/${fewTarget}/poutput/names`);
    assert.equal(few.headers['content-length'], String(Buffer.byteLength(few.text)));
    assert.deepEqual(Object.keys(assertSuccess(few)), ['OWTF-IG-001']);
  } finally {
    await server.close();
  }
});
