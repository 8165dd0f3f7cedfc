#!/usr/bin/env node
// @ts-check
/**
 * Power cuts on a real FUSE file system that forgets what was not fsynced: LazyFS
 * (https://github.com/dsrhaslab/lazyfs). Not part of `npm test` (it needs FUSE and a LazyFS build).
 * Mount LazyFS first, with a faults FIFO in its config (`[faults] fifo_path="/tmp/lazyfs.fifo"`):
 *
 *   mkfifo /tmp/lazyfs.fifo
 *   lazyfs /mnt/lazy --config-path lazyfs.toml -o allow_other -o modules=subdir -o subdir=/var/lazy-root -f &
 *   node bench/lazyfs-power-cut.mjs --mnt /mnt/lazy --fifo /tmp/lazyfs.fifo [--rounds 8] [--seed N]
 *
 * Each round: `npm start` on MNT/assessd-power-cut (half the rounds compacting every 2 KiB of
 * journal), 16 writers creating sessions, one adding targets to the default session, one patching
 * the configuration; after a random 0.5-2.5 s, SIGKILL of the whole group, then
 * `lazyfs::clear-cache` (every write not fsynced is gone), then a restart that must start and
 * hold every acknowledged change. LazyFS has no socket files (bind: ENOSYS), so this also runs the
 * lock's abstract-socket fallback. Exits 1 on the first loss.
 */
import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values: flags } = parseArgs({
  options: { mnt: { type: 'string' }, fifo: { type: 'string' }, rounds: { type: 'string', default: '8' }, seed: { type: 'string' } },
});
if (!flags.mnt || !flags.fifo) {
  console.error('usage: node bench/lazyfs-power-cut.mjs --mnt DIR --fifo FAULTS_FIFO [--rounds N] [--seed N]');
  process.exit(2);
}
const dir = join(flags.mnt, 'assessd-power-cut');
const configKey = JSON.parse(readFileSync(join(ROOT, 'data', 'default-configuration.json'), 'utf8')).items[0].key;
let seed = Number(flags.seed ?? Date.now() % 1_000_000);
const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
console.log(`seed ${seed}`);

/** @param {string} url @param {string} method @param {string} path @param {string} [body] @param {Agent} [agent] */
function call(url, method, path, body, agent) {
  return new Promise((res, rej) => {
    const headers = body === undefined ? {} : { 'content-type': 'application/x-www-form-urlencoded', 'content-length': Buffer.byteLength(body) };
    const req = request(`${url}${path}`, { method, agent, headers }, (r) => {
      let text = '';
      r.setEncoding('utf8');
      r.on('data', (d) => (text += d));
      r.on('end', () => res({ status: r.statusCode ?? 0, text }));
      r.on('error', rej);
    });
    req.on('error', rej);
    req.end(body);
  });
}

/** `npm start` in its own process group; resolves with its URL once listening. */
function start(env) {
  const proc = spawn('npm', ['start', '--', '--port', '0', '--data-dir', dir], { cwd: ROOT, detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let output = '';
  const exited = new Promise((r) => proc.on('exit', r));
  const url = new Promise((res, rej) => {
    proc.stdout.on('data', (d) => {
      output += d;
      const m = /assessd listening on (http:\/\/\S+) /.exec(output);
      if (m) res(m[1]);
    });
    proc.stderr.on('data', (d) => (output += d));
    void exited.then(() => rej(new Error(`npm start exited before listening:\n${output}`)));
  });
  return { proc, url, exited, output: () => output };
}

/** Drops every write LazyFS holds unsynced (it does so as it reads the command; a second to be sure). */
async function powerCut() {
  const fd = openSync(/** @type {string} */ (flags.fifo), 'w');
  writeFileSync(fd, 'lazyfs::clear-cache\n');
  closeSync(fd);
  await sleep(1000);
}

const acked = { sessions: new Set(), targets: new Set(), config: 0 };
let total = 0;
rmSync(dir, { recursive: true, force: true });
mkdirSync(dir);
for (let round = 0; round < Number(flags.rounds); round++) {
  const env = round % 2 ? { ASSESSD_COMPACT_AFTER: '2048' } : {};
  const run = start(env);
  const url = await run.url;
  await check(url, `round ${round}, at its start`);
  const agent = new Agent({ keepAlive: true, maxSockets: 18 });
  let stop = false;
  const writer = async (/** @type {(n: number) => Promise<void>} */ write) => {
    for (let n = 0; !stop; n++) await write(n).catch(() => (stop = true));
  };
  const writers = [
    ...Array.from({ length: 16 }, (_, w) =>
      writer(async (n) => {
        const name = `r${round} w${w} #${n}`;
        if ((await call(url, 'POST', '/api/v1/sessions/', `name=${encodeURIComponent(name)}`, agent)).status === 201) acked.sessions.add(name);
      }),
    ),
    writer(async (n) => {
      const target = `http://r${round}-t${n}.test/`;
      if ((await call(url, 'POST', '/api/v1/targets/bulk', `action=add&session_id=1&target_url=${encodeURIComponent(target)}`, agent)).status === 200) acked.targets.add(target);
    }),
    writer(async (n) => {
      const value = round * 1_000_000 + n;
      if ((await call(url, 'PATCH', '/api/v1/configuration/', `${encodeURIComponent(configKey)}=${value}`, agent)).status === 200) acked.config = value;
    }),
  ];
  await sleep(500 + rand() * 2000);
  process.kill(-(/** @type {number} */ (run.proc.pid)), 'SIGKILL');
  stop = true;
  await run.exited;
  await Promise.all(writers);
  agent.destroy();
  await powerCut();
  total = acked.sessions.size + acked.targets.size;
  console.log(`round ${round}${round % 2 ? ' (compacting every 2 KiB)' : ''}: killed, cache cleared; ${acked.sessions.size} sessions, ${acked.targets.size} targets, configuration ${acked.config} acknowledged so far`);
}
const last = start({});
await check(await last.url, 'the last start');
process.kill(-(/** @type {number} */ (last.proc.pid)), 'SIGTERM');
await last.exited;
console.log(`no loss over ${flags.rounds} power cuts (${total} acknowledged creates, seed ${flags.seed ?? 'above'}); the lock fell back to an abstract socket: ${/abstract socket/.test(last.output())}`);

/** Every acknowledged change is served; exits 1 naming what is lost. */
async function check(/** @type {string} */ url, /** @type {string} */ what) {
  const sessions = new Set(JSON.parse((await call(url, 'GET', '/api/v1/sessions/')).text).data.map((/** @type {{name: string}} */ s) => s.name));
  const targets = new Set(JSON.parse((await call(url, 'GET', '/api/v1/targets/?session_id=1&limit=1000000')).text).data.map((/** @type {{target_url: string}} */ t) => t.target_url));
  const item = JSON.parse((await call(url, 'GET', '/api/v1/configuration')).text).data.find((/** @type {{key: string}} */ i) => i.key === configKey);
  const lost = [
    ...[...acked.sessions].filter((n) => !sessions.has(n)).map((n) => `session ${n}`),
    ...[...acked.targets].filter((t) => !targets.has(t)).map((t) => `target ${t}`),
    ...(acked.config && !(Number(item?.value) >= acked.config) ? [`configuration ${acked.config} (now ${item?.value})`] : []),
  ];
  if (lost.length > 0) {
    console.error(`${what}: LOST ${lost.length} acknowledged changes: ${lost.slice(0, 10).join(', ')}`);
    process.exit(1);
  }
}
