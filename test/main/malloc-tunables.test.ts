/**
 * `npm start` sets glibc's allocator (GLIBC_TUNABLES, src/malloc-tunables.ts) for the server alone:
 * the shell gives it to the server unless the user has one, the server's heap is then eligible for
 * transparent huge pages, and the programs the server runs get the user's environment back.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { START_MALLOC_TUNABLES } from '../../src/malloc-tunables.ts';
import { PROJECT_ROOT } from '../../src/paths.ts';
import { addTarget, configure, queue, script, scriptDir, toolPlugin, waitForOutput, writePluginFile } from '../helpers/engine.ts';
import { startEnv } from '../../bench/start-flags.mjs';
import { spawnServer, tempDir, type ChildServer } from '../helpers/server.ts';

const START_SCRIPT: string = JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')).scripts.start;
const TOKEN = 'malloc-tunables-test-token-0123456789abcdef';
const CODE = 'USR-ENV-001';
const { GLIBC_TUNABLES: _, ...WITHOUT } = process.env;

/** What the start script's shell gives the program it runs as GLIBC_TUNABLES, in `env`. */
function startScriptGives(env: NodeJS.ProcessEnv): string {
  // the script as npm runs it (sh -c), with the program it runs printing the variable instead
  const printing = START_SCRIPT.replace(/exec node .*$/, 'exec printenv GLIBC_TUNABLES');
  assert.notEqual(printing, START_SCRIPT, `the start script runs node with exec: ${START_SCRIPT}`);
  return execFileSync('sh', ['-c', printing], { env, encoding: 'utf8' }).trim();
}

test('npm start gives the server the allocator setting, and keeps a GLIBC_TUNABLES the user set', () => {
  assert.equal(startScriptGives(WITHOUT), START_MALLOC_TUNABLES);
  assert.equal(startScriptGives({ ...WITHOUT, GLIBC_TUNABLES: 'glibc.malloc.tcache_count=7' }), 'glibc.malloc.tcache_count=7');
  // the test helpers and the bench spawn servers as npm start does
  assert.equal(startEnv(PROJECT_ROOT, WITHOUT).GLIBC_TUNABLES, START_MALLOC_TUNABLES);
  assert.equal(startEnv(PROJECT_ROOT, { ...WITHOUT, GLIBC_TUNABLES: 'glibc.malloc.tcache_count=7' }).GLIBC_TUNABLES, 'glibc.malloc.tcache_count=7');
});

/** The `[heap]` mapping's THPeligible of a process (whether the kernel may back it with huge pages). */
function heapHugePageEligible(pid: number): boolean {
  const smaps = readFileSync(`/proc/${pid}/smaps`, 'utf8');
  const heap = /^[0-9a-f]+-[0-9a-f]+ .*\[heap\]\n((?:[A-Za-z_]+:.*\n)+)/m.exec(smaps);
  assert.ok(heap, 'the process has a [heap] mapping');
  return /^THPeligible:\s+1$/m.test(heap[1]!);
}

const THP_FILE = '/sys/kernel/mm/transparent_hugepage/enabled';
const thpMode = existsSync(THP_FILE) ? /\[(\w+)\]/.exec(readFileSync(THP_FILE, 'utf8'))?.[1] : undefined;

test('with the setting, glibc asks for huge pages for its heap (a plain node does not, where the kernel gives them on request only)', { skip: thpMode === 'madvise' ? false : `transparent huge pages: ${thpMode ?? 'absent'}, not on request` }, async () => {
  const dirs = [await tempDir(), await tempDir()];
  const servers: ChildServer[] = [];
  try {
    servers.push(await spawnServer(['--port', '0', '--no-proxy', '--data-dir', dirs[0]!], { GLIBC_TUNABLES: START_MALLOC_TUNABLES }));
    servers.push(await spawnServer(['--port', '0', '--no-proxy', '--data-dir', dirs[1]!], { GLIBC_TUNABLES: undefined }));
    assert.equal(heapHugePageEligible(servers[0]!.proc.pid!), true);
    assert.equal(heapHugePageEligible(servers[1]!.proc.pid!), false);
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
