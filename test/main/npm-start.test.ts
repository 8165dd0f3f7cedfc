/** `npm start` as a user runs it: the node flags its script gives the server are in force. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { readProcStat } from '../../src/engine/proc.ts';
import { listening, npmStart, serverOfNpmStart, spawnServer, START_FLAGS, tempDir } from '../helpers/server.ts';

const linux = process.platform === 'linux' ? false : 'reads /proc';

const threads = (pid: number) => readdirSync(`/proc/${pid}/task`).length;

test('npm start runs the server with V8 keeping one helper thread (--v8-pool-size=1: the write tails at saturation)', { skip: linux }, async () => {
  assert.deepEqual(START_FLAGS, ['--v8-pool-size=1']);
  const [dir, plainDir, spawnedDir] = [await tempDir(), await tempDir(), await tempDir()];
  const npm = npmStart(dir);
  try {
    await listening(npm);
    const server = serverOfNpmStart(npm);
    assert.ok(server, 'the server is in npm start\'s process group');
    assert.deepEqual(server.argv.slice(1, server.argv.findIndex((arg) => arg.endsWith('assessd.cjs'))), START_FLAGS);

    // and it does what it says: three fewer threads than the same server under plain node
    const plain = await spawnServer(['--port', '0', '--data-dir', plainDir], {}, []);
    try {
      const asSpawned = await spawnServer(['--port', '0', '--data-dir', spawnedDir]);
      try {
        // both idle after their start: the same threads but V8's helpers
        await new Promise((resolve) => setTimeout(resolve, 300));
        assert.equal(threads(plain.proc.pid!) - threads(server.pid), 3, 'V8 keeps 1 helper thread instead of 4');
        assert.equal(threads(asSpawned.proc.pid!), threads(server.pid), 'the test helper spawns servers as npm start does');
      } finally {
        asSpawned.proc.kill('SIGKILL');
      }
    } finally {
      plain.proc.kill('SIGKILL');
    }
  } finally {
    process.kill(-npm.pid!, 'SIGKILL');
    for (const d of [dir, plainDir, spawnedDir]) await rm(d, { recursive: true, force: true });
  }
});

test('the CLI runs from its bundle with the V8 code cache the build made: taken with npm start\'s flags and with none (npx assessd)', async () => {
  for (const flags of [START_FLAGS, []]) {
    const dir = await tempDir();
    const server = await spawnServer(['--port', '0', '--data-dir', dir], { ASSESSD_DEBUG_CODE_CACHE: '1' }, flags);
    try {
      assert.match(server.output(), /^assessd: code cache accepted$/m, `flags ${JSON.stringify(flags)}: ${server.output()}`);
    } finally {
      server.proc.kill('SIGKILL');
      await rm(dir, { recursive: true, force: true });
    }
  }
});

test('SIGTERM to npm start alone (as a service manager or docker stop sends it) stops the server: it drains and exits, the directory free for the next start', { skip: linux }, async () => {
  const dir = await tempDir();
  const npm = npmStart(dir);
  try {
    await listening(npm);
    const server = serverOfNpmStart(npm);
    assert.ok(server, 'the server is in npm start\'s process group');
    const exited = new Promise<number | null>((resolve) => npm.once('exit', resolve));
    // npm alone, not its group: a shell between npm and node would not pass the signal on
    npm.kill('SIGTERM');
    await exited;
    const gone = () => readProcStat(server.pid) === undefined || readProcStat(server.pid)?.state === 'Z';
    for (let tries = 0; tries < 200 && !gone(); tries++) await new Promise((resolve) => setTimeout(resolve, 50));
    assert.ok(gone(), `the server (pid ${server.pid}) outlived npm start`);
    const next = await spawnServer(['--port', '0', '--data-dir', dir]);
    next.proc.kill('SIGKILL');
    await next.exited;
  } finally {
    try {
      process.kill(-npm.pid!, 'SIGKILL');
    } catch {
      // the group has ended
    }
    await rm(dir, { recursive: true, force: true });
  }
});
