/**
 * Plugin outputs over HTTP: listing and filters, names with test group details, the tester's rank
 * and notes (and every refusal), the target's max ranks, deletion with files; plus the misc
 * handlers: progress, the severity panel, the errors of crashed runs.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { ENGINE_MESSAGES as E, MESSAGES as M } from '../../src/api/messages.ts';
import { PLUGINS_DIR } from '../../src/paths.ts';
import {
  addTarget,
  assertFail,
  configure,
  get,
  ok,
  outputs,
  queue,
  script,
  scriptDir,
  send,
  severity,
  toolPlugin,
  waitFor,
  waitForOutput,
  writePluginFile,
  type Output,
} from '../helpers/engine.ts';
import { startServer, tempDir, type StartOptions, type TestServer } from '../helpers/server.ts';
import { misconfigured, serveHttp, type Target } from '../engine/fixtures/targets.ts';

const OUTPUT_KEYS = [
  'end_time', 'error', 'exit_code', 'findings', 'id', 'output', 'output_path', 'owtf_rank', 'plugin_code', 'plugin_group', 'plugin_key',
  'plugin_type', 'run_time', 'start_time', 'started_at', 'ended_at', 'status', 'target_id', 'user_notes', 'user_rank',
].sort();

const TOOL = 'USR-OUT-001';
const TOOL_KEY = `active@${TOOL}`;
/** Built-in checks under the user's codes: on the misconfigured server robots ranks 1, framing 2, cors 4. */
const CHECKS = { 'USR-OUT-ROBOTS': 'robots', 'USR-OUT-FRAMING': 'framing', 'USR-OUT-CORS': 'cors' } as const;
const IG1 = 'external@OWTF-IG-001';
const IG2 = 'external@OWTF-IG-002';

let tools: string;
let site: Target;
let echo: string;
let loud: string;
before(async () => {
  tools = await scriptDir();
  site = await serveHttp(misconfigured);
  echo = await script(tools, 'echo.sh', 'echo "tool output for $1"');
  loud = await script(tools, 'loud.sh', "head -c 1500000 /dev/zero | tr '\\0' 'a'\necho 'the real error' >&2");
});
after(async () => {
  await site.close();
  await rm(tools, { recursive: true, force: true });
});

async function outputServer(options: StartOptions = {}): Promise<TestServer> {
  const dataDir = await tempDir();
  await writePluginFile(dataDir, 'outputs.json', {
    test_groups: [
      { code: TOOL, descrip: 'A tool', hint: 'tool hint', priority: 7, mappings: { WSTG: ['WSTG-X-01', 'Something'] } },
      ...Object.keys(CHECKS).map((code) => ({ code, descrip: `Check ${code}` })),
    ],
    plugins: [
      toolPlugin(TOOL, 'TOOL_WAFW00F', ['{target_url}']),
      ...Object.entries(CHECKS).map(([code, check]) => ({ code, group: 'web', type: 'semi_passive', check })),
    ],
  });
  const server = await startServer({ workers: 2, ...options, dataDir });
  await configure(server, { TOOL_WAFW00F: echo });
  return server;
}

async function withServer(fn: (s: TestServer) => Promise<void>, options: StartOptions = {}): Promise<void> {
  const server = await outputServer(options);
  try {
    await fn(server);
  } finally {
    await server.close();
  }
}

/** Queues and waits for every output named. */
async function runAll(s: TestServer, target: number, form: Record<string, string | string[]>, keys: string[]): Promise<Output[]> {
  await queue(s, { id: String(target), ...form });
  return waitFor(`${keys.join(', ')} on ${target}`, async () => {
    const outs = await outputs(s, target);
    return keys.every((k) => outs.some((o) => o.plugin_key === k && o.status !== 'Running')) ? outs : undefined;
  });
}

/** A target (the misconfigured site) with: IG1, IG2 (external, -1), the tool (-1), robots (1), framing (2), cors (4). */
async function fullTarget(s: TestServer): Promise<{ id: number; outs: Output[] }> {
  const id = await addTarget(s, site.url);
  await runAll(s, id, { group: 'web', type: 'external', code: ['OWTF-IG-001', 'OWTF-IG-002'] }, [IG1, IG2]);
  await runAll(s, id, { code: TOOL }, [TOOL_KEY]);
  const outs = await runAll(s, id, { type: 'semi_passive', code: Object.keys(CHECKS) }, Object.keys(CHECKS).map((c) => `semi_passive@${c}`));
  return { id, outs };
}

describe('GET /targets/<id>/poutput/', () => {
  test('a target with no output answers an empty array', () =>
    withServer(async (s) => {
      const id = await addTarget(s, 'http://a.example/');
      assert.deepEqual(await get(s, `/api/v1/targets/${id}/poutput/`), []);
      assert.deepEqual(await get(s, `/api/v1/targets/${id}/poutput`), []);
      assert.deepEqual(await get(s, `/api/v1/targets/${id}/poutput/web/external/OWTF-IG-001`), []);
      assert.deepEqual(await get(s, `/api/v1/targets/${id}/poutput/names`), {});
    }));

  test('a web/external output: the checklist with the target filled in, Successful, ranks -1, the contract\'s keys', () =>
    withServer(async (s) => {
      const id = await addTarget(s, 'http://a.example/');
      await runAll(s, id, { type: 'external', code: 'OWTF-IG-001' }, [IG1]);
      const [out] = await outputs(s, id);
      assert.deepEqual(Object.keys(out!).sort(), OUTPUT_KEYS);
      assert.equal(out!.target_id, id);
      assert.equal(out!.plugin_key, IG1);
      assert.equal(out!.plugin_code, 'OWTF-IG-001');
      assert.equal(out!.plugin_group, 'web');
      assert.equal(out!.plugin_type, 'external');
      assert.equal(out!.status, 'Successful');
      assert.equal(out!.owtf_rank, -1);
      assert.equal(out!.user_rank, -1);
      assert.equal(out!.user_notes, '');
      assert.equal(out!.error, null);
      assert.deepEqual(out!.findings, []);
      assert.ok(out!.output!.includes('curl -si http://a.example:80/robots.txt'), out!.output);
      assert.ok(out!.output!.includes('curl -sI http://a.example/ '), 'target_url filled');
      assert.doesNotMatch(out!.output!, /\{(target_url|top_url|host|host_name|port_number)\}/, 'no placeholder left');
      assert.ok(!Number.isNaN(Date.parse(out!.started_at)) && !Number.isNaN(Date.parse(out!.ended_at!)));
      assert.ok(Date.parse(out!.ended_at!) >= Date.parse(out!.started_at));
      assert.equal(typeof out!.start_time, 'string');
      assert.equal(typeof out!.run_time, 'string');
      const target = await get(s, `/api/v1/targets/${id}`);
      assert.deepEqual([target.max_owtf_rank, target.max_user_rank], [-1, -1]);
    }));

  test('a program\'s output text is its standard output; its output_path holds stdout.txt', () =>
    withServer(async (s) => {
      const id = await addTarget(s, 'http://a.example/');
      await runAll(s, id, { code: TOOL }, [TOOL_KEY]);
      const [out] = await outputs(s, id);
      assert.equal(out!.status, 'Successful');
      assert.equal(out!.exit_code, 0);
      assert.equal(out!.output, 'tool output for http://a.example/\n');
      assert.ok(existsSync(join(s.dataDir, 'outputs', out!.output_path, 'stdout.txt')));
    }));

  test('an output\'s text is at most 1 MiB, whatever the program printed, and says what it leaves out; standard error keeps its room (a megabyte of standard output left it out, unsaid)', () =>
    withServer(async (s) => {
      await configure(s, { TOOL_WAFW00F: loud });
      const id = await addTarget(s, 'http://a.example/');
      await runAll(s, id, { code: TOOL }, [TOOL_KEY]);
      const [out] = await outputs(s, id);
      assert.equal(out!.status, 'Successful');
      assert.ok(Buffer.byteLength(out!.output!) <= 1024 * 1024, `${Buffer.byteLength(out!.output!)} bytes`);
      assert.ok(out!.output!.startsWith('aaaa'));
      assert.match(out!.output!, /aaaa\n\[\d+ bytes more in stdout\.txt\]\n\n--- standard error ---\nthe real error\n$/);
    }));

  describe('filters and paths', () => {
    let server: TestServer;
    let id: number;
    let all: Output[];
    before(async () => {
      server = await outputServer();
      ({ id } = await fullTarget(server));
      all = await outputs(server, id);
    });
    after(() => server.close());

    test('the ranks of the checks on the misconfigured site are 1, 2 and 4', () => {
      const rank = (key: string) => all.find((o) => o.plugin_key === key)?.owtf_rank;
      assert.deepEqual([rank('semi_passive@USR-OUT-ROBOTS'), rank('semi_passive@USR-OUT-FRAMING'), rank('semi_passive@USR-OUT-CORS'), rank(IG1), rank(TOOL_KEY)], [1, 2, 4, -1, -1]);
    });

    const cases: { query: string; keys: string[] }[] = [
      { query: '', keys: [IG1, IG2, TOOL_KEY, 'semi_passive@USR-OUT-ROBOTS', 'semi_passive@USR-OUT-FRAMING', 'semi_passive@USR-OUT-CORS'] },
      { query: 'web', keys: [IG1, IG2, TOOL_KEY, 'semi_passive@USR-OUT-ROBOTS', 'semi_passive@USR-OUT-FRAMING', 'semi_passive@USR-OUT-CORS'] },
      { query: 'network', keys: [] },
      { query: 'web/external', keys: [IG1, IG2] },
      { query: 'web/external/', keys: [IG1, IG2] },
      { query: 'web/external/OWTF-IG-002', keys: [IG2] },
      { query: 'web/active/OWTF-IG-002', keys: [] },
      { query: `?plugin_key=${IG1}&plugin_key=${TOOL_KEY}`, keys: [IG1, TOOL_KEY] },
      { query: '?plugin_type=semi_passive', keys: ['semi_passive@USR-OUT-ROBOTS', 'semi_passive@USR-OUT-FRAMING', 'semi_passive@USR-OUT-CORS'] },
      { query: '?plugin_type=active&plugin_type=external', keys: [IG1, IG2, TOOL_KEY] },
      { query: '?plugin_group=web&plugin_code=OWTF-IG-001', keys: [IG1] },
      { query: '?plugin_group=network', keys: [] },
      { query: '?status=Successful&plugin_type=external', keys: [IG1, IG2] },
      { query: '?status=Crashed', keys: [] },
      { query: '?owtf_rank=4', keys: ['semi_passive@USR-OUT-CORS'] },
      { query: '?owtf_rank=1&owtf_rank=2', keys: ['semi_passive@USR-OUT-ROBOTS', 'semi_passive@USR-OUT-FRAMING'] },
      { query: '?owtf_rank=-1&plugin_type=external', keys: [IG1, IG2] },
      { query: '?user_rank=-1&plugin_code=USR-OUT-CORS', keys: ['semi_passive@USR-OUT-CORS'] },
      { query: '?user_rank=3', keys: [] },
      { query: 'web/semi_passive?owtf_rank=2', keys: ['semi_passive@USR-OUT-FRAMING'] },
    ];
    for (const { query, keys } of cases) {
      test(`GET /poutput/${query} answers ${keys.length === 0 ? 'none' : keys.join(', ')}`, async () => {
        const found = await outputs(server, id, query);
        assert.deepEqual(found.map((o) => o.plugin_key).sort(), [...keys].sort());
        for (const o of found) assert.deepEqual(o, all.find((a) => a.id === o.id));
      });
    }

    for (const query of ['?owtf_rank=abc', '?user_rank=6', '?user_rank=1.5']) {
      test(`GET /poutput/${query} is 400 Invalid parameter type provided`, async () => {
        assertFail(await send(server, 'GET', `/api/v1/targets/${id}/poutput/${query}`), 400, M.invalidParameterType);
      });
    }

    test('GET /poutput/names: codes sorted, each with its outputs (without text) and its test group as details', async () => {
      const names = await get(server, `/api/v1/targets/${id}/poutput/names`);
      const codes = [...new Set(all.map((o) => o.plugin_code))].sort();
      assert.deepEqual(Object.keys(names), codes);
      for (const code of codes) {
        assert.deepEqual(Object.keys(names[code]).sort(), ['data', 'details']);
        assert.deepEqual(names[code].data, all.filter((o) => o.plugin_code === code).map(({ output: _o, ...rest }) => rest));
        assert.deepEqual(Object.keys(names[code].details).sort(), ['code', 'descrip', 'hint', 'mappings', 'priority', 'url']);
      }
      const shipped = JSON.parse(readFileSync(join(PLUGINS_DIR, 'test-groups.json'), 'utf8')).test_groups.find((g: { code: string }) => g.code === 'OWTF-IG-001');
      const { group: _g, ...details } = shipped;
      assert.deepEqual(names['OWTF-IG-001'].details, details);
      assert.deepEqual(names[TOOL].details, { code: TOOL, priority: 7, descrip: 'A tool', hint: 'tool hint', url: 'https://example.org/guide', mappings: { WSTG: ['WSTG-X-01', 'Something'] } });
    });

    test('the target\'s max_owtf_rank is its outputs\' highest (4), max_user_rank -1', async () => {
      const target = await get(server, `/api/v1/targets/${id}`);
      assert.deepEqual([target.max_owtf_rank, target.max_user_rank], [4, -1]);
    });
  });

  for (const path of ['', 'names', 'web/external/OWTF-IG-001']) {
    test(`GET /targets/999/poutput/${path} is 400 Invalid target reference provided`, () =>
      withServer(async (s) => {
        assertFail(await send(s, 'GET', `/api/v1/targets/999/poutput/${path}`), 400, M.invalidTargetReference);
      }));
  }
});

describe('PATCH /targets/<id>/poutput/<group>/<type>/<code>', () => {
  test('user_rank and user_notes are saved; the target\'s max_user_rank follows', () =>
    withServer(async (s) => {
      const id = await addTarget(s, 'http://a.example/');
      await runAll(s, id, { type: 'external', code: ['OWTF-IG-001', 'OWTF-IG-002'] }, [IG1, IG2]);
      const path = `/api/v1/targets/${id}/poutput/web/external/OWTF-IG-001`;
      assert.deepEqual(await ok(s, 'PATCH', path, { user_rank: '3' }), {});
      assert.equal((await get(s, `/api/v1/targets/${id}`)).max_user_rank, 3);
      assert.deepEqual(await ok(s, 'PATCH', `/api/v1/targets/${id}/poutput/web/external/OWTF-IG-002/`, { user_rank: '5', user_notes: 'critical: é ü 😀' }), {});
      const outs = await outputs(s, id);
      const by = (key: string) => outs.find((o) => o.plugin_key === key)!;
      assert.deepEqual([by(IG1).user_rank, by(IG1).user_notes], [3, '']);
      assert.deepEqual([by(IG2).user_rank, by(IG2).user_notes], [5, 'critical: é ü 😀']);
      assert.equal((await get(s, `/api/v1/targets/${id}`)).max_user_rank, 5);
      await ok(s, 'PATCH', path, { user_notes: 'only notes' });
      assert.equal((await outputs(s, id, 'web/external/OWTF-IG-001'))[0]!.user_rank, 3, 'notes alone keep the rank');
      await ok(s, 'PATCH', `/api/v1/targets/${id}/poutput/web/external/OWTF-IG-002`, { user_rank: '-1' });
      const target = await get(s, `/api/v1/targets/${id}`);
      assert.deepEqual([target.max_owtf_rank, target.max_user_rank], [-1, 3]);
      assert.equal((await outputs(s, id, 'web/external/OWTF-IG-002'))[0]!.user_notes, 'critical: é ü 😀', 'the rank alone keeps the notes');
    }));

  test('notes of exactly 64 KiB are kept whole', () =>
    withServer(async (s) => {
      const id = await addTarget(s, 'http://a.example/');
      await runAll(s, id, { type: 'external', code: 'OWTF-IG-001' }, [IG1]);
      const notes = 'n'.repeat(64 * 1024);
      await ok(s, 'PATCH', `/api/v1/targets/${id}/poutput/web/external/OWTF-IG-001`, { user_notes: notes });
      assert.equal((await outputs(s, id))[0]!.user_notes, notes);
    }));

  const refusals: { name: string; target?: string; path?: string; form?: Record<string, string>; message: string }[] = [
    { name: 'an unknown target', target: '999', form: { user_rank: '1' }, message: M.invalidTargetReference },
    { name: 'a rank that is not an integer', form: { user_rank: 'high' }, message: M.invalidParameterType },
    { name: 'a fractional rank', form: { user_rank: '2.5' }, message: M.invalidParameterType },
    { name: 'an empty rank', form: { user_rank: '' }, message: M.invalidParameterType },
    { name: 'a rank above 5', form: { user_rank: '6' }, message: M.invalidParameterType },
    { name: 'a rank below -1', form: { user_rank: '-2' }, message: M.invalidParameterType },
    { name: 'a rank with notes, the rank bad', form: { user_rank: '9', user_notes: 'x' }, message: M.invalidParameterType },
    { name: 'neither argument', form: {}, message: M.incorrectQueryParameters },
    { name: 'a plugin that has no output', path: 'web/external/OWTF-IG-003', form: { user_rank: '1' }, message: E.invalidOutput },
    { name: 'a code in another type', path: 'web/active/OWTF-IG-001', form: { user_rank: '1' }, message: E.invalidOutput },
    { name: 'a code in another group', path: 'network/external/OWTF-IG-001', form: { user_rank: '1' }, message: E.invalidOutput },
    { name: 'no code (a group and type only)', path: 'web/external', form: { user_rank: '1' }, message: E.invalidOutput },
    { name: 'notes over 64 KiB', form: { user_notes: 'n'.repeat(64 * 1024 + 1) }, message: M.invalidParameterType },
    { name: 'notes over 64 KiB of UTF-8 (fewer characters, more bytes)', form: { user_notes: '€'.repeat(30_000) }, message: M.invalidParameterType },
  ];
  for (const r of refusals) {
    test(`PATCH with ${r.name} is 400 ${r.message}, nothing changes`, () =>
      withServer(async (s) => {
        const id = await addTarget(s, 'http://a.example/');
        await runAll(s, id, { type: 'external', code: 'OWTF-IG-001' }, [IG1]);
        const before = await outputs(s, id);
        assertFail(await send(s, 'PATCH', `/api/v1/targets/${r.target ?? id}/poutput/${r.path ?? 'web/external/OWTF-IG-001'}`, r.form), 400, r.message);
        assert.deepEqual(await outputs(s, id), before);
        assert.equal((await get(s, `/api/v1/targets/${id}`)).max_user_rank, -1);
      }));
  }
});

describe('DELETE /targets/<id>/poutput/...', () => {
  test('DELETE of one code removes that output only; of the whole poutput, every output and their files', () =>
    withServer(async (s) => {
      const { id } = await fullTarget(s);
      const dir = join(s.dataDir, 'outputs', String(id), 'web', 'active', TOOL);
      assert.ok(existsSync(join(dir, 'stdout.txt')));
      assert.deepEqual(await ok(s, 'DELETE', `/api/v1/targets/${id}/poutput/web/semi_passive/USR-OUT-CORS`), {});
      assert.ok(!(await outputs(s, id)).some((o) => o.plugin_key === 'semi_passive@USR-OUT-CORS'));
      assert.equal((await get(s, `/api/v1/targets/${id}`)).max_owtf_rank, 2, 'the max follows the deletion');
      assert.deepEqual(await ok(s, 'DELETE', `/api/v1/targets/${id}/poutput/web/external`), {});
      assert.deepEqual((await outputs(s, id)).map((o) => o.plugin_type).sort(), ['active', 'semi_passive', 'semi_passive']);
      assert.deepEqual(await ok(s, 'DELETE', `/api/v1/targets/${id}/poutput/`), {});
      assert.deepEqual(await outputs(s, id), []);
      assert.equal(existsSync(dir), false, 'the program\'s files are removed');
      const target = await get(s, `/api/v1/targets/${id}`);
      assert.deepEqual([target.max_owtf_rank, target.max_user_rank], [-1, -1]);
      // no longer run: it can be queued again without force_overwrite
      assert.equal(await queue(s, { id: String(id), code: TOOL }), 1);
    }));

  test('DELETE applies the same filters as GET (upstream\'s delete does): only the outputs they name go, the tester\'s ranks and notes on the others stay; a restart finds the same', () =>
    withServer(async (s) => {
      const { id } = await fullTarget(s);
      await ok(s, 'PATCH', `/api/v1/targets/${id}/poutput/web/external/OWTF-IG-002`, { user_rank: '3', user_notes: 'kept' });
      const keys = async () => (await outputs(s, id)).map((o) => o.plugin_key).sort();
      const all = await keys();
      // in the query, as upstream's client sends a DELETE's arguments
      assert.deepEqual(await ok(s, 'DELETE', `/api/v1/targets/${id}/poutput/?owtf_rank=4&owtf_rank=2`), {});
      assert.deepEqual(await keys(), all.filter((k) => !['semi_passive@USR-OUT-CORS', 'semi_passive@USR-OUT-FRAMING'].includes(k)));
      assert.equal((await get(s, `/api/v1/targets/${id}`)).max_owtf_rank, 1, 'the max follows the deletion');
      // with the path, and in a form body
      assert.deepEqual(await ok(s, 'DELETE', `/api/v1/targets/${id}/poutput/web/external`, { user_rank: '-1' }), {});
      assert.deepEqual(await ok(s, 'DELETE', `/api/v1/targets/${id}/poutput/`, { plugin_key: TOOL_KEY }), {});
      const left = await outputs(s, id);
      assert.deepEqual(left.map((o) => o.plugin_key).sort(), ['external@OWTF-IG-002', 'semi_passive@USR-OUT-ROBOTS']);
      assert.equal(left.find((o) => o.plugin_key === 'external@OWTF-IG-002')!.user_notes, 'kept');
      assert.equal(existsSync(join(s.dataDir, 'outputs', String(id), 'web', 'active', TOOL)), false, 'the deleted run\'s files are removed');
      // a filter matching nothing deletes nothing; a bad rank is refused, nothing deleted
      assert.deepEqual(await ok(s, 'DELETE', `/api/v1/targets/${id}/poutput/?status=Crashed`), {});
      assertFail(await send(s, 'DELETE', `/api/v1/targets/${id}/poutput/?user_rank=9`), 400, M.invalidParameterType);
      assert.equal((await outputs(s, id)).length, 2);
      // replayed from the journal on a restart: the same two
      await s.stop();
      const again = await startServer({ workers: 0, dataDir: s.dataDir });
      try {
        assert.deepEqual((await get(again, `/api/v1/targets/${id}/poutput/`)).map((o: Output) => o.plugin_key).sort(), ['external@OWTF-IG-002', 'semi_passive@USR-OUT-ROBOTS']);
      } finally {
        await again.stop();
      }
    }));

  test('a path with an empty segment names no output: 404, and nothing is deleted (it was every output of the group, or of the target)', () =>
    withServer(async (s) => {
      const id = await addTarget(s, site.url);
      await runAll(s, id, { group: 'web', type: 'external', code: ['OWTF-IG-001', 'OWTF-IG-002'] }, [IG1, IG2]);
      for (const path of ['//', '///', 'web//', 'web/external//', '/web', 'web//OWTF-IG-001']) {
        for (const method of ['DELETE', 'GET', 'PATCH']) assertFail(await send(s, method, `/api/v1/targets/${id}/poutput/${path}`, { user_rank: '1' }), 404, 'Not found');
      }
      assert.equal((await outputs(s, id)).length, 2);
      // past <group>/<type>/<code>, or names: no output path, whatever the method
      for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
        assertFail(await send(s, method, `/api/v1/targets/${id}/poutput/web/external/OWTF-IG-001/extra`), 404, 'Not found');
      }
      const res = await send(s, 'DELETE', `/api/v1/targets/${id}/poutput/names`);
      assertFail(res, 405, 'Method not allowed');
      assert.equal(res.headers.allow, 'GET, HEAD');
      assert.equal((await outputs(s, id)).length, 2);
    }));

  test('DELETE of an unknown target is 400 Invalid target reference provided', () =>
    withServer(async (s) => {
      assertFail(await send(s, 'DELETE', '/api/v1/targets/999/poutput/'), 400, M.invalidTargetReference);
    }));

  test('DELETE of a target removes its outputs\' files', () =>
    withServer(async (s) => {
      const id = await addTarget(s, 'http://a.example/');
      await runAll(s, id, { code: TOOL }, [TOOL_KEY]);
      assert.ok(existsSync(join(s.dataDir, 'outputs', String(id))));
      await ok(s, 'DELETE', `/api/v1/targets/${id}`);
      await waitFor('the files gone', async () => !existsSync(join(s.dataDir, 'outputs', String(id))), 5000);
    }));
});

describe('GET /plugins/progress', () => {
  test('complete_count counts outputs, left_count queued plus running works', () =>
    withServer(
      async (s) => {
        assert.deepEqual(await get(s, '/api/v1/plugins/progress'), { complete_count: 0, left_count: 0 });
        const id = await addTarget(s, 'http://a.example/');
        await queue(s, { id: String(id), type: 'external', code: ['OWTF-IG-001', 'OWTF-IG-002', 'OWTF-IG-003'] });
        assert.deepEqual(await get(s, '/api/v1/plugins/progress'), { complete_count: 0, left_count: 3 });
        await ok(s, 'POST', '/api/v1/workers/');
        await waitFor('every work run', async () => (await outputs(s, id)).filter((o) => o.status === 'Successful').length === 3);
        assert.deepEqual(await get(s, '/api/v1/plugins/progress'), { complete_count: 3, left_count: 0 });
      },
      { workers: 0 },
    ));
});

describe('GET /dashboard/severitypanel', () => {
  test('counts the active session\'s outputs by effective rank (user_rank wins); session_id names another session', () =>
    withServer(async (s) => {
      assert.deepEqual(await get(s, '/api/v1/dashboard/severitypanel'), severity({}));
      const { id } = await fullTarget(s);
      // robots 1, framing 2, cors 4; externals and the tool unranked (not counted)
      assert.deepEqual(await get(s, '/api/v1/dashboard/severitypanel'), severity({ 4: 1, 2: 1, 1: 1 }));
      await ok(s, 'PATCH', `/api/v1/targets/${id}/poutput/web/external/OWTF-IG-001`, { user_rank: '5' });
      await ok(s, 'PATCH', `/api/v1/targets/${id}/poutput/web/semi_passive/USR-OUT-FRAMING`, { user_rank: '0' });
      await ok(s, 'PATCH', `/api/v1/targets/${id}/poutput/web/semi_passive/USR-OUT-CORS`, { user_rank: '3' });
      const expected = severity({ 5: 1, 3: 1, 1: 1, 0: 1 });
      assert.deepEqual(await get(s, '/api/v1/dashboard/severitypanel'), expected);
      await ok(s, 'POST', '/api/v1/sessions/', { name: 'second' });
      assert.deepEqual(await get(s, '/api/v1/dashboard/severitypanel'), severity({}), 'the new active session has no output');
      assert.deepEqual(await get(s, '/api/v1/dashboard/severitypanel?session_id=1'), expected);
      assert.deepEqual(await get(s, '/api/v1/dashboard/severitypanel?session_id=2'), severity({}));
    }));
});

describe('/errors/', () => {
  const ERROR_KEYS = ['github_issue_url', 'id', 'owtf_message', 'reported', 'traceback', 'user_message'];

  test('a crashed run is listed; GET one, PATCH its user_message, DELETE it', () =>
    withServer(async (s) => {
      assert.deepEqual(await get(s, '/api/v1/errors/'), []);
      const dir = join(tools, 'a-dir-tool');
      await mkdir(dir, { recursive: true });
      await configure(s, { TOOL_WAFW00F: dir });
      const id = await addTarget(s, 'http://a.example/');
      await queue(s, { id: String(id), code: TOOL });
      await waitForOutput(s, id, TOOL_KEY, ['Crashed']);
      const errors = await get(s, '/api/v1/errors/');
      assert.equal(errors.length, 1);
      const [error] = errors;
      assert.deepEqual(Object.keys(error).sort(), ERROR_KEYS);
      assert.deepEqual([error.user_message, error.reported, error.github_issue_url], ['', false, null]);
      assert.ok(error.owtf_message.includes(TOOL_KEY) && error.owtf_message.includes('http://a.example/'), error.owtf_message);
      assert.equal(typeof error.traceback, 'string');
      assert.deepEqual(await get(s, `/api/v1/errors/${error.id}`), error);
      assert.deepEqual(await ok(s, 'PATCH', `/api/v1/errors/${error.id}`, { user_message: 'seen, the path was wrong' }), {});
      assert.equal((await get(s, `/api/v1/errors/${error.id}/`)).user_message, 'seen, the path was wrong');
      assertFail(await send(s, 'PATCH', `/api/v1/errors/${error.id}`), 400, M.incorrectQueryParameters);
      assert.deepEqual(await ok(s, 'DELETE', `/api/v1/errors/${error.id}`), {});
      assert.deepEqual(await get(s, '/api/v1/errors/'), []);
      for (const method of ['GET', 'PATCH', 'DELETE']) {
        assertFail(await send(s, method, `/api/v1/errors/${error.id}`, method === 'PATCH' ? { user_message: 'x' } : undefined), 400);
      }
    }));
});

describe('guidance filled in for the target (web/external checklists, web/passive links)', () => {
  const HOSTILE = 'http://127.0.0.1:1/a;b$(id)`x`|&>*';

  test('a link\'s query carries the target URL percent-encoded: its own ? & # stay inside the parameter', () =>
    withServer(async (s) => {
      const url = 'http://a.example/app?x=1&y=2#frag';
      const id = await addTarget(s, url);
      const target = await get(s, `/api/v1/targets/${id}`);
      await runAll(s, id, { type: 'passive', code: 'OWTF-CM-008' }, ['passive@OWTF-CM-008']);
      const [out] = await outputs(s, id);
      const line = out!.output!.split('\n').find((l) => l.includes('securityheaders.com'));
      assert.ok(line, out!.output);
      const link = new URL(line.slice(line.indexOf('https://')));
      assert.equal(link.searchParams.get('q'), target.target_url, line);
      assert.equal(link.searchParams.get('followRedirects'), 'on', line);
      assert.equal(link.hash, '', line);
    }));

  test('a checklist\'s commands carry a target URL full of shell metacharacters single-quoted, safe to paste into a shell', () =>
    withServer(async (s) => {
      const id = await addTarget(s, HOSTILE);
      const target = await get(s, `/api/v1/targets/${id}`);
      await runAll(s, id, { type: 'external', code: 'OWTF-IG-001' }, [IG1]);
      const [out] = await outputs(s, id);
      const text = out!.output!;
      const url: string = target.target_url;
      assert.ok(text.includes(url), text);
      for (let at = text.indexOf(url); at !== -1; at = text.indexOf(url, at + 1)) {
        const quoted = text[at - 1] === "'" && text[at + url.length] === "'";
        assert.ok(quoted, `unquoted in: ${text.slice(text.lastIndexOf('\n', at) + 1, text.indexOf('\n', at))}`);
      }
    }));
});
