/**
 * How works are scheduled: queue order, concurrent queueing (each pair once), a pair running is not
 * queued twice, parallel workers, a plugin's own time limit, built-in checks aborted and stopped,
 * and what deleting a session does to its targets' works and outputs.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import {
  addTarget,
  addTargets,
  configure,
  get,
  groupAlive,
  ok,
  outputs,
  queue,
  script,
  scriptDir,
  send,
  toolPlugin,
  waitFor,
  waitForOutput,
  waitForProgram,
  workers,
  writePluginFile,
} from '../helpers/engine.ts';
import { startServer, tempDir, type StartOptions, type TestServer } from '../helpers/server.ts';
import { serveSilence, type Target } from '../engine/fixtures/targets.ts';

const TOOL = 'USR-SCH-001';
const TOOL_KEY = `active@${TOOL}`;
const SHORT = 'USR-SCH-002';
const SHORT_KEY = `active@${SHORT}`;
const CHECK = 'USR-SCH-003';
const CHECK_KEY = `semi_passive@${CHECK}`;

let tools: string;
let sleeper: string;
let silence: Target;
before(async () => {
  tools = await scriptDir();
  sleeper = await script(tools, 'sleeper.sh', 'echo started\nsleep 30');
  silence = await serveSilence();
});
after(async () => {
  await silence.close();
  await rm(tools, { recursive: true, force: true });
});

async function schedServer(options: StartOptions = {}): Promise<TestServer> {
  const dataDir = options.dataDir ?? (await tempDir());
  await writePluginFile(dataDir, 'scheduling.json', {
    test_groups: [{ code: TOOL, descrip: 'Sleeps' }, { code: SHORT, descrip: 'Sleeps, limited to 1 s' }, { code: CHECK, descrip: 'A check' }],
    plugins: [
      toolPlugin(TOOL, 'TOOL_WAFW00F', ['{target_url}']),
      toolPlugin(SHORT, 'TOOL_WAFW00F', ['{target_url}'], { timeout: 1 }),
      { code: CHECK, group: 'web', type: 'semi_passive', check: 'robots' },
    ],
  });
  const server = await startServer({ workers: 1, ...options, dataDir });
  await configure(server, { TOOL_WAFW00F: sleeper });
  return server;
}

async function withServer(fn: (s: TestServer) => Promise<void>, options: StartOptions = {}): Promise<void> {
  const server = await schedServer(options);
  try {
    await fn(server);
  } finally {
    await send(server, 'PATCH', '/api/v1/workers/0/abort').catch(() => {});
    await server.close();
  }
}

describe('queue order and concurrency', () => {
  test('works run oldest first: outputs are made in queue order', () =>
    withServer(
      async (s) => {
        const id = await addTarget(s, 'http://a.example/');
        for (const code of ['OWTF-IG-003', 'OWTF-IG-001', 'OWTF-IG-005', 'OWTF-IG-002']) await queue(s, { id: String(id), type: 'external', code });
        await ok(s, 'POST', '/api/v1/workers/');
        const outs = await waitFor('four outputs', async () => {
          const o = await outputs(s, id);
          return o.length === 4 && o.every((x) => x.status === 'Successful') ? o : undefined;
        });
        assert.deepEqual(
          outs.sort((a, b) => a.id - b.id).map((o) => o.plugin_code),
          ['OWTF-IG-003', 'OWTF-IG-001', 'OWTF-IG-005', 'OWTF-IG-002'],
        );
      },
      { workers: 0 },
    ));

  test('50 concurrent POSTs of the same pair queue it once', () =>
    withServer(
      async (s) => {
        const id = await addTarget(s, 'http://a.example/');
        const answers = await Promise.all(
          Array.from({ length: 50 }, () => send(s, 'POST', '/api/v1/worklist/', { id: String(id), type: 'external', code: 'OWTF-IG-001' })),
        );
        for (const res of answers) assert.equal(res.status, 201, res.text);
        assert.equal(answers.reduce((n, res) => n + res.json.data.queued, 0), 1);
        assert.equal((await get(s, '/api/v1/worklist/')).length, 1);
      },
      { workers: 0 },
    ));

  test('50 concurrent POSTs of different pairs are all queued, each acknowledged one listed', () =>
    withServer(
      async (s) => {
        const plugins: { code: string }[] = await get(s, '/api/v1/plugins/web/external');
        const id = await addTarget(s, 'http://a.example/');
        const codes = plugins.slice(0, 50).map((p) => p.code);
        const answers = await Promise.all(codes.map((code) => send(s, 'POST', '/api/v1/worklist/', { id: String(id), type: 'external', code })));
        for (const res of answers) assert.deepEqual([res.status, res.json.data.queued], [201, 1]);
        const listed = (await get(s, '/api/v1/worklist/')).map((w: { plugin: { code: string } }) => w.plugin.code);
        assert.deepEqual([...listed].sort(), [...codes].sort());
      },
      { workers: 0 },
    ));

  test('a pair that is running is not queued again, not even with force_overwrite=true', () =>
    withServer(async (s) => {
      const id = await addTarget(s, 'http://a.example/');
      await queue(s, { id: String(id), code: TOOL });
      await waitForProgram(s, TOOL_KEY);
      assert.equal(await queue(s, { id: String(id), code: TOOL }), 0);
      assert.equal(await queue(s, { id: String(id), code: TOOL, force_overwrite: 'true' }), 0);
      assert.deepEqual(await get(s, '/api/v1/worklist/'), []);
    }));

  test('two workers run two programs at once, each in its own group; DELETE /worklist/0 leaves running works alone', () =>
    withServer(
      async (s) => {
        const [a, b] = await addTargets(s, 'http://a.example/', 'http://b.example/');
        await queue(s, { id: `${a},${b}`, code: TOOL });
        const busy = await waitFor('two busy workers with pids', async () => {
          const ws = await workers(s);
          return ws.filter((w) => w.busy && w.worker !== null).length === 2 ? ws : undefined;
        });
        assert.notEqual(busy[0]!.worker, busy[1]!.worker);
        assert.deepEqual(await get(s, '/api/v1/plugins/progress'), { complete_count: 0, left_count: 2 });
        await ok(s, 'DELETE', '/api/v1/worklist/0');
        assert.equal((await workers(s)).filter((w) => w.busy).length, 2);
        await ok(s, 'PATCH', '/api/v1/workers/0/abort');
        for (const id of [a!, b!]) assert.equal((await waitForOutput(s, id, TOOL_KEY)).status, 'Aborted');
        for (const w of busy) assert.equal(await groupAlive(w.worker!), false);
      },
      { workers: 2 },
    ));

  test('POST /workers: the new worker takes a queued work at once', () =>
    withServer(
      async (s) => {
        const id = await addTarget(s, 'http://a.example/');
        await queue(s, { id: String(id), type: 'external', code: 'OWTF-IG-001' });
        await ok(s, 'POST', '/api/v1/workers/');
        await waitForOutput(s, id, 'external@OWTF-IG-001', ['Successful']);
      },
      { workers: 0 },
    ));
});

describe('time limits and built-in checks', () => {
  test('a plugin\'s own timeout (1 s) ends its run before the server\'s limit: Aborted, saying the time limit', () =>
    withServer(async (s) => {
      const id = await addTarget(s, 'http://a.example/');
      await queue(s, { id: String(id), code: SHORT });
      const out = await waitForOutput(s, id, SHORT_KEY);
      assert.equal(out.status, 'Aborted');
      assert.match(out.error!, /time limit/);
    }));

  test('abort of a program that ignores SIGTERM ends its group with SIGKILL after the grace: Aborted', () =>
    withServer(async (s) => {
      await configure(s, { TOOL_WAFW00F: await script(tools, 'stubborn.sh', "trap '' TERM\necho started\nsleep 30\nsleep 30") });
      const id = await addTarget(s, 'http://a.example/');
      await queue(s, { id: String(id), code: TOOL });
      const { worker: pid, id: wid } = await waitForProgram(s, TOOL_KEY);
      await ok(s, 'PATCH', `/api/v1/workers/${wid}/abort`);
      const out = await waitForOutput(s, id, TOOL_KEY, undefined, 12_000);
      assert.equal(out.status, 'Aborted', JSON.stringify(out));
      assert.equal(await groupAlive(pid), false);
    }));

  test('a built-in check waiting on a silent target: the worker shows no pid; abort ends it Aborted', () =>
    withServer(
      async (s) => {
        const id = await addTarget(s, silence.url);
        await queue(s, { id: String(id), code: CHECK });
        const w = await waitFor('the check running', async () => (await workers(s)).find((x) => x.busy));
        assert.equal(w.worker, null);
        assert.equal((w.work[1] as { key: string }).key, CHECK_KEY);
        // past the start's own write: an abort before it is engine-runs' "as soon as queued" case
        await new Promise((r) => setTimeout(r, 200));
        await ok(s, 'PATCH', `/api/v1/workers/${w.id}/abort`);
        const out = await waitForOutput(s, id, CHECK_KEY);
        assert.equal(out.status, 'Aborted', JSON.stringify(out));
        assert.match(out.error!, /user/);
      },
      { checkTimeoutMs: 20_000 },
    ));

  test('a stop while a built-in check runs requeues its work at the head, its output Aborted', async () => {
    const dataDir = await tempDir();
    let s: TestServer | undefined = await schedServer({ dataDir, checkTimeoutMs: 20_000 });
    try {
      const id = await addTarget(s, silence.url);
      await queue(s, { id: String(id), code: CHECK });
      await waitFor('the check running', async () => (await workers(s!)).find((x) => x.busy));
      await s.stop();
      s = await startServer({ dataDir, workers: 0 });
      const works = await get(s, '/api/v1/worklist/');
      assert.deepEqual(works.map((w: { plugin: { key: string } }) => w.plugin.key), [CHECK_KEY]);
      const [out] = await outputs(s, id);
      assert.equal(out!.status, 'Aborted');
    } finally {
      await s?.close();
    }
  });

  test('a check whose target does not answer in the check time limit is Successful and unranked (never Passing), saying so', () =>
    withServer(
      async (s) => {
        const id = await addTarget(s, silence.url);
        await queue(s, { id: String(id), code: CHECK });
        const out = await waitForOutput(s, id, CHECK_KEY);
        assert.equal(out.status, 'Successful', JSON.stringify(out));
        assert.equal(out.owtf_rank, -1);
        assert.match(out.findings.map((f) => f.title + f.detail).join('\n'), /answer/);
      },
      { checkTimeoutMs: 300 },
    ));
});

describe('deleting sessions and targets', () => {
  test('deleting a session deletes its lone targets with their works, outputs and files', () =>
    withServer(
      async (s) => {
        await configure(s, { TOOL_WAFW00F: await script(tools, 'quick.sh', 'echo quick') });
        const id = await addTarget(s, 'http://a.example/');
        await queue(s, { id: String(id), code: TOOL });
        await waitForOutput(s, id, TOOL_KEY, ['Successful']);
        assert.ok(existsSync(join(s.dataDir, 'outputs', String(id))));
        await ok(s, 'PATCH', '/api/v1/workers/0/pause');
        await queue(s, { id: String(id), type: 'external', code: ['OWTF-IG-001', 'OWTF-IG-002'] });
        await ok(s, 'POST', '/api/v1/sessions/', { name: 'second' });
        await ok(s, 'DELETE', '/api/v1/sessions/1');
        assert.deepEqual(await get(s, '/api/v1/worklist/'), []);
        assert.equal((await send(s, 'GET', `/api/v1/targets/${id}/poutput/`)).status, 400);
        assert.deepEqual(await get(s, '/api/v1/plugins/progress'), { complete_count: 0, left_count: 0 });
        await waitFor('the files gone', async () => !existsSync(join(s.dataDir, 'outputs', String(id))), 5000);
      },
    ));

  test('removing a target from its only session deletes its works', () =>
    withServer(
      async (s) => {
        const [a, b] = await addTargets(s, 'http://a.example/', 'http://b.example/');
        await queue(s, { id: `${a},${b}`, type: 'external', code: 'OWTF-IG-001' });
        await ok(s, 'PATCH', '/api/v1/sessions/1/remove', { target_id: String(a) });
        assert.deepEqual((await get(s, '/api/v1/worklist/')).map((w: { target: { id: number } }) => w.target.id), [b]);
      },
      { workers: 0 },
    ));
});
