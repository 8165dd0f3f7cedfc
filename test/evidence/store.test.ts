/** The transaction store on disk: durable across restarts, all or nothing, and the space of what is deleted comes back. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { failingDisk } from '../helpers/failing-fs.ts';
import { request, startServer, tempDir } from '../helpers/server.ts';
import { harOf, importHar } from './helpers.ts';

const segmentsIn = (dir: string) => (existsSync(join(dir, 'transactions')) ? readdirSync(join(dir, 'transactions')).sort() : []);
const bytesIn = (dir: string) => segmentsIn(dir).reduce((sum, name) => sum + statSync(join(dir, 'transactions', name)).size, 0);
const urls = async (base: string, target: number) => (await request(base, `/api/v1/targets/${target}/transactions/`)).json.data.map((t: { url: string }) => t.url);
const many = (host: string, n: number, size = 1000) => harOf(Array.from({ length: n }, (_, i) => ({ url: `https://${host}/${i}`, responseBody: `${i} `.padEnd(size, 'x') })));

test('transactions survive a restart, bodies and all; ids keep growing', async () => {
  const dir = await tempDir();
  let server = await startServer({ dataDir: dir });
  await request(server.url, '/api/v1/targets/', { method: 'POST', form: { target_url: 'https://a.example/' } });
  await importHar(server.url, 1, many('a.example', 3));
  await server.stop();
  server = await startServer({ dataDir: dir });
  assert.deepEqual(await urls(server.url, 1), ['https://a.example/0', 'https://a.example/1', 'https://a.example/2']);
  assert.match((await request(server.url, '/api/v1/targets/1/transactions/2')).json.data.response_body, /^1 x+$/);
  await importHar(server.url, 1, many('a.example', 1));
  const ids = (await request(server.url, '/api/v1/targets/1/transactions/')).json.data.map((t: { id: number }) => t.id);
  assert.deepEqual(ids, [1, 2, 3, 4]);
  await server.close();
});

test('a store without transactions has no transactions directory; the first import makes it', async () => {
  const server = await startServer();
  assert.equal(existsSync(join(server.dataDir, 'transactions')), false);
  await request(server.url, '/api/v1/targets/', { method: 'POST', form: { target_url: 'https://a.example/' } });
  await importHar(server.url, 1, many('a.example', 1));
  assert.deepEqual(segmentsIn(server.dataDir), ['1.seg']);
  await server.close();
});

test('at start, segment files no committed import names (an import cut short) are deleted; one it names missing stops the start', async () => {
  const dir = await tempDir();
  let server = await startServer({ dataDir: dir });
  await request(server.url, '/api/v1/targets/', { method: 'POST', form: { target_url: 'https://a.example/' } });
  await importHar(server.url, 1, many('a.example', 2));
  await server.stop();
  await writeFile(join(dir, 'transactions', '7.seg'), 'half an import');
  await writeFile(join(dir, 'transactions', '8.seg'), '');
  server = await startServer({ dataDir: dir });
  assert.deepEqual(segmentsIn(dir), ['1.seg']);
  // one line for both
  assert.deepEqual(server.logs.filter((line) => line.startsWith('removed')), ['removed 2 files no committed import names: transactions/7.seg, transactions/8.seg']);
  // a new import never takes the number of a file it found
  await importHar(server.url, 1, many('a.example', 1));
  assert.deepEqual(segmentsIn(dir), ['1.seg', '9.seg']);
  await server.stop();
  // one of them: named alone
  await writeFile(join(dir, 'transactions', '20.seg'), '');
  server = await startServer({ dataDir: dir });
  assert.deepEqual(server.logs.filter((line) => line.startsWith('removed')), ['removed transactions/20.seg: no committed import names it']);
  await server.stop();
  const { rm } = await import('node:fs/promises');
  await rm(join(dir, 'transactions', '1.seg'));
  await assert.rejects(startServer({ dataDir: dir }), (err: NodeJS.ErrnoException) => err.code === 'ERR_DATA_FILE' && /transactions\/1\.seg: missing/.test(err.message));
});

test('deleting transactions gives their bytes back: a small segment is rewritten without them, one left empty is deleted', async () => {
  const server = await startServer();
  await request(server.url, '/api/v1/targets/', { method: 'POST', form: { target_url: 'https://a.example/' } });
  await importHar(server.url, 1, many('a.example', 4, 50_000));
  const before = bytesIn(server.dataDir);
  await request(server.url, '/api/v1/targets/1/transactions/2', { method: 'DELETE' });
  await server.evidence.maintain();
  await server.evidence.maintain();
  assert.ok(bytesIn(server.dataDir) < before - 45_000, `${before} -> ${bytesIn(server.dataDir)} bytes`);
  assert.deepEqual(segmentsIn(server.dataDir), ['2.seg'], 'the rewrite is a new file, the old one deleted');
  assert.deepEqual(await urls(server.url, 1), ['https://a.example/0', 'https://a.example/2', 'https://a.example/3']);
  assert.match((await request(server.url, '/api/v1/targets/1/transactions/4')).json.data.response_body, /^3 x+$/, 'read from the rewritten file');
  for (const id of [1, 3, 4]) await request(server.url, `/api/v1/targets/1/transactions/${id}`, { method: 'DELETE' });
  await server.evidence.maintain();
  await server.evidence.maintain();
  assert.deepEqual(segmentsIn(server.dataDir), []);
  assert.equal(server.store.state.retiredSegments.size, 0, 'forgotten once deleted');
  await server.close();
});

test('a rewrite the disk has no room for is said once and tried again less often, not each second; with room again it is done', async () => {
  const disk = failingDisk();
  const server = await startServer({ fs: disk.fs });
  try {
    await request(server.url, '/api/v1/targets/', { method: 'POST', form: { target_url: 'https://a.example/' } });
    await importHar(server.url, 1, many('a.example', 4, 50_000));
    await request(server.url, '/api/v1/targets/1/transactions/2', { method: 'DELETE' });
    disk.fail('ENOSPC');
    for (let i = 0; i < 5; i++) await server.evidence.maintain();
    const said = () => server.logs.filter((line) => /could not rewrite transactions\/1\.seg/.test(line));
    assert.equal(said().length, 1, server.logs.join('\n'));
    assert.match(said()[0]!, /\(tried again later, less often\): ENOSPC/);
    assert.deepEqual(segmentsIn(server.dataDir), ['1.seg'], 'nothing half written left');
    disk.fail(undefined);
    await new Promise((resolve) => setTimeout(resolve, 1100));
    await server.evidence.maintain();
    await server.evidence.maintain();
    assert.ok(server.logs.some((line) => /transactions\/1\.seg is rewritten without its deleted transactions now/.test(line)), server.logs.join('\n'));
    const left = segmentsIn(server.dataDir);
    assert.equal(left.length, 1);
    assert.notEqual(left[0], '1.seg', 'the rewrite is a new file, the old one deleted');
    assert.deepEqual(await urls(server.url, 1), ['https://a.example/0', 'https://a.example/2', 'https://a.example/3']);
  } finally {
    await server.close();
  }
});

test('deleting a target, or the session that held it, deletes its transactions\' files', async () => {
  const server = await startServer();
  await request(server.url, '/api/v1/targets/', { method: 'POST', form: { target_url: 'https://a.example/' } });
  await request(server.url, '/api/v1/sessions/', { method: 'POST', form: { name: 'other' } });
  await request(server.url, '/api/v1/targets/', { method: 'POST', form: { target_url: 'https://b.example/' } });
  await importHar(server.url, 1, many('a.example', 2));
  await importHar(server.url, 2, many('b.example', 2));
  assert.deepEqual(segmentsIn(server.dataDir), ['1.seg', '2.seg']);
  await request(server.url, '/api/v1/targets/1', { method: 'DELETE' });
  await server.evidence.maintain();
  assert.deepEqual(segmentsIn(server.dataDir), ['2.seg']);
  await request(server.url, '/api/v1/sessions/2', { method: 'DELETE' });
  await server.evidence.maintain();
  assert.deepEqual(segmentsIn(server.dataDir), []);
  await server.close();
});

test('an import the disk cannot make durable answers 500, and nothing of it is visible, then or after a restart', async () => {
  const disk = failingDisk();
  const dir = await tempDir();
  let server = await startServer({ dataDir: dir, fs: disk.fs });
  await request(server.url, '/api/v1/targets/', { method: 'POST', form: { target_url: 'https://a.example/' } });
  for (const how of ['partial', 'after'] as const) {
    disk.fail('EIO', how);
    const res = await importHar(server.url, 1, many('a.example', 3));
    assert.equal(res.status, 500, how);
    assert.deepEqual(res.json, { status: 'error', message: 'Internal server error', code: 500 });
    disk.fail(undefined);
    assert.deepEqual(await urls(server.url, 1), [], how);
  }
  await server.stop();
  server = await startServer({ dataDir: dir });
  assert.deepEqual(await urls(server.url, 1), []);
  assert.deepEqual(segmentsIn(dir), []);
  await server.close();
});

test('concurrent imports into one target: each all or nothing, ids in commit order, every one listed', async () => {
  const server = await startServer();
  await request(server.url, '/api/v1/targets/', { method: 'POST', form: { target_url: 'https://a.example/' } });
  const results = await Promise.all(Array.from({ length: 10 }, (_, i) => importHar(server.url, 1, harOf(Array.from({ length: 5 }, (_, j) => ({ url: `https://a.example/${i}/${j}` }))))));
  assert.ok(results.every((r) => r.status === 201));
  const rows = (await request(server.url, '/api/v1/targets/1/transactions/')).json.data as { id: number; url: string }[];
  assert.equal(rows.length, 50);
  assert.deepEqual(rows.map((r) => r.id), Array.from({ length: 50 }, (_, i) => i + 1));
  // each import's five are together, in their order
  for (let k = 0; k < 50; k += 5) {
    const prefix = rows[k].url.replace(/\/0$/, '/');
    assert.deepEqual(rows.slice(k, k + 5).map((r) => r.url), Array.from({ length: 5 }, (_, j) => `${prefix}${j}`));
  }
  await server.close();
});
