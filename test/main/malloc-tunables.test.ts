/**
 * `npm start` sets glibc's allocator (GLIBC_TUNABLES, src/malloc-tunables.ts) for the server alone,
 * where the kernel gives 2 MiB huge pages on request: the shell gives it to the server unless the user
 * has one, the server's heap is then eligible for transparent huge pages, and the programs the
 * server runs do not get it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { START_MALLOC_TUNABLES } from '../../src/malloc-tunables.ts';
import { PROJECT_ROOT } from '../../src/paths.ts';
import { addTarget, configure, queue, script, scriptDir, toolPlugin, waitForOutput, writePluginFile } from '../helpers/engine.ts';
import { startEnv } from '../../bench/start-flags.mjs';
import { spawnServer, tempDir, type ChildServer } from '../helpers/server.ts';

const TOKEN = 'malloc-tunables-test-token-0123456789abcdef';
const CODE = 'USR-ENV-001';
const { GLIBC_TUNABLES: _, ...WITHOUT } = process.env;

const THP = '/sys/kernel/mm/transparent_hugepage';
const readOr = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').trim() : undefined);
/** Whether the kernel gives huge pages to memory that asks (`madvise`), and they are 2 MiB: where the start script sets the allocator. */
const hugePagesOnRequest = /\[madvise\]/.test(readOr(`${THP}/enabled`) ?? '') && readOr(`${THP}/hpage_pmd_size`) === '2097152';
const glibc = (process.report.getReport() as { header: { glibcVersionRuntime?: string } }).header.glibcVersionRuntime;
/** glibc's `hugetlb` tunable is from 2.35 on. */
const glibcAsks = glibc !== undefined && Number(glibc.split('.')[0]) * 1000 + Number(glibc.split('.')[1]) >= 2035;

test('npm start gives the server the allocator setting where huge pages are 2 MiB and on request, and keeps a GLIBC_TUNABLES the user set (empty included)', () => {
  // the start script run by sh as npm runs it (the test helpers and the bench read it the same way)
  assert.equal(startEnv(PROJECT_ROOT, WITHOUT).GLIBC_TUNABLES, hugePagesOnRequest ? START_MALLOC_TUNABLES : undefined);
  assert.equal(startEnv(PROJECT_ROOT, { ...WITHOUT, GLIBC_TUNABLES: 'glibc.malloc.tcache_count=7' }).GLIBC_TUNABLES, 'glibc.malloc.tcache_count=7');
  assert.equal(startEnv(PROJECT_ROOT, { ...WITHOUT, GLIBC_TUNABLES: '' }).GLIBC_TUNABLES, '', 'GLIBC_TUNABLES= npm start: none');
});

/** The `[heap]` mapping's THPeligible of a process (whether the kernel may back it with huge pages); undefined if /proc does not say. */
function heapHugePageEligible(pid: number): boolean | undefined {
  const heap = /^[0-9a-f]+-[0-9a-f]+ .*\[heap\]\n((?:[A-Za-z_]+:.*\n)+)/m.exec(readFileSync(`/proc/${pid}/smaps`, 'utf8'));
  const eligible = heap && /^THPeligible:\s+(\d)$/m.exec(heap[1]!);
  return eligible ? eligible[1] === '1' : undefined;
}

test('with the setting, glibc asks for huge pages for its heap (a plain node does not)', { skip: hugePagesOnRequest && glibcAsks ? false : `huge pages not 2 MiB on request, or glibc ${glibc ?? 'absent'} older than 2.35` }, async (t) => {
  const dirs = [await tempDir(), await tempDir()];
  const servers: ChildServer[] = [];
  try {
    servers.push(await spawnServer(['--port', '0', '--no-proxy', '--data-dir', dirs[0]!], { GLIBC_TUNABLES: START_MALLOC_TUNABLES }));
    servers.push(await spawnServer(['--port', '0', '--no-proxy', '--data-dir', dirs[1]!], { GLIBC_TUNABLES: undefined }));
    const [tuned, plain] = servers.map((s) => heapHugePageEligible(s.proc.pid!));
    if (tuned === undefined || plain === undefined) return t.skip('/proc/PID/smaps says nothing of the heap\'s huge pages');
    assert.equal(tuned, true);
    assert.equal(plain, false);
  } finally {
    for (const s of servers) s.proc.kill('SIGKILL');
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  }
});

test('the programs the server runs get the environment the user gave: not the start script\'s setting, the user\'s own GLIBC_TUNABLES', async () => {
  const tools = await scriptDir();
  try {
    const printer = await script(tools, 'prints-tunables.sh', 'echo "GLIBC_TUNABLES=[${GLIBC_TUNABLES-unset}]"');
    for (const [given, seen] of [
      [START_MALLOC_TUNABLES, 'unset'],
      ['glibc.malloc.tcache_count=7', 'glibc.malloc.tcache_count=7'],
    ] as const) {
      const dataDir = await tempDir();
      let server: ChildServer | undefined;
      try {
        await writePluginFile(dataDir, 'env.json', { test_groups: [{ code: CODE, descrip: 'Prints its environment' }], plugins: [toolPlugin(CODE, 'TOOL_WAFW00F', ['{target_url}'])] });
        server = await spawnServer(['--port', '0', '--no-proxy', '--data-dir', dataDir, '--token', TOKEN, '--workers', '1'], { GLIBC_TUNABLES: given });
        const api = { url: server.url, headers: { authorization: `Bearer ${TOKEN}` } };
        await configure(api, { TOOL_WAFW00F: printer });
        const id = await addTarget(api, 'http://127.0.0.1:1/');
        assert.equal(await queue(api, { id: String(id), code: CODE }), 1);
        const out = await waitForOutput(api, id, `active@${CODE}`);
        assert.equal(out.status, 'Successful', JSON.stringify(out));
        assert.ok(out.output!.includes(`GLIBC_TUNABLES=[${seen}]`), `given ${given}: ${out.output}`);
      } finally {
        server?.proc.kill('SIGKILL');
        await server?.exited;
        await rm(dataDir, { recursive: true, force: true });
      }
    }
  } finally {
    await rm(tools, { recursive: true, force: true });
  }
});
