import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { RequestListener } from 'node:http';
import type { ServerOptions } from 'node:https';
import { fetchPage, type FetchPage } from '../../src/engine/checks/client.ts';
import { checkCookies } from '../../src/engine/checks/cookies.ts';
import { highestRank } from '../../src/engine/checks/outcome.ts';
import { checkTls } from '../../src/engine/checks/tls.ts';
import type { CheckResult, Finding } from '../../src/engine/types.ts';
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
  /** A client that also trusts the test CA, as a box with it installed would. */
  let trustingTestCa: FetchPage;
  const serve = async (pair: KeyPair & ServerOptions) => {
    const target = await serveHttps(page, pair);
    targets.push(target);
    return target.url;
  };
  before(() => {
    certs = makeCertificates();
    trustingTestCa = (url, options) => fetchPage(url, { ...options, ca: certs.ca });
  });
  after(() => Promise.all(targets.map((t) => t.close())));

  test('a valid chain, trusted, for the host: rank 0, the certificate and protocol in the summary', async () => {
    const result = await checkTls(inputFor(await serve(certs.valid)), trustingTestCa);
    assert.deepEqual(findingsOf(result), []);
    const summary = result.status === 'Successful' ? result.summary : '';
    assert.match(summary, /Protocol: TLSv1\.3/);
    assert.match(summary, /Subject: CN=localhost/);
    assert.match(summary, /Issuer: CN=assessd test CA/);
    assert.match(summary, /Subject Alternative Name: IP Address:127\.0\.0\.1, DNS:localhost/);
    assert.match(summary, /Chain: verified/);
  });

  test('the same chain from a CA the box does not trust: one rank-3 "Untrusted issuer"', async () => {
    const findings = findingsOf(await checkTls(inputFor(await serve(certs.valid))));
    assert.deepEqual(findings.map((f) => [f.rank, f.title]), [[3, 'Untrusted issuer']]);
    assert.match(findings[0]!.detail, /Issuer: CN=assessd test CA \(no trusted root above it; verification: UNABLE_TO_VERIFY_LEAF_SIGNATURE\)/);
  });

  test('a self-signed certificate: one rank-3 "Self-signed certificate"', async () => {
    const findings = findingsOf(await checkTls(inputFor(await serve(certs.selfSigned))));
    assert.deepEqual(findings.map((f) => [f.rank, f.title]), [[3, 'Self-signed certificate']]);
    assert.equal(findings[0]!.detail, 'Issuer: CN=localhost is the subject itself');
  });

  test('an expired certificate: rank 3 "Certificate expired", quoting its Not After', async () => {
    const findings = findingsOf(await checkTls(inputFor(await serve(certs.expired)), trustingTestCa));
    assert.deepEqual(findings.map((f) => [f.rank, f.title]), [[3, 'Certificate expired']]);
    assert.equal(findings[0]!.detail, 'Not After: Feb  1 00:00:00 2020 GMT (subject CN=localhost)');
  });

  test('an expired certificate from an untrusted CA: both said, one finding each', async () => {
    const findings = findingsOf(await checkTls(inputFor(await serve(certs.expired))));
    assert.deepEqual(findings.map((f) => f.title).sort(), ['Certificate expired', 'Untrusted issuer']);
  });

  test('a certificate not yet valid: rank 3, quoting its Not Before', async () => {
    const findings = findingsOf(await checkTls(inputFor(await serve(certs.notYetValid)), trustingTestCa));
    assert.deepEqual(findings.map((f) => [f.rank, f.title]), [[3, 'Certificate not yet valid']]);
    assert.match(findings[0]!.detail, /^Not Before: Jan {2}1 00:00:00 2099 GMT/);
  });

  test('a certificate for another host: rank 3, naming the names it is for', async () => {
    const findings = findingsOf(await checkTls(inputFor(await serve(certs.wrongHost)), trustingTestCa));
    assert.deepEqual(findings.map((f) => [f.rank, f.title]), [[3, 'Certificate is not for 127.0.0.1']]);
    assert.match(findings[0]!.detail, /^Subject Alternative Name: DNS:wrong\.example \(.*IP: 127\.0\.0\.1 is not in the cert's list/);
  });

  test('the same valid certificate is for localhost too', async () => {
    const url = (await serve(certs.valid)).replace('127.0.0.1', 'localhost');
    assert.equal(highestRank(findingsOf(await checkTls(inputFor(url), trustingTestCa))), 0);
  });

  test('a server that speaks only TLS 1.0 is reached, and its protocol said (rank 0)', async () => {
    const url = await serve({ ...certs.valid, minVersion: 'TLSv1', maxVersion: 'TLSv1', ciphers: 'DEFAULT:@SECLEVEL=0' });
    const findings = findingsOf(await checkTls(inputFor(url), trustingTestCa));
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
    assert.deepEqual(findings.map((f) => [f.rank, f.title, f.detail]), [[2, 'Cookie sid lacks Secure', 'Set-Cookie: sid=1; HttpOnly; SameSite=Lax']]);
  });
});
