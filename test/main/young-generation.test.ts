/** The command line keeps V8's young generation small, compactions (worker threads) or not. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { runInNewContext } from 'node:vm';
import { PROJECT_ROOT } from '../../src/paths.ts';
import { STREAM_COLLECTION_BYTES, streamedThrough } from '../../src/young-generation.ts';
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
  // V8's own behaviour is measured, not ours: without coverage, whose counters slow the churn threefold
  const { NODE_V8_COVERAGE: _coverage, ...env } = process.env;
  return JSON.parse(execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8', env }));
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

/** The young generation's bytes at the start and after 3,000 writes from 16 clients, with the compactions done meanwhile. */
async function youngGenerationThroughWrites(nodeFlags: string[]): Promise<{ start: number; after: number; compactions: number }> {
  const dataDir = await tempDir();
  // compacting every 64 KiB of journal; no NODE_OPTIONS of the caller's: the flags are the test's
  const server = await spawnServer(['--port', '0', '--data-dir', dataDir], { NODE_OPTIONS: '', ASSESSD_COMPACT_AFTER: '65536' }, nodeFlags);
  try {
    const stats = async () => (await request(server.url, '/debug/stats')).json.data as { store: { compactions: number }; memory: { youngGeneration: number } };
    const start = (await stats()).memory.youngGeneration;
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
    return { start, after: after.memory.youngGeneration, compactions: after.store.compactions };
  } finally {
    server.proc.kill('SIGKILL');
    await server.exited;
    await rm(dataDir, { recursive: true, force: true });
  }
}

const MB = 2 ** 20;

test('the command line without node flags (npx assessd, the assessd command) keeps the young generation small through writes and the compactions they bring', async () => {
  const { start, after, compactions } = await youngGenerationThroughWrites([]);
  assert.ok(compactions >= 2, `${compactions} compactions`);
  // 2 MB (4 under coverage, which allocates more before the CLI's first line runs)
  assert.ok(start > 0 && start <= 4 * MB, `${start} bytes at the start`);
  // a step may slip in while a compaction worker starts (2 -> 4 MB here); unchecked, it grows to 16-32 MB
  assert.ok(after <= 8 * MB, `${start} -> ${after} bytes`);
});

test('a bound given on node\'s command line is left to V8: the young generation grows to it and no further, compactions or not', async () => {
  const { start, after, compactions } = await youngGenerationThroughWrites(['--max-semi-space-size=4']);
  assert.ok(compactions >= 2, `${compactions} compactions`);
  assert.ok(start > 0 && after > start && after <= 8 * MB, `${start} -> ${after} bytes`);
});

test('a stream collects the young generation every 4 MiB it moves, and leaves no `gc` behind in contexts made later', async () => {
  let minor = 0;
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) if ((entry as unknown as { detail: { kind: number } }).detail.kind === constants.NODE_PERFORMANCE_GC_MINOR) minor++;
  });
  observer.observe({ entryTypes: ['gc'] });
  try {
    // 40 MiB in 64 KiB reads: ten collections; less than 4 MiB more: none
    for (let i = 0; i < (10 * STREAM_COLLECTION_BYTES) / 65536; i++) streamedThrough(65536);
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.ok(minor >= 10, `${minor} minor collections for 40 MiB`);
    const after = minor;
    streamedThrough(STREAM_COLLECTION_BYTES - 1);
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.ok(minor - after <= 1, `${minor - after} collections for less than 4 MiB`);
  } finally {
    observer.disconnect();
  }
  assert.equal(runInNewContext('typeof gc'), 'undefined');
});
