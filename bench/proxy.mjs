// The intercepting proxy under load (npm run bench:proxy), side by side in one run: small requests
// through it against the same client going to the target directly (wrk, 32 connections), the
// latency it adds (1 connection), a new TLS connection's setup through it, and the same clients
// through mitmproxy's mitmdump (Debian's mitmproxy package) for HTTP and HTTPS, and through a ten-line
// node:http proxy (node:http's own floor) for HTTP; a 1 GiB answer
// and the server's RSS; the health probe's worst answer while the proxy runs at full rate.
// Figures, not assertions: the machine is shared. Traffic only to 127.0.0.1.
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { connect, createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as connectTls } from 'node:tls';
import { promisify } from 'node:util';
import { startEnv, startFlags } from './start-flags.mjs';

const run = promisify(execFile);
const quick = process.argv.includes('--quick');
const SECONDS = quick ? 2 : 5;
const ROOT = new URL('..', import.meta.url).pathname;

/** A port nothing listens on now. */
function freePort() {
  return new Promise((resolve) => {
    const server = createNetServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** A child process; resolves once `ready` matches its output (gives up after 30 s: a bench never hangs). */
function launch(command, args, ready, env = {}) {
  const proc = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let output = '';
  return new Promise((resolve, reject) => {
    const late = setTimeout(() => {
      reject(new Error(`${command} did not say it was ready within 30 s: ${output}`));
      proc.kill('SIGKILL');
    }, 30_000);
    const onData = (chunk) => {
      output += chunk;
      const match = ready.exec(output);
      if (!match) return;
      clearTimeout(late);
      resolve({ proc, match, output: () => output });
    };
    proc.stdout.on('data', onData);
    proc.stderr.on('data', onData);
    proc.on('exit', (code) => {
      clearTimeout(late);
      reject(new Error(`${command} exited ${code}: ${output}`));
    });
  });
}

const TARGET = `
import { createServer } from 'node:http';
import { createServer as createHttps } from 'node:https';
import { readFileSync } from 'node:fs';
const big = Buffer.alloc(1024 * 1024, 'b');
const handler = (req, res) => {
  if (req.url.startsWith('/big')) {
    let left = 1024;
    res.writeHead(200, { 'Content-Length': String(1024 * big.length) });
    const pump = () => { while (left > 0) { left--; if (!res.write(big)) return void res.once('drain', pump); } res.end(); };
    return pump();
  }
  res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': '2' });
  res.end('ok');
};
const http = createServer(handler).listen(0, '127.0.0.1', () => {
  const https = createHttps({ key: readFileSync(process.argv[2]), cert: readFileSync(process.argv[3]) }, handler).listen(0, '127.0.0.1', () => {
    console.log('ports', http.address().port, https.address().port);
  });
});
`;

/**
 * node:http's own floor: the least a proxy on node:http does (parse the request, send it on a kept-alive
 * agent, stream the answer back), nothing recorded, nothing checked. assessd's proxy is measured
 * against it too: how much of the gap to direct is node:http's, and how much is assessd's.
 */
const FLOOR = `
import { Agent, createServer, request } from 'node:http';
const agent = new Agent({ keepAlive: true, maxSockets: Infinity });
const server = createServer((req, res) => {
  const url = new URL(req.url);
  const upstream = request({ host: url.hostname, port: url.port, path: url.pathname + url.search, method: req.method, headers: req.headers, agent }, (answer) => {
    res.writeHead(answer.statusCode, answer.rawHeaders);
    answer.pipe(res);
  });
  upstream.on('error', () => res.destroy());
  req.pipe(upstream);
}).listen(0, '127.0.0.1', () => console.log('floor', server.address().port));
`;

async function wrk(url, { connections = 32, path, latency = false } = {}) {
  const args = ['-t1', `-c${connections}`, `-d${SECONDS}s`, ...(latency ? ['--latency'] : [])];
  let script;
  if (path) {
    script = join(tmpdir(), `assessd-bench-proxy-${process.pid}.lua`);
    await writeFile(script, `wrk.path = ${JSON.stringify(path)}\n`);
    args.push('-s', script);
  }
  const { stdout } = await run('wrk', [...args, url]);
  if (script) await rm(script, { force: true });
  const rate = Number(/Requests\/sec:\s+([\d.]+)/.exec(stdout)[1]);
  const p50 = /50%\s+([\d.]+)(us|ms|s)/.exec(stdout);
  const ms = p50 ? Number(p50[1]) * { us: 0.001, ms: 1, s: 1000 }[p50[2]] : undefined;
  const errors = /Non-2xx or 3xx responses: (\d+)/.exec(stdout)?.[1];
  return { rate, p50: ms, errors: Number(errors ?? 0) };
}

/** A CONNECT through `proxyPort` to `host:port`, then TLS: resolves with the secure socket. */
function tunnelTls(proxyPort, port, ca) {
  return new Promise((resolve, reject) => {
    const socket = connect(proxyPort, '127.0.0.1');
    socket.write(`CONNECT localhost:${port} HTTP/1.1\r\nHost: localhost:${port}\r\n\r\n`);
    socket.once('data', (chunk) => {
      if (!/^HTTP\/1\.[01] 200/.test(chunk.toString())) return reject(new Error(chunk.toString()));
      const tls = connectTls({ socket, servername: 'localhost', ca, ALPNProtocols: ['http/1.1'] });
      tls.once('secureConnect', () => resolve(tls));
      tls.once('error', reject);
    });
    socket.once('error', reject);
  });
}

/** One GET on a kept-alive TLS socket: resolves once the 2-byte answer is in. */
function getOn(tls) {
  return new Promise((resolve, reject) => {
    let got = '';
    const onData = (chunk) => {
      got += chunk;
      if (!got.includes('\r\n\r\nok')) return;
      tls.off('data', onData);
      tls.off('error', reject);
      resolve();
    };
    tls.on('data', onData);
    tls.on('error', reject);
    tls.write('GET / HTTP/1.1\r\nHost: localhost\r\n\r\n');
  });
}

/** New TLS connections through a proxy one after another: the median setup (CONNECT to handshake done). */
async function tlsSetup(proxyPort, port, ca, count) {
  const times = [];
  for (let i = 0; i < count + 5; i++) {
    const t0 = performance.now();
    const tls = await tunnelTls(proxyPort, port, ca);
    const setup = performance.now() - t0;
    await getOn(tls);
    tls.destroy();
    if (i >= 5) times.push(setup);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}

/** HTTPS requests through a proxy: 32 kept-alive tunnels, requests one after another on each, for SECONDS. */
async function httpsRate(proxyPort, port, ca) {
  const end = performance.now() + SECONDS * 1000;
  let done = 0;
  await Promise.all(Array.from({ length: 32 }, async () => {
    const tls = await tunnelTls(proxyPort, port, ca);
    while (performance.now() < end) {
      await getOn(tls);
      done++;
    }
    tls.destroy();
  }));
  return done / SECONDS;
}

const rssOf = async (pid) => Number(/VmRSS:\s+(\d+) kB/.exec(await readFile(`/proc/${pid}/status`, 'utf8'))[1]) * 1024;

async function main() {
  const dir = await mkdtemp(join(tmpdir(), 'assessd-bench-proxy-'));
  const key = join(dir, 'key.pem');
  const cert = join(dir, 'cert.pem');
  await run('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', key, '-out', cert, '-subj', '/CN=localhost', '-days', '2', '-addext', 'subjectAltName=DNS:localhost']);
  await writeFile(join(dir, 'target.mjs'), TARGET);
  await writeFile(join(dir, 'floor.mjs'), FLOOR);
  const target = await launch(process.execPath, [join(dir, 'target.mjs'), key, cert], /ports (\d+) (\d+)/);
  const [httpPort, httpsPort] = [Number(target.match[1]), Number(target.match[2])];
  const assessd = await launch(process.execPath, [...startFlags(ROOT), join(ROOT, 'dist', 'assessd.cjs'), '--port', '0', '--data-dir', join(dir, 'data'), '--no-token'], /listening on (http:\/\/\S+) .*proxy on http:\/\/127\.0\.0\.1:(\d+)/, startEnv(ROOT));
  const apiUrl = assessd.match[1];
  const proxyPort = Number(assessd.match[2]);
  const ca = await (await fetch(`${apiUrl}/api/v1/proxy/ca.pem`)).text();
  const rows = [];
  const say = (what, value, goal) => {
    rows.push(`| ${what} | ${value} | ${goal} |`);
    console.log(`${what}: ${value} (${goal})`);
  };
  try {
    const targetUrl = `http://127.0.0.1:${httpPort}/`;
    const direct = await wrk(targetUrl);
    const proxied = await wrk(`http://127.0.0.1:${proxyPort}/`, { path: targetUrl });
    say('Small requests, 32 connections: through the proxy / direct', `${(proxied.rate / direct.rate).toFixed(2)}x (${proxied.rate.toFixed(0)} vs ${direct.rate.toFixed(0)} req/s)`, 'goal >= 0.5x');
    const floor = await launch(process.execPath, [join(dir, 'floor.mjs')], /floor (\d+)/);
    try {
      const viaFloor = await wrk(`http://127.0.0.1:${floor.match[1]}/`, { path: targetUrl });
      say('The same through a ten-line node:http proxy (node:http\'s floor): its rate / direct; the proxy / it', `${(viaFloor.rate / direct.rate).toFixed(2)}x; ${(proxied.rate / viaFloor.rate).toFixed(2)}x (${viaFloor.rate.toFixed(0)} req/s)`, 'context');
    } finally {
      floor.proc.kill('SIGTERM');
    }
    const directOne = await wrk(targetUrl, { connections: 1, latency: true });
    const proxiedOne = await wrk(`http://127.0.0.1:${proxyPort}/`, { connections: 1, latency: true, path: targetUrl });
    say('Added p50 latency, 1 connection', `${(proxiedOne.p50 - directOne.p50).toFixed(3)} ms (${proxiedOne.p50.toFixed(3)} vs ${directOne.p50.toFixed(3)} ms)`, 'goal <= 1 ms');
    const setup = await tlsSetup(proxyPort, httpsPort, ca, quick ? 50 : 200);
    say('A new TLS connection through the proxy, leaf cached: setup p50', `${setup.toFixed(2)} ms`, 'goal <= 10 ms');

    // health while the proxy runs at full rate
    let worst = 0;
    let probing = true;
    const probe = (async () => {
      while (probing) {
        const t0 = performance.now();
        await fetch(`${apiUrl}/debug/health`).then((r) => r.arrayBuffer());
        worst = Math.max(worst, performance.now() - t0);
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    await wrk(`http://127.0.0.1:${proxyPort}/`, { path: targetUrl });
    probing = false;
    await probe;
    say('Health\'s worst answer while the proxy runs at full rate', `${worst.toFixed(1)} ms`, 'goal <= 100 ms');

    // 1 GiB through the proxy: the server's RSS
    const base = await rssOf(assessd.proc.pid);
    let peak = base;
    const sampler = setInterval(async () => (peak = Math.max(peak, await rssOf(assessd.proc.pid))), 20);
    await run('curl', ['-sS', '-x', `http://127.0.0.1:${proxyPort}`, '-o', '/dev/null', `http://127.0.0.1:${httpPort}/big`]);
    clearInterval(sampler);
    say('A 1 GiB answer through the proxy: the server\'s RSS grew', `${((peak - base) / 1048576).toFixed(1)} MB`, 'goal <= 32 MB');

    const httpsOurs = await httpsRate(proxyPort, httpsPort, ca);
    // mitmproxy, the same clients
    // mitmdump says where it listens only when it is not quiet, and not for port 0: a free port is picked here
    const mitm = await launch('mitmdump', ['--listen-host', '127.0.0.1', '--listen-port', String(await freePort()), '--set', `confdir=${join(dir, 'mitm')}`, '--ssl-insecure', '--flow-detail', '0'], /listening at .*:(\d+)/i);
    try {
      const mitmPort = Number(mitm.match[1]);
      const mitmCa = await readFile(join(dir, 'mitm', 'mitmproxy-ca-cert.pem'), 'utf8');
      const viaMitm = await wrk(`http://127.0.0.1:${mitmPort}/`, { path: targetUrl });
      say('HTTP through the proxy / through mitmdump, same client', `${(proxied.rate / viaMitm.rate).toFixed(1)}x (${proxied.rate.toFixed(0)} vs ${viaMitm.rate.toFixed(0)} req/s)`, 'goal >= 5x');
      const httpsMitm = await httpsRate(mitmPort, httpsPort, mitmCa);
      say('HTTPS through the proxy / through mitmdump, same client (32 kept-alive tunnels)', `${(httpsOurs / httpsMitm).toFixed(1)}x (${httpsOurs.toFixed(0)} vs ${httpsMitm.toFixed(0)} req/s)`, 'goal >= 5x');
    } finally {
      mitm.proc.kill('SIGTERM');
    }
  } finally {
    assessd.proc.kill('SIGTERM');
    target.proc.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 200));
    await rm(dir, { recursive: true, force: true });
  }
  console.log(['', '| measure | result | goal |', '|---|---|---|', ...rows, '', `_\`node bench/proxy.mjs${quick ? ' --quick' : ''}\`._`].join('\n'));
}

await main();
