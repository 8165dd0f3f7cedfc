/** The command line keeps V8's young generation at its start size, compactions (worker threads) or not. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { PROJECT_ROOT } from '../../src/paths.ts';
import { request, spawnServer, tempDir } from '../helpers/server.ts';

const MODULE = JSON.stringify(pathToFileURL(join(PROJECT_ROOT, 'src', 'young-generation.ts')).href);

/**
 * In a fresh process (V8's flags are the process's): `setup`, then enough short-lived garbage that
 * V8 would grow the young generation if it may, then `between`, then as much garbage again. The
 * young generation's size in MB after each round of garbage.
 */
function youngGeneration(setup: string, between = ''): { before: number; after: number } {
  const script = `const { keepYoungGenerationSmall } = await import(${MODULE});
    const { Worker } = await import('node:worker_threads');
    const { getHeapSpaceStatistics } = await import('node:v8');
    const newSpace = () => getHeapSpaceStatistics().find((space) => space.space_name === 'new_space').space_size / 2 ** 20;
    let kept = [];
    const churn = () => { for (let i = 0; i < 3e6; i++) { kept.push({ i, s: 'x' + i }); if (kept.length > 20000) kept = []; } };
    ${setup}
    churn();
    const before = newSpace();
    ${between}
    churn();
    console.log(JSON.stringify({ before, after: newSpace() }));`;
  return JSON.parse(execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8' }));
}

test('left to itself, V8 grows the young generation under churn', () => {
  const { before, after } = youngGeneration('');
  assert.ok(Math.max(before, after) >= 8, `${before} -> ${after} MB`);
});

test('kept small, it stays at its start size under the same churn', () => {
  const { before, after } = youngGeneration('keepYoungGenerationSmall();');
  assert.ok(before <= 4 && after === before, `${before} -> ${after} MB`);
});

test('a worker thread undoes it for the whole process: after one made by hand, the young generation grows', () => {
  const { before, after } = youngGeneration('keepYoungGenerationSmall();', `await new Promise((resolve) => new Worker('0', { eval: true }).once('exit', resolve));`);
  assert.ok(before <= 4 && after > before, `${before} -> ${after} MB`);
});

test('the command line\'s young generation stays at its start size through writes and the compactions they bring (worker threads)', async () => {
  const dataDir = await tempDir();
  const server = await spawnServer(['--port', '0', '--data-dir', dataDir], { ASSESSD_COMPACT_AFTER: '65536' });
  try {
    const stats = async () => (await request(server.url, '/debug/stats')).json.data as { store: { compactions: number }; memory: { youngGeneration: number } };
    const start = (await stats()).memory.youngGeneration;
    assert.ok(start > 0 && start <= 4 * 2 ** 20, `${start} bytes at the start`);
    let n = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (n < 3000) {
          const name = `session ${n++}`;
          assert.equal((await request(server.url, '/api/v1/sessions/', { method: 'POST', form: { name } })).status, 201);
        }
      }),
    );
    const after = await stats();
    assert.ok(after.store.compactions >= 2, `${after.store.compactions} compactions`);
    assert.equal(after.memory.youngGeneration, start);
  } finally {
    server.proc.kill('SIGKILL');
    await server.exited;
  }
});
