/**
 * `npm start` sets glibc's allocator (GLIBC_TUNABLES, src/malloc-tunables.ts) for the server alone,
 * where the kernel gives 2 MiB huge pages on request: the shell gives it to the server unless the user
 * has one, the server's heap is then eligible for transparent huge pages, and the programs the
 * server runs do not get it. Run through npm start itself, as a user runs it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { START_MALLOC_TUNABLES } from '../../src/malloc-tunables.ts';
import { PROJECT_ROOT } from '../../src/paths.ts';
import { addTarget, configure, queue, script, scriptDir, toolPlugin, waitForOutput, writePluginFile } from '../helpers/engine.ts';
import { startEnv } from '../../bench/start-flags.mjs';
import { listening, npmStart, serverOfNpmStart, tempDir } from '../helpers/server.ts';

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

const linux = process.platform === 'linux' ? false : 'reads /proc';

test('under npm start, the server\'s heap is on huge pages where the kernel gives them on request, and the programs it runs do not get the setting; a user\'s own GLIBC_TUNABLES is theirs', { skip: linux }, async () => {
  const tools = await scriptDir();
  try {
    const printer = await script(tools, 'prints-tunables.sh', 'echo "GLIBC_TUNABLES=[${GLIBC_TUNABLES-unset}]"');
    const cases: { user: string | undefined; tools: string; hugePages: boolean }[] = [
      // none set: the script's (where it applies), the heap on huge pages, the tools without it
      { user: undefined, tools: 'unset', hugePages: hugePagesOnRequest },
      // the user's own: kept, for the tools too; no huge pages asked for
      { user: 'glibc.malloc.tcache_count=7', tools: 'glibc.malloc.tcache_count=7', hugePages: false },
      // the script's very value, set by the user (as the README says for npx): taken out all the same
      { user: START_MALLOC_TUNABLES, tools: 'unset', hugePages: hugePagesOnRequest },
    ];
    for (const c of cases) {
      const dataDir = await tempDir();
      await writePluginFile(dataDir, 'env.json', { test_groups: [{ code: CODE, descrip: 'Prints its environment' }], plugins: [toolPlugin(CODE, 'TOOL_WAFW00F', ['{target_url}'])] });
      const npm = npmStart(dataDir, { args: ['--no-proxy', '--token', TOKEN, '--workers', '1'], env: { GLIBC_TUNABLES: c.user } });
      try {
        const url = /assessd listening on (http:\/\/\S+) /.exec(await listening(npm))![1]!;
        const server = serverOfNpmStart(npm);
        assert.ok(server, 'the server is in npm start\'s process group');
        if (glibcAsks) {
          const eligible = heapHugePageEligible(server.pid);
          if (eligible !== undefined) assert.equal(eligible, c.hugePages, `user's ${c.user}: the heap's huge pages`);
        }
        const api = { url, headers: { authorization: `Bearer ${TOKEN}` } };
        await configure(api, { TOOL_WAFW00F: printer });
        const id = await addTarget(api, 'http://127.0.0.1:1/');
        assert.equal(await queue(api, { id: String(id), code: CODE }), 1);
        const out = await waitForOutput(api, id, `active@${CODE}`);
        assert.equal(out.status, 'Successful', JSON.stringify(out));
        assert.ok(out.output!.includes(`GLIBC_TUNABLES=[${c.tools}]`), `user's ${c.user}: ${out.output}`);
      } finally {
        try {
          process.kill(-npm.pid!, 'SIGKILL');
        } catch {
          // the group has ended
        }
        await rm(dataDir, { recursive: true, force: true });
      }
    }
  } finally {
    await rm(tools, { recursive: true, force: true });
  }
});
