import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { RequestListener } from 'node:http';
import type { ServerOptions } from 'node:https';
import { checkCookies } from '../../src/engine/checks/cookies.ts';
import { highestRank } from '../../src/engine/checks/outcome.ts';
import { checkTls } from '../../src/engine/checks/tls.ts';
import type { CheckInput, CheckResult, Finding } from '../../src/engine/types.ts';
import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { rootCertificates } from 'node:tls';
import { caFilesOf, fingerprintOf, trustStore } from '../../src/engine/checks/trust.ts';
import { finiteFieldSecurityBits, signatureAlgorithmOid, strengthOf } from '../../src/engine/checks/certificate-strength.ts';
import type { DetailedPeerCertificate } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeCertificates, type KeyPair, type TestCertificates } from './fixtures/certs.ts';
import { inputFor, serveHttp, serveHttps, type Target } from './fixtures/targets.ts';

const page: RequestListener = (_req, res) => {
  res.setHeader('Set-Cookie', 'sid=1; HttpOnly; SameSite=Lax');
  res.end('ok');
};

function findingsOf(result: CheckResult): Finding[] {
  assert.equal(result.status, 'Successful', JSON.stringify(result));
  return result.status === 'Successful' ? result.findings : [];
}

describe('the tls check (OWTF-CM-001)', () => {
  let certs: TestCertificates;
  const targets: Target[] = [];
  let dir: string;
  /** The input naming the test CA in TLS_CA_FILES, as a tester with a lab CA would. */
  let trustingTestCa: (url: string) => CheckInput;
  const serve = async (pair: KeyPair & ServerOptions) => {
    const target = await serveHttps(page, pair);
    targets.push(target);
    return target.url;
  };
  before(() => {
    certs = makeCertificates();
    dir = mkdtempSync(join(tmpdir(), 'assessd-tls-'));
    writeFileSync(join(dir, 'ca.pem'), certs.ca);
    trustingTestCa = (url) => ({ ...inputFor(url), config: (key) => (key === 'TLS_CA_FILES' ? join(dir, 'ca.pem') : undefined) });
  });
  after(async () => {
    await Promise.all(targets.map((t) => t.close()));
    rmSync(dir, { recursive: true, force: true });
  });

  test('a valid chain, trusted, for the host: rank 0, the certificate and protocol in the summary', async () => {
    const result = await checkTls(trustingTestCa(await serve(certs.valid)));
    assert.deepEqual(findingsOf(result), []);
    const summary = result.status === 'Successful' ? result.summary : '';
    assert.match(summary, /Protocol: TLSv1\.3/);
    assert.match(summary, /Subject: CN=localhost/);
    assert.match(summary, /Issuer: CN=assessd test CA/);
    assert.match(summary, /Subject Alternative Name: IP Address:127\.0\.0\.1, DNS:localhost/);
    assert.match(summary, /Chain: verified/);
  });

  test('the same leaf from a CA the box does not trust: one rank-3 "Incomplete or untrusted chain"', async () => {
    const result = await checkTls(inputFor(await serve(certs.valid)));
    const findings = findingsOf(result);
    assert.deepEqual(findings.map((f) => [f.rank, f.title]), [[3, 'Incomplete or untrusted chain']]);
    assert.match(findings[0]!.detail, /^The issuer of CN=localhost, CN=assessd test CA, was not sent by the server and no trusted store holds it: .*\(verification: UNABLE_TO_VERIFY_LEAF_SIGNATURE\)$/);
    assert.match(result.status === 'Successful' ? result.summary : '', /Chain: not verified \(UNABLE_TO_VERIFY_LEAF_SIGNATURE\); it reaches no trusted root/);
  });

  test('a chain sent up to a root the box does not trust: "Untrusted issuer", naming the root', async () => {
    const findings = findingsOf(await checkTls(inputFor(await serve({ key: certs.valid.key, cert: certs.valid.cert + certs.ca }))));
    assert.deepEqual(findings.map((f) => [f.rank, f.title]), [[3, 'Untrusted issuer']]);
    assert.match(findings[0]!.detail, /^The chain ends at CN=assessd test CA, a root no trusted store holds \(verification: SELF_SIGNED_CERT_IN_CHAIN\)$/);
  });

  test('an intermediate the server does not send: "Incomplete or untrusted chain"; sent, rank 0', async () => {
    const missing = findingsOf(await checkTls(trustingTestCa(await serve(certs.viaIntermediate))));
    assert.deepEqual(missing.map((f) => [f.rank, f.title]), [[3, 'Incomplete or untrusted chain']]);
    assert.match(missing[0]!.detail, /^The issuer of CN=localhost, CN=assessd test intermediate, was not sent/);
    const sent = await checkTls(trustingTestCa(await serve({ key: certs.viaIntermediate.key, cert: certs.viaIntermediate.chain })));
    assert.deepEqual(findingsOf(sent), []);
    assert.match(sent.status === 'Successful' ? sent.summary : '', /Chain: verified; it reaches CN=assessd test CA, trusted by TLS_CA_FILES .*ca\.pem/);
  });

  test('a self-signed certificate the tester names in TLS_CA_FILES is trusted (as openssl -CAfile trusts it)', async () => {
    writeFileSync(join(dir, 'self.pem'), certs.selfSigned.cert);
    const input = { ...inputFor(await serve(certs.selfSigned)), config: (key: string) => (key === 'TLS_CA_FILES' ? ` ${join(dir, 'self.pem')} , ${join(dir, 'ca.pem')}` : undefined) };
    assert.deepEqual(findingsOf(await checkTls(input)), []);
  });

  test('a CA file that cannot be read: Skipped, naming the key and the path', async () => {
    const url = await serve(certs.valid);
    const missing = join(dir, 'missing.pem');
    writeFileSync(join(dir, 'empty.pem'), 'no certificate here\n');
    for (const [file, why] of [[missing, 'could not be read (ENOENT)'], [join(dir, 'empty.pem'), 'holds no PEM certificate']] as const) {
      const result = await checkTls({ ...inputFor(url), config: (key) => (key === 'TLS_CA_FILES' ? file : undefined) });
      assert.deepEqual(result, { status: 'Skipped', reason: `TLS_CA_FILES: ${file} ${why}: fix or empty TLS_CA_FILES in the configuration` });
    }
  });

  test('a self-signed certificate: one rank-3 "Self-signed certificate"', async () => {
    const findings = findingsOf(await checkTls(inputFor(await serve(certs.selfSigned))));
    assert.deepEqual(findings.map((f) => [f.rank, f.title]), [[3, 'Self-signed certificate']]);
    assert.equal(findings[0]!.detail, 'Issuer: CN=localhost is the subject itself, and no trusted store holds it (verification: DEPTH_ZERO_SELF_SIGNED_CERT)');
  });

  test('a certificate whose names hold line breaks adds no line: each CR and LF written as \\r and \\n, in the summary and the findings', async () => {
    // as a hostile target's certificate can: lines that would read as the check's own
    writeFileSync(join(dir, 'lines.cnf'), [
      '[req]', 'distinguished_name = dn', 'prompt = no', 'utf8 = yes', 'string_mask = utf8only', 'x509_extensions = ext', '[dn]', 'CN = 127.0.0.1',
      // (each field at most 64 characters)
      'O = Acme\\nChain: verified; it reaches a trusted root', 'OU = \\r\\n[rank 0] Certificate valid and trusted', '[ext]', 'subjectAltName = IP:127.0.0.1',
    ].join('\n'));
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2', '-config', 'lines.cnf', '-keyout', 'lines.key', '-out', 'lines.crt'], { cwd: dir, stdio: 'ignore' });
    const result = await checkTls(inputFor(await serve({ key: readFileSync(join(dir, 'lines.key'), 'utf8'), cert: readFileSync(join(dir, 'lines.crt'), 'utf8') })));
    const findings = findingsOf(result);
    const summary = result.status === 'Successful' ? result.summary : '';
    assert.match(summary, /^Subject: CN=127\.0\.0\.1, O=Acme\\nChain: verified; it reaches a trusted root, OU=\\r\\n\[rank 0\] Certificate valid and trusted$/m);
    assert.deepEqual(summary.split('\n').filter((line) => /^(Chain|\[rank 0\])/.test(line)), ['Chain: not verified (DEPTH_ZERO_SELF_SIGNED_CERT); it reaches no trusted root']);
    assert.deepEqual(findings.map((f) => f.title), ['Self-signed certificate']);
    assert.ok(!findings[0]!.detail.includes('\n'), findings[0]!.detail);
    // a CN alone, not the host's: node's own reason quotes it
    writeFileSync(join(dir, 'cn.cnf'), ['[req]', 'distinguished_name = dn', 'prompt = no', 'utf8 = yes', 'string_mask = utf8only', '[dn]', 'CN = evil\\n[rank 0] Certificate valid'].join('\n'));
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2', '-config', 'cn.cnf', '-keyout', 'cn.key', '-out', 'cn.crt'], { cwd: dir, stdio: 'ignore' });
    // (by name: for an address node's reason does not quote the CN)
    const byName = (await serve({ key: readFileSync(join(dir, 'cn.key'), 'utf8'), cert: readFileSync(join(dir, 'cn.crt'), 'utf8') })).replace('127.0.0.1', 'localhost');
    const wrongFindings = findingsOf(await checkTls(inputFor(byName)));
    assert.ok(wrongFindings.some((f) => f.title === 'Certificate is not for localhost' && f.detail.includes('evil\\n[rank 0]')), JSON.stringify(wrongFindings));
    for (const f of wrongFindings) assert.ok(!f.detail.includes('\n'), f.detail);
  });

  test('an expired certificate: rank 3 "Certificate expired", quoting its Not After', async () => {
    const findings = findingsOf(await checkTls(trustingTestCa(await serve(certs.expired))));
    assert.deepEqual(findings.map((f) => [f.rank, f.title]), [[3, 'Certificate expired']]);
    assert.equal(findings[0]!.detail, 'Not After: Feb  1 00:00:00 2020 GMT (subject CN=localhost); rule: the current time is after Not After');
  });

  test('an expired certificate from an untrusted CA: both said, one finding each', async () => {
    const findings = findingsOf(await checkTls(inputFor(await serve(certs.expired))));
    assert.deepEqual(findings.map((f) => f.title).sort(), ['Certificate expired', 'Incomplete or untrusted chain']);
  });

  test('a certificate not yet valid: rank 3, quoting its Not Before', async () => {
    const findings = findingsOf(await checkTls(trustingTestCa(await serve(certs.notYetValid))));
    assert.deepEqual(findings.map((f) => [f.rank, f.title]), [[3, 'Certificate not yet valid']]);
    assert.match(findings[0]!.detail, /^Not Before: Jan {2}1 00:00:00 2099 GMT/);
  });

  test('a certificate for another host: rank 3, naming the names it is for', async () => {
    const findings = findingsOf(await checkTls(trustingTestCa(await serve(certs.wrongHost))));
    assert.deepEqual(findings.map((f) => [f.rank, f.title]), [[3, 'Certificate is not for 127.0.0.1']]);
    assert.match(findings[0]!.detail, /^Subject Alternative Name: DNS:wrong\.example \(.*IP: 127\.0\.0\.1 is not in the cert's list/);
  });

  test('the same valid certificate is for localhost too', async () => {
    const url = (await serve(certs.valid)).replace('127.0.0.1', 'localhost');
    assert.equal(highestRank(findingsOf(await checkTls(trustingTestCa(url)))), 0);
  });

  // Node's https server refuses to load these at its default level, as nginx does: the lab lowers it
  const weakLevel = { ciphers: 'DEFAULT:@SECLEVEL=0' };

  test('a chain that verifies but is signed with SHA-1: rank 3 "signed with a weak algorithm", the chain not called verified', async () => {
    const result = await checkTls(trustingTestCa(await serve({ ...certs.sha1Signed, ...weakLevel })));
    const findings = findingsOf(result);
    assert.deepEqual(findings.map((f) => [f.rank, f.title]), [[3, 'Certificate signed with a weak algorithm: ecdsa-with-SHA1']]);
    assert.match(findings[0]!.detail, /^The certificate CN=localhost is signed with ecdsa-with-SHA1; rule: openssl's default security level refuses MD5 and SHA-1 signatures/);
    const summary = result.status === 'Successful' ? result.summary : '';
    assert.match(summary, /Signature: ecdsa-with-SHA1; key: EC 256 bits/);
    assert.match(summary, /Chain: not verified \(a signature or key openssl's default security level refuses\); it reaches CN=assessd test CA/);
  });

  test('a chain that verifies with an RSA key of 1024 bits: rank 3 "key too weak"', async () => {
    const findings = findingsOf(await checkTls(trustingTestCa(await serve({ ...certs.weakKey, ...weakLevel }))));
    assert.deepEqual(findings.map((f) => [f.rank, f.title]), [[3, 'Certificate key too weak: RSA 1024 bits']]);
    assert.match(findings[0]!.detail, /needs 2048 bits for RSA and DSA \(a DSA subgroup q of 224\), 224 for EC \("EE certificate key too weak"\)$/);
  });

  test('the good chain names its signature and key in the summary', async () => {
    const result = await checkTls(trustingTestCa(await serve(certs.valid)));
    assert.match(result.status === 'Successful' ? result.summary : '', /Signature: ecdsa-with-SHA256; key: EC 256 bits\nChain: verified/);
  });

  test('a self-signed SHA-1 certificate the tester trusts as itself: rank 0, as openssl (a trust anchor\'s own signature is not judged)', async () => {
    const file = join(dir, 'self-sha1.pem');
    writeFileSync(file, certs.selfSignedSha1.cert);
    const url = await serve({ ...certs.selfSignedSha1, ...weakLevel });
    const result = await checkTls({ ...inputFor(url), config: (key) => (key === 'TLS_CA_FILES' ? file : undefined) });
    assert.deepEqual(findingsOf(result), []);
    assert.match(result.status === 'Successful' ? result.summary : '', /Signature: ecdsa-with-SHA1; key: EC 256 bits\nChain: verified/);
  });

  test('a cross-signed root the server also sends, signed with SHA-1, is not judged once a trusted root has its subject and key (openssl stops there: return code 0)', async () => {
    const made = chainsByOpenssl();
    const url = await serve({ key: made.leafKey, cert: made.leaf + made.intermediate + made.rootTwoCrossSigned, ...weakLevel });
    const caFile = join(dir, 'root-two.pem');
    writeFileSync(caFile, made.rootTwo);
    assert.equal(await opensslVerifies(new URL(url).port, caFile), 'ok');
    const result = await checkTls({ ...inputFor(url), config: (key) => (key === 'TLS_CA_FILES' ? caFile : undefined) });
    assert.deepEqual(findingsOf(result), []);
    assert.match(result.status === 'Successful' ? result.summary : '', /Chain: verified/);
  });

  test('RSASSA-PSS: with SHA-1 (its default hash) rank 3, as openssl refuses it; with SHA-256 rank 0', async () => {
    const made = chainsByOpenssl();
    const caFile = join(dir, 'root-one.pem');
    writeFileSync(caFile, made.rootOne);
    const weak = await serve({ key: made.leafKey, cert: made.pssSha1, ...weakLevel });
    assert.match(await opensslVerifies(new URL(weak).port, caFile), /digest algorithm too weak/);
    const weakFindings = findingsOf(await checkTls({ ...inputFor(weak), config: (key) => (key === 'TLS_CA_FILES' ? caFile : undefined) }));
    assert.deepEqual(weakFindings.map((f) => [f.rank, f.title]), [[3, 'Certificate signed with a weak algorithm: rsassaPss with SHA-1']]);
    const strong = await serve({ key: made.leafKey, cert: made.pssSha256, ...weakLevel });
    assert.equal(await opensslVerifies(new URL(strong).port, caFile), 'ok');
    const strongResult = await checkTls({ ...inputFor(strong), config: (key) => (key === 'TLS_CA_FILES' ? caFile : undefined) });
    assert.deepEqual(findingsOf(strongResult), []);
    assert.match(strongResult.status === 'Successful' ? strongResult.summary : '', /Signature: rsassaPss with SHA-256; key: RSA-PSS 2048 bits|Signature: rsassaPss with SHA-256; key: RSA 2048 bits/);
  });

  test('a server that speaks only TLS 1.0 is reached, and its protocol said (rank 0)', async () => {
    const url = await serve({ ...certs.valid, minVersion: 'TLSv1', maxVersion: 'TLSv1', ciphers: 'DEFAULT:@SECLEVEL=0' });
    const findings = findingsOf(await checkTls(trustingTestCa(url)));
    assert.deepEqual(findings, [{ rank: 0, title: 'Legacy protocol TLSv1', detail: 'Negotiated TLSv1, deprecated by RFC 8996' }]);
  });

  test('an http target: Skipped, with the reason', async () => {
    const target = await serveHttp(page);
    targets.push(target);
    assert.deepEqual(await checkTls(inputFor(target.url)), {
      status: 'Skipped',
      reason: `${target.url} is not https: no certificate to check`,
    });
  });

  test('over https a cookie without Secure is said (cookies, rank 2)', async () => {
    const findings = findingsOf(await checkCookies(inputFor(await serve(certs.valid))));
    assert.deepEqual(findings.map((f) => [f.rank, f.title, f.detail.split('\n')[0]]), [[2, 'Cookie sid lacks Secure', 'Set-Cookie: sid=1; HttpOnly; SameSite=Lax']]);
    assert.match(findings[0]!.detail, /Rule: .* and over https Secure \(never sent over http\)$/);
  });
});

/** openssl s_client's verdict on the server at `port` (this process's: asked without blocking it) for localhost, trusting `caFile`: 'ok', or its error. */
function opensslVerifies(port: string, caFile: string): Promise<string> {
  return new Promise((resolve) => {
    const child = execFile('openssl', ['s_client', '-connect', `127.0.0.1:${port}`, '-servername', 'localhost', '-verify_hostname', 'localhost', '-CAfile', caFile], { timeout: 10_000 }, (_err, stdout, stderr) => {
      const code = /Verify return code: (\d+) \(([^)]*)\)/.exec(stdout);
      resolve(code?.[1] === '0' ? 'ok' : (code?.[2] ?? stderr));
    });
    child.stdin?.end();
  });
}

/**
 * Chains openssl makes: root two (trusted in the test), cross-signed by root one with SHA-1; an
 * intermediate of root two; a leaf for localhost under it; and leaves root one signed with
 * RSASSA-PSS, SHA-1 and SHA-256.
 */
function chainsByOpenssl(): { rootOne: string; rootTwo: string; rootTwoCrossSigned: string; intermediate: string; leaf: string; leafKey: string; pssSha1: string; pssSha256: string } {
  const work = mkdtempSync(join(tmpdir(), 'assessd-cross-'));
  try {
    const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: work, stdio: ['ignore', 'ignore', 'pipe'] });
    writeFileSync(join(work, 'ca.ext'), 'basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign\n');
    writeFileSync(join(work, 'leaf.ext'), 'basicConstraints=CA:FALSE\nsubjectAltName=DNS:localhost,IP:127.0.0.1\n');
    const root = ['-newkey', 'rsa:2048', '-nodes', '-days', '2', '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign'];
    ssl('req', '-x509', ...root, '-keyout', 'r1.key', '-out', 'r1.crt', '-subj', '/CN=root one');
    ssl('req', '-x509', ...root, '-keyout', 'r2.key', '-out', 'r2.crt', '-subj', '/CN=root two');
    ssl('req', '-new', '-key', 'r2.key', '-out', 'r2.csr', '-subj', '/CN=root two');
    const sign = (csr: string, by: string, out: string, ext: string, ...more: string[]) =>
      ssl('x509', '-req', '-in', csr, '-CA', `${by}.crt`, '-CAkey', `${by}.key`, '-CAcreateserial', '-days', '2', '-extfile', ext, '-out', out, ...more);
    sign('r2.csr', 'r1', 'r2x.crt', 'ca.ext', '-sha1');
    ssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'i.key', '-out', 'i.csr', '-subj', '/CN=intermediate');
    sign('i.csr', 'r2', 'i.crt', 'ca.ext', '-sha256');
    ssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'leaf.key', '-out', 'leaf.csr', '-subj', '/CN=localhost');
    sign('leaf.csr', 'i', 'leaf.crt', 'leaf.ext', '-sha256');
    sign('leaf.csr', 'r1', 'pss1.crt', 'leaf.ext', '-sha1', '-sigopt', 'rsa_padding_mode:pss');
    sign('leaf.csr', 'r1', 'pss256.crt', 'leaf.ext', '-sha256', '-sigopt', 'rsa_padding_mode:pss');
    const read = (file: string) => readFileSync(join(work, file), 'utf8');
    return {
      rootOne: read('r1.crt'), rootTwo: read('r2.crt'), rootTwoCrossSigned: read('r2x.crt'), intermediate: read('i.crt'),
      leaf: read('leaf.crt'), leafKey: read('leaf.key'), pssSha1: read('pss1.crt'), pssSha256: read('pss256.crt'),
    };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

describe('a certificate\'s signature algorithm, read from its DER', () => {
  test('read from real certificates; anything cut, padded or not DER gives undefined, never a throw', () => {
    const certs = makeCertificates();
    const der = (pem: string) => Buffer.from(pem.replace(/-----[^-]+-----|\s/g, ''), 'base64');
    assert.equal(signatureAlgorithmOid(der(certs.valid.cert)), '1.2.840.10045.4.3.2');
    assert.equal(signatureAlgorithmOid(der(certs.sha1Signed.cert)), '1.2.840.10045.4.1');
    assert.equal(signatureAlgorithmOid(der(certs.weakKey.cert)), '1.2.840.10045.4.3.2');
    const whole = der(certs.weakKey.cert);
    for (let cut = 0; cut < whole.length; cut += 7) assert.equal(signatureAlgorithmOid(whole.subarray(0, cut)), undefined, `cut at ${cut}`);
    // a length of 4 GiB, an indefinite length, an OID whose arc never ends
    for (const hostile of ['3084ffffffff', '3080', '30083006300406028f8f', '']) assert.equal(signatureAlgorithmOid(Buffer.from(hostile, 'hex')), undefined, hostile);
    let seed = 7;
    for (let round = 0; round < 2000; round++) {
      const bytes = Buffer.from(whole);
      for (let i = 0; i < 4; i++) {
        seed = (seed * 1103515245 + 12345) % 2 ** 31;
        bytes[seed % bytes.length] = seed & 0xff;
      }
      const oid = signatureAlgorithmOid(bytes);
      assert.ok(oid === undefined || /^\d+(\.\d+)+$/.test(oid), oid);
    }
  });
});

describe("a DSA key's strength: its modulus and its subgroup, as openssl judges them", () => {
  test('a 2048-bit DSA key with a 160-bit q is too weak (openssl verify: "EE certificate key too weak"); with a 224-bit q it is not', () => {
    const dir = mkdtempSync(join(tmpdir(), 'assessd-dsa-'));
    const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] }).toString();
    try {
      openssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-subj', '/CN=dsa test CA', '-days', '2',
        '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign');
      const leaf = (q: number) => {
        openssl('genpkey', '-genparam', '-algorithm', 'DSA', '-pkeyopt', 'dsa_paramgen_bits:2048', '-pkeyopt', `dsa_paramgen_q_bits:${q}`, '-out', `p${q}.pem`);
        openssl('genpkey', '-paramfile', `p${q}.pem`, '-out', `k${q}.pem`);
        openssl('req', '-new', '-key', `k${q}.pem`, '-subj', '/CN=localhost', '-out', `l${q}.csr`);
        openssl('x509', '-req', '-in', `l${q}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2', '-out', `l${q}.crt`);
        const verdict = (() => {
          try {
            // the level s_client applies by default (Debian's openssl.cnf: 2); verify alone applies none
            return openssl('verify', '-auth_level', '2', '-CAfile', 'ca.crt', `l${q}.crt`);
          } catch (err) {
            return String((err as { stdout?: Buffer }).stdout) + String((err as { stderr?: Buffer }).stderr);
          }
        })();
        const der = Buffer.from(readFileSync(join(dir, `l${q}.crt`), 'utf8').replace(/-----[^-]+-----|\s/g, ''), 'base64');
        return { verdict, strength: strengthOf({ raw: der } as DetailedPeerCertificate) };
      };
      const weak = leaf(160);
      assert.match(weak.verdict, /EE certificate key too weak/, 'the truth: openssl at its default level');
      assert.deepEqual(weak.strength, { signature: 'ecdsa-with-SHA256', weakSignature: false, key: 'DSA 2048 bits (q 160 bits)', weakKey: true });
      const fine = leaf(224);
      assert.match(fine.verdict, /: OK$/m);
      assert.deepEqual(fine.strength, { signature: 'ecdsa-with-SHA256', weakSignature: false, key: 'DSA 2048 bits (q 224 bits)', weakKey: false });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("openssl's bits of security for a finite-field key: the modulus's, or half the subgroup's when less", () => {
    assert.equal(finiteFieldSecurityBits(2048, 160), 80);
    assert.equal(finiteFieldSecurityBits(2048, 224), 112);
    assert.equal(finiteFieldSecurityBits(2048, 256), 112);
    assert.equal(finiteFieldSecurityBits(3072, 256), 128);
    assert.equal(finiteFieldSecurityBits(1024, 160), 80);
    assert.equal(finiteFieldSecurityBits(2048, 150), 0, 'a subgroup under 160 bits: none');
    assert.equal(finiteFieldSecurityBits(512, 160), 0);
    assert.equal(finiteFieldSecurityBits(4096, undefined), 128);
  });
});

describe('the trust store (what the tls check trusts)', () => {
  test('the system store as openssl reads it (SSL_CERT_FILE, SSL_CERT_DIR\'s hashed names), NODE_EXTRA_CA_CERTS and the tester\'s files, each named', async () => {
    const certs = makeCertificates();
    const dir = mkdtempSync(join(tmpdir(), 'assessd-trust-'));
    try {
      const hashed = join(dir, 'hashed');
      mkdirSync(hashed);
      writeFileSync(join(dir, 'bundle.pem'), certs.ca);
      writeFileSync(join(hashed, '0123abcd.0'), certs.intermediate);
      writeFileSync(join(hashed, 'not-hashed.pem'), certs.selfSigned.cert);
      writeFileSync(join(dir, 'extra.pem'), certs.valid.cert);
      writeFileSync(join(dir, 'lab.pem'), certs.wrongHost.cert);
      const env = { SSL_CERT_FILE: join(dir, 'bundle.pem'), SSL_CERT_DIR: hashed, NODE_EXTRA_CA_CERTS: join(dir, 'extra.pem') };
      const result = await trustStore([join(dir, 'lab.pem')], env);
      assert.ok(result.ok);
      const source = (pem: string) => result.store.sourceOf(fingerprintOf(pem)!);
      assert.equal(source(certs.ca), `the system store ${join(dir, 'bundle.pem')}`);
      assert.equal(source(certs.intermediate), `the system store ${hashed}`);
      assert.equal(source(certs.selfSigned.cert), undefined, 'openssl reads only hashed names in its directory');
      assert.equal(source(certs.valid.cert), `NODE_EXTRA_CA_CERTS ${join(dir, 'extra.pem')}`);
      assert.equal(source(certs.wrongHost.cert), `TLS_CA_FILES ${join(dir, 'lab.pem')}`);
      assert.ok(result.store.sourceOf(fingerprintOf(rootCertificates[0]!)!));
      assert.match(result.store.sources.join(', '), /^Node's bundled roots \(\d+\), the system store .*bundle\.pem \(1\), the system store .*hashed \(1\), NODE_EXTRA_CA_CERTS .*extra\.pem \(1\), TLS_CA_FILES .*lab\.pem \(1\)$/);
      assert.equal(await trustStore([join(dir, 'lab.pem')], env), result, 'built once while nothing changed');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('TLS_CA_FILES: paths separated by commas or newlines, blanks ignored', () => {
    assert.deepEqual(caFilesOf(' /a.pem, /b c.pem ,\n/d.pem,, '), ['/a.pem', '/b c.pem', '/d.pem']);
    assert.deepEqual(caFilesOf(''), []);
    assert.deepEqual(caFilesOf(undefined), []);
  });
});
