import { test } from 'node:test';
import { execFile, execFileSync } from 'node:child_process';
import assert from 'node:assert/strict';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { Agent, request as httpRequest } from 'node:http';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { parseCli, UsageError } from '../../src/cli.ts';
import { PROJECT_ROOT } from '../../src/paths.ts';
import { fill, mountTmpfs } from '../helpers/mount.ts';
import { request, runCli, spawnServer, tempDir } from '../helpers/server.ts';

test('flags, then ASSESSD_* variables, then defaults', () => {
  const defaults = {
    allowedHosts: [], token: undefined, noToken: false, fileServerPort: 8010, maxBody: 1048576, maxImportBody: 67108864, maxHarBody: 1073741824,
    workers: availableParallelism(), runTimeout: 3600, checkTimeout: 10, proxyHost: '127.0.0.1', proxyPort: 8008, noProxy: false,
  };
  assert.deepEqual(parseCli([], {}, '/proj/data'), {
    kind: 'serve',
    options: { ...defaults, host: '127.0.0.1', port: 8009, dataDir: '/proj/data', compactAfter: undefined },
  });
  const env = {
    ASSESSD_HOST: '0.0.0.0', ASSESSD_PORT: '9000', ASSESSD_DATA_DIR: '/env/dir', ASSESSD_COMPACT_AFTER: '100',
    ASSESSD_ALLOWED_HOSTS: 'Box.Lab, .corp.example', ASSESSD_TOKEN: 'from-env',
  };
  assert.deepEqual(parseCli([], env, '/proj/data'), {
    kind: 'serve',
    options: { ...defaults, host: '0.0.0.0', port: 9000, dataDir: '/env/dir', compactAfter: 100, allowedHosts: ['box.lab', '.corp.example'], token: 'from-env' },
  });
  const flags = ['--host', '::1', '--port', '0', '--data-dir', '/flag/dir', '--file-server-port', '9010', '--max-body', '10', '--max-import-body', '20', '--allowed-hosts', '*', '--token', 'from-flag'];
  assert.deepEqual(parseCli(flags, env, '/proj/data'), {
    kind: 'serve',
    // a free port for the API: a free one for the proxy too
    options: { ...defaults, host: '::1', port: 0, proxyPort: 0, dataDir: '/flag/dir', fileServerPort: 9010, maxBody: 10, maxImportBody: 20, compactAfter: 100, allowedHosts: '*', token: 'from-flag' },
  });
  // --no-token wins over a token in the environment, on a loopback host only
  const noToken = parseCli(['--no-token', '--host', '127.0.0.1'], env, '/proj/data');
  assert.ok(noToken.kind === 'serve' && noToken.options.noToken && noToken.options.token === undefined);
  assert.throws(() => parseCli(['--no-token'], env, '/proj/data'), /--no-token is for a loopback host only/);
  const engine = parseCli(['--workers', '3', '--run-timeout', '60', '--check-timeout', '2'], {}, '/proj/data');
  assert.ok(engine.kind === 'serve' && engine.options.workers === 3 && engine.options.runTimeout === 60 && engine.options.checkTimeout === 2);
  const fromEnv = parseCli([], { ASSESSD_WORKERS: '0', ASSESSD_RUN_TIMEOUT: '5', ASSESSD_CHECK_TIMEOUT: '7' }, '/proj/data');
  assert.ok(fromEnv.kind === 'serve' && fromEnv.options.workers === 0 && fromEnv.options.runTimeout === 5 && fromEnv.options.checkTimeout === 7);
  assert.deepEqual(parseCli(['--help'], {}, '/d'), { kind: 'help' });
  assert.deepEqual(parseCli(['-v'], {}, '/d'), { kind: 'version' });
});

test('bad flags and values are usage errors', () => {
  for (const argv of [
    ['--nope'], ['--port', '70000'], ['--port', 'abc'], ['--port', '-1'], ['--max-body', '0'], ['extra'], ['--host', ''],
    ['--allowed-hosts', 'evil.example/x'], ['--allowed-hosts', 'a b'], ['--token', 'has space'], ['--token', ''],
    ['--token', 'x', '--no-token'], ['--no-token=yes'], ['--max-import-body', '-5'], ['--max-import-body', '1.5'],
    ['--workers', '-1'], ['--workers', '257'], ['--run-timeout', '0'], ['--run-timeout', 'soon'], ['--check-timeout', '0'], ['--check-timeout', '3601'], ['--host', '::', '--no-token'],
  ]) {
    assert.throws(() => parseCli(argv, {}, '/d'), UsageError, argv.join(' '));
  }
  // a bad value from the environment names the variable it came from, not a flag nobody typed
  assert.throws(() => parseCli([], { ASSESSD_PORT: 'x' }, '/d'), { message: 'ASSESSD_PORT must be a port number from 0 to 65535, not "x"' });
  assert.throws(() => parseCli([], { ASSESSD_WORKERS: '-1' }, '/d'), { message: /^ASSESSD_WORKERS must be/ });
  assert.throws(() => parseCli([], { ASSESSD_PROXY_PORT: '70000' }, '/d'), { message: /^ASSESSD_PROXY_PORT must be/ });
  assert.throws(() => parseCli([], { ASSESSD_RUN_TIMEOUT: 'soon' }, '/d'), { message: /^ASSESSD_RUN_TIMEOUT must be/ });
  assert.throws(() => parseCli(['--port', 'y'], { ASSESSD_PORT: 'x' }, '/d'), { message: /^--port must be .*"y"/ });
  assert.throws(() => parseCli([], { ASSESSD_COMPACT_AFTER: '-1' }, '/d'), UsageError);
  // a negative number after a space is the flag's value, and its own error says what is wrong with it
  assert.throws(() => parseCli(['--workers', '-1'], {}, '/d'), { message: '--workers must be a number of workers from 0 to 256, not "-1"' });
  assert.throws(() => parseCli(['--workers=-1'], {}, '/d'), { message: '--workers must be a number of workers from 0 to 256, not "-1"' });
  assert.throws(() => parseCli(['--port', '-1'], {}, '/d'), { message: '--port must be a port number from 0 to 65535, not "-1"' });
  // a flag that takes no value keeps it apart: the stray number is the error
  assert.throws(() => parseCli(['--no-proxy', '-1'], {}, '/d'), { message: "Unknown option '-1' (see --help)" });
  // another value starting with a dash is still read as a flag: parseArgs says how to write it
  assert.throws(() => parseCli(['--host', '-x'], {}, '/d'), { message: "Option '--host' argument is ambiguous. To specify an option argument starting with a dash use '--host=-XYZ'. (see --help)" });
  assert.throws(() => parseCli(['--run-timeout', '31536001'], {}, '/d'), { message: '--run-timeout must be a number of seconds from 1 to 31536000 (365 days), not "31536001"' });
  // the proxy's settings with --no-proxy: one of them is a mistake
  assert.throws(() => parseCli(['--no-proxy', '--proxy-port', '5'], {}, '/d'), { message: '--proxy-port and --no-proxy exclude each other' });
  assert.throws(() => parseCli(['--proxy-host', '127.0.0.2', '--no-proxy'], {}, '/d'), { message: '--proxy-host and --no-proxy exclude each other' });
  // ... but not with the environment's: the flag wins, as --no-token over ASSESSD_TOKEN
  const noProxy = parseCli(['--no-proxy'], { ASSESSD_PROXY_PORT: '5', ASSESSD_PROXY_HOST: '0.0.0.0' }, '/d');
  assert.ok(noProxy.kind === 'serve' && noProxy.options.noProxy && noProxy.options.proxyHost === '127.0.0.1');
  // an empty ASSESSD_DATA_DIR is no setting; an empty --data-dir is an error that says so
  const emptyEnv = parseCli([], { ASSESSD_DATA_DIR: '' }, '/proj/data');
  assert.ok(emptyEnv.kind === 'serve' && emptyEnv.options.dataDir === '/proj/data');
  assert.throws(() => parseCli(['--data-dir', ''], {}, '/d'), { message: '--data-dir must name a directory, not ""' });
});

test('--help and --version print and exit 0', async () => {
  const help = await runCli(['--help']);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /Usage: assessd/);
  const version = await runCli(['--version']);
  assert.equal(version.code, 0);
  const pkg = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8'));
  assert.equal(version.stdout.trim(), pkg.version);
  // dist/main.js, earlier builds' entry point, still runs the same CLI
  const legacy = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
    execFile(process.execPath, [join(PROJECT_ROOT, 'dist', 'main.js'), '--version'], (err, stdout) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout }));
  });
  assert.deepEqual(legacy, { code: 0, stdout: `${pkg.version}\n` });
});

test('a bad flag: one line on stderr, no stack trace, exit 2', async () => {
  const run = await runCli(['--bogus']);
  assert.equal(run.code, 2);
  assert.equal(run.stderr.trim().split('\n').length, 1);
  assert.match(run.stderr, /^assessd: Unknown option '--bogus'/);
  assert.doesNotMatch(run.stderr, /\n\s+at /);
});

test('an unusable data dir: one line naming it, non-zero exit', async () => {
  const file = join(await tempDir(), 'a-file');
  await writeFile(file, 'not a dir');
  const run = await runCli(['--port', '0', '--data-dir', file]);
  assert.notEqual(run.code, 0);
  assert.equal(run.stderr.trim().split('\n').length, 1);
  assert.ok(run.stderr.includes(file), run.stderr);
});

test('a data dir on a full disk: one line naming the directory and saying the disk is full, non-zero exit', async (t) => {
  const dir = await tempDir();
  if (!mountTmpfs(dir, '64k')) return t.skip('this machine does not let the test mount a tmpfs (needs root)');
  try {
    fill(dir);
    const run = await runCli(['--port', '0', '--data-dir', dir]);
    assert.equal(run.code, 1);
    assert.equal(run.stderr.trim().split('\n').length, 1, run.stderr);
    assert.match(run.stderr, new RegExp(`^assessd: the disk holding the data directory ${dir} is full \\(ENOSPC: no space left on device.*\\): free some space there and start again$`, 'm'));
  } finally {
    execFileSync('umount', [dir]);
  }
});

test('the compiled server on a disk that fills up: each change a 500, one a 4xx would refuse too, health answers; once there is room the next change lands, no restart, and a restart holds what was acknowledged', async (t) => {
  const dir = await tempDir();
  if (!mountTmpfs(dir, '8m')) return t.skip('this machine does not let the test mount a tmpfs (needs root)');
  try {
    const server = await spawnServer(['--port', '0', '--data-dir', dir]);
    const create = (name: string) => request(server.url, '/api/v1/sessions/', { method: 'POST', form: { name } });
    try {
      assert.equal((await create('before')).status, 201);
      fill(dir);
      // what is left of the journal's last page takes a few small writes yet
      let refused;
      for (let i = 0; i < 500 && !refused; i++) {
        const res = await create(`filling ${i}`);
        if (res.status === 500) refused = res;
        else assert.equal(res.status, 201, res.text);
      }
      assert.deepEqual(refused?.json, { status: 'error', message: 'Internal server error', code: 500 });
      assert.equal((await create('refused')).status, 500);
      assert.equal((await create('before')).status, 500, 'a duplicate name, on a full disk: the same 500');
      assert.equal((await request(server.url, '/debug/health')).status, 200);
      await rm(join(dir, 'filler'));
      assert.equal((await create('after')).status, 201);
    } finally {
      server.proc.kill('SIGTERM');
      assert.equal(await server.exited, 0);
    }
    const again = await spawnServer(['--port', '0', '--data-dir', dir]);
    try {
      const names = (await request(again.url, '/api/v1/sessions/')).json.data.map((session: { name: string }) => session.name);
      assert.ok(names.includes('before') && names.includes('after'), names.join(', '));
      assert.ok(!names.includes('refused'), names.join(', '));
    } finally {
      again.proc.kill('SIGTERM');
      await again.exited;
    }
  } finally {
    execFileSync('umount', [dir]);
  }
});

test('a corrupt data file stops the start with a message naming it', async () => {
  const dir = await tempDir();
  await writeFile(join(dir, 'sessions.json'), '{oops');
  const run = await runCli(['--port', '0', '--data-dir', dir]);
  assert.equal(run.code, 1);
  assert.match(run.stderr, new RegExp(`^assessd: ${join(dir, 'sessions.json')}: not valid JSON`));
  assert.equal(await readFile(join(dir, 'sessions.json'), 'utf8'), '{oops');
  // one line, whatever the file holds (JSON.parse quotes it, line breaks and all)
  await writeFile(join(dir, 'sessions.json'), 'x\ny\r\nz\n');
  const broken = await runCli(['--port', '0', '--data-dir', dir]);
  assert.equal(broken.code, 1);
  assert.equal(broken.stderr.split('\n').filter(Boolean).length, 1, broken.stderr);
  assert.match(broken.stderr, /not valid JSON .*x\\ny\\r\\nz\\n/);
});

test('start-up line, env vars, a second server refused, SIGTERM exits 0 and releases the dir', async () => {
  const dir = join(await tempDir(), 'nested', 'data');
  const first = await spawnServer(['--port', '0'], { ASSESSD_DATA_DIR: dir, ASSESSD_HOST: '127.0.0.1' });
  try {
    // a token on loopback too: the API runs programs
    assert.match(first.output(), new RegExp(`^assessd: generated an API token in ${dir}/token .*\\nassessd listening on http://127\\.0\\.0\\.1:\\d+ \\(data: ${dir}\\); proxy on http://127\\.0\\.0\\.1:\\d+; log in at http://127\\.0\\.0\\.1:\\d+/\\?token=[A-Za-z0-9_-]{43}\\n`));
    assert.equal((await request(first.url, '/debug/health')).status, 200);
    const second = await runCli(['--port', '0', '--data-dir', dir]);
    assert.equal(second.code, 1);
    assert.equal(second.stderr.trim(), `assessd: data directory ${dir} is in use by process ${first.proc.pid}`);
  } finally {
    first.proc.kill('SIGTERM');
  }
  assert.equal(await first.exited, 0);
  const again = await spawnServer(['--port', '0', '--data-dir', dir]);
  again.proc.kill('SIGINT');
  assert.equal(await again.exited, 0);
});

test('SIGTERM lets an in-flight write finish before exiting', async () => {
  const dir = await tempDir();
  await mkdir(dir, { recursive: true });
  const server = await spawnServer(['--port', '0', '--data-dir', dir]);
  const writes = Array.from({ length: 20 }, (_, i) => request(server.url, '/api/v1/sessions/', { method: 'POST', form: { name: `n${i}` } }));
  await new Promise((r) => setTimeout(r, 5));
  server.proc.kill('SIGTERM');
  const settled = await Promise.allSettled(writes);
  assert.equal(await server.exited, 0);
  const acknowledged = settled.filter((s) => s.status === 'fulfilled' && s.value.status === 201).length;
  const restarted = await spawnServer(['--port', '0', '--data-dir', dir]);
  const saved = (await request(restarted.url, '/api/v1/sessions/')).json.data.length - 1;
  restarted.proc.kill('SIGTERM');
  await restarted.exited;
  assert.ok(acknowledged > 0 && saved >= acknowledged, `${acknowledged} acknowledged, ${saved} saved`);
});

test('SIGTERM with a browser keep-alive connection polling (a view asks every 1.5 s): the answers from then on close it, and the server exits', async () => {
  const server = await spawnServer(['--port', '0', '--no-token', '--data-dir', await tempDir()]);
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const send = (method: string, path: string, body?: string) =>
    new Promise<{ status: number; connection: string | undefined }>((resolve, reject) => {
      const req = httpRequest(`${server.url}${path}`, { method, agent, headers: body === undefined ? {} : { 'content-type': 'application/x-www-form-urlencoded', 'content-length': Buffer.byteLength(body) } }, (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode!, connection: res.headers.connection }));
      });
      req.on('error', reject);
      if (body === undefined) req.end();
      else {
        // in flight when the stop begins: its head sent, its body not yet
        req.flushHeaders();
        setTimeout(() => server.proc.kill('SIGTERM'), 200);
        setTimeout(() => req.end(body), 500);
      }
    });
  try {
    assert.equal((await send('GET', '/debug/health')).status, 200);
    assert.equal((await send('POST', '/api/v1/sessions/', 'name=in-flight')).status, 201);
    const after: (string | undefined)[] = [];
    // the view goes on asking on its connection; before, each answer kept it open, and the server never exited
    for (let i = 0; i < 40 && server.proc.exitCode === null; i++) {
      const answer = await send('GET', '/debug/health').catch(() => undefined);
      if (!answer) break;
      after.push(answer.connection);
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.deepEqual(after, ['close'], 'the first answer after the stop began closes its connection');
    assert.equal(await server.exited, 0);
  } finally {
    agent.destroy();
    server.proc.kill('SIGKILL');
  }
});

/** The compiled server, and a POST to it whose head is sent and whose body comes a byte a second (a slow client). */
async function slowPost() {
  const server = await spawnServer(['--port', '0', '--no-token', '--data-dir', await tempDir()]);
  const body = `name=${'s'.repeat(60)}`;
  const req = httpRequest(`${server.url}/api/v1/sessions/`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-length': body.length } });
  req.on('error', () => {});
  req.flushHeaders();
  let sent = 0;
  const drip = setInterval(() => (sent < body.length ? req.write(body[sent++]) : clearInterval(drip)), 1000);
  await new Promise((r) => setTimeout(r, 300));
  return { server, stopDripping: () => clearInterval(drip) };
}

test('SIGTERM with a client sending its body a byte a second: its request is cut after 10 s, not held until its 30 s time limit, and the server exits 0', async () => {
  const { server, stopDripping } = await slowPost();
  try {
    const began = Date.now();
    server.proc.kill('SIGTERM');
    assert.equal(await server.exited, 0);
    const took = Date.now() - began;
    assert.ok(took >= 9_000 && took < 25_000, `exited ${took} ms after SIGTERM`);
  } finally {
    stopDripping();
    server.proc.kill('SIGKILL');
  }
});

test('SIGHUP (the terminal or ssh session it was started from closed) stops the server as SIGTERM does: exit 0, the directory released (it died of the signal, its tools left running)', async () => {
  const dir = await tempDir();
  const server = await spawnServer(['--port', '0', '--no-token', '--no-proxy', '--data-dir', dir]);
  try {
    server.proc.kill('SIGHUP');
    assert.equal(await server.exited, 0);
    assert.match(server.output(), /SIGHUP: finishing in-flight requests and writes/);
    // released: the next start takes the directory at once
    const next = await spawnServer(['--port', '0', '--no-token', '--no-proxy', '--data-dir', dir]);
    next.proc.kill('SIGTERM');
    assert.equal(await next.exited, 0);
  } finally {
    server.proc.kill('SIGKILL');
  }
});

test('a second SIGINT (or SIGTERM) while the stop waits exits at once, 130 (143), saying so', async () => {
  for (const [second, code] of [['SIGINT', 130], ['SIGTERM', 143]] as const) {
    const { server, stopDripping } = await slowPost();
    try {
      server.proc.kill('SIGTERM');
      await new Promise((r) => setTimeout(r, 300));
      server.proc.kill(second);
      assert.equal(await server.exited, code);
      assert.match(server.output(), new RegExp(`${second} again: exiting now`));
    } finally {
      stopDripping();
      server.proc.kill('SIGKILL');
    }
  }
});

test('--file-server-port and --max-body reach the server', async () => {
  const server = await spawnServer(['--port', '0', '--data-dir', await tempDir(), '--file-server-port', '9123', '--max-body', '64']);
  try {
    assert.equal((await request(server.url, '/output_files/a.txt')).headers.location, 'http://127.0.0.1:9123/a.txt');
    const big = await request(server.url, '/api/v1/sessions/', { method: 'POST', form: { name: 'n'.repeat(100) } });
    assert.equal(big.status, 413);
    assert.equal((await request(server.url, '/api/v1/sessions/', { method: 'POST', form: { name: 'small' } })).status, 201);
  } finally {
    server.proc.kill('SIGTERM');
    await server.exited;
  }
});

test('two servers racing for one stale lock: exactly one of them starts', async () => {
  for (let round = 0; round < 3; round++) {
    const dir = await tempDir();
    await writeFile(join(dir, 'assessd.lock'), '999999999\n');
    const outcomes = await Promise.all(
      [0, 1].map(() =>
        spawnServer(['--port', '0', '--data-dir', dir]).then(
          (server) => ({ server }),
          (err: Error) => ({ error: err.message }),
        ),
      ),
    );
    const started = outcomes.flatMap((o) => ('server' in o ? [o.server] : []));
    for (const s of started) s.proc.kill('SIGTERM');
    await Promise.all(started.map((s) => s.exited));
    assert.equal(started.length, 1, JSON.stringify(outcomes.map((o) => ('error' in o ? o.error : 'started'))));
    const refused = outcomes.find((o) => 'error' in o) as { error: string };
    assert.match(refused.error, /is in use by process \d+/);
  }
});

test('a port in use: one line, non-zero exit, no token left behind', async () => {
  const first = await spawnServer(['--port', '0', '--data-dir', await tempDir()]);
  try {
    const port = new URL(first.url).port;
    const dir = await tempDir();
    const run = await runCli(['--host', '0.0.0.0', '--port', port, '--proxy-port', '0', '--data-dir', dir]);
    assert.equal(run.code, 1);
    assert.match(run.stderr.trim(), /^assessd: .*EADDRINUSE/);
    assert.equal(run.stderr.trim().split('\n').length, 1);
    await assert.rejects(readFile(join(dir, 'token')), { code: 'ENOENT' });
  } finally {
    first.proc.kill('SIGTERM');
    await first.exited;
  }
});

test('beyond loopback: a token is generated into DATA_DIR/token, the start line prints a login URL, the API needs the token', async () => {
  const dir = await tempDir();
  const server = await spawnServer(['--host', '0.0.0.0', '--port', '0', '--data-dir', dir]);
  try {
    const token = (await readFile(join(dir, 'token'), 'utf8')).trim();
    const port = new URL(server.url).port;
    assert.match(server.output(), new RegExp(`assessd listening on http://0\\.0\\.0\\.0:${port} \\(data: ${dir}\\); proxy on http://127\\.0\\.0\\.1:\\d+; log in at http://127\\.0\\.0\\.1:${port}/\\?token=${token}\\n`));
    const local = `http://127.0.0.1:${port}`;
    assert.equal((await request(local, '/api/v1/sessions/', { auth: false })).status, 401);
    assert.equal((await request(local, '/api/v1/sessions/', { headers: { authorization: `Bearer ${token}` } })).status, 200);
    assert.equal((await request(local, '/debug/health')).status, 200);
  } finally {
    server.proc.kill('SIGTERM');
    await server.exited;
  }
});

test('ASSESSD_TOKEN sets the token (and no file is written); --no-token serves loopback without one and warns, and is refused beyond it', async () => {
  const dir = await tempDir();
  const withToken = await spawnServer(['--host', '0.0.0.0', '--port', '0', '--data-dir', dir], { ASSESSD_TOKEN: 'env-token-0123456789' });
  try {
    const local = `http://127.0.0.1:${new URL(withToken.url).port}`;
    assert.equal((await request(local, '/api/v1/sessions/', { headers: { authorization: 'Bearer env-token-0123456789' } })).status, 200);
    assert.equal((await request(local, '/api/v1/sessions/', { auth: false })).status, 401);
    assert.match(withToken.output(), /warning: the token has 20 characters: one of fewer than 22 \(128 bits as base64url\) can be guessed/);
  } finally {
    withToken.proc.kill('SIGTERM');
    await withToken.exited;
  }
  await assert.rejects(readFile(join(dir, 'token')), { code: 'ENOENT' });
  const open = await spawnServer(['--port', '0', '--data-dir', dir, '--no-token']);
  try {
    assert.equal((await request(open.url, '/api/v1/sessions/')).status, 200);
    assert.match(open.output(), /warning: serving 127\.0\.0\.1 without a token/);
    assert.doesNotMatch(open.output(), /log in at/);
  } finally {
    open.proc.kill('SIGTERM');
    await open.exited;
  }
  const beyond = await runCli(['--host', '0.0.0.0', '--port', '0', '--data-dir', dir, '--no-token']);
  assert.equal(beyond.code, 2);
  assert.match(beyond.stderr, /--no-token is for a loopback host only/);
});

test('the compiled server: --allowed-hosts names the hosts that pass, and a cross-origin write is 403 and changes nothing', async () => {
  const server = await spawnServer(['--port', '0', '--data-dir', await tempDir(), '--allowed-hosts', 'assessd.lab.example']);
  try {
    assert.equal((await request(server.url, '/api/v1/sessions/', { headers: { host: 'assessd.lab.example' } })).status, 200);
    assert.equal((await request(server.url, '/api/v1/sessions/', { headers: { host: 'other.example' } })).status, 403);
    const csrf = await request(server.url, '/api/v1/sessions/', { method: 'POST', form: { name: 'csrf' }, headers: { origin: 'http://evil.example' } });
    assert.equal(csrf.status, 403);
    assert.equal(csrf.json.message, 'Cross-origin request refused');
    assert.equal((await request(server.url, '/api/v1/sessions/')).json.data.length, 1);
  } finally {
    server.proc.kill('SIGTERM');
    await server.exited;
  }
});

test('the compiled server: a login survives kill -9 and an immediate restart on its port; Log out ends it for good, the next restart too', async () => {
  const dir = await tempDir();
  const first = await spawnServer(['--port', '0', '--data-dir', dir]);
  const port = new URL(first.url).port;
  const login = await request(first.url, '/api/v1/auth', { method: 'POST', form: { token: first.token! }, auth: false });
  assert.equal(login.status, 200, login.text);
  const cookie = login.headers['set-cookie']![0]!.split(';')[0]!;
  const works = async (url: string) => (await request(url, '/api/v1/sessions/', { headers: { cookie }, auth: false })).status === 200;
  assert.ok(await works(first.url));
  first.proc.kill('SIGKILL');
  await first.exited;
  const second = await spawnServer(['--port', port, '--proxy-port', '0', '--data-dir', dir]);
  try {
    assert.ok(await works(second.url), 'the login was on disk when the login answered');
    assert.equal((await request(second.url, '/api/v1/auth', { method: 'DELETE', headers: { cookie }, auth: false })).status, 200);
    assert.equal(await works(second.url), false);
  } finally {
    second.proc.kill('SIGKILL');
    await second.exited;
  }
  const third = await spawnServer(['--port', port, '--proxy-port', '0', '--data-dir', dir]);
  try {
    assert.equal(await works(third.url), false, 'the logout was on disk when it answered');
  } finally {
    third.proc.kill('SIGTERM');
    await third.exited;
  }
});

test('a log whose reader went away (npm start 2>&1 | head -1): the server goes on serving, and a SIGTERM still exits 0', async () => {
  const server = await spawnServer(['--port', '0', '--data-dir', await tempDir()]);
  try {
    server.proc.stdout!.destroy();
    server.proc.stderr!.destroy();
    // refused requests are logged: each a write to a pipe nobody reads
    for (let i = 0; i < 3; i++) assert.equal((await request(server.url, '/api/v1/sessions/', { auth: false })).status, 401);
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal((await request(server.url, '/debug/health')).status, 200);
    server.proc.kill('SIGTERM');
    assert.equal(await server.exited, 0);
  } finally {
    server.proc.kill('SIGKILL');
  }
});
