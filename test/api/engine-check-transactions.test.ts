/**
 * The built-in checks' own requests and answers, stored as their target's transactions (`source:
 * "check"`) through the worklist against a local site: what each transaction holds (method, URL,
 * status, headers, body, a cut body, a refused connection), each redirect hop, the findings naming
 * the transactions that show them (the CORS probe that reflected an origin, the PUT answered 201),
 * a second run's own set, deletion with the target, bundles, the report; a store that fails loses
 * the ids, never the output; no store, no transaction fields.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { runPlugin, type RunContext } from '../../src/engine/run.ts';
import { addTarget, get, ok, queue, send, waitFor, type Api, type Output } from '../helpers/engine.ts';
import { request, startServer, type TestServer } from '../helpers/server.ts';
import { makeCertificates } from '../engine/fixtures/certs.ts';
import { hardened, refusedUrl, serveHttps } from '../engine/fixtures/targets.ts';

type CheckFinding = { rank: number; title: string; detail: string; transactions?: number[]; transactions_total?: number };
type CheckOutput = Omit<Output, 'findings'> & { findings: CheckFinding[]; output?: string };
interface Tx {
  id: number;
  url: string;
  method: string;
  response_status: string;
  response_size: number;
  source: string;
  raw_request: string;
  response_headers: string;
  response_body: string;
  response_body_truncated?: boolean;
  tls_problem?: string;
  error?: string;
}

const ROBOTS = 'User-agent: *\nDisallow: /secret/\n';
/** Bigger than what a check reads of a page (1 MiB). */
const BIG = 1024 * 1024 + 4096;

let server: TestServer;
let api: Api;
let site: Server;
let origin: string;

/**
 * A site: robots.txt; a page that grants CORS with credentials to the `null` origin alone and
 * takes PUT and DELETE; a redirect chain whose middle hop sets a cookie; a page bigger than a
 * check reads.
 */
function startSite(): Promise<Server> {
  const s = createServer((req, res) => {
    const path = new URL(req.url!, 'http://x').pathname;
    res.setHeader('X-Fixture', path);
    if (path === '/robots.txt') return void res.writeHead(200, { 'Content-Type': 'text/plain' }).end(ROBOTS);
    if (path === '/start/') return void res.writeHead(302, { Location: '/mid' }).end();
    // the fragment never leaves the client: the next hop's transaction is of /final
    if (path === '/mid') return void res.writeHead(302, { Location: '/final#part', 'Set-Cookie': 'sid=mid123; Path=/' }).end('moved');
    if (path === '/final') return void res.writeHead(200, { 'Content-Type': 'text/html' }).end('<p>final</p>');
    if (path === '/big/') return void res.writeHead(200, { 'Content-Type': 'text/plain', Server: 'Big/1.0' }).end('x'.repeat(BIG));
    if (req.headers.origin === 'null') {
      res.setHeader('Access-Control-Allow-Origin', 'null');
      res.setHeader('Access-Control-Allow-Credentials', 'true');
    }
    if (req.method === 'PUT') return void res.writeHead(201).end();
    if (req.method === 'DELETE') return void res.writeHead(204).end();
    if (req.method !== 'GET') return void res.writeHead(405, { Allow: 'GET, PUT, DELETE' }).end();
    res.writeHead(200, { 'Content-Type': 'text/html', Server: 'Apache/2.4.41 (Ubuntu)' }).end('<html><body>home</body></html>');
  });
  return new Promise((resolve) => s.listen(0, '127.0.0.1', () => resolve(s)));
}

before(async () => {
  site = await startSite();
  origin = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
  server = await startServer({ workers: 2, checkTimeoutMs: 3000 });
  api = { url: server.url };
});
after(async () => {
  await server?.close();
  await new Promise((resolve) => site?.close(resolve));
});

/** Runs one semi_passive check on the target (again, if it ran) and answers its output once ended. */
async function runCheck(api: Api, target: number, code: string): Promise<CheckOutput> {
  await queue(api, { id: String(target), group: 'web', type: 'semi_passive', code, force_overwrite: 'true' });
  await waitFor(`${code} to end`, async () => (await get(api, '/api/v1/plugins/progress')).left_count === 0, 20_000);
  const [output] = (await get(api, `/api/v1/targets/${target}/poutput/web/semi_passive/${code}`)) as CheckOutput[];
  assert.ok(output, `no output of ${code}`);
  assert.notEqual(output.status, 'Running');
  return output;
}

const list = (api: Api, target: number): Promise<Tx[]> => get(api, `/api/v1/targets/${target}/transactions/`);
const one = (api: Api, target: number, id: number): Promise<Tx> => get(api, `/api/v1/targets/${target}/transactions/${id}`);

test('robots: the GET of /robots.txt is a transaction of the target (source check), as sent and as answered; the finding names it', async () => {
  const target = await addTarget(api, `${origin}/`);
  const output = await runCheck(api, target, 'OWTF-IG-001');
  assert.equal(output.owtf_rank, 1);
  const all = await list(api, target);
  assert.equal(all.length, 1);
  assert.equal(all[0]!.source, 'check');
  assert.equal(all[0]!.method, 'GET');
  assert.equal(all[0]!.url, `${origin}/robots.txt`);
  assert.equal(all[0]!.response_status, '200 OK');
  assert.equal(all[0]!.response_size, Buffer.byteLength(ROBOTS));
  const tx = await one(api, target, all[0]!.id);
  assert.equal(tx.response_body, ROBOTS);
  assert.match(tx.response_headers, /^X-Fixture: \/robots\.txt$/m);
  assert.match(tx.response_headers, /^Content-Type: text\/plain$/m);
  assert.ok(tx.raw_request.startsWith(`GET ${origin}/robots.txt HTTP/1.1\r\n`), tx.raw_request);
  assert.match(tx.raw_request, /\r\nuser-agent: assessd\r\n/i);
  assert.match(tx.raw_request, new RegExp(`\\r\\nHost: 127\\.0\\.0\\.1:${new URL(origin).port}\\r\\n`, 'i'));
  assert.equal(tx.error, undefined);
  assert.deepEqual(output.findings.map((f) => f.transactions), [[tx.id]]);
  assert.equal(output.findings[0]!.transactions_total, undefined);
});

test('CORS: each Origin probe is a transaction; the credentialed-read finding names the one probe whose answer reflected its origin', async () => {
  const target = await addTarget(api, `${origin}/cors/`);
  const output = await runCheck(api, target, 'OWTF-WGP-002');
  assert.equal(output.owtf_rank, 4);
  const all = await list(api, target);
  // an http target on an IP address: foreign, null, prefix (no name ends or starts with an address's other labels)
  assert.equal(all.length, 3);
  assert.ok(all.every((t) => t.source === 'check' && t.method === 'GET' && t.url === `${origin}/cors/` && t.response_status === '200 OK'));
  const top = output.findings.find((f) => f.rank === 4)!;
  assert.equal(top.transactions?.length, 1, JSON.stringify(output.findings));
  const probe = await one(api, target, top.transactions![0]!);
  assert.match(probe.raw_request, /\r\norigin: null\r\n/i);
  assert.match(probe.response_headers, /^Access-Control-Allow-Origin: null$/m);
  assert.match(probe.response_headers, /^Access-Control-Allow-Credentials: true$/m);
  // the other probes got no CORS header: no finding names them
  const named = new Set(output.findings.flatMap((f) => f.transactions ?? []));
  assert.deepEqual([...named], [probe.id]);
});

test('http-methods: every probe is a transaction; the write-method finding names the PUT answered 201 and the DELETE answered 204', async () => {
  const target = await addTarget(api, `${origin}/methods/`);
  const output = await runCheck(api, target, 'OWTF-CM-008');
  assert.equal(output.owtf_rank, 2);
  const all = await list(api, target);
  assert.deepEqual(all.map((t) => t.method).sort(), ['ASSESSD-NO-SUCH-METHOD', 'DELETE', 'OPTIONS', 'PROPFIND', 'PUT', 'TRACE']);
  const handled = output.findings.find((f) => f.rank === 2)!;
  const shown = await Promise.all(handled.transactions!.map((id) => one(api, target, id)));
  assert.deepEqual(shown.map((t) => `${t.method} ${t.response_status}`), ['PUT 201 Created', 'DELETE 204 No Content']);
  assert.match(shown[0]!.raw_request, /\r\nif-match: "[0-9a-f]+"\r\n/i);
});

test('cookies through redirects: each hop is its own transaction, in order, as sent (no fragment); the cookie finding names the hop that set it', async () => {
  const target = await addTarget(api, `${origin}/start/`);
  const output = await runCheck(api, target, 'OWTF-SM-002');
  assert.equal(output.owtf_rank, 2);
  const all = await list(api, target);
  assert.deepEqual(all.map((t) => `${t.method} ${t.url} ${t.response_status}`), [
    `GET ${origin}/start/ 302 Found`,
    `GET ${origin}/mid 302 Found`,
    `GET ${origin}/final 200 OK`,
  ]);
  const [finding] = output.findings;
  assert.match(finding!.title, /Cookie sid lacks/);
  assert.deepEqual(finding!.transactions, [all[1]!.id]);
  assert.equal((await one(api, target, all[1]!.id)).response_body, 'moved');
});

test('a body past what the check reads is stored as read, said cut; its size is what was received', async () => {
  const target = await addTarget(api, `${origin}/big/`);
  const output = await runCheck(api, target, 'OWTF-IG-004');
  assert.equal(output.owtf_rank, 1);
  const [row] = await list(api, target);
  assert.equal(row!.response_body_truncated, true);
  assert.ok(row!.response_size >= 1024 * 1024, String(row!.response_size));
  const tx = await one(api, target, row!.id);
  assert.equal(tx.response_body.length, 1024 * 1024);
  assert.deepEqual(output.findings[0]!.transactions, [row!.id]);
});

test('a target that refuses: the request is stored without a response, saying why; the unranked finding names it', async () => {
  const refused = await refusedUrl();
  const target = await addTarget(api, refused);
  const output = await runCheck(api, target, 'OWTF-IG-004');
  assert.equal(output.owtf_rank, -1);
  const all = await list(api, target);
  assert.equal(all.length, 1);
  assert.equal(all[0]!.source, 'check');
  assert.equal(all[0]!.response_status, '');
  assert.match(all[0]!.error ?? '', /ECONNREFUSED/);
  assert.deepEqual(output.findings.map((f) => [f.rank, f.transactions]), [[-1, [all[0]!.id]]]);
});

test('the TLS check stores the one GET it makes, saying what was wrong with the certificate; its findings name it', async () => {
  const https = await serveHttps(hardened, makeCertificates().selfSigned);
  try {
    const target = await addTarget(api, https.url);
    const output = await runCheck(api, target, 'OWTF-CM-001');
    assert.equal(output.owtf_rank, 3);
    const all = await list(api, target);
    assert.deepEqual(all.map((t) => `${t.source} ${t.method} ${t.url} ${t.response_status}`), [`check GET ${https.url} 200 OK`]);
    assert.equal(all[0]!.tls_problem, 'DEPTH_ZERO_SELF_SIGNED_CERT');
    assert.ok(output.findings.every((f) => f.transactions?.length === 1 && f.transactions[0] === all[0]!.id), JSON.stringify(output.findings));
  } finally {
    await https.close();
  }
});

test('a check run twice stores two sets; each output names its own; deleting the target removes them all', async () => {
  const target = await addTarget(api, `${origin}/twice/`);
  const first = await runCheck(api, target, 'OWTF-WGP-001');
  const second = await runCheck(api, target, 'OWTF-WGP-001');
  const all = await list(api, target);
  assert.equal(all.length, 2);
  assert.deepEqual(first.findings[0]!.transactions, [all[0]!.id]);
  assert.deepEqual(second.findings[0]!.transactions, [all[1]!.id]);
  const segments = () => [...server.store.state.segments.values()].filter((row) => row.target === target);
  assert.equal(segments().length, 2, 'one import per run');
  await ok(api, 'DELETE', `/api/v1/targets/${target}`);
  assert.equal(segments().length, 0);
  assert.equal((await send(api, 'GET', `/api/v1/targets/${target}/transactions/${all[0]!.id}`)).status, 400);
});

test('every finding of the outputs carries ids that resolve to transactions of the target, of source check', async () => {
  const target = await addTarget(api, `${origin}/all/`);
  await queue(api, { id: String(target), group: 'web', type: 'semi_passive', force_overwrite: 'true' });
  await waitFor('the checks to end', async () => (await get(api, '/api/v1/plugins/progress')).left_count === 0, 30_000);
  const outputs: CheckOutput[] = await get(api, `/api/v1/targets/${target}/poutput/?plugin_type=semi_passive`);
  let named = 0;
  for (const output of outputs) {
    if (output.status === 'Skipped') continue;
    for (const finding of output.findings) {
      assert.ok(finding.transactions && finding.transactions.length > 0, `${output.plugin_code}: ${finding.title}`);
      for (const id of finding.transactions) {
        const tx = await one(api, target, id);
        assert.equal(tx.source, 'check');
        named++;
      }
    }
  }
  assert.ok(named >= 6, String(named));
});

test('the report lists the request line of each transaction a check finding names', async () => {
  const target = await addTarget(api, `${origin}/report/`);
  await runCheck(api, target, 'OWTF-IG-001');
  const [tx] = await list(api, target);
  const session = (await get(api, '/api/v1/sessions/?active=true'))[0].id;
  const res = await request(server.url, `/api/v1/reports/${session}`);
  assert.equal(res.status, 200);
  assert.ok(res.text.includes(`<li><code>#${tx!.id}</code> GET ${origin}/robots.txt → 200 OK</li>`), 'the request line in the report');
});

test('a bundle carries check transactions (source, a cut body, a request without an answer) and the findings naming them, to the new ids', async () => {
  const target = await addTarget(api, `${origin}/bundled/`);
  await runCheck(api, target, 'OWTF-IG-004');
  const refused = await refusedUrl();
  await runCheck(api, await addTarget(api, refused), 'OWTF-IG-004');
  const session = (await get(api, '/api/v1/sessions/?active=true'))[0].id;
  const bundle = await request(server.url, `/api/v1/bundles/${session}`);
  assert.equal(bundle.status, 200);
  const other = await startServer();
  try {
    const otherApi = { url: other.url };
    // the other box has transactions already: the bundle's take the next ids
    const first = await addTarget(otherApi, `${origin}/elsewhere/`);
    await runCheck(otherApi, first, 'OWTF-IG-001');
    const res = await request(other.url, '/api/v1/bundles/?name=copy', { method: 'POST', body: bundle.raw, headers: { 'content-type': 'application/json' } });
    assert.equal(res.status, 201, res.text);
    const copies: { id: number; target_url: string }[] = await get(otherApi, `/api/v1/targets/?session_id=${res.json.data.id}`);
    const copy = copies.find((t) => t.target_url === `${origin}/bundled/`)!;
    const [output] = (await get(otherApi, `/api/v1/targets/${copy.id}/poutput/web/semi_passive/OWTF-IG-004`)) as CheckOutput[];
    const ids = output!.findings[0]!.transactions!;
    assert.equal(ids.length, 1);
    const tx = await one(otherApi, copy.id, ids[0]!);
    assert.equal(tx.source, 'check');
    assert.equal(tx.url, `${origin}/bundled/`);
    assert.match(tx.response_headers, /^Server: Apache\/2\.4\.41 \(Ubuntu\)$/m);
    const big = copies.find((t) => t.target_url === `${origin}/big/`)!;
    const [cut] = await list(otherApi, big.id);
    assert.equal(cut!.response_body_truncated, true);
    assert.equal(cut!.source, 'check');
    const silent = copies.find((t) => t.target_url === refused)!;
    const [unanswered] = (await get(otherApi, `/api/v1/targets/${silent.id}/poutput/web/semi_passive/OWTF-IG-004`)) as CheckOutput[];
    const [id] = unanswered!.findings[0]!.transactions!;
    const failed = await one(otherApi, silent.id, id!);
    assert.equal(failed.response_status, '');
    assert.match(failed.error ?? '', /ECONNREFUSED/);
  } finally {
    await other.close();
  }
});

test('a store that fails keeps the output: findings without ids, the summary and one log line say why', async () => {
  const target = await addTarget(api, `${origin}/failing/`);
  const real = server.evidence.importExchanges;
  server.evidence.importExchanges = async () => {
    throw Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
  };
  const logged = server.logs.length;
  try {
    const output = await runCheck(api, target, 'OWTF-IG-004');
    assert.equal(output.status, 'Successful');
    assert.equal(output.owtf_rank, 1);
    assert.ok(output.findings.length > 0);
    assert.ok(output.findings.every((f) => f.transactions === undefined && f.transactions_total === undefined));
    const text = await get(api, `/api/v1/targets/${target}/poutput/web/semi_passive/OWTF-IG-004`);
    assert.match(JSON.stringify(text), /could not be stored as transactions \(ENOSPC/);
    const lines = server.logs.slice(logged).filter((line) => line.includes('as transactions'));
    assert.equal(lines.length, 1, lines.join('\n'));
  } finally {
    server.evidence.importExchanges = real;
  }
  assert.deepEqual(await list(api, target), []);
});

test('without a transaction store (a library user), a check runs as before: its findings carry no transaction fields', async () => {
  const ctx = {
    entry: { plugin: { key: 'semi_passive@OWTF-WGP-002', code: 'OWTF-WGP-002', group: 'web', type: 'semi_passive' }, action: { kind: 'check', check: 'cors' } },
    target: { ...server.store.state.targets.values().next().value!.target, target_url: `${origin}/`, id: 999 },
    outputDir: '/nonexistent',
    config: () => undefined,
    runTimeoutMs: 10_000,
    checkTimeoutMs: 3000,
    maxOutputBytes: 1024,
    signal: new AbortController().signal,
    env: {},
    onProgram() {},
  } as unknown as RunContext;
  const outcome = await runPlugin(ctx);
  assert.equal(outcome.status, 'Successful');
  assert.equal(outcome.owtfRank, 4);
  for (const finding of outcome.findings) assert.deepEqual(Object.keys(finding).sort(), ['detail', 'rank', 'title']);
});
