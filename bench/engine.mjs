// The assessment engine at scale (npm run bench:engine): queueing 65,536 works in one request, a
// page of that worklist, RSS per queued work; 1,000 runs of /bin/true with 2 workers and the health
// probe's worst answer meanwhile; a tool printing 1 GiB; the seven built-in checks on a local target
// (http, https, and one that never answers).
// Figures, not assertions: the machine is shared. Traffic only to 127.0.0.1.
import { execFileSync } from 'node:child_process';
import { mkdtemp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { start } from '../dist/index.js';

const quick = process.argv.includes('--quick');
const PLUGINS = quick ? 32 : 256;
const TARGETS = quick ? 32 : 256;
const RUNS = quick ? 100 : 1000;

async function pluginFile(dir, count, program, argv = []) {
  await mkdir(join(dir, 'plugins'), { recursive: true });
  const codes = Array.from({ length: count }, (_, i) => `BENCH-${String(i).padStart(3, '0')}`);
  await writeFile(
    join(dir, 'plugins', 'bench.json'),
    JSON.stringify({
      test_groups: codes.map((code) => ({ code, group: 'network', priority: 1, descrip: `bench ${code}` })),
      plugins: codes.map((code) => ({ code, group: 'network', type: 'active', program, argv })),
    }),
  );
}

async function api(server, path, init = {}) {
  const res = await fetch(server.url + path, { ...init, headers: { authorization: `Bearer ${server.token}`, ...init.headers } });
  return { status: res.status, body: await res.json() };
}

const form = (pairs) => ({ method: 'POST', body: new URLSearchParams(pairs) });
/** The bench's own plugins only (the shipped network probes run nmap). */
const benchCodes = (count) => Array.from({ length: count }, (_, i) => ['code', `BENCH-${String(i).padStart(3, '0')}`]);

async function queueAtScale() {
  const dataDir = await mkdtemp(join(tmpdir(), 'assessd-bench-engine-'));
  await pluginFile(dataDir, PLUGINS, '/bin/true');
  const server = await start({ port: 0, dataDir, workers: 0, log: () => {} });
  try {
    const urls = Array.from({ length: TARGETS }, (_, i) => ['target_url', `http://10.0.${i >> 8}.${i & 255}/`]);
    await api(server, '/api/v1/targets/', form(urls));
    const ids = (await api(server, `/api/v1/targets/?limit=${TARGETS}`)).body.data.map((t) => t.id);
    global.gc?.();
    const before = process.memoryUsage().rss;
    const t0 = performance.now();
    const queued = await api(server, '/api/v1/worklist/', form([['id', ids.join(',')], ...benchCodes(PLUGINS)]));
    const queueMs = performance.now() - t0;
    global.gc?.();
    const perWork = (process.memoryUsage().rss - before) / queued.body.data.queued;
    const pages = [];
    for (let i = 0; i < 20; i++) {
      const p0 = performance.now();
      await api(server, `/api/v1/worklist/search/?limit=50&offset=${i * 1000}`);
      pages.push(performance.now() - p0);
    }
    pages.sort((a, b) => a - b);
    console.log(`queue ${queued.body.data.queued} works (${TARGETS} targets x ${PLUGINS} plugins) in one request: ${queueMs.toFixed(0)} ms to a durable 201 (goal <= 2000)`);
    console.log(`  a page of the worklist (search, limit 50): median ${pages[10].toFixed(1)} ms, worst ${pages.at(-1).toFixed(1)} ms (goal <= 20)`);
    console.log(`  RSS per queued work: ${perWork.toFixed(0)} bytes (goal <= 1024)`);
  } finally {
    await server.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

async function waitIdle(server, timeoutMs) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const { left_count: left } = (await api(server, '/api/v1/plugins/progress')).body.data;
    if (left === 0 || Date.now() > end) return left;
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function runnerOverhead() {
  const dataDir = await mkdtemp(join(tmpdir(), 'assessd-bench-engine-'));
  const perTarget = 250;
  await pluginFile(dataDir, perTarget, '/bin/true');
  const server = await start({ port: 0, dataDir, workers: 2, log: () => {} });
  try {
    const targets = Math.max(1, Math.round(RUNS / perTarget));
    await api(server, '/api/v1/targets/', form(Array.from({ length: targets }, (_, i) => ['target_url', `http://127.0.0.${i + 1}:9/`])));
    const ids = (await api(server, '/api/v1/targets/')).body.data.map((t) => t.id);
    let worst = 0;
    let probing = true;
    const probe = (async () => {
      while (probing) {
        const p0 = performance.now();
        await fetch(server.url + '/debug/health');
        worst = Math.max(worst, performance.now() - p0);
        await new Promise((r) => setTimeout(r, 10));
      }
    })();
    const t0 = performance.now();
    await api(server, '/api/v1/worklist/', form([['id', ids.join(',')], ...benchCodes(perTarget)]));
    const left = await waitIdle(server, 120_000);
    const seconds = (performance.now() - t0) / 1000;
    probing = false;
    await probe;
    const names = await api(server, `/api/v1/targets/${ids[0]}/poutput/names`);
    const ok = Object.values(names.body.data ?? {}).flatMap((g) => g.data).filter((o) => o.status === 'Successful').length;
    console.log(`${RUNS} runs of /bin/true with 2 workers: ${(RUNS / seconds).toFixed(0)} runs/s (goal >= 100), ${left} left, ${ok}/${perTarget} Successful on the first target; health's worst answer meanwhile ${worst.toFixed(1)} ms (goal <= 100)`);
  } finally {
    await server.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

async function loudTool() {
  const dataDir = await mkdtemp(join(tmpdir(), 'assessd-bench-engine-'));
  const mib = quick ? 64 : 1024;
  // head -c N /dev/zero: N bytes as fast as the pipe takes them
  await pluginFile(dataDir, 1, '/usr/bin/head', ['-c', String(mib * 1024 * 1024), '/dev/zero']);
  const server = await start({ port: 0, dataDir, workers: 1, log: () => {} });
  try {
    await api(server, '/api/v1/targets/', form([['target_url', 'http://127.0.0.1:9/']]));
    global.gc?.();
    const before = process.memoryUsage().rss;
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
    const t0 = performance.now();
    await api(server, '/api/v1/worklist/', form([['id', '1'], ...benchCodes(1)]));
    await waitIdle(server, 300_000);
    clearInterval(sampler);
    const [output] = (await api(server, '/api/v1/targets/1/poutput/network/active/BENCH-000')).body.data;
    console.log(`a tool printing ${mib} MiB: ${((performance.now() - t0) / 1000).toFixed(1)} s, RSS grew ${((peak - before) / 2 ** 20).toFixed(1)} MB at its peak (goal <= 32); status ${output.status}, error "${output.error}"`);
  } finally {
    await server.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

/** A key and a self-signed certificate for localhost, made with the openssl command. */
async function selfSigned(dir) {
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'),
    '-subj', '/CN=localhost', '-days', '2', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'], { stdio: 'ignore' });
  return { key: await readFile(join(dir, 'key.pem')), cert: await readFile(join(dir, 'cert.pem')) };
}

/** The seven checks on one target, queued at once with 7 workers: the time from queueing to the last output recorded, and the ranks. */
async function sevenChecks(url, checkTimeout) {
  const dataDir = await mkdtemp(join(tmpdir(), 'assessd-bench-engine-'));
  const server = await start({ port: 0, dataDir, workers: 7, checkTimeout, log: () => {} });
  try {
    await api(server, '/api/v1/targets/', form([['target_url', url]]));
    const t0 = performance.now();
    await api(server, '/api/v1/worklist/', form([['id', '1'], ['type', 'semi_passive']]));
    await waitIdle(server, 60_000);
    const ms = performance.now() - t0;
    const outputs = (await api(server, '/api/v1/targets/1/poutput/web/semi_passive/')).body.data;
    return { ms, ranks: outputs.map((o) => `${o.plugin_code} ${o.status === 'Skipped' ? 'Skipped' : o.owtf_rank}`).join(', ') };
  } finally {
    await server.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

async function builtInChecks() {
  // one handler, over http and https: robots, a versioned banner, TRACE echoed, PUT refused, a cookie, CORS reflected
  const handler = (req, res) => {
    if (req.url === '/robots.txt') return res.writeHead(200, { 'content-type': 'text/plain' }).end('User-agent: *\nDisallow: /admin\n');
    if (req.method === 'TRACE') return res.writeHead(200, { 'content-type': 'message/http' }).end(`TRACE ${req.url} HTTP/1.1\n`);
    if (req.method !== 'GET' && req.method !== 'OPTIONS') return res.writeHead(405, { allow: 'GET, PUT, DELETE' }).end();
    const cors = req.headers.origin ? { 'access-control-allow-origin': req.headers.origin, 'access-control-allow-credentials': 'true' } : {};
    res.writeHead(200, { server: 'Apache/2.4.41', allow: 'GET, PUT, DELETE', 'set-cookie': 'sid=1', 'content-type': 'text/html', ...cors }).end('<html></html>');
  };
  const certDir = await mkdtemp(join(tmpdir(), 'assessd-bench-cert-'));
  const plain = createServer(handler);
  const tls = createHttpsServer(await selfSigned(certDir), handler);
  // accepts and never answers a byte
  const silent = createNetServer(() => {});
  const sockets = new Set();
  silent.on('connection', (s) => sockets.add(s));
  for (const s of [plain, tls, silent]) await new Promise((r) => s.listen(0, '127.0.0.1', r));
  try {
    const http = await sevenChecks(`http://127.0.0.1:${plain.address().port}/`);
    console.log(`the seven built-in checks on a local http target: ${http.ms.toFixed(0)} ms together, queued to recorded (goal <= 1000); ${http.ranks}`);
    // a fresh server: its first tls check builds the trust store (the box's, Node's roots, NODE_EXTRA_CA_CERTS)
    const https = await sevenChecks(`https://localhost:${tls.address().port}/`);
    console.log(`the seven built-in checks on a local https target, the trust store built by the first: ${https.ms.toFixed(0)} ms together (goal <= 1000); ${https.ranks}`);
    const limit = 2;
    const quiet = await sevenChecks(`https://localhost:${silent.address().port}/`, limit);
    console.log(`the seven built-in checks on a target that accepts and never answers, --check-timeout ${limit}: ${quiet.ms.toFixed(0)} ms together (goal <= the limit once, ${limit * 1000} ms, plus the run's own cost); ${quiet.ranks}`);
  } finally {
    for (const s of sockets) s.destroy();
    for (const s of [plain, tls, silent]) s.close();
    await rm(certDir, { recursive: true, force: true });
  }
}

// --checks: the built-in checks alone
if (!process.argv.includes('--checks')) {
  await queueAtScale();
  await runnerOverhead();
  await loudTool();
}
await builtInChecks();
