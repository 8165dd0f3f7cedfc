/**
 * The seven built-in checks (web/semi_passive) run through the API on local targets: a
 * misconfigured http server, a hardened one, the hardened one over https with a self-signed
 * certificate, and a port that refuses. Each output's owtf_rank follows the contract's table, with
 * findings that quote their evidence. Run once as shipped (semi_passive@<code>), and once through a
 * user plugin file naming each check, so that the checks are seen through the API either way.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { addTargets, get, queue, SEMI_PASSIVE, waitFor, writePluginFile, type Output } from '../helpers/engine.ts';
import { startServer, tempDir, type TestServer } from '../helpers/server.ts';
import { makeCertificates } from '../engine/fixtures/certs.ts';
import { hardened, misconfigured, refusedUrl, serveHttp, serveHttps, type Target } from '../engine/fixtures/targets.ts';

type Code = keyof typeof SEMI_PASSIVE;
const CODES = Object.keys(SEMI_PASSIVE) as Code[];

interface Expected {
  status: 'Successful' | 'Skipped';
  rank: number;
  /** Text the top finding's detail (the evidence) must hold. */
  evidence?: string | RegExp;
}

const MISCONFIGURED: Record<Code, Expected> = {
  'OWTF-IG-001': { status: 'Successful', rank: 1, evidence: 'Disallow: /admin/' },
  'OWTF-IG-004': { status: 'Successful', rank: 1, evidence: /Apache\/2\.4\.41|PHP\/7\.4\.3|WordPress 5\.8\.1/ },
  'OWTF-CM-001': { status: 'Skipped', rank: -1 },
  'OWTF-CM-008': { status: 'Successful', rank: 3, evidence: /TRACE/ },
  'OWTF-SM-002': { status: 'Successful', rank: 2, evidence: 'PHPSESSID=abc123' },
  'OWTF-WGP-001': { status: 'Successful', rank: 2, evidence: /X-Frame-Options/ },
  'OWTF-WGP-002': { status: 'Successful', rank: 4, evidence: /Access-Control-Allow-Credentials: true/i },
};

const HARDENED: Record<Code, Expected> = {
  'OWTF-IG-001': { status: 'Successful', rank: 0 },
  'OWTF-IG-004': { status: 'Successful', rank: 0, evidence: 'nginx' },
  'OWTF-CM-001': { status: 'Skipped', rank: -1 },
  'OWTF-CM-008': { status: 'Successful', rank: 0 },
  'OWTF-SM-002': { status: 'Successful', rank: 0, evidence: 'sid=xyz' },
  'OWTF-WGP-001': { status: 'Successful', rank: 0, evidence: 'DENY' },
  'OWTF-WGP-002': { status: 'Successful', rank: 0 },
};

/** The hardened server over https, with a self-signed certificate: only the certificate is wrong. */
const HARDENED_SELF_SIGNED: Record<Code, Expected> = { ...HARDENED, 'OWTF-CM-001': { status: 'Successful', rank: 3, evidence: /CN=localhost/ } };

/** A port that refuses: every check ran, saw nothing, and says why: unranked, never Passing. */
const REFUSED: Record<Code, Expected> = Object.fromEntries(
  CODES.map((code) => [code, code === 'OWTF-CM-001' ? { status: 'Skipped', rank: -1 } : { status: 'Successful', rank: -1, evidence: /127\.0\.0\.1/ }]),
) as Record<Code, Expected>;

let targets: { misconfigured: Target; hardened: Target; https: Target; refused: string };

before(async () => {
  const certs = makeCertificates();
  targets = {
    misconfigured: await serveHttp(misconfigured),
    hardened: await serveHttp(hardened),
    https: await serveHttps(hardened, certs.selfSigned),
    refused: await refusedUrl(),
  };
});
after(async () => {
  await targets.misconfigured.close();
  await targets.hardened.close();
  await targets.https.close();
});

/** The user's plugin for a check: its own test group code. */
const userCode = (code: Code) => `USR-CHK-${SEMI_PASSIVE[code].toUpperCase()}`;

interface Way {
  name: string;
  /** Writes what the server needs before it starts. */
  prepare(dataDir: string): Promise<void>;
  /** The POST /worklist/ arguments for every check. */
  form: Record<string, string | string[]>;
  /** The output's plugin key for a check. */
  key(code: Code): string;
}

const WAYS: Way[] = [
  {
    name: 'the shipped semi_passive plugins',
    prepare: async () => {},
    form: { group: 'web', type: 'semi_passive', code: CODES },
    key: (code) => `semi_passive@${code}`,
  },
  {
    name: 'a user plugin file naming each built-in check',
    prepare: async (dataDir) => {
      await writePluginFile(dataDir, 'checks.json', {
        test_groups: CODES.map((code) => ({ code: userCode(code), descrip: `Check ${SEMI_PASSIVE[code]}` })),
        plugins: CODES.map((code) => ({ code: userCode(code), group: 'web', type: 'semi_passive', check: SEMI_PASSIVE[code] })),
      });
    },
    form: { group: 'web', type: 'semi_passive', code: CODES.map(userCode) },
    key: (code) => `semi_passive@${userCode(code)}`,
  },
];

for (const way of WAYS) {
  describe(`the built-in checks through the API: ${way.name}`, () => {
    let server: TestServer;
    let byTarget: Map<string, Output[]>;
    const urls = () => [targets.misconfigured.url, targets.hardened.url, targets.https.url, targets.refused];

    before(async () => {
      const dataDir = await tempDir();
      await way.prepare(dataDir);
      server = await startServer({ dataDir, workers: 2, checkTimeoutMs: 3000 });
      const ids = await addTargets(server, ...urls());
      byTarget = new Map();
      try {
        assert.equal(await queue(server, { id: ids.join(','), ...way.form }), CODES.length * ids.length);
        for (const [i, id] of ids.entries()) {
          const done = await waitFor(`the checks on ${urls()[i]}`, async () => {
            const outs: Output[] = await get(server, `/api/v1/targets/${id}/poutput/`);
            return outs.length === CODES.length && outs.every((o) => o.status !== 'Running') ? outs : undefined;
          }, 15_000);
          byTarget.set(urls()[i]!, done);
        }
      } catch (err) {
        // every test below then says why
        byTarget.set('error', [{ error: String(err) } as unknown as Output]);
      }
    });
    after(() => server.close());

    const tables: { name: string; url: () => string; expect: Record<Code, Expected> }[] = [
      { name: 'a misconfigured http server', url: () => targets.misconfigured.url, expect: MISCONFIGURED },
      { name: 'a hardened http server', url: () => targets.hardened.url, expect: HARDENED },
      { name: 'the hardened server over https with a self-signed certificate', url: () => targets.https.url, expect: HARDENED_SELF_SIGNED },
      { name: 'a port that refuses connections', url: () => targets.refused, expect: REFUSED },
    ];
    for (const table of tables) {
      for (const code of CODES) {
        const expected = table.expect[code];
        test(`${code} on ${table.name}: ${expected.status}${expected.status === 'Successful' ? `, owtf_rank ${expected.rank}` : ''}`, () => {
          const outs = byTarget.get(table.url());
          assert.ok(outs, `no outputs: ${JSON.stringify(byTarget.get('error'))}`);
          const out = outs.find((o) => o.plugin_key === way.key(code));
          assert.ok(out, `no output ${way.key(code)}`);
          assert.equal(out.status, expected.status, JSON.stringify(out));
          assert.equal(out.owtf_rank, expected.rank, JSON.stringify(out.findings));
          assert.equal(out.user_rank, -1);
          if (expected.status === 'Skipped') {
            assert.match(out.error!, /https/, out.error!);
            return;
          }
          assert.equal(out.error, null);
          for (const f of out.findings) {
            // the requests that show it, stored as the target's transactions (test/api/engine-check-transactions.test.ts)
            assert.deepEqual(Object.keys(f).sort(), ['detail', 'rank', 'title', 'transactions']);
            assert.ok(f.transactions!.length > 0 && f.transactions!.every((id) => Number.isInteger(id) && id > 0), JSON.stringify(f));
            assert.ok(Number.isInteger(f.rank) && f.rank >= -1 && f.rank <= 5);
            assert.ok(f.title.length > 0 && f.detail.length > 0);
          }
          const top = out.findings.length === 0 ? 0 : out.findings.reduce((max, f) => Math.max(max, f.rank), -1);
          assert.equal(out.owtf_rank, top, 'owtf_rank is the highest finding\'s rank');
          if (expected.rank > 0) assert.ok(out.findings.some((f) => f.rank === expected.rank));
          if (expected.evidence) {
            const top = out.findings.filter((f) => f.rank === expected.rank).map((f) => f.detail).join('\n');
            if (typeof expected.evidence === 'string') assert.ok(top.includes(expected.evidence), `evidence ${expected.evidence} in ${top}`);
            else assert.match(top, expected.evidence);
          }
          assert.equal(typeof out.output, 'string');
          assert.ok(out.output!.length > 0, 'the output text says what was requested');
        });
      }
    }

    test('the target\'s max_owtf_rank is its outputs\' highest', async () => {
      const all: { target_url: string; max_owtf_rank: number; max_user_rank: number }[] = await get(server, '/api/v1/targets/');
      const rank = (url: string) => all.find((t) => t.target_url === url)!;
      assert.equal(rank(targets.misconfigured.url).max_owtf_rank, 4);
      assert.equal(rank(targets.hardened.url).max_owtf_rank, 0);
      assert.equal(rank(targets.https.url).max_owtf_rank, 3);
      assert.equal(rank(targets.misconfigured.url).max_user_rank, -1);
    });
  });
}
