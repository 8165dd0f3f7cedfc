/** The web application's logins in the data directory (src/store/logins.ts): expiry, the bound, a file that is not theirs. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { nodeFileSystem } from '../../src/store/atomic-file.ts';
import { fileLogins, LOGINS_FILE, MAX_LOGINS } from '../../src/store/logins.ts';
import { tempDir } from '../helpers/server.ts';

const digest = (i: number) => i.toString(16).padStart(64, '0');

/** The logins file's place taken by a directory: every write of it fails, as on a full disk. */
async function takePlaceOfFile(dir: string): Promise<void> {
  await rm(join(dir, LOGINS_FILE));
  await mkdir(join(dir, LOGINS_FILE, 'taken'), { recursive: true });
}

test('a login lasts until it expires, on disk as in memory', async () => {
  const dir = await tempDir();
  let now = 1_000_000;
  const logins = fileLogins(dir, () => {}, () => now);
  await logins.add(digest(1), now + 1000);
  assert.ok(logins.has(digest(1)));
  now += 1000;
  assert.equal(logins.has(digest(1)), false, 'expired');
  now -= 500;
  assert.ok(fileLogins(dir, () => {}, () => now).has(digest(1)), 'read back from the file');
});

test(`at most ${MAX_LOGINS} logins: a new one past them ends the one that expires first`, async () => {
  const dir = await tempDir();
  const logins = fileLogins(dir, () => {}, () => 0);
  for (let i = 0; i < MAX_LOGINS; i++) await logins.add(digest(i), 10_000 + (i === 7 ? -1 : i));
  await logins.add(digest(MAX_LOGINS), 99_999);
  assert.equal(logins.has(digest(7)), false);
  assert.ok(logins.has(digest(0)) && logins.has(digest(MAX_LOGINS)));
  const kept = JSON.parse(await readFile(join(dir, LOGINS_FILE), 'utf8')).logins;
  assert.equal(kept.length, MAX_LOGINS);
});

test('a file that is not a list of logins is said once and taken as none; the next login writes a good one', async () => {
  const dir = await tempDir();
  for (const text of ['not json', '{"logins":[{"digest":"zz","expires":1}]}', '[]']) {
    await writeFile(join(dir, LOGINS_FILE), text);
    const lines: string[] = [];
    const logins = fileLogins(dir, (line) => lines.push(line), () => 0);
    assert.equal(logins.has(digest(1)), false);
    assert.equal(lines.length, 1, text);
    assert.match(lines[0]!, /is not a list of logins .*: browsers log in again/);
    await logins.add(digest(1), 5);
    assert.ok(fileLogins(dir, () => {}, () => 0).has(digest(1)));
  }
});

test('a list that cannot be written (a full disk) holds in memory and is written again until it lands: a logout answered then is not undone by a restart', async () => {
  const dir = await tempDir();
  const lines: string[] = [];
  const logins = fileLogins(dir, (line) => lines.push(line), () => 0, 20);
  await logins.add(digest(1), 5);
  await takePlaceOfFile(dir);
  await logins.remove(digest(1));
  assert.equal(logins.has(digest(1)), false, 'ended at once, in memory');
  await new Promise((resolve) => setTimeout(resolve, 150));
  assert.equal(lines.filter((line) => /could not be written/.test(line)).length, 1, 'said once, not at each try');
  assert.match(lines[0]!, /the change holds in memory, and is written again until it lands$/);
  await rm(join(dir, LOGINS_FILE), { recursive: true });
  for (let i = 0; i < 100 && !lines.some((line) => /written to .* now$/.test(line)); i++) await new Promise((resolve) => setTimeout(resolve, 20));
  assert.deepEqual(JSON.parse(await readFile(join(dir, LOGINS_FILE), 'utf8')), { logins: [] }, 'the logout on disk');
  assert.equal(fileLogins(dir, () => {}, () => 0).has(digest(1)), false, 'a restart keeps it');
});

test('once closed (the server stops), a list that could not be written is tried once more, and never again after: a later server on the directory keeps what it writes', async () => {
  const dir = await tempDir();
  const lines: string[] = [];
  const logins = fileLogins(dir, (line) => lines.push(line), () => 0, 20);
  await logins.add(digest(1), 5);
  await takePlaceOfFile(dir);
  await logins.add(digest(2), 5);
  await logins.close!();
  await rm(join(dir, LOGINS_FILE), { recursive: true });
  // the next server's logout, on disk
  const next = fileLogins(dir, () => {}, () => 0);
  await next.add(digest(3), 5);
  await next.remove(digest(3));
  await new Promise((resolve) => setTimeout(resolve, 200));
  assert.deepEqual(JSON.parse(await readFile(join(dir, LOGINS_FILE), 'utf8')), { logins: [] }, 'not overwritten by the stopped one');
  assert.equal(lines.filter((line) => /could not be written/.test(line)).length, 1);
});

test('no write of the list after close() has returned, though a retry was due while a slow write ran', async (t) => {
  const dir = await tempDir();
  const writes: string[] = [];
  let closed = false;
  const write = nodeFileSystem.writeFileAtomic.bind(nodeFileSystem);
  // the first write refused (a full disk), the next ones slower than the retry's delay
  t.mock.method(nodeFileSystem, 'writeFileAtomic', async (path: string, data: string) => {
    if (writes.push('started') === 1) throw Object.assign(new Error('full'), { code: 'ENOSPC' });
    await new Promise((resolve) => setTimeout(resolve, 150));
    await write(path, data);
    writes.push(closed ? 'written after close' : 'written');
  });
  const logins = fileLogins(dir, () => {}, () => 0, 50);
  void logins.add(digest(1), 5);
  void logins.add(digest(2), 5);
  await new Promise((resolve) => setTimeout(resolve, 10));
  await logins.close!();
  closed = true;
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.ok(!writes.includes('written after close'), writes.join(', '));
});
