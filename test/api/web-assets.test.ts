/** The web application's files, read when first needed (src/api/page.ts lazyWebAssets). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { lazyWebAssets } from '../../src/api/page.ts';
import { PROJECT_ROOT } from '../../src/paths.ts';
import { request, spawnServer, START_FLAGS, tempDir } from '../helpers/server.ts';

test('the files are read on first use, once; a read that fails throws to its caller and is tried again by the next', () => {
  let reads = 0;
  let fail = true;
  const assets = lazyWebAssets(() => {
    reads++;
    if (fail) throw new Error('the web application is not built');
    return new Map([['index.html', Buffer.from('<!doctype html>')], ['app.js', Buffer.from('x')]]);
  });
  assert.equal(reads, 0, 'nothing read before it is needed');
  assert.throws(() => assets.page, /not built/);
  assert.throws(() => assets.compress(), /not built/);
  fail = false;
  assert.equal(assets.page.plain.body.toString(), '<!doctype html>');
  assert.deepEqual([...assets.files.keys()], ['app.js']);
  assert.equal(reads, 3, 'read again after each failure, then kept');
});

// A copy of the build, whose files the test may take away (the tests' own dist/ is shared).
test('the compiled server whose web application vanishes after its start goes on serving: its pages answer 500 and a log line says why; back, they answer again', async () => {
  const app = await tempDir();
  for (const file of ['package.json', 'data']) cpSync(join(PROJECT_ROOT, file), join(app, file), { recursive: true });
  for (const file of ['assessd.cjs', 'load-bundle.cjs', 'main.cjs', 'main.cjs.cache', 'compactor.js', 'web']) cpSync(join(PROJECT_ROOT, 'dist', file), join(app, 'dist', file), { recursive: true });
  const server = await spawnServer(['--port', '0', '--data-dir', await tempDir()], {}, START_FLAGS, join(app, 'dist', 'assessd.cjs'));
  try {
    const web = join(app, 'dist', 'web');
    renameSync(web, `${web}.away`);
    // past the read the start leaves for 100 ms after it
    await new Promise((resolve) => setTimeout(resolve, 400));
    assert.equal((await request(server.url, '/debug/health')).status, 200, 'still serving');
    assert.equal((await request(server.url, '/')).status, 500);
    assert.match(server.output(), /assessd: the web application could not be read \(the web application is not built in .*\): its pages answer 500 until it can\n/);
    renameSync(`${web}.away`, web);
    const page = await request(server.url, '/');
    assert.equal(page.status, 200);
    assert.match(page.text, /<!doctype html>/i);
  } finally {
    server.proc.kill('SIGTERM');
    assert.equal(await server.exited, 0);
  }
});
