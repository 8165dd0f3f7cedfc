import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { readStored } from '../../src/evidence/read.ts';
import type { Exchange } from '../../src/evidence/record.ts';
import { SEGMENT_DIR, segmentFileName } from '../../src/evidence/segment.ts';
import { openEvidence, type Evidence } from '../../src/evidence/store.ts';
import { compactSegments, type Compactor } from '../../src/store/compaction.ts';
import type { DefaultItem } from '../../src/store/configuration.ts';
import type { Op } from '../../src/store/ops.ts';
import type { State } from '../../src/store/state.ts';
import { openStore, type Store } from '../../src/store/store.ts';
import { deriveTarget } from '../../src/store/targets.ts';
import { pageCacheDisk, type PowerSwitch } from '../helpers/page-cache-fs.ts';
import { tempDir } from '../helpers/server.ts';

/** Power cuts in all: 150 in npm test, POWER_CUTS=20000 for a longer hunt (npm run test:long), POWER_SEED to replay one run. */
const CUTS = Number(process.env.POWER_CUTS ?? 150);
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

/** Power cuts in the transactions test: 60 in npm test, TX_POWER_CUTS=4000 for a longer hunt (npm run test:long; POWER_SEED replays one run). */
const TX_CUTS = Number(process.env.TX_POWER_CUTS ?? 60);

/** What the transactions' workload was told, over every boot of one directory. */
interface TxAcknowledged {
  /** Imports by tag: their target's URL and how many transactions each holds. */
  imports: Map<string, { target: string; count: number }>;
  /** Imports asked for, acknowledged or not: each may be there whole, or not at all. */
  tried: Map<string, { target: string; count: number }>;
  deleted: Set<string>;
  mayBeDeleted: Set<string>;
  deletedTargets: Set<string>;
  mayBeDeletedTargets: Set<string>;
  count: number;
}

function exchangeOf(url: string, size: number): Exchange {
  return {
    url, method: 'POST', httpVersion: 'HTTP/1.1', requestHeaders: [['Content-Type', 'text/plain']], requestBody: Buffer.from(`body of ${url}`),
    status: 200, statusText: 'OK', responseHttpVersion: 'HTTP/1.1', responseHeaders: [['Content-Type', 'text/plain']],
    responseBody: Buffer.alloc(size, url.length % 26 + 97), responseSize: size, truncated: false, mimeType: 'text/plain', startedAt: 1_700_000_000_000, time: 5, source: 'har',
  };
}

/** Every import is there whole (but for its deleted transactions) or not at all; every acknowledged one is there; every record reads back. */
async function checkTransactions(store: Store, evidence: Evidence, acked: TxAcknowledged, what: string): Promise<void> {
  const state = store.state;
  const present = new Map<string, Set<string>>();
  for (const [url, targetId] of state.targetIdByUrl.entries()) {
    const loaded = await evidence.load(targetId);
    for (let row = 0; row < loaded.index.n; row++) {
      const stored = await readStored(evidence, loaded, targetId, loaded.index.ids[row]);
      if (!stored) continue;
      const txUrl = stored.record.exchange.url;
      assert.ok(txUrl.startsWith(url), `${what}: ${txUrl} is under target ${url}`);
      assert.equal(stored.record.exchange.responseBody.length, stored.record.exchange.responseSize, `${what}: ${txUrl} reads back whole`);
      const tag = new URL(txUrl).pathname.split('/')[1];
      if (!present.has(tag)) present.set(tag, new Set());
      present.get(tag)!.add(txUrl);
    }
  }
  for (const [tag, urls] of present) {
    const tried = acked.tried.get(tag);
    assert.ok(tried, `${what}: transactions of an import never asked for (${tag})`);
    for (let i = 0; i < tried.count; i++) {
      const url = `${tried.target}${tag}/${i}`;
      if (!urls.has(url)) assert.ok(acked.deleted.has(url) || acked.mayBeDeleted.has(url), `${what}: import ${tag} is there in part: ${url} is missing`);
    }
  }
  for (const [tag, { target, count }] of acked.imports) {
    if (acked.deletedTargets.has(target) || acked.mayBeDeletedTargets.has(target)) continue;
    for (let i = 0; i < count; i++) {
      const url = `${target}${tag}/${i}`;
      if (!acked.deleted.has(url) && !acked.mayBeDeleted.has(url)) assert.ok(present.get(tag)?.has(url), `${what}: the acknowledged ${url} is lost`);
    }
  }
  for (const url of acked.deleted) assert.ok(![...present.values()].some((urls) => urls.has(url)), `${what}: the acknowledged deletion of ${url} is lost`);
}

/** One boot's transaction work: targets, imports, deletions, rewrites and forgetting, several at once, until the power goes. */
async function txWorkload(store: Store, evidence: Evidence, power: PowerSwitch, rand: () => number, acked: TxAcknowledged, tag: string, count: number): Promise<void> {
  let n = 0;
  const targets = () => [...store.state.targetIdByUrl.entries()];
  const writer = async () => {
    while (!power.dead && n < count) {
      const i = n++;
      const pick = rand();
      try {
        if (pick < 0.15 || targets().length === 0) {
          const url = `https://${tag}-${i}.test/`;
          await store.change({ op: 'addTargetsPartial', session: DEFAULT_SESSION, urls: [url] });
        } else if (pick < 0.6) {
          const [url, id] = targets()[Math.floor(rand() * targets().length)];
          const name = `${tag}i${i}`;
          const size = 1 + Math.floor(rand() * 6);
          acked.tried.set(name, { target: url, count: size });
          const sizes = Array.from({ length: size }, () => Math.floor(rand() * 3000));
          async function* exchanges() {
            for (let k = 0; k < size; k++) yield exchangeOf(`${url}${name}/${k}`, sizes[k]);
          }
          const result = await evidence.importExchanges(id, exchanges());
          if (result.ok) acked.imports.set(name, { target: url, count: size });
        } else if (pick < 0.8) {
          const [url, id] = targets()[Math.floor(rand() * targets().length)];
          const loaded = await evidence.load(id);
          if (loaded.index.live === 0) continue;
          const row = Math.floor(rand() * loaded.index.n);
          const stored = await readStored(evidence, loaded, id, loaded.index.ids[row]);
          if (!stored) continue;
          const txUrl = stored.record.exchange.url;
          acked.mayBeDeleted.add(txUrl);
          if (await evidence.deleteTransaction(id, loaded.index.ids[row])) acked.deleted.add(txUrl);
          void url;
        } else if (pick < 0.88) {
          const [url, id] = targets()[Math.floor(rand() * targets().length)];
          acked.mayBeDeletedTargets.add(url);
          if ((await store.change({ op: 'deleteTarget', id })).ok) acked.deletedTargets.add(url);
        } else {
          await evidence.maintain();
        }
        acked.count++;
      } catch (err) {
        if (!power.dead) throw err;
      }
    }
  };
  await Promise.all(Array.from({ length: 1 + Math.floor(rand() * 4) }, writer));
}

test(`${TX_CUTS} power cuts during transaction imports, deletions, segment rewrites and the forgetting of files: every import all or nothing, every acknowledged one kept`, { timeout: 600_000 }, async (t) => {
  const seed = Number(process.env.POWER_SEED ?? Date.now() % 1_000_000);
  const rand = random(seed);
  const landed = new Map<string, number>();
  let acknowledged = 0;
  for (let first = 0; first < TX_CUTS; first += CUTS_PER_DIR) {
    const dir = await tempDir('assessd-power-tx-');
    const acked: TxAcknowledged = { imports: new Map(), tried: new Map(), deleted: new Set(), mayBeDeleted: new Set(), deletedTargets: new Set(), mayBeDeletedTargets: new Set(), count: 0 };
    for (let boot = first; boot < Math.min(TX_CUTS, first + CUTS_PER_DIR); boot++) {
      const what = `cut ${boot} (seed ${seed})`;
      const cutAt = 1 + Math.floor(rand() * (rand() < 0.7 ? 60 : 240));
      const power = pageCacheDisk(dir, { cutAt, random: rand });
      const compactor: Compactor = (job) => compactSegments(job, power.fs);
      let store: Store | undefined;
      let evidence: Evidence | undefined;
      try {
        store = await openStore({ dir, defaults: DEFAULTS, fs: power.fs, compactor, compactAfter: [512, 4096, undefined][Math.floor(rand() * 3)] });
        evidence = await openEvidence({ dataDir: dir, store, fs: power.fs, maintenanceEvery: 3_600_000 });
      } catch (err) {
        if (!power.dead) throw new Error(`${what}: the store did not open: ${(err as Error).stack}`);
      }
      if (store && evidence) {
        if (!power.dead) await checkTransactions(store, evidence, acked, what).catch((err) => {
          if (!power.dead) throw err;
        });
        await txWorkload(store, evidence, power, rand, acked, `b${boot}`, 10 + Math.floor(rand() * 30));
        power.cut();
      }
      power.cut();
      await evidence?.close().catch(() => {});
      await store?.close().catch(() => {});
      await power.settled;
      landed.set(power.cutBefore!, (landed.get(power.cutBefore!) ?? 0) + 1);
    }
    const store = await openStore({ dir, defaults: DEFAULTS });
    const evidence = await openEvidence({ dataDir: dir, store, maintenanceEvery: 3_600_000 }).catch((err: Error) => assert.fail(`the end of directory ${first / CUTS_PER_DIR} (seed ${seed}): ${err.message}`));
    await checkTransactions(store, evidence, acked, `the end of directory ${first / CUTS_PER_DIR} (seed ${seed})`);
    // nothing on disk that no op names
    const named = new Set([...store.state.segments.keys(), ...store.state.retiredSegments].map(segmentFileName));
    const files = existsSync(join(dir, SEGMENT_DIR)) ? readdirSync(join(dir, SEGMENT_DIR)) : [];
    assert.deepEqual(files.filter((f) => !named.has(f)), [], `seed ${seed}: files left that no op names`);
    await evidence.close();
    await store.close();
    acknowledged += acked.count;
    await rm(dir, { recursive: true, force: true });
  }
  const where = [...landed].sort((a, b) => b[1] - a[1]).map(([step, n]) => `${step} ${n}`).join(', ');
  t.diagnostic(`seed ${seed}: ${TX_CUTS} cuts, before: ${where}; ${acknowledged} changes acknowledged`);
  for (const step of TX_CUTS >= 400 ? ['create', 'write', 'fsync', 'fsync dir', 'unlink', 'fdatasync'] : []) {
    assert.ok((landed.get(step) ?? 0) > 0, `no cut landed before a ${step} (seed ${seed}): ${where}`);
  }
});
