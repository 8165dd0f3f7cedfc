/**
 * The data directory removed or replaced under a running server (`rm -rf`, or moved away and a
 * copy put back): no write is acknowledged from then on (500, the reason logged), since it would
 * go to a file nobody will read again; and the failed write is never seen (the server answers
 * every request 500: it cannot roll back from a directory that is not its own). Run as users run
 * it: the compiled server, kill -9, a restart on the path.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cp, rename, rm } from 'node:fs/promises';
import { request, spawnServer, tempDir } from '../helpers/server.ts';

const TOKEN = 'replaced-dir-token-0123456789abcdef0123456789';
const auth = { authorization: `Bearer ${TOKEN}` };
const start = (dir: string) => spawnServer(['--port', '0', '--no-proxy', '--workers', '0', '--data-dir', dir], { ASSESSD_TOKEN: TOKEN });
const addSession = (url: string, name: string) => request(url, '/api/v1/sessions/', { method: 'POST', headers: auth, form: { name } });
const sessionNames = async (url: string): Promise<string[]> =>
  (await request(url, '/api/v1/sessions/', { headers: auth })).json.data.map((s: { name: string }) => s.name);

test('the data directory removed under a running server: the next write is 500, said in the log, and never seen: every request is 500 from then on', async () => {
  const dir = await tempDir();
  const server = await start(dir);
  try {
    assert.equal((await addSession(server.url, 'before')).status, 201);
    await rm(dir, { recursive: true, force: true });
    const failed = await addSession(server.url, 'after');
    assert.equal(failed.status, 500, failed.text);
    assert.equal(failed.json.message, 'Internal server error');
    assert.match(server.output(), /the data directory was removed or replaced while the server ran/);
    for (const path of ['/api/v1/sessions/', '/api/v1/configuration/', '/debug/health']) {
      const res = await request(server.url, path, { headers: auth });
      assert.equal(res.status, 500, `${path}: ${res.text}`);
      assert.ok(!res.text.includes('after'), res.text);
    }
    const patched = await request(server.url, '/api/v1/configuration/', { method: 'PATCH', headers: auth, form: { FTP_PORT_NUMBER: '2121' } });
    assert.equal(patched.status, 500, patched.text);
  } finally {
    server.proc.kill('SIGKILL');
    await server.exited;
    await rm(dir, { recursive: true, force: true });
  }
});

test('the data directory moved away and a copy put back: no write is acknowledged into the old one; the copy, restarted, holds what it held', async () => {
  const dir = await tempDir();
  const moved = `${dir}-moved`;
  const server = await start(dir);
  try {
    assert.equal((await addSession(server.url, 'kept')).status, 201);
    await rename(dir, moved);
    // as a restore copies it: the files, not the lock's socket
    await cp(moved, dir, { recursive: true, filter: (from) => !from.includes('.assessd-lock-') });
    const answers = [];
    for (let i = 0; i < 20; i++) answers.push((await addSession(server.url, `lost ${i}`)).status);
    assert.deepEqual([...new Set(answers)], [500], 'no write acknowledged once the directory is another');
  } finally {
    server.proc.kill('SIGKILL');
    await server.exited;
  }
  const again = await start(dir);
  try {
    const names = await sessionNames(again.url);
    assert.ok(names.includes('kept'), names.join());
    assert.ok(!names.some((n) => n.startsWith('lost')), names.join());
  } finally {
    again.proc.kill('SIGKILL');
    await again.exited;
    await rm(dir, { recursive: true, force: true });
    await rm(moved, { recursive: true, force: true });
  }
});
