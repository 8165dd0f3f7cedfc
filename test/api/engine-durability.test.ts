/**
 * What the engine keeps across a restart (queued and paused works, ranks and notes), what a stop
 * does to a running program (aborted, its work requeued at the head), what the next start does
 * after a crash (kill -9 of the compiled server: the program's group ended, its work back), and
 * the token the compiled server requires once it can run programs.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  addTarget,
  alive,
  configure,
  get,
  groupAlive,
  groupStopped,
  ok,
  outputs,
  queue,
  script,
  scriptDir,
  toolPlugin,
  waitFor,
  waitForOutput,
  waitForProgram,
  writePluginFile,
  type Api,
} from '../helpers/engine.ts';
import { request, runCli, spawnServer, startServer, tempDir, type ChildServer, type TestServer } from '../helpers/server.ts';
import { RUN_MARKER_VARIABLE, runMarker } from '../../src/engine/proc.ts';

const TOOL = 'USR-DUR-001';
const TOOL_KEY = `active@${TOOL}`;
const TOKEN = 'durability-test-token-0123456789abcdefghij';

let tools: string;
let sleeper: string;
before(async () => {
  tools = await scriptDir();
  sleeper = await script(tools, 'sleeper.sh', 'echo started\nsleep 30');
});
after(() => rm(tools, { recursive: true, force: true }));

async function pluginDir(): Promise<string> {
  const dataDir = await tempDir();
  await writePluginFile(dataDir, 'durability.json', {
    test_groups: [{ code: TOOL, descrip: 'Sleeps' }],
    plugins: [toolPlugin(TOOL, 'TOOL_WAFW00F', ['{target_url}'])],
  });
  return dataDir;
}

/** The sleeping tool queued on a new target, once its program runs: the target's id and the program's group. */
async function runningTool(server: Api, groups: number[] = []): Promise<{ id: number; pid: number }> {
  await configure(server, { TOOL_WAFW00F: sleeper });
  const id = await addTarget(server, 'http://a.example/');
  await queue(server, { id: String(id), code: TOOL });
  const { worker: pid } = await waitForProgram(server, TOOL_KEY);
  groups.push(pid);
  return { id, pid };
}

describe('a restart (stop, then start on the same data directory)', () => {
  test('keeps queued works in order, paused works paused, ranks, notes and the target\'s max ranks', async () => {
    const dataDir = await pluginDir();
    let s: TestServer | undefined = await startServer({ dataDir, workers: 1 });
    try {
      const id = await addTarget(s, 'http://a.example/');
      await queue(s, { id: String(id), type: 'external', code: 'OWTF-IG-001' });
      await waitForOutput(s, id, 'external@OWTF-IG-001', ['Successful']);
      await ok(s, 'PATCH', `/api/v1/targets/${id}/poutput/web/external/OWTF-IG-001`, { user_rank: '4', user_notes: 'kept across restarts' });
      await ok(s, 'PATCH', '/api/v1/workers/0/pause');
      await queue(s, { id: String(id), type: 'external', code: ['OWTF-IG-002', 'OWTF-IG-003', 'OWTF-IG-004'] });
      const queued = await get(s, '/api/v1/worklist/');
      assert.equal(queued.length, 3);
      await ok(s, 'PATCH', `/api/v1/worklist/${queued[1].id}/pause`);
      const works = await get(s, '/api/v1/worklist/');
      const outs = await outputs(s, id);
      const target = await get(s, `/api/v1/targets/${id}`);
      await s.stop();
      s = await startServer({ dataDir, workers: 0 });
      assert.deepEqual(await get(s, '/api/v1/worklist/'), works);
      assert.deepEqual(works.map((w: { active: boolean }) => w.active), [true, false, true]);
      assert.deepEqual(await outputs(s, id), outs);
      assert.deepEqual([outs[0]!.user_rank, outs[0]!.user_notes], [4, 'kept across restarts']);
      assert.deepEqual(await get(s, `/api/v1/targets/${id}`), target);
      assert.equal(target.max_user_rank, 4);
      // and the queue still runs, skipping the paused work
      await ok(s, 'POST', '/api/v1/workers/');
      await waitForOutput(s, id, 'external@OWTF-IG-004', ['Successful']);
      assert.deepEqual((await get(s, '/api/v1/worklist/')).map((w: { id: number }) => w.id), [works[1].id]);
    } finally {
      await s?.close();
    }
  });

  test('a stop while a program runs ends its group; its work is back at the head of the worklist and its output Aborted', async () => {
    const dataDir = await pluginDir();
    let s: TestServer | undefined = await startServer({ dataDir, workers: 1 });
    let pid = 0;
    try {
      let id: number;
      ({ id, pid } = await runningTool(s));
      await ok(s, 'PATCH', '/api/v1/workers/0/pause');
      await queue(s, { id: String(id), type: 'external', code: ['OWTF-IG-001', 'OWTF-IG-002'] });
      const behind = await get(s, '/api/v1/worklist/');
      assert.equal(behind.length, 2);
      await s.stop();
      assert.equal(await groupAlive(pid), false, 'no program outlives the server');
      s = await startServer({ dataDir, workers: 0 });
      const works = await get(s, '/api/v1/worklist/');
      assert.deepEqual(works.map((w: { plugin: { key: string } }) => w.plugin.key), [TOOL_KEY, 'external@OWTF-IG-001', 'external@OWTF-IG-002']);
      assert.deepEqual(works.slice(1), behind);
      assert.equal(works[0].active, true);
      const [out] = await outputs(s, id, `web/active/${TOOL}`);
      assert.equal(out!.status, 'Aborted', JSON.stringify(out));
      assert.match(out!.error!, /stop/);
      assert.deepEqual(await get(s, '/api/v1/plugins/progress'), { complete_count: 1, left_count: 3 });
    } finally {
      if (pid && (await groupAlive(pid))) process.kill(-pid, 'SIGKILL');
      await s?.close();
    }
  });
});

describe('a user plugin file removed between two starts', () => {
  test('its queued work and its output still answer (no 500); the work, run, is Skipped saying the plugin is gone', async () => {
    const dataDir = await pluginDir();
    let s: TestServer | undefined = await startServer({ dataDir, workers: 1 });
    try {
      await configure(s, { TOOL_WAFW00F: await script(tools, 'quick.sh', 'echo quick') });
      const [a, b] = [await addTarget(s, 'http://a.example/'), await addTarget(s, 'http://b.example/')];
      await queue(s, { id: String(a), code: TOOL });
      await waitForOutput(s, a, TOOL_KEY, ['Successful']);
      await ok(s, 'PATCH', '/api/v1/workers/0/pause');
      await queue(s, { id: String(b), code: TOOL });
      await s.stop();
      await rm(join(dataDir, 'plugins', 'durability.json'));
      s = await startServer({ dataDir, workers: 0 });
      const [work] = await get(s, '/api/v1/worklist/');
      assert.equal(work.plugin.key, TOOL_KEY);
      assert.equal(work.plugin.group, 'web');
      assert.equal(work.plugin.type, 'active');
      assert.deepEqual(await get(s, `/api/v1/worklist/${work.id}`), work);
      const [out] = await outputs(s, a);
      assert.equal(out!.status, 'Successful');
      assert.equal(out!.output, 'quick\n');
      const names = await get(s, `/api/v1/targets/${a}/poutput/names`);
      assert.deepEqual(Object.keys(names), [TOOL]);
      assert.equal(names[TOOL].details.code, TOOL);
      await ok(s, 'POST', '/api/v1/workers/');
      const skipped = await waitForOutput(s, b, TOOL_KEY);
      assert.equal(skipped.status, 'Skipped');
      assert.match(skipped.error!, /catalogue/);
    } finally {
      await s?.close();
    }
  });
});

/** The compiled server as a child process, with a bearer token. */
async function child(dataDir: string, workers: string, extra: string[] = []): Promise<ChildServer & Api> {
  const c = await spawnServer(['--port', '0', '--data-dir', dataDir, '--token', TOKEN, '--workers', workers, ...extra]);
  return Object.assign(c, { headers: { authorization: `Bearer ${TOKEN}` } });
}

async function stopChild(c: ChildServer | undefined): Promise<void> {
  if (!c || c.proc.exitCode !== null || c.proc.signalCode !== null) return;
  c.proc.kill('SIGTERM');
  await c.exited;
}

/**
 * A crash as a user's machine has it: the compiled server with `workers[0]` workers on a fresh
 * plugin directory, `before` on it, kill -9, `between` (what the dead server left, before a start
 * sees it), a restart on the same directory with `workers[1]` workers, `after` on it. The program
 * groups put in `groups` are ended if still alive; both servers and the directory go either way.
 */
async function acrossKill<T>(
  workers: [string, string],
  steps: {
    before: (first: ChildServer & Api, groups: number[]) => Promise<T>;
    between?: (kept: T) => Promise<void>;
    after: (second: ChildServer & Api, kept: T, groups: number[]) => Promise<void>;
  },
): Promise<void> {
  const dataDir = await pluginDir();
  const groups: number[] = [];
  let first: (ChildServer & Api) | undefined;
  let second: (ChildServer & Api) | undefined;
  try {
    first = await child(dataDir, workers[0]);
    const kept = await steps.before(first, groups);
    first.proc.kill('SIGKILL');
    await first.exited;
    await steps.between?.(kept);
    second = await child(dataDir, workers[1]);
    await steps.after(second, kept, groups);
  } finally {
    for (const pid of groups) if (await groupAlive(pid)) process.kill(-pid, 'SIGKILL');
    first?.proc.kill('SIGKILL');
    await stopChild(second);
    await rm(dataDir, { recursive: true, force: true });
  }
}

/** The live processes whose environment carries a run marker of this data directory (proc.ts). */
async function markedProcesses(dataDir: string): Promise<number[]> {
  const { readdir } = await import('node:fs/promises');
  const entry = `${RUN_MARKER_VARIABLE}=${runMarker(dataDir)}:`;
  const found: number[] = [];
  for (const name of await readdir('/proc')) {
    if (!/^[0-9]+$/.test(name)) continue;
    const environ = await readFile(`/proc/${name}/environ`, 'latin1').catch(() => '');
    if ((environ.startsWith(entry) || environ.includes(`\0${entry}`)) && (await alive(Number(name)))) found.push(Number(name));
  }
  return found;
}

describe('a program whose output was deleted while it ran, then a crash before it ended', () => {
  // ignores SIGTERM (and so do its children: an ignored signal stays ignored across exec), so
  // that it outlives the grace a deleted run gets; and starts a child that leaves its group
  const STUBBORN = "trap '' TERM\nsetsid sleep 31 &\necho started\nsleep 30";
  const deletes: { what: string; path: (target: number) => string }[] = [
    { what: 'its target', path: (target) => `/api/v1/targets/${target}` },
    { what: 'its output', path: (target) => `/api/v1/targets/${target}/poutput/` },
    { what: 'its session', path: () => '/api/v1/sessions/1' },
  ];
  for (const { what, path } of deletes) {
    test(`(${what} deleted) is ended by the next start, with what left its group: no output names it any more, yet its environment says whose it is`, async () => {
      const dataDir = await pluginDir();
      let first: (ChildServer & Api) | undefined;
      let second: (ChildServer & Api) | undefined;
      try {
        first = await child(dataDir, '1');
        await configure(first, { TOOL_WAFW00F: await script(tools, `stubborn-${what.replace(/\W/g, '')}.sh`, STUBBORN) });
        const id = await addTarget(first, 'http://a.example/');
        await queue(first, { id: String(id), code: TOOL });
        await waitForProgram(first, TOOL_KEY);
        await waitFor('the program and the child that left its group', async () => (await markedProcesses(dataDir)).length >= 3);
        await ok(first, 'DELETE', path(id));
        first.proc.kill('SIGKILL');
        await first.exited;
        assert.notDeepEqual(await markedProcesses(dataDir), [], 'the programs outlived their server');
        second = await child(dataDir, '0');
        await waitFor('no process of the dead server\'s runs left', async () => (await markedProcesses(dataDir)).length === 0, 10_000);
        await waitFor('the start to say so', async () => second!.output().includes('ended 3 processes left running by a server that stopped'));
      } finally {
        for (const pid of await markedProcesses(dataDir)) process.kill(pid, 'SIGKILL');
        first?.proc.kill('SIGKILL');
        await stopChild(second);
        await rm(dataDir, { recursive: true, force: true });
      }
    });
  }
});

describe('a server that exits without its stop (an internal error, a second signal)', () => {
  // ignores SIGTERM, so that only its group's SIGKILL ends it before its 30 s
  const STUBBORN = "trap '' TERM\necho started\nsleep 30";
  for (const how of ['an uncaught exception', 'a second SIGTERM during the stop'] as const) {
    test(`(${how}) kills the programs it runs as it goes: they no longer run on unwatched until the next start`, async () => {
      const dataDir = await pluginDir();
      // an error thrown in the server's own process, as a bug would (a signal tells it when)
      const planted = join(tools, 'throw-on-usr2.mjs');
      await writeFile(planted, "process.on('SIGUSR2', () => setImmediate(() => { throw new Error('planted by the test'); }));\n");
      let server: ChildServer | undefined;
      let pid = 0;
      try {
        server = await spawnServer(['--port', '0', '--data-dir', dataDir, '--token', TOKEN, '--workers', '1'], {}, ['--import', planted]);
        const api = Object.assign(server, { headers: { authorization: `Bearer ${TOKEN}` } });
        await configure(api, { TOOL_WAFW00F: await script(tools, 'stubborn-exit.sh', STUBBORN) });
        const id = await addTarget(api, 'http://a.example/');
        await queue(api, { id: String(id), code: TOOL });
        ({ worker: pid } = await waitForProgram(api, TOOL_KEY));
        if (how === 'an uncaught exception') {
          server.proc.kill('SIGUSR2');
          assert.equal(await server.exited, 1);
          assert.match(server.output(), /planted by the test/);
        } else {
          server.proc.kill('SIGTERM');
          await new Promise((r) => setTimeout(r, 300));
          server.proc.kill('SIGTERM');
          assert.equal(await server.exited, 143);
        }
        await waitFor('the program to be ended with its server', async () => !(await groupAlive(pid)), 3000);
      } finally {
        if (pid > 0 && (await groupAlive(pid))) process.kill(-pid, 'SIGKILL');
        server?.proc.kill('SIGKILL');
        await rm(dataDir, { recursive: true, force: true });
      }
    });
  }
});

describe('after a crash of the compiled server (kill -9)', () => {
  test('the next start ends the program group the dead server left running and puts its work back', () =>
    acrossKill(['1', '0'], {
      before: async (first, groups) => {
        const { id, pid } = await runningTool(first, groups);
        return { id, pid, target: await get(first, `/api/v1/targets/${id}`) };
      },
      between: async ({ pid }) => {
        // give the run's record a moment: the pid was recorded when the program started
        assert.equal(await alive(pid), true, 'the program outlived its server (it runs in its own group)');
      },
      after: async (second, { id, pid, target }) => {
        assert.equal(await groupAlive(pid), false, 'the start ended the group the dead server left');
        const works = await get(second, '/api/v1/worklist/');
        assert.equal(works.length, 1, JSON.stringify(works));
        assert.equal(works[0].plugin.key, TOOL_KEY);
        assert.deepEqual(works[0].target, target);
        const [out] = await outputs(second, id);
        assert.equal(out!.status, 'Aborted', JSON.stringify(out));
        assert.deepEqual(await get(second, '/api/v1/workers/'), []);
      },
    }));

  test('a paused (stopped) program left by a crash is ended too', () =>
    acrossKill(['1', '0'], {
      before: async (first, groups) => {
        const { pid } = await runningTool(first, groups);
        await ok(first, 'PATCH', '/api/v1/workers/0/pause');
        await waitFor('stopped', async () => groupStopped(pid), 5000);
        return pid;
      },
      after: async (second, pid) => {
        assert.equal(await groupAlive(pid), false);
        assert.equal((await get(second, '/api/v1/worklist/')).length, 1);
      },
    }));

  test('acknowledged writes survive kill -9: queued and paused works, ranks and notes', () =>
    acrossKill(['1', '0'], {
      before: async (first) => {
        const id = await addTarget(first, 'http://a.example/');
        await queue(first, { id: String(id), type: 'external', code: 'OWTF-IG-001' });
        await waitForOutput(first, id, 'external@OWTF-IG-001', ['Successful']);
        await ok(first, 'PATCH', '/api/v1/workers/0/pause');
        await queue(first, { id: String(id), type: 'external', code: ['OWTF-IG-002', 'OWTF-IG-003'] });
        const works = await get(first, '/api/v1/worklist/');
        await ok(first, 'PATCH', `/api/v1/worklist/${works[0].id}/pause`);
        await ok(first, 'PATCH', `/api/v1/targets/${id}/poutput/web/external/OWTF-IG-001`, { user_rank: '2', user_notes: 'acknowledged' });
        return { id, works };
      },
      after: async (second, { id, works }) => {
        const after = await get(second, '/api/v1/worklist/');
        assert.deepEqual(after.map((w: { id: number; active: boolean }) => [w.id, w.active]), [[works[0].id, false], [works[1].id, true]]);
        const [out] = await outputs(second, id);
        assert.deepEqual([out!.status, out!.user_rank, out!.user_notes], ['Successful', 2, 'acknowledged']);
        assert.equal((await get(second, `/api/v1/targets/${id}`)).max_user_rank, 2);
      },
    }));

  test('a DELETE of outputs with filters survives kill -9 and the restart that replays it: only what it selected is gone, ranks and notes on the rest kept', () =>
    acrossKill(['1', '0'], {
      before: async (first) => {
        const id = await addTarget(first, 'http://a.example/');
        const codes = ['OWTF-IG-001', 'OWTF-IG-002', 'OWTF-IG-003'];
        await queue(first, { id: String(id), type: 'external', code: codes });
        for (const code of codes) await waitForOutput(first, id, `external@${code}`, ['Successful']);
        await ok(first, 'PATCH', `/api/v1/targets/${id}/poutput/web/external/OWTF-IG-002`, { user_rank: '3', user_notes: 'ranked' });
        // every output the tester has not ranked
        await ok(first, 'DELETE', `/api/v1/targets/${id}/poutput/?user_rank=-1`);
        return id;
      },
      after: async (second, id) => {
        const left = await outputs(second, id);
        assert.deepEqual(left.map((o) => [o.plugin_key, o.user_rank, o.user_notes]), [['external@OWTF-IG-002', 3, 'ranked']]);
        assert.equal((await get(second, `/api/v1/targets/${id}`)).max_user_rank, 3);
      },
    }));

  test('a work found running after a crash is run again by the next start (with workers)', () =>
    acrossKill(['1', '1'], {
      before: (first, groups) => runningTool(first, groups),
      after: async (second, { id, pid }, groups) => {
        const again = await waitForProgram(second, TOOL_KEY);
        groups.push(again.worker);
        assert.notEqual(again.worker, pid);
        assert.equal(await groupAlive(pid), false);
        assert.deepEqual(await get(second, '/api/v1/worklist/'), []);
        await ok(second, 'PATCH', '/api/v1/workers/0/abort');
        const out = await waitForOutput(second, id, TOOL_KEY);
        assert.equal(out.status, 'Aborted');
      },
    }));
});

describe('the compiled server\'s engine options', () => {
  test('without --workers it has one worker per available core; ASSESSD_WORKERS sets the count', async () => {
    const { availableParallelism } = await import('node:os');
    for (const [env, expected] of [[{}, availableParallelism()], [{ ASSESSD_WORKERS: '3' }, 3]] as const) {
      const dataDir = await tempDir();
      let c: ChildServer | undefined;
      try {
        c = await spawnServer(['--port', '0', '--data-dir', dataDir, '--token', TOKEN], { ASSESSD_WORKERS: undefined, ...env });
        const api = { url: c.url, headers: { authorization: `Bearer ${TOKEN}` } };
        const ws = await get(api, '/api/v1/workers/');
        assert.deepEqual(ws.map((w: { name: string }) => w.name), Array.from({ length: expected }, (_, i) => `Worker-${i + 1}`));
      } finally {
        await stopChild(c);
        await rm(dataDir, { recursive: true, force: true });
      }
    }
  });

  test('--run-timeout 1 aborts a longer run, saying the time limit', async () => {
    const dataDir = await pluginDir();
    let c: (ChildServer & Api) | undefined;
    try {
      c = await child(dataDir, '1', ['--run-timeout', '1']);
      await configure(c, { TOOL_WAFW00F: sleeper });
      const id = await addTarget(c, 'http://a.example/');
      await queue(c, { id: String(id), code: TOOL });
      const out = await waitForOutput(c, id, TOOL_KEY);
      assert.equal(out.status, 'Aborted');
      assert.match(out.error!, /time limit/);
    } finally {
      await stopChild(c);
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  test('the errors of crashed runs survive a restart', async () => {
    const dataDir = await pluginDir();
    let s: TestServer | undefined = await startServer({ dataDir, workers: 1 });
    try {
      await configure(s, { TOOL_WAFW00F: tools });
      const id = await addTarget(s, 'http://a.example/');
      await queue(s, { id: String(id), code: TOOL });
      await waitForOutput(s, id, TOOL_KEY, ['Crashed']);
      const errors = await get(s, '/api/v1/errors/');
      assert.equal(errors.length, 1);
      await ok(s, 'PATCH', `/api/v1/errors/${errors[0].id}`, { user_message: 'noted' });
      const patched = await get(s, '/api/v1/errors/');
      await s.stop();
      s = await startServer({ dataDir, workers: 0 });
      assert.deepEqual(await get(s, '/api/v1/errors/'), patched);
    } finally {
      await s?.close();
    }
  });
});

describe('the token of the compiled server', () => {
  test('without --token a token is generated (DATA_DIR/token, 0600), required on loopback, and the start line prints a login URL', async () => {
    const dataDir = await tempDir();
    let c: ChildServer | undefined;
    try {
      c = await spawnServer(['--port', '0', '--data-dir', dataDir, '--workers', '0']);
      const token = (await readFile(join(dataDir, 'token'), 'utf8')).trim();
      assert.ok(token.length >= 43, 'at least 32 random bytes in base64url');
      assert.equal((await stat(join(dataDir, 'token'))).mode & 0o777, 0o600);
      const denied = await request(c.url, '/api/v1/sessions/', { auth: false });
      assert.equal(denied.status, 401);
      assert.equal(denied.json.message, 'Authentication required');
      assert.equal(denied.headers['www-authenticate'], 'Bearer realm="assessd"');
      for (const path of ['/api/v1/plugins/', '/api/v1/workers/', '/api/v1/worklist/']) {
        assert.equal((await request(c.url, path, { auth: false })).status, 401, path);
      }
      assert.equal((await request(c.url, '/api/v1/worklist/', { auth: false, method: 'POST', form: { id: '1', code: 'OWTF-IG-001' } })).status, 401);
      assert.equal((await request(c.url, '/debug/health', { auth: false })).status, 200);
      assert.equal(c.token, token, 'the login URL carries the stored token');
      const allowed = await request(c.url, '/api/v1/sessions/', { headers: { authorization: `Bearer ${token}` } });
      assert.equal(allowed.status, 200);
      assert.match(c.output(), new RegExp(`log in at ${c.url.replace(/[.]/g, '\\.')}/\\?token=${encodeURIComponent(token)}`));
      await stopChild(c);
      c = await spawnServer(['--port', '0', '--data-dir', dataDir, '--workers', '0']);
      assert.equal(c.token, token, 'the token is reused by the next start');
      assert.equal((await request(c.url, '/api/v1/sessions/', { headers: { authorization: `Bearer ${token}` } })).status, 200);
    } finally {
      await stopChild(c);
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  test('--no-token on 127.0.0.1 serves without a token, with a warning', async () => {
    const dataDir = await tempDir();
    let c: ChildServer | undefined;
    try {
      c = await spawnServer(['--port', '0', '--data-dir', dataDir, '--workers', '0', '--no-token', '--host', '127.0.0.1']);
      assert.equal((await request(c.url, '/api/v1/sessions/')).status, 200);
      assert.match(c.output(), /warning/i);
      assert.match(c.output(), /token/);
    } finally {
      await stopChild(c);
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  test('--no-token with --host 0.0.0.0 is refused at start', async () => {
    const dataDir = await tempDir();
    try {
      const { code, stdout, stderr } = await runCli(['--port', '0', '--data-dir', dataDir, '--workers', '0', '--no-token', '--host', '0.0.0.0']);
      assert.notEqual(code, 0);
      assert.doesNotMatch(stdout, /listening/);
      assert.match(stderr, /no-token/);
      assert.match(stderr, /loopback/);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

