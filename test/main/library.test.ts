import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { start } from '../../src/index.ts';
import { request, tempDir, useToken } from '../helpers/server.ts';
import type { StartOptions } from '../../src/index.ts';

const quiet = { log: () => {} };

/** start(), its generated token then sent by the request helper, as an embedder would send it. */
async function begin(options: StartOptions) {
  const server = await start(options);
  useToken(server.port, server.token);
  return server;
}

test('start() resolves once listening with a URL without trailing slash; close() releases the data directory', async () => {
  const dataDir = await tempDir();
  const signals = [process.listenerCount('SIGTERM'), process.listenerCount('SIGINT')];
  const server = await begin({ host: '127.0.0.1', port: 0, dataDir, ...quiet });
  assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+$/);
  assert.equal(server.dataDir, dataDir);
  assert.deepEqual([process.listenerCount('SIGTERM'), process.listenerCount('SIGINT')], signals, 'no signal handler installed');
  assert.equal((await request(server.url, '/api/v1/sessions/', { method: 'POST', form: { name: 'embedded' } })).status, 201);
  await server.close();
  await server.close(); // twice is fine
  await assert.rejects(request(server.url, '/debug/health'), { code: 'ECONNREFUSED' });
  const again = await begin({ port: 0, dataDir, ...quiet });
  try {
    const names = (await request(again.url, '/api/v1/sessions/')).json.data.map((s: { name: string }) => s.name);
    assert.deepEqual(names, ['default session', 'embedded']);
  } finally {
    await again.close();
  }
});

test('two servers on two data directories work side by side in one process', async () => {
  const [a, b] = await Promise.all([begin({ port: 0, dataDir: await tempDir(), ...quiet }), begin({ port: 0, dataDir: await tempDir(), ...quiet })]);
  try {
    await request(a.url, '/api/v1/sessions/', { method: 'POST', form: { name: 'only in a' } });
    const inB = (await request(b.url, '/api/v1/sessions/')).json.data.map((s: { name: string }) => s.name);
    assert.deepEqual(inB, ['default session']);
    assert.notEqual(a.url, b.url);
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});

test('close() lets writes in flight finish: every acknowledged one is there after a restart', async () => {
  const dataDir = await tempDir();
  const server = await begin({ port: 0, dataDir, ...quiet });
  const writes = Promise.allSettled(Array.from({ length: 30 }, (_, i) => request(server.url, '/api/v1/sessions/', { method: 'POST', form: { name: `w${i}` } })));
  await new Promise((resolve) => setTimeout(resolve, 2));
  await server.close();
  const acknowledged = (await writes).filter((w) => w.status === 'fulfilled' && w.value.status === 201).length;
  const again = await begin({ port: 0, dataDir, ...quiet });
  try {
    const saved = (await request(again.url, '/api/v1/sessions/')).json.data.length - 1;
    assert.ok(saved >= acknowledged, `${acknowledged} acknowledged, ${saved} saved`);
  } finally {
    await again.close();
  }
});

test('start() rejects with an Error carrying a code, and leaves the process running', async () => {
  const dataDir = await tempDir();
  const first = await start({ port: 0, dataDir, ...quiet });
  try {
    await assert.rejects(start({ port: 0, dataDir, ...quiet }), { code: 'ERR_DATA_DIR_IN_USE', message: `data directory ${dataDir} is in use by process ${process.pid}` });
    await assert.rejects(start({ port: first.port, dataDir: await tempDir(), ...quiet }), { code: 'EADDRINUSE' });
  } finally {
    await first.close();
  }
  const corrupt = await tempDir();
  await writeFile(join(corrupt, 'sessions.json'), '{oops');
  await assert.rejects(start({ port: 0, dataDir: corrupt, ...quiet }), (err: NodeJS.ErrnoException) => err.code === 'ERR_DATA_FILE' && err.message.startsWith(join(corrupt, 'sessions.json')));
  for (const bad of [{}, { dataDir: '' }, { dataDir, port: 70000 }, { dataDir, port: 'x' }, { dataDir, maxBody: 0 }, { dataDir, host: '' }, { dataDir, allowedHosts: ['a/b'] }, { dataDir, token: 'a b' }, { dataDir, token: 't', noToken: true }, { dataDir, prot: 0 }]) {
    await assert.rejects(start({ ...quiet, ...(bad as { dataDir: string }) }), { code: 'ERR_INVALID_OPTION' }, JSON.stringify(bad));
  }
  // a failed start released the data directory: the next one starts
  const after = await start({ port: 0, dataDir, ...quiet });
  await after.close();
});
