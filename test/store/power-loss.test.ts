import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { compactSegments, type Compactor } from '../../src/store/compaction.ts';
import type { DefaultItem } from '../../src/store/configuration.ts';
import type { Op } from '../../src/store/ops.ts';
import type { State } from '../../src/store/state.ts';
import { openStore, type Store } from '../../src/store/store.ts';
import { deriveTarget } from '../../src/store/targets.ts';
import { pageCacheDisk, type PowerSwitch } from '../helpers/page-cache-fs.ts';
import { tempDir } from '../helpers/server.ts';

/** Power cuts in all: 600 in npm test, POWER_CUTS=20000 for a longer hunt (npm run test:long), POWER_SEED to replay one run. */
const CUTS = Number(process.env.POWER_CUTS ?? 600);
/** Each data directory lives through this many cuts, its history growing. */
const CUTS_PER_DIR = 25;
const KEYS = ['A', 'B', 'C'];
const DEFAULTS: DefaultItem[] = KEYS.map((key) => ({ key, value: '0', section: 'S', descrip: '' }));
const DEFAULT_SESSION = 1;

/** A small seeded generator, so a failing run can be replayed. */
function random(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 2 ** 32;
  };
}

/** What the store acknowledged, over every boot of one directory. */
interface Acknowledged {
  sessions: Set<string>;
  deleted: Set<string>;
  /** Deletions asked for but never acknowledged: they may have been made durable, or not. */
  mayBeDeleted: Set<string>;
  /** The last value acknowledged per key: values only grow, so a later unacknowledged one may be there instead. */
  config: Map<string, number>;
  targets: Set<string>;
  /** The engine's writes: works queued (`<url> <plugin>`), runs ended, the tester's notes (a growing number). */
  queued: Set<string>;
  ended: Set<string>;
  notes: Map<string, number>;
  /** Acknowledgements in all, for the report. */
  count: number;
}

/** Every acknowledged change is in the state a boot loaded. */
function check(state: State, acked: Acknowledged, what: string): void {
  for (const name of acked.sessions) {
    if (!acked.deleted.has(name) && !acked.mayBeDeleted.has(name)) assert.ok(state.sessionIdByName.has(name), `${what}: the acknowledged session ${name} is lost`);
  }
  for (const name of acked.deleted) assert.ok(!state.sessionIdByName.has(name), `${what}: the acknowledged deletion of ${name} is lost`);
  for (const [key, value] of acked.config) {
    const stored = Number(state.config.get(key)?.value);
    assert.ok(stored >= value, `${what}: ${key} is ${stored}, ${value} was acknowledged`);
  }
  const holder = state.sessions.get(DEFAULT_SESSION)?.targets ?? new Set();
  for (const url of acked.targets) {
    const id = state.targetIdByUrl.get(url);
    assert.ok(id !== undefined && holder.has(id), `${what}: the acknowledged target ${url} is lost`);
  }
  const outputOf = (pair: string) => {
    const [url, plugin] = pair.split(' ');
    const id = state.outputsByTarget.get(state.targetIdByUrl.get(url)!)?.get(plugin);
    return id === undefined ? undefined : state.outputs.get(id);
  };
  for (const pair of acked.queued) {
    const [url, plugin] = pair.split(' ');
    // queued, or taken by a worker since (then it has an output)
    assert.ok(state.queued.has(`${state.targetIdByUrl.get(url)} ${plugin}`) || outputOf(pair), `${what}: the acknowledged work ${pair} is lost`);
  }
  for (const pair of acked.ended) assert.ok(outputOf(pair) && outputOf(pair)!.status !== 'Running', `${what}: the acknowledged end of ${pair} is lost`);
  for (const [pair, notes] of acked.notes) assert.ok(Number(outputOf(pair)?.user_notes) >= notes, `${what}: the acknowledged notes ${notes} on ${pair} are lost`);
}

/** An engine op on the targets the workload made: queue a work, take one and run it to its end, or annotate an output. */
function engineChange(store: Store, rand: () => number, acked: Acknowledged, value: () => number): [Op, () => void] | undefined {
  const state = store.state;
  const pick = rand();
  const urls = [...acked.targets];
  if (pick < 0.4 && urls.length > 0) {
    const url = urls[Math.floor(rand() * urls.length)];
    const plugin = `active@P-${Math.floor(rand() * 4)}`;
    return [{ op: 'queueWorks', targets: [state.targetIdByUrl.get(url)!], plugins: [plugin], force: false }, () => acked.queued.add(`${url} ${plugin}`)];
  }
  if (pick < 0.7) {
    const work = [...state.works.values()].find((w) => w.active);
    if (!work) return undefined;
    return [{ op: 'startRun', work: work.id, plugin: { key: work.plugin, code: work.plugin.split('@')[1], group: 'network', type: 'active' }, outputPath: `${work.target}/network/active/x`, at: 1 }, () => {}];
  }
  const running = [...state.outputs.values()].filter((o) => o.run);
  if (pick < 0.85 && running.length > 0) {
    const o = running[Math.floor(rand() * running.length)];
    const pair = `${state.targets.get(o.target_id)!.target.target_url} ${o.plugin_key}`;
    if (o.run!.pid === null && rand() < 0.5) return [{ op: 'runStarted', output: o.id, pid: 1000 + o.id, pidStart: '42' }, () => {}];
    return [{ op: 'endRun', output: o.id, at: 2, status: 'Successful', owtfRank: 1, findings: [{ rank: 1, title: 't', detail: 'd' }], exitCode: 0, error: null }, () => acked.ended.add(pair)];
  }
  const ended = [...state.outputs.values()].filter((o) => !o.run);
  if (ended.length === 0) return undefined;
  const o = ended[Math.floor(rand() * ended.length)];
  const pair = `${state.targets.get(o.target_id)!.target.target_url} ${o.plugin_key}`;
  const notes = value();
  return [{ op: 'rankOutput', target: o.target_id, key: o.plugin_key, userRank: notes % 6, notes: String(notes) }, () => acked.notes.set(pair, Math.max(acked.notes.get(pair) ?? 0, notes))];
}

/** One boot's writes: random changes, several in flight, until the power goes or `count` are done. */
async function workload(store: Store, power: PowerSwitch, rand: () => number, acked: Acknowledged, tag: string, count: number): Promise<void> {
  const created: string[] = [...acked.sessions].filter((name) => !acked.mayBeDeleted.has(name));
  let n = 0;
  // values only grow, across boots too: configuration values and notes alike
  let value = Math.max(0, ...acked.config.values(), ...acked.notes.values());
  const next = (): [Op, () => void] | undefined => {
    const i = n++;
    const pick = rand();
    if (pick < 0.25) return engineChange(store, rand, acked, () => ++value);
    if (pick < 0.4) {
      const name = `${tag} s${i}`;
      return [{ op: 'createSession', name }, () => (acked.sessions.add(name), created.push(name))];
    }
    if (pick < 0.7) {
      const key = KEYS[Math.floor(rand() * KEYS.length)];
      const v = ++value;
      return [{ op: 'patchConfig', values: [[key, String(v)]] }, () => acked.config.set(key, Math.max(acked.config.get(key) ?? 0, v))];
    }
    if (pick < 0.85) {
      const url = deriveTarget(0, `http://${tag.replace(/\W/g, '')}-${i}.test/`)!.target_url;
      return [{ op: 'addTargetsPartial', session: DEFAULT_SESSION, urls: [url] }, () => acked.targets.add(url)];
    }
    const name = created.splice(Math.floor(rand() * created.length), 1)[0];
    const id = name === undefined ? undefined : store.state.sessionIdByName.get(name);
    if (id === undefined) return undefined;
    acked.mayBeDeleted.add(name);
    return [{ op: 'deleteSession', id }, () => acked.deleted.add(name)];
  };
  const writer = async () => {
    while (!power.dead && n < count) {
      const change = next();
      if (!change) continue;
      const [op, onAck] = change;
      try {
        const result = await store.change(op);
        assert.ok(result.ok, `${op.op} was refused: ${JSON.stringify(result)}`);
        onAck();
        acked.count++;
      } catch (err) {
        if (!power.dead) throw err;
      }
    }
  };
  await Promise.all(Array.from({ length: 1 + Math.floor(rand() * 8) }, writer));
}

test(`${CUTS} power cuts at seeded random points (start-up, group commits, seals, compactions, the engine's runs): every boot starts and keeps every acknowledged change`, { timeout: 600_000 }, async (t) => {
  const seed = Number(process.env.POWER_SEED ?? Date.now() % 1_000_000);
  const rand = random(seed);
  const landed = new Map<string, number>();
  let duringCompaction = 0;
  let acknowledged = 0;
  for (let first = 0; first < CUTS; first += CUTS_PER_DIR) {
    const dir = await tempDir('assessd-power-');
    const acked: Acknowledged = {
      sessions: new Set(), deleted: new Set(), mayBeDeleted: new Set(), config: new Map(), targets: new Set(), queued: new Set(), ended: new Set(), notes: new Map(), count: 0,
    };
    for (let boot = first; boot < Math.min(CUTS, first + CUTS_PER_DIR); boot++) {
      const what = `cut ${boot} (seed ${seed})`;
      let compacting = 0;
      // most cuts within the first forty steps of a boot, some later, some only at the end
      const cutAt = 1 + Math.floor(rand() * (rand() < 0.8 ? 40 : 160));
      const power = pageCacheDisk(dir, { cutAt, random: rand, onCut: () => void (compacting > 0 && duringCompaction++) });
      const compactor: Compactor = async (job) => {
        compacting++;
        try {
          return await compactSegments(job, power.fs);
        } finally {
          compacting--;
        }
      };
      // a journal segment of a few records: seals and compactions all the time
      const compactAfter = [256, 1024, 4096, undefined][Math.floor(rand() * 4)];
      let store: Store | undefined;
      try {
        store = await openStore({ dir, defaults: DEFAULTS, fs: power.fs, compactor, compactAfter });
      } catch (err) {
        if (!power.dead) throw new Error(`${what}: the store did not open: ${(err as Error).message}`);
      }
      if (store) {
        check(store.state, acked, what);
        await workload(store, power, rand, acked, `b${boot}`, 10 + Math.floor(rand() * 60));
        power.cut();
        // a dead machine's process: its writes all fail, and its lock goes with it
        await store.close().catch(() => {});
      }
      await power.settled;
      landed.set(power.cutBefore!, (landed.get(power.cutBefore!) ?? 0) + 1);
    }
    // the last boot of the directory: it must start, with everything
    const store = await openStore({ dir, defaults: DEFAULTS }).catch((err: Error) => assert.fail(`the end of directory ${first / CUTS_PER_DIR} (seed ${seed}): the store did not open: ${err.message}`));
    check(store.state, acked, `the end of directory ${first / CUTS_PER_DIR} (seed ${seed})`);
    await store.close();
    acknowledged += acked.count;
    await rm(dir, { recursive: true, force: true });
  }
  const where = [...landed].sort((a, b) => b[1] - a[1]).map(([step, n]) => `${step} ${n}`).join(', ');
  t.diagnostic(`seed ${seed}: ${CUTS} cuts, before: ${where}; ${duringCompaction} during a compaction; ${acknowledged} changes acknowledged`);
  for (const step of CUTS >= 500 ? ['create', 'write', 'fsync', 'rename', 'fsync dir', 'open', 'fdatasync', 'unlink'] : []) {
    assert.ok((landed.get(step) ?? 0) > 0, `no cut landed before a ${step} (seed ${seed}): ${where}`);
  }
  assert.ok(duringCompaction >= CUTS / 50, `only ${duringCompaction} cuts landed during a compaction (seed ${seed})`);
});
