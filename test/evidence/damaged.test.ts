/**
 * A transaction segment damaged on disk (cut short by a copy of a live data directory, a bad
 * disk, an edit): its whole records are read back on first use, what is lost is said, the
 * damaged file is kept beside, and the target's other transactions are untouched.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { footerRows, readFooter } from '../../src/evidence/segment.ts';
import { request, startServer, tempDir, type TestServer } from '../helpers/server.ts';
import { harOf, importHar } from './helpers.ts';

const files = (dir: string) => readdirSync(join(dir, 'transactions')).sort();
const rows = async (server: TestServer, target = 1) => (await request(server.url, `/api/v1/targets/${target}/transactions/`)).json.data.map((t: { id: number; url: string }) => `${t.id} ${t.url}`);
const many = (prefix: string, n: number) => harOf(Array.from({ length: n }, (_, i) => ({ url: `https://a.example/${prefix}${i}`, responseBody: `${prefix}${i} `.padEnd(2000, 'x') })));
const damageLines = (server: TestServer) => server.logs.filter((line) => line.includes('damaged'));

/** A target with two imports: 1.seg (a0..a4, ids 1-5) and 2.seg (b0..b2, ids 6-8); the server stopped. */
async function twoImports(): Promise<string> {
  const dir = await tempDir();
  const server = await startServer({ dataDir: dir });
  await request(server.url, '/api/v1/targets/', { method: 'POST', form: { target_url: 'https://a.example/' } });
  assert.equal((await importHar(server.url, 1, many('a', 5))).status, 201);
  assert.equal((await importHar(server.url, 1, many('b', 3))).status, 201);
  await server.stop();
  return dir;
}

test('a segment cut short: its whole records are read back, the rest are lost and said, the damaged file is kept', async () => {
  const dir = await twoImports();
  const path = join(dir, 'transactions', '1.seg');
  const original = readFileSync(path);
  // cut in the middle of the fourth record (a copy taken while the file was being written)
  const fourth = footerRows(readFooter(path))[3]!;
  await truncate(path, fourth.off + 100);
  let server = await startServer({ dataDir: dir });
  assert.deepEqual(await rows(server), ['1 https://a.example/a0', '2 https://a.example/a1', '3 https://a.example/a2', '6 https://a.example/b0', '7 https://a.example/b1', '8 https://a.example/b2']);
  assert.deepEqual(damageLines(server), [
    'transactions/1.seg is damaged (its end is cut or overwritten): 3 of its 5 transactions were read back into transactions/3.seg; the other 2 (ids 4-5) are lost. The damaged file is kept as transactions/1.seg.damaged (delete it when you no longer need it)',
  ]);
  // what was read back is whole: its body, byte for byte
  assert.match((await request(server.url, '/api/v1/targets/1/transactions/3')).json.data.response_body, /^a2 x{1997}$/);
  // a lost id answers as a deleted one does
  const lost = await request(server.url, '/api/v1/targets/1/transactions/4');
  assert.deepEqual([lost.status, lost.json], [400, { status: 'fail', message: 'Invalid transaction referenced', code: 400 }]);
  // the export holds what is left
  const har = JSON.parse((await request(server.url, '/api/v1/targets/1/transactions/har')).text);
  assert.deepEqual(har.log.entries.map((e: { request: { url: string } }) => e.request.url.slice(-2)), ['a0', 'a1', 'a2', 'b0', 'b1', 'b2']);
  await server.evidence.maintain();
  assert.deepEqual(files(dir), ['1.seg.damaged', '2.seg', '3.seg'], 'the old name goes, its bytes are kept under the new one');
  assert.ok(readFileSync(join(dir, 'transactions', '1.seg.damaged')).equals(original.subarray(0, fourth.off + 100)));
  await server.stop();
  // once: the next start reads the new file, says nothing, keeps the damaged copy, and ids go on
  server = await startServer({ dataDir: dir });
  assert.equal((await rows(server)).length, 6);
  assert.deepEqual(damageLines(server), []);
  assert.equal((await importHar(server.url, 1, many('c', 1))).status, 201);
  assert.equal((await rows(server)).at(-1), '9 https://a.example/c0', 'a lost id is never given again');
  assert.deepEqual(files(dir), ['1.seg.damaged', '2.seg', '3.seg', '4.seg']);
  await server.close();
});

test('a segment whose footer is damaged but whose records are whole loses nothing; deleted ones stay deleted', async () => {
  const dir = await twoImports();
  let server = await startServer({ dataDir: dir });
  assert.equal((await request(server.url, '/api/v1/targets/1/transactions/2', { method: 'DELETE' })).status, 200);
  await server.stop();
  const path = join(dir, 'transactions', '1.seg');
  const bytes = readFileSync(path);
  // the first byte of the footer's JSON (after its 4-byte length), the trailer left as it was
  const last = footerRows(readFooter(path)).at(-1)!;
  bytes[last.off + last.len + 4] = 0x21;
  await writeFile(path, bytes);
  server = await startServer({ dataDir: dir, maintenanceEvery: 3_600_000 });
  assert.deepEqual(await rows(server), ['1 https://a.example/a0', '3 https://a.example/a2', '4 https://a.example/a3', '5 https://a.example/a4', '6 https://a.example/b0', '7 https://a.example/b1', '8 https://a.example/b2']);
  assert.deepEqual(damageLines(server), [
    'transactions/1.seg is damaged (its index does not parse): 4 of its 4 transactions were read back into transactions/3.seg; none is lost. The damaged file is kept as transactions/1.seg.damaged (delete it when you no longer need it)',
  ]);
  assert.equal((await request(server.url, '/api/v1/targets/1/transactions/2')).status, 400, 'deleted before: still deleted');
  await server.close();
});

test('a segment with no whole record: its transactions are lost and said, the target\'s others answer', async () => {
  const dir = await twoImports();
  await writeFile(join(dir, 'transactions', '1.seg'), Buffer.alloc(300));
  const server = await startServer({ dataDir: dir, maintenanceEvery: 3_600_000 });
  assert.deepEqual(await rows(server), ['6 https://a.example/b0', '7 https://a.example/b1', '8 https://a.example/b2']);
  assert.deepEqual(damageLines(server), [
    'transactions/1.seg is damaged (its end is cut or overwritten): none of its 5 transactions could be read back (ids 1-5 are lost). The damaged file is kept as transactions/1.seg.damaged (delete it when you no longer need it)',
  ]);
  // the segment is gone from the state: a later import and a restart find nothing amiss
  assert.equal(server.store.state.segments.has(1), false);
  await server.stop();
  const again = await startServer({ dataDir: dir });
  assert.equal((await rows(again)).length, 3);
  assert.ok(existsSync(join(dir, 'transactions', '1.seg.damaged')));
  await again.close();
});

test('a damaged segment met by the background rewrite (a delete in it) is read back once, the same way', async () => {
  const dir = await twoImports();
  const path = join(dir, 'transactions', '1.seg');
  await truncate(path, statSync(path).size - 5);
  const server = await startServer({ dataDir: dir, maintenanceEvery: 3_600_000 });
  // the delete needs no file; the rewrite that follows reads it
  assert.equal((await request(server.url, '/api/v1/targets/1/transactions/1', { method: 'DELETE' })).status, 200);
  await Promise.all([server.evidence.maintain(), server.evidence.load(1)]);
  await server.evidence.maintain();
  assert.equal(damageLines(server).length, 1, damageLines(server).join('\n'));
  assert.match(damageLines(server)[0]!, /^transactions\/1\.seg is damaged \(its end is cut or overwritten\): 4 of its 4 transactions were read back into transactions\/\d+\.seg; none is lost\./);
  assert.deepEqual((await rows(server)).map((row: string) => row.split(' ')[0]), ['2', '3', '4', '5', '6', '7', '8']);
  assert.ok(!server.logs.some((line) => line.startsWith('transaction maintenance failed') || line.startsWith('could not rewrite')), server.logs.join('\n'));
  await server.close();
});

test('a rewritten segment that had more deleted, its footer lost: nothing can be matched to its ids, all of it is said lost', async () => {
  const dir = await tempDir();
  let server = await startServer({ dataDir: dir, maintenanceEvery: 3_600_000 });
  await request(server.url, '/api/v1/targets/', { method: 'POST', form: { target_url: 'https://a.example/' } });
  await importHar(server.url, 1, many('a', 4));
  await request(server.url, '/api/v1/targets/1/transactions/2', { method: 'DELETE' });
  await server.evidence.maintain();
  assert.deepEqual(files(dir), ['2.seg'], 'rewritten without id 2');
  await request(server.url, '/api/v1/targets/1/transactions/3', { method: 'DELETE' });
  await server.stop();
  const path = join(dir, 'transactions', '2.seg');
  await truncate(path, statSync(path).size - 1);
  server = await startServer({ dataDir: dir, maintenanceEvery: 3_600_000 });
  assert.deepEqual(await rows(server), []);
  assert.deepEqual(damageLines(server), [
    'transactions/2.seg is damaged (its end is cut or overwritten): none of its 2 transactions could be read back (it was rewritten, then more of it deleted: its records cannot be matched to their ids) (ids 1-4 are lost). The damaged file is kept as transactions/2.seg.damaged (delete it when you no longer need it)',
  ]);
  await server.close();
});

test('the journal\'s salvageSegment op: what is left takes the new file, nothing left retires it, a malformed one is refused', async () => {
  const { applyOp } = await import('../../src/store/ops.ts');
  const { emptyState } = await import('../../src/store/state.ts');
  const state = emptyState();
  applyOp(state, { op: 'createSession', name: 's' });
  applyOp(state, { op: 'activateSession', id: 1 });
  assert.ok(applyOp(state, { op: 'createTargets', urls: ['https://a.example/'] }).ok);
  applyOp(state, { op: 'addTransactions', target: 1, segment: 1, count: 5 });
  applyOp(state, { op: 'deleteTransaction', target: 1, id: 2 });
  applyOp(state, { op: 'deleteTransaction', target: 1, id: 5 });
  assert.throws(() => applyOp(state, { op: 'salvageSegment', segment: 1, kept: 3, purged: 1 }), /"into" must name the file/);
  assert.throws(() => applyOp(state, { op: 'salvageSegment', segment: 1, into: 2, kept: 6, purged: 0 }), /"kept" must be a place/);
  assert.throws(() => applyOp(state, { op: 'salvageSegment', segment: 1, into: 2, kept: 3, purged: 2 }), /"purged" must count/);
  assert.deepEqual(applyOp(state, { op: 'salvageSegment', segment: 9, into: 2, kept: 3, purged: 1 }), { ok: false, reason: 'unknown-segment' });
  assert.deepEqual(applyOp(state, { op: 'salvageSegment', segment: 1, into: 2, kept: 3, purged: 1 }), { ok: true });
  assert.deepEqual(state.segments.get(2), { n: 2, target: 1, base: 1, span: 3, gone: [1], purged: 1 });
  assert.deepEqual([...state.retiredSegments], [1]);
  assert.equal(state.nextTransactionId, 6, 'lost ids are never given again');
  // nothing left: retired, no file named
  applyOp(state, { op: 'deleteTransaction', target: 1, id: 1 });
  assert.deepEqual(applyOp(state, { op: 'salvageSegment', segment: 2, kept: 1, purged: 1 }), { ok: true });
  assert.equal(state.segments.size, 0);
});

test('a record damaged inside a whole segment: its row answers from the index with the damage said, the page and the export around it answer', async () => {
  const dir = await tempDir();
  let server = await startServer({ dataDir: dir });
  await request(server.url, '/api/v1/targets/', { method: 'POST', form: { target_url: 'https://a.example/' } });
  await importHar(server.url, 1, many('a', 3));
  await server.stop();
  const path = join(dir, 'transactions', '1.seg');
  const second = footerRows(readFooter(path))[1]!;
  const bytes = readFileSync(path);
  // its meta JSON's first bytes (after the 20-byte fixed head), as a bad sector would
  bytes.fill(0xff, second.off + 20, second.off + 24);
  await writeFile(path, bytes);
  server = await startServer({ dataDir: dir });
  for (const path of ['/api/v1/targets/1/transactions/', '/api/v1/targets/1/transactions/search/?limit=10']) {
    const res = await request(server.url, path);
    assert.equal(res.status, 200, `${path}: ${res.text}`);
  }
  const list = (await request(server.url, '/api/v1/targets/1/transactions/')).json.data as { id: number; url: string; method: string; response_status: string }[];
  assert.deepEqual(list.map((t) => `${t.id} ${t.method} ${t.url} ${t.response_status}`), ['1 GET https://a.example/a0 200 OK', '2 GET https://a.example/a1 200 OK', '3 GET https://a.example/a2 200 OK']);
  const one = await request(server.url, '/api/v1/targets/1/transactions/2');
  assert.equal(one.status, 200, one.text);
  assert.match(one.json.data.error, /^the stored record is damaged \(record meta is not JSON\): only its index row is shown$/);
  assert.equal(one.json.data.response_body, '');
  const har = await request(server.url, '/api/v1/targets/1/transactions/har');
  assert.equal(har.status, 200);
  assert.equal(JSON.parse(har.text).log.entries.length, 3);
  assert.equal(server.logs.filter((line) => line.includes('damaged record')).length, 1, server.logs.join('\n'));
  await server.close();
});

test('as a user runs it: the compiled server killed (-9), its segment cut as a copy taken mid-write would be, started again: the rest is read back and said, and stays so after another kill', async () => {
  const { spawnServer } = await import('../helpers/server.ts');
  const { rm } = await import('node:fs/promises');
  const token = 'damaged-segment-token-0123456789abcdef01234';
  const auth = { authorization: `Bearer ${token}` };
  const dir = await tempDir();
  const start = () => spawnServer(['--port', '0', '--no-proxy', '--workers', '0', '--data-dir', dir], { ASSESSD_TOKEN: token });
  const list = async (url: string) => (await request(url, '/api/v1/targets/1/transactions/', { headers: auth })).json.data.map((t: { id: number }) => t.id);
  let server = await start();
  try {
    await request(server.url, '/api/v1/targets/', { method: 'POST', headers: auth, form: { target_url: 'https://a.example/' } });
    const imported = await request(server.url, '/api/v1/targets/1/transactions/', { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: many('a', 5) });
    assert.equal(imported.status, 201, imported.text);
  } finally {
    server.proc.kill('SIGKILL');
    await server.exited;
  }
  const path = join(dir, 'transactions', '1.seg');
  await truncate(path, footerRows(readFooter(path))[2]!.off + 10);
  for (const round of [1, 2]) {
    server = await start();
    try {
      assert.deepEqual(await list(server.url), [1, 2], `round ${round}`);
      const said = server.output().includes('transactions/1.seg is damaged (its end is cut or overwritten): 2 of its 5 transactions were read back into transactions/2.seg; the other 3 (ids 3-5) are lost.');
      assert.equal(said, round === 1, server.output());
    } finally {
      server.proc.kill('SIGKILL');
      await server.exited;
    }
  }
  assert.ok(existsSync(`${path}.damaged`));
  await rm(dir, { recursive: true, force: true });
});
