/**
 * Something other than a file where a file of the data directory belongs: a FIFO held the start
 * for ever (its read waits for a writer), a directory failed it with EISDIR and no name. Each now
 * stops the start at once, naming the path; nothing is written.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../../src/paths.ts';
import { prepareCa, CA_DIR, CA_FILE } from '../../src/proxy/ca.ts';
import { fileLogins, LOGINS_FILE } from '../../src/store/logins.ts';
import type { DataFileError } from '../../src/store/state.ts';
import { openStore } from '../../src/store/store.ts';
import { loadOrCreateToken, TOKEN_FILE } from '../../src/store/token-file.ts';
import { tempDir } from '../helpers/server.ts';

const DEFAULTS = [{ key: 'K', value: 'v', section: 'S', descrip: '' }];

const KINDS = {
  FIFO: (path: string) => execFileSync('mkfifo', [path]),
  directory: (path: string) => mkdirSync(path),
};

/** A data directory a server has used: snapshots, a journal with a record, the token, the CA. */
async function usedDir(): Promise<string> {
  const dir = await tempDir();
  const run = await startWithin(['--port', '0', '--data-dir', dir], 30_000, true);
  assert.equal(run.code, 0, run.stderr);
  const store = await openStore({ dir, defaults: DEFAULTS });
  await store.change({ op: 'createSession', name: 'acme' });
  await store.close();
  return dir;
}

/** Runs the compiled server; killed after `ms` (code null), or with SIGTERM once it listens (`stop`). */
function startWithin(args: string[], ms: number, stop = false): Promise<{ code: number | null; stderr: string }> {
  const proc = spawn(process.execPath, [join(PROJECT_ROOT, 'dist', 'assessd.cjs'), ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ASSESSD_TOKEN: '' } });
  let stderr = '';
  proc.stderr.on('data', (c: Buffer) => (stderr += c));
  proc.stdout.on('data', (c: Buffer) => {
    if (stop && c.toString().includes('listening on')) proc.kill('SIGTERM');
  });
  const timer = setTimeout(() => proc.kill('SIGKILL'), ms);
  return new Promise((resolve) =>
    proc.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    }),
  );
}

/** The refusal a start gives for `path`: its code, the path, and what is there. */
const refusal = (path: string, kind: string) => (err: DataFileError) =>
  err.code === 'ERR_DATA_FILE' && err.file === path && err.message === `${path}: a ${kind}, where a file of the data directory belongs: move it away`;

test('a directory in place of a snapshot or the journal: the store does not open, naming it, and writes nothing', async () => {
  for (const name of ['sessions.json', 'configuration.json', 'journal.jsonl']) {
    const dir = await usedDir();
    const path = join(dir, name);
    rmSync(path);
    mkdirSync(path);
    const before = readdirSync(dir).sort();
    await assert.rejects(openStore({ dir, defaults: DEFAULTS }), refusal(path, 'directory'), name);
    assert.deepEqual(readdirSync(dir).sort(), before, 'nothing written');
  }
});

// Through the compiled server in a process of its own: before the fix, the read of a FIFO blocked
// the process for good, and a test in this one could only hang.
test('a FIFO in place of a snapshot, the journal, the token or the CA: the start stops at once, one line naming it, exit 1', async () => {
  for (const name of ['sessions.json', 'configuration.json', 'journal.jsonl', TOKEN_FILE, join(CA_DIR, CA_FILE)]) {
    const dir = await usedDir();
    const path = join(dir, name);
    execFileSync('rm', ['-f', path]);
    KINDS.FIFO(path);
    const before = readdirSync(dir).sort();
    const run = await startWithin(['--port', '0', '--data-dir', dir], 15_000);
    assert.equal(run.code, 1, `${name}: ${run.stderr}`);
    assert.equal(run.stderr, `assessd: ${path}: a FIFO, where a file of the data directory belongs: move it away\n`);
    assert.deepEqual(readdirSync(dir).sort(), before, 'nothing written');
  }
});

test('a directory in place of the token or the CA stops the start naming it; a FIFO or a directory in place of the logins is logged, and browsers log in again', async () => {
  const tokenDir = await tempDir();
  KINDS.directory(join(tokenDir, TOKEN_FILE));
  await assert.rejects(loadOrCreateToken(tokenDir, () => {}), refusal(join(tokenDir, TOKEN_FILE), 'directory'));
  const caDir = await tempDir();
  mkdirSync(join(caDir, CA_DIR));
  KINDS.directory(join(caDir, CA_DIR, CA_FILE));
  await assert.rejects(prepareCa(caDir), refusal(join(caDir, CA_DIR, CA_FILE), 'directory'));
  // (a FIFO here hung the first request that carried a login cookie, before the fix)
  for (const [kind, make] of Object.entries(KINDS)) {
    const loginsDir = await tempDir();
    make(join(loginsDir, LOGINS_FILE));
    const logs: string[] = [];
    assert.equal(fileLogins(loginsDir, (line) => logs.push(line)).has('0'.repeat(64)), false);
    assert.deepEqual(logs, [`${join(loginsDir, LOGINS_FILE)} could not be read (a ${kind}, where a file of the data directory belongs: move it away): browsers log in again`]);
  }
});

// In a process of its own: node's recursive mkdir looped there for ever, synchronously.
test('a data directory mkdir() refuses with ENOENT though its parent is there (/proc): the start stops at once, naming it', async (t) => {
  if (!statSync('/proc/self', { throwIfNoEntry: false })) return t.skip('no /proc on this machine');
  const dir = '/proc/assessd-data';
  const run = await startWithin(['--port', '0', '--data-dir', dir], 15_000);
  assert.equal(run.code, 1, run.stderr);
  assert.equal(run.stderr, `assessd: ENOENT: no such file or directory, mkdir '${dir}'\n`);
});

for (const activated of [false, true]) test(`sessions.json deleted from a directory a server used${activated ? ' (its journal activates a session, which fails replayed without it)' : ''}: the compiled server refuses to start, one line naming it, and writes nothing`, async () => {
  const dir = await usedDir();
  if (activated) {
    const store = await openStore({ dir, defaults: DEFAULTS });
    await store.change({ op: 'activateSession', id: 2 });
    await store.close();
  }
  const path = join(dir, 'sessions.json');
  rmSync(path);
  const before = readdirSync(dir).sort();
  const run = await startWithin(['--port', '0', '--data-dir', dir], 15_000);
  assert.equal(run.code, 1, run.stderr);
  assert.match(run.stderr, new RegExp(`^assessd: ${path}: missing, while the journal holds records written after it \\((1-\\d+|record \\d+ among them)\\): what it held is in no record\\. Nothing was changed; put the file back, or start on a complete copy of the directory\\n$`));
  assert.deepEqual(readdirSync(dir).sort(), before, 'no snapshot written');
});
