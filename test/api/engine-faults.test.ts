/**
 * Disk faults while programs run: the outputs directory full (a real tmpfs of 256 KiB, where this
 * machine lets the test mount one), and the journal refusing writes as a run ends.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmod, mkdir, rm, writeFile } from 'node:fs/promises';
import { getPriority } from 'node:os';
import { join } from 'node:path';
import { addTarget, configure, get, ok, queue, script, scriptDir, send, toolPlugin, waitFor, waitForOutput, writePluginFile } from '../helpers/engine.ts';
import { failingDisk } from '../helpers/failing-fs.ts';
import { fill, mountExt4, mountTmpfs } from '../helpers/mount.ts';
import { spawnServer, startServer, tempDir, type StartOptions } from '../helpers/server.ts';

const CODE = 'USR-DISK-001';
const KEY = `active@${CODE}`;

let tools: string;
before(async () => {
  tools = await scriptDir();
});
after(() => rm(tools, { recursive: true, force: true }));

async function server(options: StartOptions = {}) {
  const dataDir = await tempDir();
  await writePluginFile(dataDir, 'disk.json', { test_groups: [{ code: CODE, descrip: 'Writes output' }], plugins: [toolPlugin(CODE, 'TOOL_WAFW00F', ['{target_url}'])] });
  return { dataDir, options: { workers: 1, ...options, dataDir } };
}

test('a full disk under the outputs during a run: the run ends Crashed (listed in the errors), the store keeps working', async (t) => {
  const { dataDir, options } = await server();
  const outputs = join(dataDir, 'outputs');
  await mkdir(outputs, { recursive: true });
  if (!mountTmpfs(outputs, '256k')) return t.skip('this machine does not let the test mount a tmpfs (needs root)');
  const s = await startServer(options);
  try {
    // 4 MiB of output into 256 KiB of disk
    const program = await script(tools, 'loud.sh', 'head -c 4194304 /dev/zero | tr "\\0" x');
    await configure(s, { TOOL_WAFW00F: program });
    const id = await addTarget(s, 'http://127.0.0.1:1/');
    assert.equal(await queue(s, { id: String(id), type: 'active', code: CODE }), 1);
    const output = await waitForOutput(s, id, KEY, ['Crashed', 'Successful', 'Aborted', 'Skipped']);
    assert.equal(output.status, 'Crashed', JSON.stringify(output));
    assert.match(output.error ?? '', /could not write its output: .*ENOSPC/);
    const errors = await get(s, '/api/v1/errors/');
    assert.equal(errors.length, 1);
    assert.match(errors[0].owtf_message, new RegExp(`${KEY} on http://127\\.0\\.0\\.1:1/`));
    // the store is elsewhere: it goes on answering and writing
    assert.equal((await send(s, 'POST', '/api/v1/sessions/', { name: 'after the full disk' })).status, 201);
  } finally {
    await s.stop();
    execFileSync('umount', [outputs]);
    await rm(dataDir, { recursive: true, force: true });
  }
});

test('a program that goes on writing once the disk is full is ended at once, Crashed, not left running to its time limit', async (t) => {
  const { dataDir, options } = await server({ runTimeoutMs: 300_000 });
  const outputs = join(dataDir, 'outputs');
  await mkdir(outputs, { recursive: true });
  if (!mountTmpfs(outputs, '256k')) return t.skip('this machine does not let the test mount a tmpfs (needs root)');
  const s = await startServer(options);
  try {
    // writes for ever: before, read and dropped for the 300 s of the time limit (and a core busy)
    await configure(s, { TOOL_WAFW00F: await script(tools, 'endless.sh', 'exec yes') });
    const id = await addTarget(s, 'http://127.0.0.1:1/');
    assert.equal(await queue(s, { id: String(id), type: 'active', code: CODE }), 1);
    const output = await waitForOutput(s, id, KEY, ['Crashed', 'Successful', 'Aborted', 'Skipped'], 20_000);
    assert.equal(output.status, 'Crashed', JSON.stringify(output));
    assert.match(output.error ?? '', /could not write its output: .*ENOSPC/);
  } finally {
    await s.stop();
    execFileSync('umount', [outputs]);
    await rm(dataDir, { recursive: true, force: true });
  }
});

test('an output directory the disk has no room for: Crashed saying ENOSPC (node\'s recursive mkdir says ENOENT), and no path of the server', async (t) => {
  const { dataDir, options } = await server();
  const outputs = join(dataDir, 'outputs');
  await mkdir(outputs, { recursive: true });
  if (!mountExt4(outputs, `${dataDir}.img`)) return t.skip('this machine does not let the test mount an ext4 image (needs root and a loop device)');
  try {
    await chmod(outputs, 0o700);
    // every block taken: a new directory has none left
    fill(outputs);
    const s = await startServer(options);
    try {
      await configure(s, { TOOL_WAFW00F: await script(tools, 'quiet.sh', 'echo hi') });
      const id = await addTarget(s, 'http://127.0.0.1:1/');
      assert.equal(await queue(s, { id: String(id), type: 'active', code: CODE }), 1);
      const output = await waitForOutput(s, id, KEY, ['Crashed', 'Successful', 'Aborted', 'Skipped']);
      assert.equal(output.status, 'Crashed', JSON.stringify(output));
      assert.equal(output.error, 'could not make the output directory: ENOSPC: no space left on device');
    } finally {
      await s.stop();
    }
  } finally {
    execFileSync('umount', [outputs]);
    await rm(`${dataDir}.img`, { force: true });
    await rm(dataDir, { recursive: true, force: true });
  }
});

test('an output directory that cannot be made for another reason (a file in its place): Crashed saying why, and no path of the server', async () => {
  const { dataDir, options } = await server();
  const s = await startServer(options);
  try {
    await configure(s, { TOOL_WAFW00F: await script(tools, 'quiet.sh', 'echo hi') });
    const id = await addTarget(s, 'http://127.0.0.1:1/');
    await mkdir(join(dataDir, 'outputs'), { recursive: true });
    await writeFile(join(dataDir, 'outputs', String(id)), 'not a directory');
    assert.equal(await queue(s, { id: String(id), type: 'active', code: CODE }), 1);
    const output = await waitForOutput(s, id, KEY, ['Crashed', 'Successful', 'Aborted', 'Skipped']);
    assert.equal(output.status, 'Crashed', JSON.stringify(output));
    assert.equal(output.error, 'could not make the output directory: ENOTDIR: not a directory');
  } finally {
    await s.close();
  }
});

test('the journal refusing writes as runs end: each end is recorded once the disk recovers, nothing lost', async () => {
  const disk = failingDisk();
  const { options } = await server({ fs: disk.fs });
  const s = await startServer(options);
  try {
    const program = await script(tools, 'slow.sh', 'sleep 0.3; echo done');
    await configure(s, { TOOL_WAFW00F: program });
    const id = await addTarget(s, 'http://127.0.0.1:1/');
    assert.equal(await queue(s, { id: String(id), type: 'active', code: CODE }), 1);
    await waitFor('the program', async () => (await get(s, '/api/v1/workers/1')).worker);
    disk.fail('ENOSPC');
    // the program ends meanwhile; its end cannot be written (waited for, not timed: a loaded machine
    // ends the program later): a write answers 500, reads go on
    await waitFor('the end refused', async () => s.logs.some((l) => l.includes('could not record the end of a run')), 15_000);
    assert.equal((await send(s, 'POST', '/api/v1/sessions/', { name: 'refused' })).status, 500);
    assert.equal((await get(s, `/api/v1/targets/${id}/poutput/`))[0].status, 'Running');
    disk.fail(undefined);
    const output = await waitForOutput(s, id, KEY, ['Successful'], 5_000);
    assert.equal(output.exit_code, 0);
    assert.match(output.output ?? '', /done/);
    assert.ok(s.logs.some((l) => l.includes('could not record the end of a run')), s.logs.join('\n'));
    await ok(s, 'POST', '/api/v1/sessions/', { name: 'after' });
  } finally {
    await s.stop();
  }
  // and after a restart, the run's end is there
  const again = await startServer({ ...options, fs: undefined });
  try {
    assert.equal((await get(again, '/api/v1/targets/1/poutput/'))[0].status, 'Successful');
  } finally {
    await again.close();
  }
});

test('on a full disk, a work whose start waits on the probe of the disk is taken by one worker, not by every idle one; it runs once there is room', async () => {
  const disk = failingDisk();
  const { options } = await server({ fs: disk.fs, workers: 3 });
  const s = await startServer(options);
  try {
    await configure(s, { TOOL_WAFW00F: await script(tools, 'quick.sh', 'echo done') });
    const id = await addTarget(s, 'http://127.0.0.1:1/');
    s.engine.act(0, 'pause');
    assert.equal(await queue(s, { id: String(id), type: 'active', code: CODE }), 1);
    disk.fail('ENOSPC');
    // a refused change: the store now waits on a probe before applying any
    assert.equal((await send(s, 'POST', '/api/v1/sessions/', { name: 'refused' })).status, 500);
    s.engine.act(0, 'resume');
    await waitFor('a start refused', async () => s.logs.some((l) => l.includes('could not start')), 5_000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(s.logs.filter((l) => l.includes('could not start')).length, 1, s.logs.join('\n'));
    disk.fail(undefined);
    const output = await waitForOutput(s, id, KEY, ['Successful'], 10_000);
    assert.match(output.output ?? '', /done/);
  } finally {
    disk.fail(undefined);
    await s.stop();
  }
});

test('a plugin file removed while its works are queued: the worklist shows a stand-in, and the run is Skipped saying why', async () => {
  const { dataDir, options } = await server({ workers: 0 });
  const first = await startServer(options);
  const id = await addTarget(first, 'http://127.0.0.1:1/');
  assert.equal(await queue(first, { id: String(id), type: 'active', code: CODE }), 1);
  await first.stop();
  await rm(join(dataDir, 'plugins'), { recursive: true });
  const again = await startServer({ ...options, workers: 0 });
  try {
    const [work] = await get(again, '/api/v1/worklist/');
    assert.deepEqual(work.plugin, { key: KEY, code: CODE, group: 'web', type: 'active', name: KEY, title: KEY, descrip: 'no longer in the catalogue', file: '', attr: null, min_time: null });
    await ok(again, 'POST', '/api/v1/workers/');
    const output = await waitForOutput(again, id, KEY, ['Skipped']);
    assert.equal(output.error, `plugin ${KEY} is no longer in the catalogue`);
  } finally {
    await again.close();
  }
});

test('under the command line, a tool runs at the server\'s own priority', async () => {
  const dataDir = await tempDir();
  await writePluginFile(dataDir, 'nice.json', { test_groups: [{ code: 'USR-NICE-001', descrip: 'Says its niceness' }], plugins: [{ ...toolPlugin('USR-NICE-001', 'TOOL_NONE', []), tool: undefined, program: '/usr/bin/nice' }] });
  const s = await spawnServer(['--port', '0', '--data-dir', dataDir, '--workers', '1']);
  try {
    const id = await addTarget(s, 'http://127.0.0.1:1/');
    assert.equal(await queue(s, { id: String(id), code: 'USR-NICE-001' }), 1);
    const output = await waitForOutput(s, id, 'active@USR-NICE-001', ['Successful']);
    assert.equal(output.output?.trim(), String(getPriority()));
  } finally {
    s.proc.kill('SIGTERM');
    await s.exited;
    await rm(dataDir, { recursive: true, force: true });
  }
});
