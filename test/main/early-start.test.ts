/**
 * The API's port is bound as the start begins and taken over once the server is ready: a client that
 * connects during a long start (a large data directory) waits for its answer instead of being
 * refused, and a start that fails frees the port.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import { start } from '../../src/index.ts';
import { freePort, spawnServer, tempDir } from '../helpers/server.ts';

const HOST = '127.0.0.1';
const quiet = { log: () => {} };

/** A sessions snapshot of `count` sessions: a start that reads it takes a while. */
async function largeDataDir(count: number): Promise<string> {
  const dir = await tempDir();
  const rows: string[] = [];
  for (let id = 1; id <= count; id++) rows.push(`{"id":${id},"name":"s${id}","targets":[]}`);
  const snapshot = `{"version":1,"seq":0,"nextSessionId":${count + 1},"activeSessionId":1,"nextTargetId":1,"nextWorkId":1,"nextOutputId":1,"nextErrorId":1,"sessions":[${rows.join(',')}],"targets":[],"works":[],"outputs":[],"errors":[]}`;
  await writeFile(join(dir, 'sessions.json'), snapshot, { mode: 0o600 });
  return dir;
}

test('a client that connects while the server reads a large data directory waits, and gets its answer once the server is ready', { timeout: 60_000 }, async () => {
  const dataDir = await largeDataDir(200_000);
  const port = await freePort();
  let ready = false;
  let readyAt = 0;
  const started = spawnServer(['--host', HOST, '--port', String(port), '--proxy-port', '0', '--data-dir', dataDir]);
  void started.then(() => {
    ready = true;
    readyAt = performance.now();
  }, () => {});
  // as a script that waits for the server does: it tries until a connection is taken
  let socket: ReturnType<typeof connect> | undefined;
  while (!socket && !ready) {
    const attempt = connect(port, HOST);
    const taken = await once(attempt, 'connect').then(() => true, () => false);
    if (taken) socket = attempt;
    else await new Promise((resolve) => setTimeout(resolve, 5));
  }
  assert.ok(socket, 'a connection was taken before the server said it listens');
  const connectedAt = performance.now();
  let text = '';
  socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
  socket.write(`GET /debug/health HTTP/1.1\r\nHost: ${HOST}:${port}\r\nConnection: close\r\n\r\n`);
  const server = await started;
  try {
    // well before: reading 200,000 sessions takes most of a second (a server that only listens once
    // ready would take the connection just before its start-up line)
    assert.ok(readyAt - connectedAt >= 250, `connected ${Math.round(readyAt - connectedAt)} ms before the start-up line`);
    await once(socket, 'end');
    assert.match(text, /^HTTP\/1\.1 200 /);
    assert.match(text, /\r\n\r\n\{"status":"success","data":\{"status":"ok"\}\}$/);
    // the same port, the server's own from then on
    assert.equal(server.url, `http://${HOST}:${port}`);
    const sessions = await fetch(`${server.url}/api/v1/sessions/`, { headers: { authorization: `Bearer ${server.token}` } });
    assert.equal(((await sessions.json()) as { data: unknown[] }).data.length, 200_000);
  } finally {
    server.proc.kill('SIGTERM');
    assert.equal(await server.exited, 0);
  }
});

test('a start that fails frees the port it bound; a port in use is said after a data directory in use, as before', async () => {
  const dataDir = await tempDir();
  const first = await start({ host: HOST, port: 0, dataDir, ...quiet });
  try {
    const port = await freePort();
    await assert.rejects(start({ host: HOST, port, dataDir, ...quiet }), { code: 'ERR_DATA_DIR_IN_USE' });
    await assert.rejects(once(connect(port, HOST), 'connect'), { code: 'ECONNREFUSED' });
    // both in use: the data directory's refusal names who holds it, as it did before the port was bound early
    await assert.rejects(start({ host: HOST, port: first.port, dataDir, ...quiet }), { code: 'ERR_DATA_DIR_IN_USE' });
    await assert.rejects(start({ host: HOST, port: first.port, dataDir: await tempDir(), ...quiet }), { code: 'EADDRINUSE' });
    // and the port is free for the next start once a failed one is over
    const other = await start({ host: HOST, port, dataDir: await tempDir(), ...quiet });
    assert.equal(other.port, port);
    await other.close();
  } finally {
    await first.close();
  }
  const corrupt = await tempDir();
  await writeFile(join(corrupt, 'sessions.json'), '{oops');
  const port = await freePort();
  await assert.rejects(start({ host: HOST, port, dataDir: corrupt, ...quiet }), { code: 'ERR_DATA_FILE' });
  await assert.rejects(once(connect(port, HOST), 'connect'), { code: 'ECONNREFUSED' });
});
