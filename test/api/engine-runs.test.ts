/**
 * Runs of programs through the API: user plugin files whose tool keys (TOOL_WAFW00F, TOOL_LBD) are
 * set to small scripts; how a run ends (Successful, Skipped, Crashed, Aborted), what the program
 * receives (whole argv elements, no shell), and the workers: shape, pause/resume/abort, add, remove.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ENGINE_MESSAGES as E, MESSAGES as M } from '../../src/api/messages.ts';
import {
  addTarget,
  assertFail,
  configure,
  get,
  groupAlive,
  groupStopped,
  ok,
  procStat,
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

const RUN = 'USR-RUN-001';
const DASH = 'USR-RUN-002';
const CODES = 'USR-RUN-003';
const ADDR = 'USR-RUN-004';
const ADDR_KEY = `active@${ADDR}`;
const RUN_KEY = `active@${RUN}`;
const DASH_KEY = `active@${DASH}`;
const CODES_KEY = `active@${CODES}`;
const WORKER_KEYS = ['busy', 'id', 'name', 'paused', 'start_time', 'work', 'worker'];

let tools: string;
before(async () => {
  tools = await scriptDir();
});
after(() => rm(tools, { recursive: true, force: true }));

/** A server whose DATA_DIR/plugins has RUN (TOOL_WAFW00F: target_url, output_dir, a literal) and DASH (TOOL_LBD: host_name). */
async function engineServer(options: StartOptions = {}): Promise<TestServer> {
  const dataDir = options.dataDir ?? (await tempDir());
  await writePluginFile(dataDir, 'runs.json', {
    test_groups: [{ code: RUN, descrip: 'Runs a program' }, { code: DASH, descrip: 'Runs a program on the host name' }, { code: CODES, descrip: 'Runs a program whose 3 means success' }, { code: ADDR, descrip: 'Runs a program on the address' }],
    plugins: [
      toolPlugin(RUN, 'TOOL_WAFW00F', ['{target_url}', '{output_dir}', 'literal arg']),
      toolPlugin(DASH, 'TOOL_LBD', ['--host', '{host_name}', '-p', '{config:TCP_PORTS}']),
      toolPlugin(CODES, 'TOOL_WHATWEB', ['{target_url}'], { success_exit_codes: [0, 3] }),
      toolPlugin(ADDR, 'TOOL_HYDRA', ['{host_ip}', '{ip_url}', '{config:TCP_PORTS}']),
    ],
  });
  return startServer({ workers: 1, ...options, dataDir });
}

async function withRun(fn: (s: TestServer) => Promise<void>, options: StartOptions = {}): Promise<void> {
  const server = await engineServer(options);
  try {
    await fn(server);
  } finally {
    // a test that failed mid-run must not leave its program behind
    await ok(server, 'PATCH', '/api/v1/workers/0/abort').catch(() => {});
    await server.close();
  }
}

const TOOL_OF: Record<string, string> = { [RUN]: 'TOOL_WAFW00F', [DASH]: 'TOOL_LBD', [CODES]: 'TOOL_WHATWEB', [ADDR]: 'TOOL_HYDRA' };

/** Sets TOOL_WAFW00F to `program`, adds `url` and queues RUN on it; answers the target id. */
async function runOn(s: TestServer, program: string, url = 'http://127.0.0.1:1/', code = RUN, key = TOOL_OF[code]!): Promise<number> {
  await configure(s, { [key]: program });
  const id = await addTarget(s, url);
  assert.equal(await queue(s, { id: String(id), group: 'web', type: 'active', code }), 1);
  return id;
}

const errorsList = (s: TestServer): Promise<{ id: number; owtf_message: string; traceback: string }[]> => get(s, '/api/v1/errors/');

describe('a program that runs to its end', () => {
  test('Successful with its exit code; stdout and stderr stored under DATA_DIR/outputs/<target>/<group>/<type>/<code>/ and in the output text', () =>
    withRun(async (s) => {
      const program = await script(tools, 'argv.sh', 'for a in "$@"; do printf "[%s]\\n" "$a"; done\necho "to stderr" >&2\nexit 0');
      const id = await runOn(s, program);
      const out = await waitForOutput(s, id, RUN_KEY);
      const dir = join(s.dataDir, 'outputs', String(id), 'web', 'active', RUN);
      assert.equal(out.status, 'Successful', JSON.stringify(out));
      assert.equal(out.exit_code, 0);
      assert.equal(out.error, null);
      assert.equal(out.owtf_rank, -1);
      assert.equal(out.output_path, `${id}/web/active/${RUN}`);
      const stdout = await readFile(join(dir, 'stdout.txt'), 'utf8');
      assert.equal(stdout, `[http://127.0.0.1:1/]\n[${dir}]\n[literal arg]\n`);
      assert.equal(await readFile(join(dir, 'stderr.txt'), 'utf8'), 'to stderr\n');
      assert.ok(out.output!.includes(stdout), out.output);
      assert.ok(out.output!.includes('to stderr'), out.output);
      assert.deepEqual(await errorsList(s), []);
    }));

  test('a target URL full of shell metacharacters arrives as one argument, nothing interpreted', () =>
    withRun(async (s) => {
      const marker = join(tools, 'pwned');
      const program = await script(tools, 'argv-meta.sh', 'printf "%s\\n" "$#"; for a in "$@"; do printf "[%s]\\n" "$a"; done');
      const url = `http://127.0.0.1:1/a;b$(id)\`x\`|&>*$(touch${'${IFS}'}${marker})`;
      const id = await runOn(s, program, url);
      const target = await get(s, `/api/v1/targets/${id}`);
      const out = await waitForOutput(s, id, RUN_KEY);
      assert.equal(out.status, 'Successful', JSON.stringify(out));
      assert.equal(out.exit_code, 0);
      const stdout = await readFile(join(s.dataDir, 'outputs', String(id), 'web', 'active', RUN, 'stdout.txt'), 'utf8');
      const lines = stdout.split('\n');
      assert.equal(lines[0], '3', stdout);
      assert.equal(lines[1], `[${target.target_url}]`);
      assert.ok(target.target_url.includes('$(id)') && target.target_url.includes(';b') && target.target_url.includes('|&'), target.target_url);
      assert.ok(out.output!.includes(`[${target.target_url}]`));
      assert.equal(existsSync(marker), false, 'nothing in the URL was run');
    }));

  test('the program does not get the server\'s token in its environment', () =>
    withRun(async (s) => {
      const program = await script(tools, 'env.sh', 'env');
      process.env.ASSESSD_TOKEN = 'secret-token-of-the-server-0123456789';
      try {
        const id = await runOn(s, program);
        const out = await waitForOutput(s, id, RUN_KEY);
        assert.equal(out.status, 'Successful');
        assert.doesNotMatch(out.output!, /secret-token-of-the-server/);
      } finally {
        delete process.env.ASSESSD_TOKEN;
      }
    }));
});

describe('the exit status decides', () => {
  test('an exit status the plugin does not declare (default: only 0) is Crashed: error says the status and the last 10 lines of standard error, the run is listed in GET /errors/', () =>
    withRun(async (s) => {
      const program = await script(tools, 'fails.sh', 'echo "partial result"\ni=1; while [ $i -le 15 ]; do echo "error line $i" >&2; i=$((i+1)); done\nexit 3');
      const id = await runOn(s, program);
      const out = await waitForOutput(s, id, RUN_KEY);
      assert.equal(out.status, 'Crashed', JSON.stringify(out));
      assert.equal(out.exit_code, 3);
      assert.equal(out.owtf_rank, -1);
      assert.match(out.error!, /TOOL_WAFW00F exited with status 3 \(success: 0\)/);
      for (let i = 6; i <= 15; i++) assert.ok(out.error!.includes(`error line ${i}\n`) || out.error!.endsWith(`error line ${i}`), `line ${i} in ${out.error}`);
      assert.ok(!out.error!.includes('error line 5\n'), out.error!);
      assert.ok(out.output!.includes('partial result'), 'what it printed is kept');
      const errors = await errorsList(s);
      assert.equal(errors.length, 1);
      assert.ok(errors[0]!.owtf_message.includes(RUN_KEY) && errors[0]!.owtf_message.includes('status 3'), errors[0]!.owtf_message);
    }));

  test('a failure with nothing on standard error says so', () =>
    withRun(async (s) => {
      const id = await runOn(s, await script(tools, 'fails-quietly.sh', 'exit 1'));
      const out = await waitForOutput(s, id, RUN_KEY);
      assert.equal(out.status, 'Crashed', JSON.stringify(out));
      assert.match(out.error!, /exited with status 1 \(success: 0\); its standard error is empty/);
    }));

  test('an exit status the plugin declares in "success_exit_codes" is Successful', () =>
    withRun(async (s) => {
      const id = await runOn(s, await script(tools, 'found-things.sh', 'echo found\nexit 3'), 'http://127.0.0.1:1/', CODES);
      const out = await waitForOutput(s, id, CODES_KEY);
      assert.equal(out.status, 'Successful', JSON.stringify(out));
      assert.equal(out.exit_code, 3);
      assert.equal(out.error, null);
      assert.deepEqual(await errorsList(s), []);
    }));
});

describe('terminal escapes', () => {
  test('programs run with NO_COLOR=1 and TERM=dumb; the output text and error have no escape sequences, the raw files keep them', () =>
    withRun(async (s) => {
      const body = [
        'printf "NO_COLOR=%s TERM=%s\\n" "$NO_COLOR" "$TERM"',
        'printf "\\033[1;32m[+]\\033[0m The site \\033[1;94mhttp://x\\033[0m is behind \\033]0;title\\007a WAF\\r\\n"',
        'printf "\\033[31mfatal:\\033[0m no luck\\n" >&2',
        'exit 2',
      ].join('\n');
      const id = await runOn(s, await script(tools, 'colours.sh', body));
      const out = await waitForOutput(s, id, RUN_KEY);
      assert.equal(out.status, 'Crashed', JSON.stringify(out));
      assert.ok(out.output!.includes('NO_COLOR=1 TERM=dumb'), out.output);
      assert.ok(out.output!.includes('[+] The site http://x is behind a WAF\n'), out.output);
      assert.doesNotMatch(out.output!, /\x1b|\x07|\r/);
      assert.ok(out.error!.endsWith('fatal: no luck'), out.error!);
      assert.doesNotMatch(out.error!, /\x1b/);
      const raw = await readFile(join(s.dataDir, 'outputs', String(id), 'web', 'active', RUN, 'stdout.txt'), 'utf8');
      assert.ok(raw.includes('\x1b[1;32m[+]\x1b[0m'), 'the file keeps what the program wrote');
    }));
});

describe('values a run needs', () => {
  test('{host_ip} of a target stored without an address: looked up when the run needs it, passed, and kept with the target', () =>
    withRun(async (s) => {
      const program = await script(tools, 'addr.sh', 'for a in "$@"; do printf "[%s]\\n" "$a"; done');
      await configure(s, { TOOL_HYDRA: program });
      // more names than one request looks up: stored without addresses, as a bulk add or an import stores them
      const urls = ['http://localhost:1/x', ...Array.from({ length: 16 }, (_, i) => `http://n${i}.example.invalid/`)];
      await ok(s, 'POST', '/api/v1/targets/', { target_url: urls });
      const id = (await get(s, '/api/v1/targets/?target_url=http://localhost:1/x'))[0].id;
      assert.equal((await get(s, `/api/v1/targets/${id}`)).host_ip, '');
      assert.equal(await queue(s, { id: String(id), group: 'web', type: 'active', code: ADDR }), 1);
      const out = await waitForOutput(s, id, ADDR_KEY);
      assert.equal(out.status, 'Successful', JSON.stringify(out));
      assert.ok(out.output!.startsWith('[127.0.0.1]\n[http://127.0.0.1:1/x]\n'), out.output);
      const target = await get(s, `/api/v1/targets/${id}`);
      assert.deepEqual([target.host_ip, target.ip_url], ['127.0.0.1', 'http://127.0.0.1:1/x']);
    }));

  test('{host_ip} of a name that does not resolve: Skipped, naming the field and how to give it a value', () =>
    withRun(async (s) => {
      const marker = join(tools, 'addr-ran');
      const id = await runOn(s, await script(tools, 'addr-never.sh', `touch '${marker}'`), 'http://nowhere.example.invalid/', ADDR);
      const out = await waitForOutput(s, id, ADDR_KEY);
      assert.equal(out.status, 'Skipped', JSON.stringify(out));
      assert.match(out.error!, /\{host_ip\} has no value: nowhere\.example\.invalid did not resolve to an address .*\/etc\/hosts or DNS.*\{host\}/);
      assert.equal(existsSync(marker), false);
    }));

  test('a {config:KEY} path that does not exist (or begins with ~): Skipped, naming the key and the path, the program never run', () =>
    withRun(async (s) => {
      const marker = join(tools, 'path-ran');
      const program = await script(tools, 'path.sh', `touch '${marker}'`);
      for (const [value, says] of [
        ['/usr/share/dirb/no-such/list.txt', /TCP_PORTS is \/usr\/share\/dirb\/no-such\/list\.txt, which does not exist: install it \(Debian's dirb package: apt-get install dirb\), or set TCP_PORTS to another path with PATCH \/api\/v1\/configuration\//],
        ['~/.owtf/list.txt', /TCP_PORTS is ~\/\.owtf\/list\.txt: no shell expands "~"/],
      ] as const) {
        await configure(s, { TCP_PORTS: value });
        const id = await runOn(s, program, `http://127.0.0.1:${value.length}/`, ADDR);
        const out = await waitForOutput(s, id, ADDR_KEY);
        assert.equal(out.status, 'Skipped', JSON.stringify(out));
        assert.match(out.error!, says);
      }
      assert.equal(existsSync(marker), false);
    }));

  test('an empty {config:KEY}: Skipped, saying to set KEY through the configuration', () =>
    withRun(async (s) => {
      await configure(s, { TCP_PORTS: '' });
      const id = await runOn(s, await script(tools, 'addr-config.sh', 'exit 0'), 'http://127.0.0.1:1/', ADDR);
      const out = await waitForOutput(s, id, ADDR_KEY);
      assert.equal(out.status, 'Skipped', JSON.stringify(out));
      assert.match(out.error!, /\{config:TCP_PORTS\} is empty: set TCP_PORTS with PATCH \/api\/v1\/configuration\//);
    }));
});

describe('output caps', () => {
  /** 200 lines of output, past the 256 bytes these servers keep. */
  const LOUD = 'i=0; while [ $i -lt 200 ]; do echo "line $i of output"; i=$((i+1)); done';

  test('a program printing past the cap: Successful, the file ends with the cap note, error says so', () =>
    withRun(
      async (s) => {
        const program = await script(tools, 'loud.sh', LOUD);
        const id = await runOn(s, program);
        const out = await waitForOutput(s, id, RUN_KEY);
        assert.equal(out.status, 'Successful', JSON.stringify(out));
        assert.equal(out.exit_code, 0);
        assert.match(out.error ?? '', /capped/);
        const stdout = await readFile(join(s.dataDir, 'outputs', String(id), 'web', 'active', RUN, 'stdout.txt'), 'utf8');
        assert.ok(stdout.startsWith('line 0 of output\n'));
        assert.match(stdout, /\[output capped at 256 bytes\]\n$/);
        assert.ok(Buffer.byteLength(stdout) < 256 + 64, `${Buffer.byteLength(stdout)} bytes kept`);
      },
      { maxOutputBytes: 256 },
    ));

  test('a program printing past the cap, then stopped by the time limit: Aborted, its error says both', () =>
    withRun(
      async (s) => {
        const program = await script(tools, 'loud-then-slow.sh', `${LOUD}; exec sleep 30`);
        const id = await runOn(s, program);
        const out = await waitForOutput(s, id, RUN_KEY);
        assert.equal(out.status, 'Aborted', JSON.stringify(out));
        assert.match(out.error!, /^time limit of \d+ ms reached; output capped at 256 bytes per stream$/);
      },
      { maxOutputBytes: 256, runTimeoutMs: 600 },
    ));
});

describe('runs that do not run', () => {
  test('a host beginning with "-" (http://-oX/) is not one host: refused when the target is added', () =>
    withRun(async (s) => {
      const res = await send(s, 'POST', '/api/v1/targets/', { target_url: 'http://-oX/' });
      assertFail(res, 400, 'Invalid target URL provided');
      assert.match(res.json.data.target_url, /-ox is not one host/);
    }));

  test('a value starting with "-" (a configuration item, {config:TCP_PORTS}) is Skipped with the reason in error; the program never runs', () =>
    withRun(async (s) => {
      const marker = join(tools, 'dash-ran');
      const program = await script(tools, 'dash.sh', `touch '${marker}'`);
      await configure(s, { TCP_PORTS: '-oX' });
      const id = await runOn(s, program, 'http://127.0.0.1:1/', DASH);
      const out = await waitForOutput(s, id, DASH_KEY);
      assert.equal(out.status, 'Skipped', JSON.stringify(out));
      assert.match(out.error!, /\{config:TCP_PORTS\}/);
      assert.match(out.error!, /-oX/);
      assert.match(out.error!, /"-"|option/);
      assert.equal(existsSync(marker), false);
    }));

  test('a missing program (absolute path) is Skipped, error naming the key and the path', () =>
    withRun(async (s) => {
      const missing = join(tools, 'no-such-dir', 'wafw00f');
      const id = await runOn(s, missing);
      const out = await waitForOutput(s, id, RUN_KEY);
      assert.equal(out.status, 'Skipped', JSON.stringify(out));
      assert.ok(out.error!.includes('TOOL_WAFW00F'), out.error!);
      assert.ok(out.error!.includes(missing), out.error!);
    }));

  test('a missing program (a bare name not in PATH) is Skipped, error naming the key and the name', () =>
    withRun(async (s) => {
      const id = await runOn(s, 'assessd-no-such-program');
      const out = await waitForOutput(s, id, RUN_KEY);
      assert.equal(out.status, 'Skipped', JSON.stringify(out));
      assert.ok(out.error!.includes('TOOL_WAFW00F') && out.error!.includes('assessd-no-such-program'), out.error!);
    }));

  test('a directory as the program is Crashed and listed in GET /errors/', () =>
    withRun(async (s) => {
      const dir = join(tools, 'a-directory');
      await mkdir(dir, { recursive: true });
      const id = await runOn(s, dir);
      const out = await waitForOutput(s, id, RUN_KEY);
      assert.equal(out.status, 'Crashed', JSON.stringify(out));
      assert.ok(out.error!.includes(dir), out.error!);
      const errors = await errorsList(s);
      assert.equal(errors.length, 1);
      assert.ok(errors[0]!.owtf_message.includes(dir), errors[0]!.owtf_message);
    }));

  test('a file that is not executable is Crashed and listed in GET /errors/', () =>
    withRun(async (s) => {
      const file = join(tools, 'not-executable.sh');
      await writeFile(file, '#!/bin/sh\necho hi\n');
      await chmod(file, 0o644);
      const id = await runOn(s, file);
      const out = await waitForOutput(s, id, RUN_KEY);
      assert.equal(out.status, 'Crashed', JSON.stringify(out));
      assert.ok(out.error!.includes('TOOL_WAFW00F') && out.error!.includes(file), out.error!);
      const errors = await errorsList(s);
      assert.equal(errors.length, 1);
      assert.ok(errors[0]!.owtf_message.includes(file));
    }));

  test('a program killed by SIGSEGV is Crashed and listed in GET /errors/', () =>
    withRun(async (s) => {
      const program = await script(tools, 'segv.sh', 'echo before\nkill -SEGV $$');
      const id = await runOn(s, program);
      const out = await waitForOutput(s, id, RUN_KEY);
      assert.equal(out.status, 'Crashed', JSON.stringify(out));
      assert.match(out.error!, /SIGSEGV/);
      assert.ok(out.output!.includes('before'));
      const errors = await errorsList(s);
      assert.equal(errors.length, 1);
      assert.match(errors[0]!.owtf_message, /SIGSEGV/);
      assert.ok(errors[0]!.owtf_message.includes(RUN_KEY));
    }));

  test('an empty tool value is Skipped, the reason naming the key', () =>
    withRun(async (s) => {
      const id = await runOn(s, '');
      const out = await waitForOutput(s, id, RUN_KEY);
      assert.equal(out.status, 'Skipped', JSON.stringify(out));
      assert.match(out.error!, /TOOL_WAFW00F/);
    }));
});

const SLEEPER = 'echo started\nsleep 30\necho never';

describe('a program that sleeps: workers and their actions', () => {
  test('GET /workers during a run: work [target, plugin], start_time, worker = the pid, exactly the contract keys; output Running', () =>
    withRun(async (s) => {
      const program = await script(tools, 'sleep-shape.sh', SLEEPER);
      const id = await runOn(s, program);
      const worker = await waitForProgram(s, RUN_KEY);
      assert.equal(worker.id, 1);
      assert.equal(worker.name, 'Worker-1');
      assert.equal(worker.busy, true);
      assert.equal(worker.paused, false);
      assert.deepEqual(worker.work, [await get(s, `/api/v1/targets/${id}`), await get(s, `/api/v1/plugins/web/active/${RUN}`)]);
      assert.match(worker.start_time, /^\d{4}\/\d\d\/\d\d \d\d:\d\d:\d\d$/);
      assert.equal(typeof worker.worker, 'number');
      const stat = await procStat(worker.worker);
      assert.ok(stat, 'the pid is a live process');
      assert.equal(stat.pgrp, worker.worker, 'the program leads its own process group');
      assert.deepEqual(await get(s, '/api/v1/workers/1'), worker);
      const [running] = await get(s, `/api/v1/targets/${id}/poutput/`);
      assert.equal(running.status, 'Running');
      assert.deepEqual(await get(s, '/api/v1/worklist/'), [], 'a work leaves the worklist when a worker takes it');
      assert.deepEqual(await get(s, '/api/v1/plugins/progress'), { complete_count: 0, left_count: 1 });
      // last: the contract's worker has exactly these keys (extensions are allowed on targets only)
      assert.deepEqual(Object.keys(worker).sort(), WORKER_KEYS);
      assert.deepEqual(Object.keys((await workers(s))[0]!).sort(), WORKER_KEYS);
      // extension, asked for: when the run began, ISO 8601 (null for an idle worker)
      await ok(s, 'POST', '/api/v1/workers/');
      const [busy, idle] = await get(s, '/api/v1/workers/?include=started_at');
      assert.ok(Math.abs(Date.parse(busy.started_at) - Date.now()) < 60_000, busy.started_at);
      assert.match(busy.started_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      assert.equal(idle.started_at, null);
      assert.equal((await get(s, '/api/v1/workers/1?include=started_at')).started_at, busy.started_at);
      assertFail(await send(s, 'GET', '/api/v1/workers/?include=nope'), 400, M.invalidParameterType);
    }));

  test('pause stops the whole process group (T in /proc), resume continues it, abort ends it: Aborted', () =>
    withRun(async (s) => {
      const program = await script(tools, 'sleep-pause.sh', SLEEPER);
      const id = await runOn(s, program);
      const { worker: pid, id: wid } = await waitForProgram(s, RUN_KEY);
      await waitFor('the sleep child', async () => (await readFile(join(s.dataDir, 'outputs', String(id), 'web', 'active', RUN, 'stdout.txt'), 'utf8').catch(() => '')).includes('started'));
      assert.deepEqual(await ok(s, 'PATCH', `/api/v1/workers/${wid}/pause`), {});
      await waitFor('the group stopped', async () => groupStopped(pid), 5000);
      const w = await get(s, `/api/v1/workers/${wid}`);
      assert.equal(w.paused, true);
      assert.equal(w.busy, true);
      assert.deepEqual(await ok(s, 'PATCH', `/api/v1/workers/${wid}/resume`), {});
      await waitFor('the leader running again', async () => ['S', 'R'].includes((await procStat(pid))?.state ?? ''), 5000);
      assert.equal((await get(s, `/api/v1/workers/${wid}`)).paused, false);
      assert.deepEqual(await ok(s, 'PATCH', `/api/v1/workers/${wid}/abort`), {});
      const out = await waitForOutput(s, id, RUN_KEY);
      assert.equal(out.status, 'Aborted', JSON.stringify(out));
      assert.match(out.error!, /user/);
      await waitFor('no process of the group left', async () => !(await groupAlive(pid)), 8000);
      const idle = await get(s, `/api/v1/workers/${wid}`);
      assert.deepEqual({ busy: idle.busy, work: idle.work, start_time: idle.start_time, worker: idle.worker }, { busy: false, work: [], start_time: 'NA', worker: null });
      assert.deepEqual(await get(s, '/api/v1/worklist/'), [], 'an aborted work is not requeued');
      assert.deepEqual(await errorsList(s), []);
    }));

  test('every process of the group is stopped by pause, not only the leader', () =>
    withRun(async (s) => {
      const program = await script(tools, 'sleep-child.sh', 'sleep 30 &\nsleep 30 &\nwait');
      await runOn(s, program);
      const { worker: pid, id: wid } = await waitForProgram(s, RUN_KEY);
      const members = async () => {
        const { readdir } = await import('node:fs/promises');
        const found: number[] = [];
        for (const name of await readdir('/proc')) if (/^\d+$/.test(name) && (await procStat(Number(name)))?.pgrp === pid) found.push(Number(name));
        return found;
      };
      await waitFor('two children', async () => (await members()).length >= 3);
      await ok(s, 'PATCH', `/api/v1/workers/${wid}/pause`);
      await waitFor('every member stopped', async () => groupStopped(pid), 5000);
      await ok(s, 'PATCH', `/api/v1/workers/${wid}/abort`);
      await waitFor('the group gone', async () => !(await groupAlive(pid)), 8000);
    }));

  test('an abort as soon as the work is queued (its program not yet started): Aborted, error saying by a user', () =>
    withRun(async (s) => {
      const program = await script(tools, 'sleep-early-abort.sh', SLEEPER);
      await configure(s, { TOOL_WAFW00F: program });
      for (let i = 0; i < 5; i++) {
        const id = await addTarget(s, `http://early${i}.example/`);
        assert.equal(await queue(s, { id: String(id), group: 'web', type: 'active', code: RUN }), 1);
        await ok(s, 'PATCH', '/api/v1/workers/0/abort');
        const out = await waitForOutput(s, id, RUN_KEY);
        assert.equal(out.status, 'Aborted', JSON.stringify(out));
        assert.match(out.error!, /user/, `the error says who aborted it: ${out.error}`);
      }
    }));

  test('abort of a paused run ends it: Aborted', () =>
    withRun(async (s) => {
      const program = await script(tools, 'sleep-paused-abort.sh', SLEEPER);
      const id = await runOn(s, program);
      const { worker: pid } = await waitForProgram(s, RUN_KEY);
      await ok(s, 'PATCH', '/api/v1/workers/0/pause');
      await waitFor('stopped', async () => groupStopped(pid), 5000);
      await ok(s, 'PATCH', '/api/v1/workers/0/abort');
      const out = await waitForOutput(s, id, RUN_KEY);
      assert.equal(out.status, 'Aborted');
      // SIGKILL reaches a stopped group at once, but the kernel tears it down in its own time
      await waitFor('the group gone', async () => !(await groupAlive(pid)), 8000);
    }));

  test('the run time limit aborts a run: Aborted, error saying the time limit', () =>
    withRun(
      async (s) => {
        const program = await script(tools, 'sleep-limit.sh', SLEEPER);
        const id = await runOn(s, program);
        const out = await waitForOutput(s, id, RUN_KEY);
        assert.equal(out.status, 'Aborted', JSON.stringify(out));
        assert.match(out.error!, /time limit/);
        assert.deepEqual(await errorsList(s), []);
      },
      { runTimeoutMs: 300 },
    ));

  test('a paused worker takes no new work; resumed, it takes it', () =>
    withRun(async (s) => {
      await ok(s, 'PATCH', '/api/v1/workers/1/pause');
      const id = await addTarget(s, 'http://a.example/');
      await queue(s, { id: String(id), group: 'web', type: 'external', code: 'OWTF-IG-001' });
      // give an idle worker every chance to take it
      await new Promise((r) => setTimeout(r, 300));
      assert.equal((await get(s, '/api/v1/worklist/')).length, 1);
      assert.deepEqual(await get(s, `/api/v1/targets/${id}/poutput/`), []);
      await ok(s, 'PATCH', '/api/v1/workers/1/resume');
      await waitForOutput(s, id, 'external@OWTF-IG-001', ['Successful']);
    }));

  test('POST /workers adds a worker; DELETE /workers/<id> removes an idle one', () =>
    withRun(async (s) => {
      assert.deepEqual(await ok(s, 'POST', '/api/v1/workers/', undefined, 201), {});
      const after = await workers(s);
      assert.deepEqual(after.map((w) => [w.id, w.name, w.busy]), [[1, 'Worker-1', false], [2, 'Worker-2', false]]);
      assert.deepEqual(await ok(s, 'DELETE', '/api/v1/workers/2'), {});
      assert.deepEqual((await workers(s)).map((w) => w.id), [1]);
      assertFail(await send(s, 'GET', '/api/v1/workers/2'), 400, E.invalidWorker);
    }));

  test('DELETE /workers/<id> of a busy worker aborts its run first, then removes it', () =>
    withRun(async (s) => {
      const program = await script(tools, 'sleep-remove.sh', SLEEPER);
      const id = await runOn(s, program);
      const { worker: pid, id: wid } = await waitForProgram(s, RUN_KEY);
      assert.deepEqual(await ok(s, 'DELETE', `/api/v1/workers/${wid}`), {});
      const out = await waitForOutput(s, id, RUN_KEY);
      assert.equal(out.status, 'Aborted');
      // SIGKILL reaches a stopped group at once, but the kernel tears it down in its own time
      await waitFor('the group gone', async () => !(await groupAlive(pid)), 8000);
      await waitFor('the worker gone', async () => (await workers(s)).every((w) => w.id !== wid));
    }));

  test('paused time does not count toward the run time limit', () =>
    withRun(
      async (s) => {
        const program = await script(tools, 'sleep-paused-limit.sh', SLEEPER);
        const id = await runOn(s, program);
        const { worker: pid } = await waitForProgram(s, RUN_KEY);
        await ok(s, 'PATCH', '/api/v1/workers/0/pause');
        await waitFor('stopped', async () => groupStopped(pid), 5000);
        // paused for longer than the whole limit: the run must still be there
        await new Promise((r) => setTimeout(r, 3100));
        const [out] = await get(s, `/api/v1/targets/${id}/poutput/`);
        assert.equal(out.status, 'Running', JSON.stringify(out));
        await ok(s, 'PATCH', '/api/v1/workers/0/resume');
        const ended = await waitForOutput(s, id, RUN_KEY);
        assert.equal(ended.status, 'Aborted');
        assert.match(ended.error!, /time limit/);
      },
      // long enough that a loaded machine pauses the run before its limit (1 s was not, in CI)
      { runTimeoutMs: 3000 },
    ));

  test('the time limit\'s error names the limit as set (400 ms is not "0 s")', () =>
    withRun(
      async (s) => {
        const program = await script(tools, 'sleep-limit-words.sh', SLEEPER);
        const id = await runOn(s, program);
        const out = await waitForOutput(s, id, RUN_KEY);
        assert.equal(out.status, 'Aborted');
        assert.doesNotMatch(out.error!, /\b0 s\b/, out.error!);
        assert.match(out.error!, /400 ms|0\.4 s/, out.error!);
      },
      { runTimeoutMs: 400 },
    ));

  test('deleting the target of a running program ends its process group and removes its files', () =>
    withRun(async (s) => {
      const program = await script(tools, 'sleep-target-deleted.sh', SLEEPER);
      const id = await runOn(s, program);
      const { worker: pid } = await waitForProgram(s, RUN_KEY);
      await ok(s, 'DELETE', `/api/v1/targets/${id}`);
      await waitFor('the group gone', async () => !(await groupAlive(pid)), 8000);
      await waitFor('the worker idle', async () => (await workers(s)).every((w) => !w.busy), 8000);
      await waitFor('the files gone', async () => !existsSync(join(s.dataDir, 'outputs', String(id))), 5000);
    }));

  test('deleting the output of a running program ends its process group', () =>
    withRun(async (s) => {
      const program = await script(tools, 'sleep-output-deleted.sh', SLEEPER);
      const id = await runOn(s, program);
      const { worker: pid } = await waitForProgram(s, RUN_KEY);
      await ok(s, 'DELETE', `/api/v1/targets/${id}/poutput/`);
      await waitFor('the group gone', async () => !(await groupAlive(pid)), 8000);
      await waitFor('the worker idle', async () => (await workers(s)).every((w) => !w.busy), 8000);
      assert.deepEqual(await get(s, `/api/v1/targets/${id}/poutput/`), []);
    }));

  const refusals: { name: string; method: string; path: string; status: number; message: string }[] = [
    { name: 'GET with an action', method: 'GET', path: '/api/v1/workers/1/pause', status: 400, message: M.actionMustBeNone },
    { name: 'GET with abort', method: 'GET', path: '/api/v1/workers/1/abort', status: 400, message: M.actionMustBeNone },
    { name: 'GET of an unknown worker', method: 'GET', path: '/api/v1/workers/99', status: 400, message: E.invalidWorker },
    { name: 'PATCH pause of an unknown worker', method: 'PATCH', path: '/api/v1/workers/99/pause', status: 400, message: E.invalidWorker },
    { name: 'PATCH abort of an unknown worker', method: 'PATCH', path: '/api/v1/workers/99/abort', status: 400, message: E.invalidWorker },
    { name: 'DELETE of an unknown worker', method: 'DELETE', path: '/api/v1/workers/99', status: 400, message: E.invalidWorker },
    // upstream's route takes an optional id, then an optional action: each combination answers as its method says
    { name: 'GET of an action without an id', method: 'GET', path: '/api/v1/workers/pause', status: 400, message: M.actionMustBeNone },
    { name: 'POST with an id and an action', method: 'POST', path: '/api/v1/workers/1/pause', status: 400, message: E.workerIdAndActionNone },
    { name: 'POST with an action', method: 'POST', path: '/api/v1/workers/pause', status: 400, message: E.workerIdAndActionNone },
    { name: 'PATCH of an action without an id', method: 'PATCH', path: '/api/v1/workers/pause', status: 400, message: E.invalidWorker },
    { name: 'DELETE of an action without an id', method: 'DELETE', path: '/api/v1/workers/abort', status: 400, message: E.invalidWorker },
    { name: 'DELETE with an action', method: 'DELETE', path: '/api/v1/workers/1/abort', status: 400, message: E.actionNone },
  ];
  for (const { name, method, path, status, message } of refusals) {
    test(`${name} (${method} ${path}) is ${status} ${message}, nothing changes`, () =>
      withRun(async (s) => {
        const before = await workers(s);
        assertFail(await send(s, method, path), status, message);
        assert.deepEqual(await workers(s), before);
      }));
  }

  test('GET /workers/<id>/pause changes nothing even on a running worker', () =>
    withRun(async (s) => {
      const program = await script(tools, 'sleep-get.sh', SLEEPER);
      await runOn(s, program);
      const { worker: pid } = await waitForProgram(s, RUN_KEY);
      assertFail(await send(s, 'GET', '/api/v1/workers/1/pause'), 400, M.actionMustBeNone);
      assertFail(await send(s, 'GET', '/api/v1/workers/1/abort'), 400, M.actionMustBeNone);
      await new Promise((r) => setTimeout(r, 200));
      assert.notEqual((await procStat(pid))?.state, 'T');
      assert.equal((await workers(s))[0]!.busy, true);
    }));
});


