/**
 * The target is the adversary, and so is every byte a tool writes about it. The server runs as
 * `npm start` runs it (the compiled build, its node flags), its built-in checks pointed at hostile
 * targets and its nmap parser fed crafted files by a stand-in tool. Throughout, its event loop must
 * never stall past STALL_MS (its own monitorEventLoopDelay, /debug/stats), health must answer
 * within HEALTH_MS, its RSS must stay under a stated bound, every run must end saying what
 * happened, and a restart must find nothing to crash on.
 *
 * Sizes: the checks' bodies at their cap (1 MiB); tool files at 1 MiB here (the reported 2 MB one too), at the 32 MiB read cap
 * with HOSTILE_FULL=1 (npm run test:hostile-full). npm run test:hostile runs this file alone, where
 * the bounds seen from outside are strict too.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { gzipSync } from 'node:zlib';
import {
  addTargets,
  alive,
  configure,
  get,
  outputs,
  queue,
  script,
  scriptDir,
  send,
  toolPlugin,
  waitFor,
  waitForOutput,
  waitForProgram,
  workers,
  writePluginFile,
  type Api,
  type Output,
} from '../helpers/engine.ts';
import {
  always,
  bigCertificate,
  endlessChunked,
  hugeBody,
  response,
  serveHostile,
  serveHostileTls,
  trickle,
  type HostileTarget,
} from '../helpers/hostile-target.ts';
import { spawnServer, tempDir, type ChildServer } from '../helpers/server.ts';

const FULL = process.env.HOSTILE_FULL === '1';
/** This file runs alone (npm run test:hostile, test:hostile-full): no other test file competes for the cores. */
const ALONE = FULL || process.env.HOSTILE_ALONE === '1';
const MiB = 1024 * 1024;
/** The checks read at most this much of a body. */
const BODY_CAP = MiB;
/** Tool files: the parser reads at most 32 MiB. */
const TOOL_BYTES = FULL ? 32 * MiB : MiB;
/**
 * The server's event loop never stalls longer, measured inside it (/debug/stats): monitorEventLoopDelay's
 * worst delay counts time the server waited for a core too, which a machine of two cores running other
 * test files gives now and then; `maxBusyMs` is that delay bounded by the CPU the server used meanwhile,
 * so a stall of its own always shows there. Both are logged; the bounds hold the second (HELD_MS),
 * and the first when this file runs alone (ALONE).
 */
const STALL_MS = 100;
/**
 * Health, as a prober outside sees it: within STALL_MS when this file runs alone (npm run
 * test:hostile); npm test runs other files beside it on a machine of two cores, where the prober
 * and the server wait for a core now and then (1,046 ms was seen with four files at once), so there
 * the bound only catches a freeze (a stall of the server's own is held to HELD_MS, from inside).
 */
const HEALTH_MS = ALONE ? STALL_MS : 2000;
/**
 * The CPU the server's own main thread spent in its worst late tick: STALL_MS alone; beside other
 * files it measured 40-120 ms in npm test runs (the nmap case, at 180 MiB of RSS: likely the
 * collector, whose helper thread then gets less of a core; not shown), so there the bound is
 * 250 ms: the freezes it guards against took seconds (16 s for a 256 KB page, 4 min 43 s for 1 MB).
 */
const HELD_MS = ALONE ? STALL_MS : 250;
/** The server's resident memory never passes this, whatever it reads. */
const RSS_BOUND = (FULL ? 640 : 320) * MiB;

const NMAP = 'USR-HOSTILE-001';
const SLEEPER = 'USR-HOSTILE-002';
const SLEEPER_KEY = `active@${SLEEPER}`;
const CHECK_CODES = {
  robots: 'OWTF-IG-001',
  banners: 'OWTF-IG-004',
  tls: 'OWTF-CM-001',
  methods: 'OWTF-CM-008',
  cookies: 'OWTF-SM-002',
  framing: 'OWTF-WGP-001',
  cors: 'OWTF-WGP-002',
};

/** What the server did while a case ran: its health probes' worst answer, its event loop, its memory. */
class Watch {
  worstHealthMs = 0;
  maxRss = 0;
  #stop = false;
  #done: Promise<void>;
  constructor(readonly api: Api, readonly pid: number) {
    this.#done = this.#probe();
  }
  async #probe(): Promise<void> {
    while (!this.#stop) {
      const started = performance.now();
      const res = await send(this.api, 'GET', '/debug/health');
      assert.equal(res.status, 200);
      this.worstHealthMs = Math.max(this.worstHealthMs, performance.now() - started);
      const status = await readFile(`/proc/${this.pid}/status`, 'utf8').catch(() => '');
      const rss = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
      this.maxRss = Math.max(this.maxRss, rss);
      await delay(20);
    }
  }
  /** Stops probing; answers what was seen, the event loop's worst delay included. */
  async end(): Promise<{ worstHealthMs: number; maxRss: number; eventLoopMaxMs: number; eventLoopBusyMs: number }> {
    this.#stop = true;
    await this.#done;
    const stats = await get(this.api, '/debug/stats');
    return { worstHealthMs: Math.round(this.worstHealthMs), maxRss: this.maxRss, eventLoopMaxMs: stats.eventLoop.maxMs, eventLoopBusyMs: stats.eventLoop.maxBusyMs };
  }
}

let server: ChildServer;
let api: Api;
let dataDir: string;
let tools: string;
let cases: string;
const targets: HostileTarget[] = [];

async function startAssessd(): Promise<void> {
  server = await spawnServer(['--port', '0', '--data-dir', dataDir, '--workers', '3', '--check-timeout', '2', '--run-timeout', '120']);
  api = { url: server.url };
}

/** Watches the server while `work` runs, then holds it to the bounds. */
async function withinBounds(what: string, work: () => Promise<void>): Promise<void> {
  await get(api, '/debug/stats?reset=true');
  const watch = new Watch(api, server.proc.pid!);
  try {
    await work();
  } finally {
    const seen = await watch.end();
    assert.ok(seen.eventLoopBusyMs < HELD_MS, `${what}: the event loop was held ${seen.eventLoopBusyMs} ms`);
    if (ALONE) assert.ok(seen.eventLoopMaxMs < STALL_MS, `${what}: the event loop stalled ${seen.eventLoopMaxMs} ms`);
    assert.ok(seen.worstHealthMs < HEALTH_MS, `${what}: health took ${seen.worstHealthMs} ms`);
    console.log(`# ${what}: event loop worst delay ${seen.eventLoopMaxMs} ms (held ${seen.eventLoopBusyMs} ms), health worst ${seen.worstHealthMs} ms, RSS at most ${Math.round(seen.maxRss / MiB)} MiB`);
    assert.ok(seen.maxRss < RSS_BOUND, `${what}: RSS ${Math.round(seen.maxRss / MiB)} MiB`);
  }
}

/** Queues `codes` (of `type`) for the targets and waits until every one has ended; answers each target's outputs. */
async function runAll(ids: number[], codes: string[], timeoutMs = 120_000, type = 'semi_passive'): Promise<Map<number, Output[]>> {
  for (const code of codes) await queue(api, { id: ids.join(','), group: 'web', type, code, force_overwrite: 'true' });
  await waitFor('every run to end', async () => {
    const progress = await get(api, '/api/v1/plugins/progress');
    return progress.left_count === 0;
  }, timeoutMs, 100);
  const byTarget = new Map<number, Output[]>();
  for (const id of ids) byTarget.set(id, await outputs(api, id));
  return byTarget;
}

async function hostile(answer: Parameters<typeof serveHostile>[0]): Promise<HostileTarget> {
  const target = await serveHostile(answer);
  targets.push(target);
  return target;
}

before(async () => {
  dataDir = await tempDir();
  tools = await scriptDir();
  cases = await tempDir('assessd-hostile-cases-');
  // the stand-in nmap copies the case named by the target's port; the sleeper starts a child that leaves its group
  const nmap = await script(tools, 'nmap', `cp "${cases}/$2.xml" "$1/nmap.xml" 2>/dev/null; [ -x "${cases}/$2.sh" ] && "${cases}/$2.sh" "$1"; exit 0`);
  const sleeper = await script(tools, 'sleeper', 'setsid sleep 300 < /dev/null > /dev/null 2>&1 &\necho $! > "$1/escaped.pid"\n[ -e "$1/../../../../stop-early" ] && exit 0\nexec sleep 300');
  await writePluginFile(dataDir, 'hostile.json', {
    test_groups: [{ code: NMAP, descrip: 'A stand-in nmap' }, { code: SLEEPER, descrip: 'A program whose child leaves its group' }],
    plugins: [
      toolPlugin(NMAP, 'TOOL_NMAP', ['{output_dir}', '{port_number}'], { parser: 'nmap-xml' }),
      toolPlugin(SLEEPER, 'TOOL_LBD', ['{output_dir}']),
    ],
  });
  await startAssessd();
  await configure(api, { TOOL_NMAP: nmap, TOOL_LBD: sleeper });
  // what every server does once, on its first runs (the catalogue read, the checks' modules loaded), done before measuring
  const benign = await hostile(always(response('200 OK', ['Content-Type: text/html'], '<meta name="generator" content="x 1.0">')));
  await writeFile(join(cases, '1000.xml'), manyOpenPorts(10));
  const warm = await addTargets(api, benign.url, 'http://127.0.0.1:1000/');
  await runAll(warm.slice(0, 1), Object.values(CHECK_CODES));
  await runAll(warm.slice(1), [NMAP], 30_000, 'active');
});

after(async () => {
  server?.proc.kill('SIGTERM');
  await server?.exited;
  await Promise.all(targets.map((t) => t.close()));
});

/** Bodies at the checks' cap: long runs of each token the body readers look for, with and without an end. */
function generatedBodies(): Array<{ name: string; body: Buffer }> {
  const tokens = ['<meta ', '<meta name="generator" content="', "<meta name='generator' content='", '<meta name=generator content=', ' name=', '="', "='",
    '<', '/', '1.', '/ v', 'Disallow: /', 'Allow:', '#', 'TRACE / HTTP/1.1', '\t'];
  const ends = ['', '>', '\n'];
  const bodies = [{ name: "the report's page: '<meta '.repeat(174762)", body: Buffer.from('<meta '.repeat(174762), 'latin1') }];
  for (const token of tokens) {
    for (const end of ends) {
      const unit = token + end;
      bodies.push({ name: `${JSON.stringify(unit)} to 1 MiB`, body: Buffer.from(unit.repeat(Math.ceil(BODY_CAP / unit.length)).slice(0, BODY_CAP), 'latin1') });
    }
  }
  return bodies;
}

/** Header floods under the checks' header cap (256 KiB): long runs of what the header readers split and match. */
function generatedHeaders(): Array<{ name: string; headers: string[] }> {
  const big = (unit: string) => unit.repeat(Math.floor(200_000 / unit.length));
  return [
    { name: 'a cookie of 200 KB of attributes', headers: [`Set-Cookie: a=b${big('; x')}`] },
    { name: '2,000 cookies', headers: Array.from({ length: 2000 }, (_, i) => `Set-Cookie: c${i}=1`) },
    { name: 'frame-ancestors of 100,000 sources', headers: [`Content-Security-Policy: frame-ancestors ${big('a ')}`] },
    { name: 'a policy of 200,000 semicolons', headers: [`Content-Security-Policy: ${big(';')}`] },
    { name: 'X-Frame-Options of 40,000 values', headers: [`X-Frame-Options: ${big('deny,')}`] },
    { name: 'an Access-Control-Allow-Origin of 200 KB', headers: [`Access-Control-Allow-Origin: ${big('*')}`, 'Access-Control-Allow-Credentials: true'] },
    { name: 'a Server banner of dotted numbers', headers: [`Server: ${big('1.')}`] },
    { name: 'a Server banner of slashes and spaces', headers: [`Server: ${big('/ ')}`] },
    { name: 'Allow of 40,000 methods', headers: [`Allow: ${big('PUT, ')}`] },
  ];
}

describe('a hostile target: the built-in checks read it in linear time, bounded', () => {
  test('bodies at the cap (1 MiB) built from each token the checks look for: every run ends, the server never stalls', async () => {
    const bodies = generatedBodies();
    const served = await Promise.all(bodies.map(({ body }) => hostile(always(response('200 OK', ['Content-Type: text/html'], body)))));
    const ids = await addTargets(api, ...served.map((t) => t.url));
    let byTarget!: Map<number, Output[]>;
    await withinBounds('bodies at the cap', async () => {
      byTarget = await runAll(ids, [CHECK_CODES.banners, CHECK_CODES.robots, CHECK_CODES.methods]);
    });
    ids.forEach((id, i) => {
      const outs = byTarget.get(id)!;
      assert.equal(outs.length, 3, bodies[i]!.name);
      for (const out of outs) assert.equal(out.status, 'Successful', `${bodies[i]!.name}: ${JSON.stringify(out)}`);
    });
    // the report's page: read, and nothing found (the tags never close)
    const meta = byTarget.get(ids[0]!)!.find((o) => o.plugin_code === CHECK_CODES.banners)!;
    assert.equal(meta.owtf_rank, 0, JSON.stringify(meta.findings));
  });

  test('header floods under the header cap: every run ends, the server never stalls', async () => {
    const floods = generatedHeaders();
    const served = await Promise.all(floods.map(({ headers }) => hostile(always(response('200 OK', headers, 'ok')))));
    const ids = await addTargets(api, ...served.map((t) => t.url));
    let byTarget!: Map<number, Output[]>;
    await withinBounds('header floods', async () => {
      byTarget = await runAll(ids, [CHECK_CODES.cookies, CHECK_CODES.framing, CHECK_CODES.cors, CHECK_CODES.banners, CHECK_CODES.methods]);
    });
    ids.forEach((id, i) => {
      for (const out of byTarget.get(id)!) assert.equal(out.status, 'Successful', `${floods[i]!.name}: ${JSON.stringify(out).slice(0, 500)}`);
    });
    const cookies = byTarget.get(ids[1]!)!.find((o) => o.plugin_code === CHECK_CODES.cookies)!;
    assert.equal(cookies.owtf_rank, 2);
    assert.ok(cookies.findings.length <= 1000, `${cookies.findings.length} findings kept`);
  });

  test('what held before holds: 100 MB, endless and trickled bodies, redirect loops, a gzip bomb, HTML, ANSI and NUL in headers', async () => {
    const loop = await hostile(always(response('302 Found', ['Location: /'])));
    const cases: Array<{ name: string; target: HostileTarget; expect: (out: Output) => void }> = [
      { name: 'a 100 MB body', target: await hostile(hugeBody(100 * MiB)), expect: (out) => assert.equal(out.status, 'Successful') },
      { name: 'an endless chunked body', target: await hostile(endlessChunked('<meta '.repeat(200), 1)), expect: (out) => assert.equal(out.status, 'Successful') },
      {
        name: 'a head trickled a byte at a time (slowloris)',
        target: await hostile(trickle(5)),
        expect: (out) => {
          assert.equal(out.owtf_rank, -1, 'a target that never finished answering is not Passing');
          assert.match(out.findings[0]!.title, /did not answer/);
        },
      },
      { name: 'a redirect loop', target: loop, expect: (out) => assert.equal(out.status, 'Successful') },
      {
        name: 'a gzip bomb (1 GiB of zeros, not inflated)',
        target: await hostile(always(response('200 OK', ['Content-Encoding: gzip', 'Content-Type: text/html'], gzipSync(Buffer.alloc(64 * MiB), { level: 9 })))),
        expect: (out) => assert.equal(out.status, 'Successful'),
      },
      {
        name: 'HTML, ANSI and NUL in header values',
        target: await hostile(always(response('200 OK', ['Server: <script>alert(1)</script>\x1b[31mApache/2.4.1\x1b[0m', 'X-Nul: a\x00b', 'Set-Cookie: <img src=x onerror=alert(1)>=1'], 'ok'))),
        expect: (out) => assert.equal(out.status, 'Successful'),
      },
    ];
    const ids = await addTargets(api, ...cases.map((c) => c.target.url));
    let byTarget!: Map<number, Output[]>;
    await withinBounds('what held', async () => {
      byTarget = await runAll(ids, [CHECK_CODES.banners, CHECK_CODES.cookies]);
    });
    cases.forEach((c, i) => {
      for (const out of byTarget.get(ids[i]!)!) c.expect(out);
    });
    assert.ok(loop.requests.length <= 2 * 6, `the loop was followed ${loop.requests.length} times`);
  });
});

describe('a hostile target: what it sends cannot widen the checks or make it look silent', () => {
  test('a redirect to another port of the same host (assessd\'s own API, a canary) is not followed', async () => {
    const canary = await hostile(always(response('200 OK', [], 'canary')));
    const toApi = await hostile(always(response('302 Found', [`Location: ${server.url}/api/v1/sessions/`])));
    const toCanary = await hostile(always(response('302 Found', [`Location: http://127.0.0.1:${canary.port}/`])));
    const ids = await addTargets(api, toApi.url, toCanary.url);
    const byTarget = await runAll(ids, [CHECK_CODES.banners, CHECK_CODES.cookies, CHECK_CODES.framing, CHECK_CODES.robots]);
    assert.equal(canary.requests.length, 0, 'the canary on another port was reached');
    const banners = byTarget.get(ids[0]!)!.find((o) => o.plugin_code === CHECK_CODES.banners)!;
    const text = (await get(api, `/api/v1/targets/${ids[0]}/poutput/web/semi_passive/${CHECK_CODES.banners}`))[0].output as string;
    assert.equal(banners.status, 'Successful');
    assert.match(text, /not followed \(another origin than http:\/\/127\.0\.0\.1:\d+\)/);
  });

  test('headers over 16 KiB and an invalid header character are read as a browser reads them, not as silence', async () => {
    const bigHeaders = await hostile(always(response('200 OK', ['Server: nginx/1.25.3', `X-Padding: ${'p'.repeat(20_000)}`], 'ok')));
    const badCharacter = await hostile(always(response('200 OK', ['Server: Apache/2.4.58', 'X-Bad: a\x01b'], 'ok')));
    const ids = await addTargets(api, bigHeaders.url, badCharacter.url);
    const byTarget = await runAll(ids, [CHECK_CODES.banners]);
    for (const id of ids) {
      const [out] = byTarget.get(id)!;
      assert.equal(out!.owtf_rank, 1, JSON.stringify(out!.findings));
      assert.match(out!.findings[0]!.title, /Server names a version/);
    }
  });

  test('an answer that is not HTTP, and certificates of 150 KB and 1.5 MB, are said as answers that could not be read: unranked, no file of ours named', async () => {
    const ssh = await hostile(always(Buffer.from('SSH-2.0-OpenSSH_9.2p1 Debian-2\r\nProtocol mismatch.\n')));
    const giants = await Promise.all([150_000, 1_500_000].map((bytes) => serveHostileTls(always(response('200 OK', [], 'ok')), bigCertificate(bytes))));
    targets.push(...giants);
    const [sshId, ...giantIds] = await addTargets(api, ssh.url, ...giants.map((g) => g.url));
    const byTarget = await runAll([sshId!, ...giantIds], [CHECK_CODES.banners, CHECK_CODES.tls]);
    const notHttp = byTarget.get(sshId!)!.find((o) => o.plugin_code === CHECK_CODES.banners)!;
    assert.equal(notHttp.owtf_rank, -1);
    assert.equal(notHttp.findings[0]!.title, 'Target answered, but not valid HTTP');
    const tls = giantIds.map((id) => byTarget.get(id)!.find((o) => o.plugin_code === CHECK_CODES.tls)!);
    for (const out of tls) {
      assert.equal(out.owtf_rank, -1, JSON.stringify(out.findings));
      assert.equal(out.findings[0]!.title, 'Target answered, but the TLS handshake failed');
    }
    for (const out of [notHttp, ...tls]) assert.doesNotMatch(out.findings[0]!.detail, /deps\/|\.c:\d+|\/src\//, out.findings[0]!.detail);
  });
});

/** `<nmaprun>` wrapping `n` open ports: the report's crash (130,000 of them threw RangeError). */
function manyOpenPorts(n: number): string {
  const port = '<port protocol="tcp" portid="1"><state state="open"/></port>\n';
  return `<?xml version="1.0"?>\n<nmaprun scanner="nmap" version="7.93"><host><status state="up"/><address addr="127.0.0.1" addrtype="ipv4"/><ports>\n${port.repeat(n)}</ports></host><runstats><finished summary="done"/></runstats></nmaprun>\n`;
}

/**
 * An open port with script outputs of 64 KiB (what an attribute keeps) that the phrases' regexes
 * took quadratic time over (vnc-info's `\s*\n\s*`, http-default-accounts' `^\s*` over blank
 * lines, http-webdav-scan's `.*` on one line), to TOOL_BYTES.
 */
function quadraticScripts(): string {
  const blank = '\n'.repeat(64 * 1024 - 100);
  const outputs = [['vnc-info', `Security types:${blank}x`], ['http-default-accounts', `${blank}[x`], ['http-webdav-scan', 'Allowed Methods: '.repeat(3800)]];
  const scripts: string[] = [];
  for (let bytes = 0; bytes < TOOL_BYTES; ) {
    const [id, output] = outputs[scripts.length % outputs.length]!;
    scripts.push(`<script id="${id}" output="${output}"/>`);
    bytes += output!.length;
  }
  return `<nmaprun start="1700000000"><host><status state="up"/><address addr="127.0.0.1" addrtype="ipv4"/><ports><port protocol="tcp" portid="1"><state state="open"/><service name="x"/>${scripts.join('')}</port></ports></host><runstats><finished summary="done"/></runstats></nmaprun>\n`;
}

/** Files at TOOL_BYTES: long runs of each token the XML reader looks for, with and without an end. */
function generatedXml(): Array<{ name: string; xml: string }> {
  const tokens = ['<port ', '<port protocol="tcp" portid="1">', '<port protocol="tcp" portid="1"><state state="open"/>', '<state state="open"/>',
    '<script id="x" output="', '<script id="x" output="a"/>', '&#x41;', '&', '<!--', '<![CDATA[', '<?', '<!', '<', '"', ' a=', '<host>',
    '<address addr="1.1.1.1"/>', '<nmaprun>', ' servicefp="', '<port portid="1" servicefp="'];
  const files = [
    { name: 'the report\'s crash: 130,000 open ports', xml: manyOpenPorts(130_000) },
    { name: 'the report\'s freeze: 2 MB of unclosed <port tags, no newline', xml: '<nmaprun><host>' + '<port protocol="tcp" portid="1">'.repeat(Math.ceil((2 * MiB) / 32)) },
    { name: 'scripts whose outputs made the phrase regexes quadratic (5.7 s each at 64 KiB)', xml: quadraticScripts() },
  ];
  for (const token of tokens) {
    for (const end of ['', '\n', '>']) {
      const unit = token + end;
      files.push({ name: `${JSON.stringify(unit)} to ${TOOL_BYTES / MiB} MiB`, xml: unit.repeat(Math.ceil(TOOL_BYTES / unit.length)).slice(0, TOOL_BYTES) });
    }
  }
  return files;
}

describe('hostile tool output: the nmap parser', () => {
  test('crafted nmap.xml files (the reported crash and freeze, and long runs of each token) end their runs; the server never stalls or crashes', async () => {
    const files = generatedXml();
    // a target per file: the stand-in nmap picks its file by the target's port
    for (let i = 0; i < files.length; i++) await writeFile(join(cases, `${i + 1}.xml`), files[i]!.xml);
    const ids = await addTargets(api, ...files.map((_, i) => `http://127.0.0.1:${i + 1}/`));
    let byTarget!: Map<number, Output[]>;
    await withinBounds('crafted nmap.xml', async () => {
      byTarget = await runAll(ids, [NMAP], 300_000, 'active');
    });
    ids.forEach((id, i) => {
      const [out] = byTarget.get(id)!;
      assert.equal(out!.status, 'Successful', `${files[i]!.name}: ${JSON.stringify(out).slice(0, 500)}`);
      assert.ok(out!.findings.length <= 1000, `${files[i]!.name}: ${out!.findings.length} findings`);
    });
    const crash = byTarget.get(ids[0]!)![0]!;
    assert.equal(crash.owtf_rank, 1);
    assert.match(crash.findings.map((f) => f.title).join('\n'), /more open port\(s\) not read one by one|more finding\(s\) not listed/);
    const text = (await get(api, `/api/v1/targets/${ids[0]}/poutput/web/active/${NMAP}`))[0].output as string;
    assert.ok(text.length <= 1024 * 1024 + 1, `${text.length} characters of output text`);
    // the caps were applied before the journal saw the run's end: no record holds more than the store keeps
    let ends = 0;
    for (const name of (await readdir(dataDir)).filter((n) => /^journal.*\.jsonl$/.test(n))) {
      for (const line of (await readFile(join(dataDir, name), 'utf8')).split('\n').filter(Boolean)) {
        for (const op of JSON.parse(line).ops as { op: string; findings?: unknown[]; summary?: string }[]) {
          if (op.op !== 'endRun') continue;
          ends++;
          assert.ok(op.findings!.length <= 1000, `a journaled run end holds ${op.findings!.length} findings`);
          const summary = op.summary ?? '';
          assert.ok(summary.length <= 1024 * 1024, `a journaled run end holds ${summary.length} characters of summary`);
        }
      }
    }
    assert.ok(ends >= files.length, `${ends} run ends journaled`);
  });

  test('a file over the 32 MiB read cap is read to the cap, and that is said', async () => {
    const port = 250;
    await writeFile(join(cases, `${port}.xml`), `<nmaprun>${' '.repeat(40 * MiB)}</nmaprun>`);
    const [id] = await addTargets(api, `http://127.0.0.1:${port}/`);
    const [out] = (await runAll([id!], [NMAP], 60_000, 'active')).get(id!)!;
    assert.equal(out!.status, 'Successful');
    assert.match(out!.error ?? '', /nmap\.xml is \d+ bytes: only its first 33554432 were read/);
    assert.equal(out!.owtf_rank, -1, 'an XML cut before its end is not ranked');
  });

  test('a FIFO, a symlink and a FIFO in place of stdout.txt: said, never opened for reading; the worker is freed and every view and write answers', async () => {
    const base = 200;
    const tricks: Record<number, string> = {
      [base]: 'mkfifo "$1/nmap.xml"',
      [base + 1]: 'ln -s /etc/passwd "$1/nmap.xml"',
      [base + 2]: 'rm -f "$1/stdout.txt"; mkfifo "$1/stdout.txt"; rm -f "$1/stderr.txt"; mkfifo "$1/stderr.txt"',
    };
    for (const [port, body] of Object.entries(tricks)) await script(cases, `${port}.sh`, body);
    const ids = await addTargets(api, ...Object.keys(tricks).map((port) => `http://127.0.0.1:${port}/`));
    const byTarget = await runAll(ids, [NMAP], 30_000, 'active');
    const [fifo, link, stdoutFifo] = ids.map((id) => byTarget.get(id)![0]!);
    assert.match(fifo!.error ?? '', /nmap\.xml: a named pipe \(FIFO\), not read/);
    assert.match(link!.error ?? '', /nmap\.xml: a symbolic link/);
    for (const out of [fifo, link]) assert.equal(out!.owtf_rank, -1);
    // the progress counts a run done once its end is in the store; its worker is free once that end
    // is durable, a moment later: waited for, bounded (a worker stuck on a FIFO is never free)
    await waitFor('every worker to be free', async () => (await workers(api)).every((w) => !w.busy), 5_000);
    // three views of the output whose files are FIFOs, then a write: none waits for a writer
    const views = await Promise.all([1, 2, 3].map(() => send(api, 'GET', `/api/v1/targets/${ids[2]}/poutput/web/active/${NMAP}`)));
    for (const view of views) {
      assert.equal(view.status, 200);
      assert.match(view.json.data[0].output, /stdout\.txt is a named pipe \(FIFO\), not read/);
    }
    assert.equal((await send(api, 'POST', '/api/v1/sessions/', { name: 'after the FIFOs' })).status, 201);
    assert.equal(stdoutFifo!.status, 'Successful');
  });
});

describe('hostile tool: a child that leaves its process group', () => {
  test('a child started with setsid is ended when its run is aborted', async () => {
    const [id] = await addTargets(api, 'http://127.0.0.1:301/');
    await queue(api, { id: String(id), group: 'web', type: 'active', code: SLEEPER });
    const worker = await waitForProgram(api, SLEEPER_KEY);
    const dir = join(dataDir, 'outputs', String(id), 'web', 'active', SLEEPER);
    const escaped = Number(await waitFor('the escaped child\'s pid', async () => (await readFile(join(dir, 'escaped.pid'), 'utf8').catch(() => '')).trim()));
    assert.ok(await alive(escaped), 'the child runs');
    await send(api, 'PATCH', `/api/v1/workers/${worker.id}/abort`);
    const out = await waitForOutput(api, id!, SLEEPER_KEY);
    assert.equal(out.status, 'Aborted');
    assert.equal(await alive(escaped), false, `the setsid child ${escaped} outlived the abort`);
  });

  test('a child started with setsid is ended when its program exits on its own', async () => {
    await writeFile(join(dataDir, 'outputs', 'stop-early'), '');
    try {
      const [id] = await addTargets(api, 'http://127.0.0.1:302/');
      await queue(api, { id: String(id), group: 'web', type: 'active', code: SLEEPER });
      const out = await waitForOutput(api, id!, SLEEPER_KEY);
      assert.equal(out.status, 'Successful', JSON.stringify(out));
      const dir = join(dataDir, 'outputs', String(id), 'web', 'active', SLEEPER);
      const escaped = Number((await readFile(join(dir, 'escaped.pid'), 'utf8')).trim());
      assert.ok(escaped > 0);
      assert.equal(await alive(escaped), false, `the setsid child ${escaped} outlived its run`);
    } finally {
      await rm(join(dataDir, 'outputs', 'stop-early'), { force: true });
    }
  });
});

describe('a crash cannot become a crash loop', () => {
  test('a work whose runs a crash cut short twice in a row is recorded Crashed, not queued a third time; the restarts find nothing to crash on', async () => {
    const [id] = await addTargets(api, 'http://127.0.0.1:401/');
    await queue(api, { id: String(id), group: 'web', type: 'active', code: SLEEPER });
    for (let crash = 1; crash <= 2; crash++) {
      await waitForProgram(api, SLEEPER_KEY, 20_000);
      server.proc.kill('SIGKILL');
      await server.exited;
      await startAssessd();
    }
    const out = await waitForOutput(api, id!, SLEEPER_KEY, ['Crashed'], 20_000);
    assert.match(out.error!, /second time in a row: not queued again/);
    const errors: { owtf_message: string }[] = await get(api, '/api/v1/errors/');
    assert.ok(errors.some((e) => e.owtf_message.includes(SLEEPER_KEY) && /second time in a row/.test(e.owtf_message)));
    assert.equal((await get(api, '/api/v1/worklist/')).length, 0);
    assert.equal((await workers(api)).filter((w) => w.busy).length, 0);
    // and what the hostile files left in the store (130,000 ports, FIFOs) starts again without a crash
    server.proc.kill('SIGTERM');
    await server.exited;
    await startAssessd();
    assert.equal((await send(api, 'GET', '/debug/health')).status, 200);
  });
});
