import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, request as httpRequest } from 'node:http';
import { readdirSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { writeDataDir } from '../../bench/dataset.mjs';
import { spawnServer, tempDir } from '../helpers/server.ts';

const SESSION_WRITERS = 10;
const CONFIG_KEYS = ['THREADS', 'SMTP_PORT', 'SBD_PORT', 'MSF_LISTENER_PORT', 'RESPONSE_WAIT', 'CONNECT_WAIT'];

function post(agent: Agent, url: string, method: string, path: string, body: string, token?: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${url}${path}`, { method, agent, headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-length': Buffer.byteLength(body), authorization: `Bearer ${token}` } }, (res) => {
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

/** What the server acknowledged over all the rounds. */
interface Acknowledged {
  sessions: Set<string>;
  config: Map<string, number>;
}

/**
 * One round: the compiled server under 16 concurrent writers (session creates and configuration
 * patches) until `killWhen` resolves, then SIGKILL.
 */
async function loadAndKill(dir: string, env: NodeJS.ProcessEnv, round: number, acked: Acknowledged, killWhen: () => Promise<void>): Promise<void> {
  const server = await spawnServer(['--port', '0', '--data-dir', dir], env);
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
        if ((await post(agent, server.url, 'POST', '/api/v1/sessions/', `name=${encodeURIComponent(name)}`, server.token)) === 201) acked.sessions.add(name);
      }),
    ),
    ...CONFIG_KEYS.map((key) =>
      writer(async (seq) => {
        const value = round * 1_000_000 + seq;
        if ((await post(agent, server.url, 'PATCH', '/api/v1/configuration/', `${key}=${value}`, server.token)) === 200) acked.config.set(key, value);
      }),
    ),
  ];
  await killWhen();
  server.proc.kill('SIGKILL');
  killed = true;
  await server.exited;
  await Promise.all(writers);
  agent.destroy();
}

/** A restart serves every acknowledged write, and stops cleanly. */
async function checkRestart(dir: string, acked: Acknowledged, what: string): Promise<void> {
  const check = await spawnServer(['--port', '0', '--data-dir', dir]);
  const headers = { authorization: `Bearer ${check.token}` };
  const sessions = ((await (await fetch(`${check.url}/api/v1/sessions/`, { headers })).json()) as { data: { name: string; active: boolean }[] }).data;
  const items = ((await (await fetch(`${check.url}/api/v1/configuration`, { headers })).json()) as { data: { key: string; value: string }[] }).data;
  check.proc.kill('SIGTERM');
  assert.equal(await check.exited, 0);
  const names = new Set(sessions.map((s) => s.name));
  assert.deepEqual([...acked.sessions].filter((n) => !names.has(n)), [], `${what} lost acknowledged sessions`);
  assert.equal(sessions.filter((s) => s.active).length, 1);
  for (const [key, value] of acked.config) {
    const stored = Number(items.find((i) => i.key === key)!.value);
    assert.ok(stored >= value, `${what}: ${key} is ${stored}, ${value} was acknowledged`);
  }
}

/** Kill rounds: 4 of the writers' test, 2 of the compaction test (its three moments in turn); CRASH_ROUNDS=12 for a longer hunt of both (npm run test:long). */
const WRITER_ROUNDS = Number(process.env.CRASH_ROUNDS ?? 4);
const ROUNDS = Number(process.env.CRASH_ROUNDS ?? 2);

const journalSegments = (dir: string) => readdirSync(dir).filter((f) => /^journal(\.\d+)?\.jsonl$/.test(f));

test(`SIGKILL under 16 concurrent writers loses no acknowledged write (${WRITER_ROUNDS} rounds)`, async () => {
  const seed = Number(process.env.CRASH_SEED ?? Date.now() % 100000);
  const rand = random(seed);
  const dir = await tempDir('assessd-crash-');
  const acked: Acknowledged = { sessions: new Set(), config: new Map() };
  for (let round = 0; round < WRITER_ROUNDS; round++) {
    // odd rounds compact often, so some kills land mid-compaction
    const env = { ASSESSD_COMPACT_AFTER: round % 2 ? '2048' : '4194304' };
    // killed at a random moment once a write of this round is acknowledged (on a loaded machine the
    // first can take longer than the random wait: a round with none tests nothing)
    const before = acked.sessions.size;
    await loadAndKill(dir, env, round, acked, async () => {
      for (const deadline = Date.now() + 20_000; acked.sessions.size === before && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 5));
      await new Promise((r) => setTimeout(r, 60 + rand() * 300));
    });
    // the files parse (a segment may end in one torn line)
    for (const file of ['sessions.json', 'configuration.json']) JSON.parse(await readFile(join(dir, file), 'utf8'));
    for (const file of journalSegments(dir)) (await readFile(join(dir, file), 'utf8')).split('\n').slice(0, -1).forEach((line) => JSON.parse(line));
    await checkRestart(dir, acked, `round ${round} (seed ${seed})`);
  }
  assert.ok(acked.sessions.size > WRITER_ROUNDS, `only ${acked.sessions.size} writes were acknowledged: the test did not load the server`);
});

test(`SIGKILL during compactions of a 100,000-session store loses no acknowledged write (${ROUNDS} rounds)`, async (t) => {
  const seed = Number(process.env.CRASH_SEED ?? Date.now() % 100000);
  const rand = random(seed);
  const dir = await tempDir('assessd-crash-big-');
  writeDataDir(dir, { sessions: 100_000 });
  const acked: Acknowledged = { sessions: new Set(), config: new Map() };
  // a 64 KiB segment fills in a fraction of a second: one compaction follows another
  const env = { ASSESSD_COMPACT_AFTER: '65536' };
  const writingSessions = (names: string[]) => names.some((name) => name.startsWith('.sessions.json.tmp-'));
  const kills = { midCompaction: [] as string[], midWrite: 0 };
  for (let round = 0; round < ROUNDS; round++) {
    // Kill while the worker writes the sessions snapshot (its temp file is there), while it folds
    // (a sealed segment, no temp file), or at a random moment.
    const phase = (['writing', 'folding', 'random'] as const)[round % 3];
    const due = (names: string[]) => (phase === 'writing' ? writingSessions(names) : journalSegments(dir).length > 1 && !names.some((n) => n.includes('.tmp-')));
    await loadAndKill(dir, env, round, acked, async () => {
      if (phase === 'random') return new Promise((r) => setTimeout(r, 500 + rand() * 2500));
      // a loaded machine (other test files, browsers) takes its time to reach the moment aimed at
      for (const start = Date.now(); Date.now() - start < 30_000 && !due(readdirSync(dir)); ) await new Promise((r) => setImmediate(r));
    });
    // what the kill cut short: a compaction leaves its sealed segments until the snapshots hold them
    const left = readdirSync(dir);
    if (writingSessions(left)) kills.midWrite++;
    if (journalSegments(dir).length > 1) kills.midCompaction.push(`round ${round} (${phase}): ${left.filter((n) => n.startsWith('journal') || n.includes('.tmp-')).join(', ')}`);
    await checkRestart(dir, acked, `round ${round} (${phase}, seed ${seed})`);
  }
  t.diagnostic(`kills mid-compaction: ${kills.midCompaction.length} of ${ROUNDS}, ${kills.midWrite} of them while the sessions snapshot was being written; ${kills.midCompaction.join('; ')}`);

  // what the kills left is folded by the next compaction that goes through, and nothing is lost
  const leftovers = journalSegments(dir);
  const folded = () => !journalSegments(dir).some((name) => leftovers.includes(name));
  await loadAndKill(dir, env, ROUNDS, acked, async () => {
    for (const start = Date.now(); Date.now() - start < 30_000 && !folded(); ) await new Promise((r) => setTimeout(r, 20));
  });
  assert.ok(folded(), `the segments left by the kills (${leftovers.join(', ')}) were never folded`);
  await checkRestart(dir, acked, 'after a compaction went through');
  // the writing and folding rounds aim at a compaction; a random one may land between two
  assert.ok(kills.midCompaction.length >= Math.ceil((2 * ROUNDS) / 3), `only ${kills.midCompaction.length} kills landed mid-compaction`);
  assert.ok(kills.midWrite >= 1, 'no kill landed while the worker wrote the sessions snapshot');
  assert.ok(acked.sessions.size > 100, `only ${acked.sessions.size} writes were acknowledged`);
  // kept when a check fails, to look at; 100,000 sessions are not left behind otherwise
  await rm(dir, { recursive: true, force: true });
});
