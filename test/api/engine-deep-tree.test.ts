/**
 * A tool that leaves a directory tree deeper than the longest path the kernel takes (PATH_MAX):
 * node's fs.rm fails on it (ENAMETOOLONG). Its output must still be rerun and deleted, and its
 * target too, with nothing left on disk.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { addTarget, configure, outputs, queue, script, scriptDir, send, toolPlugin, waitFor, writePluginFile, type Output } from '../helpers/engine.ts';
import { startServer, tempDir, type TestServer } from '../helpers/server.ts';

const CODE = 'USR-DEEP-001';
const KEY = `active@${CODE}`;
/** 600 levels of 10-character names: ~6,600 bytes of path, past PATH_MAX (4,096). */
const DEEP = `cd "$1" && exec ${JSON.stringify(process.execPath)} -e "const fs = require('fs'); for (let i = 0; i < 600; i++) { fs.mkdirSync('dddddddddd'); process.chdir('dddddddddd'); } fs.writeFileSync('file', 'bottom')"`;

let server: TestServer;

/** Queues the plugin on the target (again) and answers its output once that run has ended. */
async function run(id: number, after?: Output): Promise<Output> {
  await queue(server, { id: String(id), group: 'web', type: 'active', code: CODE, ...(after ? { force_overwrite: 'true' } : {}) });
  return waitFor(`${KEY} to end`, async () => {
    const found = (await outputs(server, id)).find((o) => o.plugin_key === KEY);
    return found && found.status !== 'Running' && found.started_at !== after?.started_at ? found : undefined;
  }, 60_000, 100);
}
let dataDir: string;

before(async () => {
  dataDir = await tempDir();
  await writePluginFile(dataDir, 'deep.json', { test_groups: [{ code: CODE }], plugins: [toolPlugin(CODE, 'TOOL_WAFW00F', ['{output_dir}'])] });
  server = await startServer({ dataDir, workers: 1 });
  await configure(server, { TOOL_WAFW00F: await script(await scriptDir(), 'deep.sh', DEEP) });
});
after(async () => {
  await server?.close();
  // what a failed run leaves, node's rm cannot remove
  execFileSync('rm', ['-rf', '--', dataDir]);
});

test('an output holding a tree deeper than PATH_MAX is rerun and deleted, and its target too, nothing left on disk', { timeout: 120_000 }, async () => {
  const id = await addTarget(server, 'http://127.0.0.1:1/');
  const first = await run(id);
  assert.equal(first.status, 'Successful', JSON.stringify(first));
  const dir = join(dataDir, 'outputs', String(id));
  assert.ok(existsSync(dir));
  // the rerun starts from an empty directory: the old tree has to go first (it Crashed: ENAMETOOLONG)
  const rerun = await run(id, first);
  assert.equal(rerun.status, 'Successful', JSON.stringify(rerun));
  // deleted: it answered 200 with the files left behind, a log line alone saying so
  const deleted = await send(server, 'DELETE', `/api/v1/targets/${id}/poutput/web/active/${CODE}`);
  assert.equal(deleted.status, 200, deleted.text);
  const runDir = join(dataDir, 'outputs', first.output_path);
  assert.equal(existsSync(runDir), false, `${runDir} is still there`);
  // and a target whose output holds one goes with its directory
  assert.equal((await run(id, rerun)).status, 'Successful');
  const gone = await send(server, 'DELETE', `/api/v1/targets/${id}`);
  assert.equal(gone.status, 200, gone.text);
  await waitFor(`${dir} to be removed`, async () => !existsSync(dir), 30_000, 100);
});
