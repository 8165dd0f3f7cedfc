/**
 * A snapshot read row by row (src/store/snapshot-rows.ts), as a start reads one too large for one
 * string: the same value as JSON.parse, whatever the rows hold and wherever the 64 KiB reads cut
 * them; a file that is not such a document is refused; and a server reading its snapshots that way
 * starts with everything it had.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { readSnapshotRows, SnapshotShapeError } from '../../src/store/snapshot-rows.ts';
import { request, spawnServer, tempDir } from '../helpers/server.ts';

async function roundTrip(text: string): Promise<void> {
  const file = join(await tempDir(), 'sessions.json');
  await writeFile(file, text);
  assert.deepEqual({ ...readSnapshotRows(file) }, JSON.parse(text));
}

test('the same value as JSON.parse: strings holding brackets, commas, quotes and escapes; nested rows; members of every kind; any spacing', async () => {
  await roundTrip('{"version":3,"seq":17,"sessions":[],"targets":[{"a":"]},[{\\"\\\\","b":[1,[2,{"c":null}]],"d":true}],"x":{"y":[1,2],"z":"}"},"n":-1.5e3,"s":"a,b"}');
  await roundTrip(' \n{ "a" : [ 1 , "2" , [ ] , { } ] ,\n "b" : "x" , "c":[{"k":"\\u005d"}] }\n ');
  await roundTrip('{}');
  await roundTrip('{"only":[]}');
});

test('rows cut by the 64 KiB reads anywhere, characters of several bytes among them, and many rows', async () => {
  // rows of every length around the read size, each with 2-, 3- and 4-byte characters and escapes
  const rows = Array.from({ length: 60 }, (_, i) => ({ id: i, text: `é€😀\\"],{`.repeat(1 + i * 397), tail: i }));
  const many = Array.from({ length: 50_000 }, (_, i) => [i, i % 7, `p${i}`, i % 2 === 0]);
  await roundTrip(JSON.stringify({ version: 3, seq: 9, outputs: rows, works: many, after: 'end' }));
});

test('what is not such a document is refused, never half read', async () => {
  const dir = await tempDir();
  const bad = ['', '[]', '"s"', 'x{}', '{"a":1', '{"a":[1,2}', '{"a":[1,]}', '{"a":[,1]}', '{"a":1}{"b":2}', '{"a":1}x', '{"a":"unterminated}', '{"a":[1]]}', '{["a"]:1}', '{"a":tru}'];
  for (const [i, text] of bad.entries()) {
    const file = join(dir, `bad-${i}.json`);
    await writeFile(file, text);
    assert.throws(() => readSnapshotRows(file), (err: Error) => err instanceof SnapshotShapeError || err instanceof SyntaxError, JSON.stringify(text));
  }
});

test('a server that reads its snapshots row by row (past ASSESSD_SNAPSHOT_TEXT_BYTES) starts with every session, target and setting it had', async () => {
  const dir = await tempDir();
  // compactions all the time: the snapshots hold everything
  const env = { ASSESSD_SNAPSHOT_TEXT_BYTES: '0', ASSESSD_COMPACT_AFTER: '4096' };
  const first = await spawnServer(['--port', '0', '--data-dir', dir], env);
  const names: string[] = [];
  try {
    for (let i = 0; i < 60; i++) {
      const name = `session ${i} ],{"quoted"} é😀`;
      names.push(name);
      assert.equal((await request(first.url, '/api/v1/sessions/', { method: 'POST', form: { name } })).status, 201);
    }
    assert.equal((await request(first.url, '/api/v1/targets/', { method: 'POST', form: { target_url: 'http://rows.example/a,b]' } })).status, 201);
    assert.equal((await request(first.url, '/api/v1/configuration/', { method: 'PATCH', form: { THREADS: '7' } })).status, 200);
    // a compaction runs in a worker thread: waited for, so that the snapshots hold the rows
    const compactions = async () => (await request(first.url, '/debug/stats')).json.data.store.compactions as number;
    for (const deadline = Date.now() + 20_000; (await compactions()) < 1 && Date.now() < deadline; ) await new Promise((resolve) => setTimeout(resolve, 100));
    assert.ok((await compactions()) >= 1, 'compacted');
  } finally {
    first.proc.kill('SIGTERM');
    await first.exited;
  }
  const again = await spawnServer(['--port', '0', '--data-dir', dir], env);
  try {
    const sessions = (await request(again.url, '/api/v1/sessions/')).json.data.map((s: { name: string }) => s.name);
    for (const name of names) assert.ok(sessions.includes(name), name);
    const targets = (await request(again.url, '/api/v1/targets/')).json.data.map((t: { target_url: string }) => t.target_url);
    assert.ok(targets.some((url: string) => url.startsWith('http://rows.example/')), JSON.stringify(targets));
    assert.equal((await request(again.url, '/api/v1/configuration?key=THREADS')).json.data[0].value, '7');
  } finally {
    again.proc.kill('SIGTERM');
    await again.exited;
  }
});
