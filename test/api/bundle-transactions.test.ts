/** Session bundles carry their targets' transactions as HAR entries; the format's version stays 1. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { writeFile } from 'node:fs/promises';
import { request, runCli, startServer, tempDir } from '../helpers/server.ts';
import { entryOf, harOf, importHar } from '../evidence/helpers.ts';

const postBundle = (base: string, body: string | Buffer, query = '') => request(base, `/api/v1/bundles/${query}`, { method: 'POST', body, headers: { 'content-type': 'application/json' } });

test('a bundle carries each target\'s transactions, and imports them into the new session\'s targets', async () => {
  const from = await startServer();
  await request(from.url, '/api/v1/targets/', { method: 'POST', form: { target_url: 'https://a.example/' } });
  await request(from.url, '/api/v1/targets/', { method: 'POST', form: { target_url: 'https://b.example/' } });
  await importHar(from.url, 1, harOf([{ url: 'https://a.example/1', method: 'POST', body: 'x=1', headers: [['Content-Type', 'application/x-www-form-urlencoded']] }, { url: 'https://a.example/logo.png', responseBody: Buffer.from([0, 1, 2, 255]), mimeType: 'image/png' }]));
  const exported = await request(from.url, '/api/v1/bundles/1');
  assert.equal(exported.status, 200);
  const bundle = exported.json;
  assert.equal(bundle.version, 1);
  const a = bundle.targets.find((t: { target_url: string }) => t.target_url === 'https://a.example/');
  const b = bundle.targets.find((t: { target_url: string }) => t.target_url === 'https://b.example/');
  assert.equal(a.transactions.length, 2);
  assert.equal(a.transactions[0].request.postData.text, 'x=1');
  assert.equal(a.transactions[1].response.content.encoding, 'base64');
  assert.equal(b.transactions, undefined, 'a target without any carries none');

  const to = await startServer();
  const res = await postBundle(to.url, exported.raw, '?name=copy');
  assert.equal(res.status, 201, res.text);
  const target = to.store.state.targetIdByUrl.get('https://a.example/')!;
  const rows = (await request(to.url, `/api/v1/targets/${target}/transactions/`)).json.data;
  assert.deepEqual(rows.map((t: { url: string }) => t.url), ['https://a.example/1', 'https://a.example/logo.png']);
  const png = await request(to.url, `/api/v1/targets/${target}/transactions/${rows[1].id}/body`);
  assert.deepEqual(png.raw, Buffer.from([0, 1, 2, 255]));
  assert.equal(rows[0].data, 'x=1');
  await from.close();
  await to.close();
});

test('an older bundle (no transactions) still imports; a bad transaction refuses the whole bundle, naming it, and stores nothing', async () => {
  const server = await startServer();
  const older = { format: 'assessd-session', version: 1, session: { name: 'old' }, targets: [{ target_url: 'https://old.example/' }] };
  assert.equal((await postBundle(server.url, JSON.stringify(older))).status, 201);
  const bad = {
    format: 'assessd-session', version: 1, session: { name: 'bad' },
    targets: [{ target_url: 'https://c.example/', transactions: [entryOf({ url: 'https://c.example/' }), { ...entryOf({ url: 'https://c.example/' }), response: { status: 'x', headers: [], content: {} } }] }],
  };
  const refused = await postBundle(server.url, JSON.stringify(bad));
  assert.equal(refused.status, 400);
  assert.match(refused.json.message, /targets\[0\]\.transactions\[1\]\.response\.status/);
  assert.deepEqual(Object.keys(refused.json.data), ['targets[0].transactions[1].response.status']);
  assert.equal(server.store.state.sessionIdByName.has('bad'), false);
  const dir = join(server.dataDir, 'transactions');
  assert.deepEqual(existsSync(dir) ? readdirSync(dir) : [], [], 'no file left behind');
  const notArray = await postBundle(server.url, JSON.stringify({ ...bad, session: { name: 'bad2' }, targets: [{ target_url: 'https://c.example/', transactions: {} }] }));
  assert.equal(notArray.json.message, 'targets[0].transactions must be an array of HAR entries');
  await server.close();
});

test('--max-import-body still bounds a bundle with transactions', async () => {
  const server = await startServer({ maxImportBody: 10_000 });
  const big = { format: 'assessd-session', version: 1, session: { name: 'big' }, targets: [{ target_url: 'https://d.example/', transactions: [entryOf({ url: 'https://d.example/', responseBody: 'x'.repeat(20_000) })] }] };
  const res = await postBundle(server.url, JSON.stringify(big));
  assert.equal(res.status, 413);
  await server.close();
});

test('assessd export and import carry transactions too, no server running', async () => {
  const dir = await tempDir();
  const server = await startServer({ dataDir: dir });
  await request(server.url, '/api/v1/targets/', { method: 'POST', form: { target_url: 'https://e.example/' } });
  await importHar(server.url, 1, harOf([{ url: 'https://e.example/page', responseBody: 'hello' }]));
  await server.stop();
  const file = join(dir, '..', `bundle-${Date.now()}.json`);
  const exported = await runCli(['export', '--session', '1', '--data-dir', dir, '--out', file]);
  assert.equal(exported.code, 0, exported.stderr);
  const other = await tempDir();
  await writeFile(join(other, '.keep'), '');
  const fresh = await startServer({ dataDir: other });
  await fresh.stop();
  const imported = await runCli(['import', file, '--data-dir', other, '--name', 'moved']);
  assert.equal(imported.code, 0, imported.stderr);
  const again = await startServer({ dataDir: other });
  const target = again.store.state.targetIdByUrl.get('https://e.example/')!;
  const rows = (await request(again.url, `/api/v1/targets/${target}/transactions/`)).json.data;
  assert.deepEqual(rows.map((t: { url: string }) => t.url), ['https://e.example/page']);
  await again.close();
});

test('a session whose transactions are more than a bundle carries: the export is refused before they are read, saying why and what to do instead; the server is fine', async () => {
  // 40 KiB here stands for the 256 MiB of the default (MAX_BUNDLED_TRANSACTION_BYTES): gigabytes of recorded traffic ran the server out of memory
  const server = await startServer({ maxBundledTransactions: 40 * 1024 });
  try {
    await request(server.url, '/api/v1/targets/', { method: 'POST', form: { target_url: 'https://big.example/' } });
    await importHar(server.url, 1, harOf([{ url: 'https://big.example/small', responseBody: 'x'.repeat(10 * 1024) }]));
    assert.equal((await request(server.url, '/api/v1/bundles/1')).status, 200, 'under the budget');
    await importHar(server.url, 1, harOf(Array.from({ length: 8 }, (_, i) => ({ url: `https://big.example/${i}`, responseBody: 'y'.repeat(10 * 1024) }))));
    const refused = await request(server.url, '/api/v1/bundles/1');
    assert.equal(refused.status, 422, refused.text);
    assert.equal(refused.json.status, 'fail');
    assert.match(refused.json.message, /^Session too large to export as one bundle: its targets' transactions hold \d+\.\d MiB, more than a bundle carries \(0\.0 MiB\); export each target's transactions as HAR \(GET \/api\/v1\/targets\/<id>\/transactions\/har\), which streams any size$/);
    assert.equal((await request(server.url, '/api/v1/targets/1/transactions/har')).status, 200);
    assert.equal((await request(server.url, '/debug/health')).status, 200);
  } finally {
    await server.close();
  }
});
