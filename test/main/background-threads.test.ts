import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { PROJECT_ROOT } from '../../src/paths.ts';

const MODULE = pathToFileURL(join(PROJECT_ROOT, 'src', 'background-threads.ts')).href;

/** Runs `code` in a fresh process (its threads, not the test runner's), returning what it prints as JSON. */
function inChild(code: string): any {
  const script = `const { lowerBackgroundThreads } = await import(${JSON.stringify(MODULE)});
    const { readdirSync } = await import('node:fs');
    const { getPriority } = await import('node:os');
    // the thread pool starts with its first use
    await (await import('node:fs/promises')).stat('.');
    const nices = () => Object.fromEntries(readdirSync('/proc/self/task').map((t) => [t, getPriority(Number(t))]));
    ${code}`;
  return JSON.parse(execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8' }));
}

test('every thread but the event loop is lowered by 10 nice levels, the loop untouched; twice lowers nothing more', { skip: process.platform !== 'linux' && 'per-thread nice values are Linux only' }, () => {
  const { pid, before, lowered, after, again } = inChild(
    `const before = nices(); const lowered = lowerBackgroundThreads(); const after = nices(); const again = lowerBackgroundThreads();
     console.log(JSON.stringify({ pid: process.pid, before, lowered, after, again }));`,
  );
  const others = Object.keys(after).filter((tid) => Number(tid) !== pid);
  assert.ok(others.length >= 4, `only ${others.length} other threads`);
  assert.equal(after[pid], before[pid]);
  for (const tid of others) assert.equal(after[tid], Math.min(19, before[pid] + 10), `thread ${tid}`);
  assert.equal(lowered, others.filter((tid) => before[tid] < before[pid] + 10).length);
  assert.equal(again, 0);
});

test('a process already running nicely keeps its threads below it, never above', { skip: process.platform !== 'linux' && 'per-thread nice values are Linux only' }, () => {
  const { pid, after } = inChild(
    `const { setPriority } = await import('node:os');
     for (const t of readdirSync('/proc/self/task')) setPriority(Number(t), 15);
     lowerBackgroundThreads();
     console.log(JSON.stringify({ pid: process.pid, after: nices() }));`,
  );
  for (const [tid, nice] of Object.entries(after)) assert.equal(nice, Number(tid) === pid ? 15 : 19, `thread ${tid}`);
});
