/** OWTF-CM-001: the certificate an https target presents (dates, issuer, host) and the protocol. */
import { checkServerIdentity, type PeerCertificate } from 'node:tls';
import { fetchPage, type FetchPage, type TlsInfo } from './client.js';
import { successful, unlessNoAnswer } from './outcome.js';
import type { CheckInput, CheckResult, Finding } from '../types.js';

/**
 * Verification codes that other findings already say (dates, host, self-signed). A leaf whose
 * issuer is its own subject is "self-signed"; any other leaf whose chain does not end at a root
 * the box trusts (or fails to verify for another reason) is "untrusted issuer", also rank 3.
 */
const SAID_ELSEWHERE = new Set(['CERT_HAS_EXPIRED', 'CERT_NOT_YET_VALID', 'ERR_TLS_CERT_ALTNAME_INVALID', 'DEPTH_ZERO_SELF_SIGNED_CERT']);

const LEGACY_PROTOCOLS = new Set(['SSLv3', 'TLSv1', 'TLSv1.1']);

export function checkTls(input: CheckInput, fetch: FetchPage = fetchPage): Promise<CheckResult> {
  const url = new URL(input.target.target_url);
  if (url.protocol !== 'https:') {
    return Promise.resolve({ status: 'Skipped', reason: `${input.target.target_url} is not https: no certificate to check` });
  }
  return unlessNoAnswer(input, async () => {
    // The target's own certificate: no redirect, and the body barely matters.
    const page = await fetch(url.href, { timeoutMs: input.timeoutMs, signal: input.signal, maxRedirects: 0, maxBytes: 64 * 1024 });
    const summary = [`GET ${url.href} over TLS`];
    if (!page.tls?.certificate?.raw) {
      return successful([{ rank: 3, title: 'No certificate', detail: 'The target presented no certificate' }], summary);
    }
    summary.push(...describeCertificate(page.tls));
    return successful(certificateFindings(page.tls, hostOf(url), new Date()), summary);
  });
}

/** The certificate's problems, one finding each, rank 3 (and an old protocol, said at rank 0). */
export function certificateFindings(tls: TlsInfo, host: string, now: Date): Finding[] {
  const cert = tls.certificate;
  const subject = distinguishedName(cert.subject);
  const issuer = distinguishedName(cert.issuer);
  const findings: Finding[] = [];
  if (now.getTime() > Date.parse(cert.valid_to)) {
    findings.push({ rank: 3, title: 'Certificate expired', detail: `Not After: ${cert.valid_to} (subject ${subject})` });
  }
  if (now.getTime() < Date.parse(cert.valid_from)) {
    findings.push({ rank: 3, title: 'Certificate not yet valid', detail: `Not Before: ${cert.valid_from} (subject ${subject})` });
  }
  const selfSigned = subject === issuer || tls.authorizationError === 'DEPTH_ZERO_SELF_SIGNED_CERT';
  if (selfSigned) findings.push({ rank: 3, title: 'Self-signed certificate', detail: `Issuer: ${issuer} is the subject itself` });
  else if (!tls.issuerTrusted || (tls.authorizationError && !SAID_ELSEWHERE.has(tls.authorizationError))) {
    const verification = tls.authorizationError ? `verification: ${tls.authorizationError}` : 'no trusted root';
    const reason = tls.issuerTrusted ? verification : `no trusted root above it; ${verification}`;
    findings.push({ rank: 3, title: 'Untrusted issuer', detail: `Issuer: ${issuer} (${reason})` });
  }
  if (tls.protocol && LEGACY_PROTOCOLS.has(tls.protocol)) {
    // The contract ranks only the certificate; an old protocol is said, for the tester to rank.
    findings.push({ rank: 0, title: `Legacy protocol ${tls.protocol}`, detail: `Negotiated ${tls.protocol}, deprecated by RFC 8996` });
  }
  const mismatch = checkServerIdentity(host, cert);
  if (mismatch) {
    const names = cert.subjectaltname ? `Subject Alternative Name: ${cert.subjectaltname}` : `Subject: ${subject}`;
    findings.push({ rank: 3, title: `Certificate is not for ${host}`, detail: `${names} (${mismatch.message})` });
  }
  return findings;
}

function describeCertificate(tls: TlsInfo): string[] {
  const cert = tls.certificate;
  return [
    `Protocol: ${tls.protocol ?? 'unknown'}`,
    `Subject: ${distinguishedName(cert.subject)}`,
    `Issuer: ${distinguishedName(cert.issuer)}`,
    `Valid: ${cert.valid_from} to ${cert.valid_to}`,
    ...(cert.subjectaltname ? [`Subject Alternative Name: ${cert.subjectaltname}`] : []),
    `Chain: ${tls.authorized ? 'verified' : `not verified (${tls.authorizationError ?? 'unknown reason'})`}`,
  ];
}

/** `CN=localhost, O=Example` from the parsed name (a repeated field is an array). */
export function distinguishedName(name: PeerCertificate['subject'] | undefined): string {
  if (!name) return '(none)';
  return Object.entries(name)
    .flatMap(([key, value]) => (Array.isArray(value) ? value : [value]).map((v) => `${key}=${v}`))
    .join(', ');
}

function hostOf(url: URL): string {
  return url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
}
