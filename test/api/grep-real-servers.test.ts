/**
 * The shipped grep plugins over the transactions the built-in checks stored (`source: "check"`)
 * against real Debian nginx, Apache and lighttpd, configured here: an https site without HSTS and
 * one with it, version-naming Server headers, a cookie without its flags, a page with a comment
 * and a hidden input, nosniff on some sites and not others. Everything through the API of an
 * in-process assessd: the checks and the greps queued through the worklist, the findings and the
 * transactions they name read back. What the servers send is read from the servers themselves (a
 * plain Node request, certificate unchecked) and from the stored transactions, never assumed:
 * each finding is held to the transactions whose answers show it.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { get as httpGet, type IncomingMessage } from 'node:http';
import { get as httpsGet } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { addTarget, get, queue, waitFor, type Api, type Output } from '../helpers/engine.ts';
import { startServer as startAssessd, type TestServer } from '../helpers/server.ts';
import { makeCertificates } from '../engine/fixtures/certs.ts';
import { installed, startServer, type RunningServer, type SiteConfig, type Software } from '../engine/fixtures/real-servers.ts';

type Finding = { rank: number; title: string; detail: string; transactions?: number[]; transactions_total?: number };
type GrepOutput = Omit<Output, 'findings'> & { findings: Finding[] };
interface TxRow {
  id: number;
  url: string;
  method: string;
  response_status: string;
  source: string;
}
interface Tx extends TxRow {
  response_headers: string;
  response_body: string;
}

/** What a server answered to a plain GET of its page. */
interface Truth {
  status: number;
  /** `Name: value` as sent, in order. */
  headerLines: string[];
  body: string;
}

/** Every shipped grep plugin (data/plugins/web-grep.json). */
const GREP_CODES = ['OWTF-IG-001', 'OWTF-IG-004', 'OWTF-CM-001', 'OWTF-CM-004', 'OWTF-WGP-001', 'OWTF-WGP-002', 'OWTF-SM-002', 'OWTF-SM-005', 'OWTF-AT-006', 'OWTF-AT-007', 'OWTF-DV-001', 'OWTF-DV-009', 'OWTF-DS-007'];

const COMMENT = '<!-- TODO: drop the staging login before release -->';
const HIDDEN = '<input type="hidden" name="csrf" value="t0k3n-4242">';
const FORM_PAGE = `<!doctype html><html><head><title>Account</title></head><body>
${COMMENT}
<form method="post" action="/login">${HIDDEN}<input name="user"><button>Log in</button></form>
</body></html>
`;

/** The sites, by server; `page` replaces the site's index.html. */
const SITES: Record<Software, Array<SiteConfig & { page?: string }>> = {
  nginx: [
    // https, leaking its version, a cookie without a flag (on its 200s: no `always`), no HSTS, no nosniff
    { name: 'https-plain', config: `server_tokens on; add_header Set-Cookie "sid=1; Path=/";`, page: FORM_PAGE },
    // https, hardened: HSTS for two years, nosniff, a cookie with every flag, the version hidden
    { name: 'https-hsts', config: `server_tokens off;
    add_header Strict-Transport-Security "max-age=63072000; includeSubDomains" always;
    add_header X-Content-Type-Options nosniff always;
    add_header Set-Cookie "sid=2; Path=/; Secure; HttpOnly; SameSite=Lax" always;` },
  ],
  // Apache's ServerTokens is Full unless told otherwise (Debian's conf-enabled/security.conf is not read)
  apache: [{ name: 'apache-full', config: `Header always set Set-Cookie "pref=dark; Path=/; HttpOnly"` }],
  lighttpd: [{ name: 'lighttpd-nosniff', config: `setenv.add-response-header = ("X-Content-Type-Options" => "nosniff")` }],
};

const SOFTWARE: Software[] = ['nginx', 'apache', 'lighttpd'];
const missing = SOFTWARE.filter((s) => !installed(s));
// a developer's machine may go without them; in CI a missing one is a failure
const skip = missing.length > 0 && !process.env.CI;
if (skip) console.warn(`\n!! SKIPPING the grep plugins against real servers: ${missing.join(', ')} missing (.ci/run installs them).\n`);

const dir = skip ? '' : mkdtempSync(join(tmpdir(), 'assessd-grep-real-'));
const servers: RunningServer[] = [];
let assessd: TestServer;
let api: Api;

interface Target {
  name: string;
  url: string;
  id: number;
  truth: Truth;
  /** The target's transactions, whole. */
  txs: Map<number, Tx>;
  greps: Map<string, GrepOutput>;
}
const targets = new Map<string, Target>();

/** A GET of `url` as the server answers it, its certificate unchecked. */
function fetchTruth(url: string): Promise<Truth> {
  return new Promise((resolve, reject) => {
    const done = (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const headerLines: string[] = [];
        for (let i = 0; i < res.rawHeaders.length; i += 2) headerLines.push(`${res.rawHeaders[i]}: ${res.rawHeaders[i + 1]}`);
        resolve({ status: res.statusCode!, headerLines, body: Buffer.concat(chunks).toString('utf8') });
      });
      res.on('error', reject);
    };
    const req = url.startsWith('https:') ? httpsGet(url, { rejectUnauthorized: false }, done) : httpGet(url, done);
    req.on('error', reject);
  });
}

/** The header lines of a response named `name` (case-insensitive). */
const linesOf = (headerLines: string[], name: string) => headerLines.filter((l) => l.toLowerCase().startsWith(`${name.toLowerCase()}:`));
const headerLinesOf = (tx: Tx) => tx.response_headers.split(/\r?\n/).filter(Boolean);
const answered = (t: Target) => [...t.txs.values()].filter((tx) => tx.response_status !== '');
/** Ids of the target's answered transactions whose response headers hold `line`, ascending. */
const idsWithLine = (t: Target, line: string) => answered(t).filter((tx) => headerLinesOf(tx).includes(line)).map((tx) => tx.id);
const sorted = (ids: number[] | undefined) => [...(ids ?? [])].sort((a, b) => a - b);
const titles = (o: GrepOutput | undefined) => (o?.findings ?? []).map((f) => f.title);
const show = (t: Target, code: string) => `${t.name} ${code}: ${JSON.stringify(t.greps.get(code)?.findings.map((f) => [f.rank, f.title, f.transactions]))}`;

function finding(t: Target, code: string, title: string): Finding {
  const found = t.greps.get(code)?.findings.find((f) => f.title === title);
  assert.ok(found, `no finding "${title}" — ${show(t, code)}`);
  return found;
}

function noFinding(t: Target, code: string, title: string | RegExp): void {
  const hits = titles(t.greps.get(code)).filter((x) => (typeof title === 'string' ? x === title : title.test(x)));
  assert.deepEqual(hits, [], show(t, code));
}

/** Queues `type` plugins of the web group for every target and waits until none is left. */
async function runAll(type: string, timeoutMs: number): Promise<void> {
  for (const t of targets.values()) await queue(api, { id: String(t.id), group: 'web', type, force_overwrite: 'true' });
  await waitFor(`the ${type} plugins to end`, async () => (await get(api, '/api/v1/plugins/progress')).left_count === 0, timeoutMs, 100);
}

describe('the shipped grep plugins over the checks\' transactions with real nginx, Apache and lighttpd', { skip }, () => {
  before(async () => {
    const certs = makeCertificates();
    for (const software of SOFTWARE) {
      const configs = SITES[software].map(({ page: _page, ...c }) => (c.name.startsWith('https') ? { ...c, tls: certs.valid } : c));
      const running = await startServer(software, dir, configs);
      servers.push(running);
      for (const site of SITES[software]) if (site.page) writeFileSync(join(running.sites.get(site.name)!.docroot, 'index.html'), site.page);
    }
    assessd = await startAssessd({ workers: 2, checkTimeoutMs: 5000, runTimeoutMs: 30_000 });
    api = { url: assessd.url };
    for (const server of servers) {
      for (const site of server.sites.values()) {
        targets.set(site.name, { name: site.name, url: site.url, id: await addTarget(api, site.url), truth: await fetchTruth(site.url), txs: new Map(), greps: new Map() });
      }
    }
    await runAll('semi_passive', 60_000);
    for (const t of targets.values()) {
      const rows: TxRow[] = await get(api, `/api/v1/targets/${t.id}/transactions/`);
      for (const row of rows) t.txs.set(row.id, await get(api, `/api/v1/targets/${t.id}/transactions/${row.id}`));
    }
    await runAll('grep', 60_000);
    for (const t of targets.values()) {
      const list: GrepOutput[] = await get(api, `/api/v1/targets/${t.id}/poutput/?plugin_type=grep`);
      for (const o of list) t.greps.set(o.plugin_code, o);
    }
  });

  after(async () => {
    await assessd?.close();
    await Promise.all(servers.map((s) => s.close()));
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('the checks stored their requests as each target\'s transactions, and every grep plugin ran over them', () => {
    for (const t of targets.values()) {
      assert.ok(t.txs.size >= 7, `${t.name}: ${t.txs.size} transactions`);
      for (const tx of t.txs.values()) {
        assert.equal(tx.source, 'check', `${t.name} #${tx.id}`);
        assert.ok(tx.url.startsWith(t.url), `${t.name}: ${tx.url}`);
        assert.notEqual(tx.response_status, '', `${t.name}: ${tx.method} ${tx.url} got no answer`);
      }
      // the page the checks read is the page the server serves
      const page = [...t.txs.values()].find((tx) => tx.method === 'GET' && tx.url === t.url && tx.response_status === '200 OK');
      assert.ok(page, `${t.name}: no GET of the page answered 200`);
      assert.equal(page.response_body, t.truth.body);
      assert.deepEqual(t.greps.size, GREP_CODES.length, `${t.name}: ${[...t.greps.keys()]}`);
      for (const code of GREP_CODES) assert.equal(t.greps.get(code)?.status, 'Successful', `${t.name} ${code}: ${JSON.stringify(t.greps.get(code))}`);
    }
  });

  test('every finding names transactions, each one of that target, stored by a check', async () => {
    let named = 0;
    for (const t of targets.values()) {
      for (const output of t.greps.values()) {
        for (const f of output.findings) {
          assert.ok(f.transactions && f.transactions.length > 0, `${t.name} ${output.plugin_code}: ${f.title}`);
          for (const id of f.transactions) {
            assert.ok(t.txs.has(id), `${t.name} ${output.plugin_code} "${f.title}" names #${id}, not a transaction of the target`);
            assert.equal(t.txs.get(id)!.source, 'check');
            named++;
          }
        }
      }
    }
    assert.ok(named > 20, String(named));
    // an id resolves through the API of its own target only
    const [a, b] = [targets.get('https-plain')!, targets.get('apache-full')!];
    const foreign = await fetch(`${api.url}/api/v1/targets/${b.id}/transactions/${[...a.txs.keys()][0]}`);
    assert.notEqual(foreign.status, 200);
  });

  test('HSTS: the https site without it gets the absent finding over all its https answers; the one with it does not', () => {
    const plain = targets.get('https-plain')!;
    const hsts = targets.get('https-hsts')!;
    assert.deepEqual(linesOf(plain.truth.headerLines, 'Strict-Transport-Security'), [], 'the server sends no HSTS');
    const sent = linesOf(hsts.truth.headerLines, 'Strict-Transport-Security');
    assert.deepEqual(sent, ['Strict-Transport-Security: max-age=63072000; includeSubDomains']);

    const absent = finding(plain, 'OWTF-CM-001', 'No Strict-Transport-Security header on any https response');
    assert.equal(absent.rank, 2);
    assert.deepEqual(sorted(absent.transactions), answered(plain).map((tx) => tx.id).sort((x, y) => x - y));
    assert.ok(answered(plain).every((tx) => tx.url.startsWith('https://') && linesOf(headerLinesOf(tx), 'Strict-Transport-Security').length === 0));
    assert.equal(plain.greps.get('OWTF-CM-001')!.owtf_rank, 2);
    assert.equal(plain.greps.get('OWTF-CM-001')!.findings.length, 1, show(plain, 'OWTF-CM-001'));

    noFinding(hsts, 'OWTF-CM-001', 'No Strict-Transport-Security header on any https response');
    noFinding(hsts, 'OWTF-CM-001', /^HSTS max-age under a year/);
    const present = finding(hsts, 'OWTF-CM-001', `Strict-Transport-Security header: ${sent[0]}`);
    assert.equal(present.rank, 0);
    // `always`: every answer of the server carries it, the 405s too
    assert.deepEqual(sorted(present.transactions), idsWithLine(hsts, sent[0]!));
    assert.equal(present.transactions!.length, answered(hsts).length);
    assert.equal(hsts.greps.get('OWTF-CM-001')!.owtf_rank, 0);

    // http targets: no https answer to read, so nothing is said of HSTS
    for (const name of ['apache-full', 'lighttpd-nosniff']) assert.deepEqual(targets.get(name)!.greps.get('OWTF-CM-001')!.findings, []);
  });

  test('a Server header naming a version is found, with exactly the transactions whose answers show it; a bare one is not a version', () => {
    const cases: Array<[string, RegExp]> = [
      ['https-plain', /^Server: nginx\/\d+\.\d+\.\d+$/],
      ['apache-full', /^Server: Apache\/\d+\.\d+\.\d+ \(Debian\)$/],
      ['lighttpd-nosniff', /^Server: lighttpd\/\d+\.\d+\.\d+$/],
    ];
    for (const [name, shape] of cases) {
      const t = targets.get(name)!;
      const [line, ...more] = linesOf(t.truth.headerLines, 'Server');
      assert.match(line ?? '', shape, `${name}: ${t.truth.headerLines.join(' | ')}`);
      assert.deepEqual(more, []);
      const f = finding(t, 'OWTF-IG-004', `Version named by a header: ${line}`);
      assert.equal(f.rank, 1);
      const showing = idsWithLine(t, line!);
      assert.ok(showing.length >= 5, `${name}: ${showing.length}`);
      assert.deepEqual(sorted(f.transactions), showing);
      for (const id of f.transactions!) assert.ok(headerLinesOf(t.txs.get(id)!).includes(line!));
      assert.equal(t.greps.get('OWTF-IG-004')!.owtf_rank, 1);
    }
    // server_tokens off: "nginx" alone, a fingerprint without a version
    const hidden = targets.get('https-hsts')!;
    assert.deepEqual(linesOf(hidden.truth.headerLines, 'Server'), ['Server: nginx']);
    noFinding(hidden, 'OWTF-IG-004', /^Version named by a header/);
    const bare = finding(hidden, 'OWTF-IG-004', 'Fingerprint header: Server: nginx');
    assert.equal(bare.rank, 0);
    assert.deepEqual(sorted(bare.transactions), idsWithLine(hidden, 'Server: nginx'));
    assert.equal(hidden.greps.get('OWTF-IG-004')!.owtf_rank, 0);
  });

  test('a cookie set without HttpOnly, SameSite or Secure (over https) is found on the answers that set it; one with every flag is not', () => {
    const plain = targets.get('https-plain')!;
    assert.deepEqual(linesOf(plain.truth.headerLines, 'Set-Cookie'), ['Set-Cookie: sid=1; Path=/']);
    const setting = idsWithLine(plain, 'Set-Cookie: sid=1; Path=/');
    // no `always`: nginx adds it to its 200s, not to the 404 of robots.txt or the 405s
    assert.ok(setting.length >= 3 && setting.length < answered(plain).length, `${setting.length} of ${answered(plain).length}`);
    for (const flag of ['HttpOnly', 'SameSite', 'Secure over https']) {
      const f = finding(plain, 'OWTF-SM-002', `Cookie without ${flag}: Set-Cookie: sid=…; Path=/`);
      assert.equal(f.rank, 2);
      assert.deepEqual(sorted(f.transactions), setting, flag);
    }
    assert.equal(plain.greps.get('OWTF-SM-002')!.findings.length, 3, show(plain, 'OWTF-SM-002'));
    assert.equal(plain.greps.get('OWTF-SM-002')!.owtf_rank, 2);

    const hardened = targets.get('https-hsts')!;
    assert.deepEqual(linesOf(hardened.truth.headerLines, 'Set-Cookie'), ['Set-Cookie: sid=2; Path=/; Secure; HttpOnly; SameSite=Lax']);
    assert.ok(idsWithLine(hardened, 'Set-Cookie: sid=2; Path=/; Secure; HttpOnly; SameSite=Lax').length >= 5);
    assert.deepEqual(hardened.greps.get('OWTF-SM-002')!.findings, []);

    // over http: HttpOnly is there, SameSite is not; Secure is not asked
    const apache = targets.get('apache-full')!;
    assert.deepEqual(linesOf(apache.truth.headerLines, 'Set-Cookie'), ['Set-Cookie: pref=dark; Path=/; HttpOnly']);
    const samesite = finding(apache, 'OWTF-SM-002', 'Cookie without SameSite: Set-Cookie: pref=…; Path=/; HttpOnly');
    assert.deepEqual(sorted(samesite.transactions), idsWithLine(apache, 'Set-Cookie: pref=dark; Path=/; HttpOnly'));
    assert.deepEqual(titles(apache.greps.get('OWTF-SM-002')), [samesite.title]);
  });

  test('X-Content-Type-Options: the absent finding on the sites without nosniff, not on those with it', () => {
    for (const name of ['https-plain', 'apache-full']) {
      const t = targets.get(name)!;
      assert.deepEqual(linesOf(t.truth.headerLines, 'X-Content-Type-Options'), [], name);
      const f = finding(t, 'OWTF-DV-001', 'No X-Content-Type-Options: nosniff on any response');
      assert.equal(f.rank, 1);
      // the rule reads every answer, whatever its type
      assert.deepEqual(sorted(f.transactions), answered(t).map((tx) => tx.id).sort((x, y) => x - y), name);
      noFinding(t, 'OWTF-DV-001', /^X-Content-Type-Options: /);
    }
    for (const name of ['https-hsts', 'lighttpd-nosniff']) {
      const t = targets.get(name)!;
      assert.deepEqual(linesOf(t.truth.headerLines, 'X-Content-Type-Options'), ['X-Content-Type-Options: nosniff'], name);
      noFinding(t, 'OWTF-DV-001', 'No X-Content-Type-Options: nosniff on any response');
      const f = finding(t, 'OWTF-DV-001', 'X-Content-Type-Options: X-Content-Type-Options: nosniff');
      assert.equal(f.rank, 0);
      assert.deepEqual(sorted(f.transactions), idsWithLine(t, 'X-Content-Type-Options: nosniff'), name);
    }
  });

  test('the HTML comment and the hidden input of the page served are found on the answers that hold them, the token masked', () => {
    const t = targets.get('https-plain')!;
    assert.ok(t.truth.body.includes(COMMENT) && t.truth.body.includes(HIDDEN), 'the server serves the page');
    const holding = (text: string) => answered(t).filter((tx) => tx.response_body.includes(text)).map((tx) => tx.id);
    const withComment = holding(COMMENT);
    assert.ok(withComment.length >= 3, String(withComment.length));

    const comment = finding(t, 'OWTF-CM-004', `HTML comment: ${COMMENT}`);
    assert.equal(comment.rank, 1);
    assert.deepEqual(sorted(comment.transactions), withComment);
    assert.deepEqual(titles(t.greps.get('OWTF-CM-004')), [comment.title]);

    const hidden = finding(t, 'OWTF-SM-005', 'Hidden input: <input type="hidden" name="csrf" …>');
    assert.equal(hidden.rank, 1);
    assert.deepEqual(sorted(hidden.transactions), holding(HIDDEN));
    assert.ok(!hidden.title.includes('t0k3n'));

    // the servers' own pages (index, error pages) hold neither
    for (const name of ['https-hsts', 'apache-full', 'lighttpd-nosniff']) {
      const other = targets.get(name)!;
      assert.ok(answered(other).every((tx) => !tx.response_body.includes('<!--') && !/type="?hidden/.test(tx.response_body)), name);
      assert.deepEqual(other.greps.get('OWTF-CM-004')!.findings, [], show(other, 'OWTF-CM-004'));
      assert.deepEqual(other.greps.get('OWTF-SM-005')!.findings, [], show(other, 'OWTF-SM-005'));
    }
  });

  test('rules for pages read the answers the servers sent as html, whatever their status: the absent findings list exactly those', () => {
    for (const t of targets.values()) {
      const html = answered(t).filter((tx) => linesOf(headerLinesOf(tx), 'Content-Type').some((l) => /html/i.test(l))).map((tx) => tx.id);
      assert.ok(html.length >= 5, `${t.name}: ${html.length}`);
      for (const [code, title, rank] of [
        ['OWTF-WGP-001', 'No framing protection (X-Frame-Options or CSP frame-ancestors) on any page', 2],
        ['OWTF-DV-001', 'No Content-Security-Policy on any page', 2],
        ['OWTF-AT-007', 'No Cache-Control header on any page', 1],
      ] as const) {
        const f = finding(t, code, title);
        assert.equal(f.rank, rank);
        assert.deepEqual(sorted(f.transactions), html, `${t.name} ${code}`);
      }
    }
    // Apache answers TRACE with the request echoed as message/http: not a page
    const apache = targets.get('apache-full')!;
    const trace = [...apache.txs.values()].find((tx) => tx.method === 'TRACE')!;
    assert.equal(trace.response_status, '200 OK');
    assert.ok(linesOf(headerLinesOf(trace), 'Content-Type').some((l) => /message\/http/.test(l)), trace.response_headers);
    assert.ok(!finding(apache, 'OWTF-WGP-001', 'No framing protection (X-Frame-Options or CSP frame-ancestors) on any page').transactions!.includes(trace.id));
    assert.ok(finding(apache, 'OWTF-DV-001', 'No X-Content-Type-Options: nosniff on any response').transactions!.includes(trace.id));
  });
});
