import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, request as httpRequest } from 'node:http';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { spawnServer, tempDir } from '../helpers/server.ts';

const ROUNDS = 6;
const SESSION_WRITERS = 10;
const CONFIG_KEYS = ['THREADS', 'SMTP_PORT', 'SBD_PORT', 'MSF_LISTENER_PORT', 'RESPONSE_WAIT', 'CONNECT_WAIT'];

function post(agent: Agent, url: string, method: string, path: string, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${url}${path}`, { method, agent, headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-length': Buffer.byteLength(body) } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A small seeded generator, so a failing round can be replayed. */
function random(seed: number): () => number {
  return () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
}

test(`SIGKILL under 16 concurrent writers loses no acknowledged write (${ROUNDS} rounds)`, async () => {
  const seed = Number(process.env.CRASH_SEED ?? Date.now() % 100000);
  const rand = random(seed);
  const dir = await tempDir('assessd-crash-');
  const acknowledgedSessions = new Set<string>();
  const acknowledgedConfig = new Map<string, number>();

  for (let round = 0; round < ROUNDS; round++) {
    // odd rounds compact often, so some kills land mid-compaction
    const server = await spawnServer(['--port', '0', '--data-dir', dir], { ASSESSD_COMPACT_AFTER: round % 2 ? '2048' : '4194304' });
    const agent = new Agent({ keepAlive: true, maxSockets: 16 });
    let killed = false;
    const writer = async (write: (seq: number) => Promise<void>) => {
      for (let seq = 0; !killed; seq++) {
        try {
          await write(seq);
        } catch {
          return; // the connection died with the server
        }
      }
    };
    const writers = [
      ...Array.from({ length: SESSION_WRITERS }, (_, w) =>
        writer(async (seq) => {
          const name = `r${round} w${w} #${seq}`;
          if ((await post(agent, server.url, 'POST', '/api/v1/sessions/', `name=${encodeURIComponent(name)}`)) === 201) acknowledgedSessions.add(name);
        }),
      ),
      ...CONFIG_KEYS.map((key) =>
        writer(async (seq) => {
          const value = round * 1_000_000 + seq;
          if ((await post(agent, server.url, 'PATCH', '/api/v1/configuration/', `${key}=${value}`)) === 200) acknowledgedConfig.set(key, value);
        }),
      ),
    ];
    await new Promise((r) => setTimeout(r, 60 + rand() * 300));
    server.proc.kill('SIGKILL');
    killed = true;
    await server.exited;
    await Promise.all(writers);
    agent.destroy();

    // the files parse (a journal may end in one torn line), and a restart serves every acknowledged write
    for (const file of ['sessions.json', 'configuration.json']) JSON.parse(await readFile(join(dir, file), 'utf8'));
    const journal = (await readFile(join(dir, 'journal.jsonl'), 'utf8')).split('\n');
    journal.slice(0, -1).forEach((line) => JSON.parse(line));
    const check = await spawnServer(['--port', '0', '--data-dir', dir]);
    const names = new Set(((await (await fetch(`${check.url}/api/v1/sessions/`)).json()) as { data: { name: string }[] }).data.map((s) => s.name));
    const items = ((await (await fetch(`${check.url}/api/v1/configuration`)).json()) as { data: { key: string; value: string }[] }).data;
    check.proc.kill('SIGTERM');
    assert.equal(await check.exited, 0);
    const lost = [...acknowledgedSessions].filter((n) => !names.has(n));
    assert.deepEqual(lost, [], `round ${round} (seed ${seed}) lost acknowledged sessions`);
    for (const [key, value] of acknowledgedConfig) {
      const stored = Number(items.find((i) => i.key === key)!.value);
      assert.ok(stored >= value, `round ${round} (seed ${seed}): ${key} is ${stored}, ${value} was acknowledged`);
    }
  }
  assert.ok(acknowledgedSessions.size > ROUNDS, `only ${acknowledgedSessions.size} writes were acknowledged: the test did not load the server`);

  // and the server starts cleanly on what the crashes left
  const last = await spawnServer(['--port', '0', '--data-dir', dir]);
  const res = await fetch(`${last.url}/api/v1/sessions/`);
  const body = (await res.json()) as { data: { name: string; active: boolean }[] };
  last.proc.kill('SIGTERM');
  assert.equal(await last.exited, 0);
  assert.equal(body.data.filter((s) => s.active).length, 1);
  for (const name of acknowledgedSessions) assert.ok(body.data.some((s) => s.name === name), name);
});
