/**
 * OWTF-CM-001: the certificate an https target presents (dates, host, chain) and the protocol.
 * Trusted is what openssl on the box trusts, Node's roots, NODE_EXTRA_CA_CERTS and the tester's CA
 * files (trust.ts): a certificate that verifies against them, for the host, has no finding above
 * rank 0 (one that names the host in its CN alone is said, at 0: browsers refuse it).
 */
import { checkServerIdentity, type DetailedPeerCertificate, type PeerCertificate } from 'node:tls';
import { bareHost } from '../../evidence/scope.js';
import { fetchPage, type FetchPage, type TlsInfo } from './client.js';
import { shownBy, successful, unlessNoAnswer } from './outcome.js';
import { chainOf, selfIssued, strengthOf } from './certificate-strength.js';
import { CA_FILES_KEY, caFilesOf, chainTop, trustStore, type TrustStore } from './trust.js';
import { oneLine } from '../findings.js';
import type { CheckInput, CheckResult, Finding } from '../types.js';

/** Verification codes that the date and host findings already say. */
const SAID_ELSEWHERE = new Set(['CERT_HAS_EXPIRED', 'CERT_NOT_YET_VALID', 'ERR_TLS_CERT_ALTNAME_INVALID']);
/** Codes of a chain that does not reach a trusted root: the chain findings say them. */
const TRUST_CODES = new Set(['DEPTH_ZERO_SELF_SIGNED_CERT', 'SELF_SIGNED_CERT_IN_CHAIN', 'UNABLE_TO_GET_ISSUER_CERT', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE']);

const LEGACY_PROTOCOLS = new Set(['SSLv3', 'TLSv1', 'TLSv1.1']);

export function checkTls(input: CheckInput, fetch: FetchPage = fetchPage): Promise<CheckResult> {
  const url = new URL(input.target.target_url);
  if (url.protocol !== 'https:') {
    return Promise.resolve({ status: 'Skipped', reason: `${input.target.target_url} is not https: no certificate to check` });
  }
  return trustStore(caFilesOf(input.config?.(CA_FILES_KEY))).then((trust) => {
    if (!trust.ok) return { status: 'Skipped', reason: `${trust.reason}: fix or empty ${CA_FILES_KEY} in the configuration` };
    return unlessNoAnswer(input, async () => {
      // The target's own certificate: no redirect, and the body barely matters.
      const page = await fetch(url.href, { timeoutMs: input.timeoutMs, signal: input.signal, maxRedirects: 0, maxBytes: 64 * 1024, secureContext: trust.store.context });
      const summary = [`GET ${url.href} over TLS`];
      if (!page.tls?.certificate?.raw) {
        return successful([{ rank: 3, title: 'No certificate', detail: 'The target presented no certificate', ...shownBy(page) }], summary);
      }
      summary.push(...describeCertificate(page.tls, trust.store), `Trusted: ${trust.store.sources.join(', ')}`);
      const findings = certificateFindings(page.tls, bareHost(url), new Date(), trust.store);
      return successful(findings.map((finding) => ({ ...finding, ...shownBy(page) })), summary);
    });
  });
}

/**
 * The certificate's problems, one rank-3 finding each, saying which rule decided (and an old
 * protocol, said at rank 0). A chain that verified, for the host, has none: openssl agrees.
 */
export function certificateFindings(tls: TlsInfo, host: string, now: Date, store: TrustStore): Finding[] {
  const cert = tls.certificate;
  const subject = distinguishedName(cert.subject);
  const findings: Finding[] = [];
  const mismatch = checkServerIdentity(host, cert);
  if (!tls.authorized) {
    if (now.getTime() > Date.parse(cert.valid_to)) {
      findings.push({ rank: 3, title: 'Certificate expired', detail: `Not After: ${cert.valid_to} (subject ${subject}); rule: the current time is after Not After` });
    }
    if (now.getTime() < Date.parse(cert.valid_from)) {
      findings.push({ rank: 3, title: 'Certificate not yet valid', detail: `Not Before: ${cert.valid_from} (subject ${subject}); rule: the current time is before Not Before` });
    }
    if (mismatch) {
      const names = cert.subjectaltname ? `Subject Alternative Name: ${oneLine(cert.subjectaltname)}` : `Subject: ${subject}`;
      findings.push({ rank: 3, title: `Certificate is not for ${host}`, detail: `${names} (${oneLine(mismatch.message)}); rule: RFC 6125 name matching, as openssl -verify_hostname` });
    }
    const chain = chainFinding(cert, store, tls.authorizationError);
    if (chain) findings.push(chain);
    if (findings.length === 0) {
      findings.push({ rank: 3, title: 'Certificate did not verify', detail: `verification: ${tls.authorizationError ?? 'unknown reason'}` });
    }
  }
  findings.push(...strengthFindings(cert, store));
  const namesInSan = /(?:^|, )(?:DNS|IP Address):/.test(cert.subjectaltname ?? '');
  if (!namesInSan && mismatch === undefined) {
    // openssl (and curl) match the host against the subject's CN when there is no name to match it
    // in: the contract ranks by what openssl verifies; browsers have refused such certificates since 2017
    findings.push({
      rank: 0,
      title: 'No Subject Alternative Name: browsers refuse it',
      detail: `Subject: ${subject} names ${host} in its CN alone; rule: openssl and curl match the CN when the certificate has no DNS or IP name, browsers match the Subject Alternative Name only (Chromium: NET::ERR_CERT_COMMON_NAME_INVALID; RFC 6125, the CA/Browser Forum's requirements)${tls.authorized ? '. Ranked 0: openssl verifies it' : ''}`,
    });
  }
  if (tls.protocol && LEGACY_PROTOCOLS.has(tls.protocol)) {
    // The contract ranks only the certificate; an old protocol is said, for the tester to rank.
    findings.push({ rank: 0, title: `Legacy protocol ${tls.protocol}`, detail: `Negotiated ${tls.protocol}, deprecated by RFC 8996` });
  }
  return findings;
}

/**
 * What openssl's default security level refuses in the chain (certificate-strength.ts), whether
 * or not it verified: the check's own connection takes any level, to reach lab servers.
 */
function strengthFindings(leaf: DetailedPeerCertificate, store: TrustStore): Finding[] {
  const findings: Finding[] = [];
  const trusted = (cert: DetailedPeerCertificate) => cert.raw !== undefined && store.trusts(cert.raw);
  for (const [i, cert] of chainOf(leaf, trusted).entries()) {
    const strength = strengthOf(cert);
    const which = `${i === 0 ? 'the certificate' : 'its issuer'} ${distinguishedName(cert.subject)}`;
    // a trust anchor is trusted for being in the store, not for its signature; its key is judged
    if (strength.weakSignature && !selfIssued(cert) && !trusted(cert)) {
      findings.push({
        rank: 3,
        title: `Certificate signed with a weak algorithm: ${strength.signature}`,
        detail: `${capital(which)} is signed with ${strength.signature}; rule: openssl's default security level refuses MD5 and SHA-1 signatures ("CA signature digest algorithm too weak"), and browsers refuse such certificates`,
      });
    }
    if (strength.weakKey) {
      findings.push({
        rank: 3,
        title: `Certificate key too weak: ${strength.key}`,
        detail: `${capital(which)} has a ${strength.key} key; rule: openssl's default security level needs 2048 bits for RSA and DSA (a DSA subgroup q of 224), 224 for EC ("${i === 0 ? 'EE' : 'CA'} certificate key too weak")`,
      });
    }
  }
  return findings;
}

function capital(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** Why the chain does not reach a trusted root (self-signed, untrusted root, incomplete), or another verification error. */
function chainFinding(cert: DetailedPeerCertificate, store: TrustStore, code: string | undefined): Finding | undefined {
  const { top, selfIssued, anchor } = chainTop(cert, store);
  const verification = code ? `verification: ${code}` : 'not verified';
  if (!anchor) {
    if (selfIssued && top === cert) {
      return { rank: 3, title: 'Self-signed certificate', detail: `Issuer: ${distinguishedName(cert.issuer)} is the subject itself, and no trusted store holds it (${verification})` };
    }
    if (selfIssued) {
      return { rank: 3, title: 'Untrusted issuer', detail: `The chain ends at ${distinguishedName(top.subject)}, a root no trusted store holds (${verification})` };
    }
    return {
      rank: 3,
      title: 'Incomplete or untrusted chain',
      detail: `The issuer of ${distinguishedName(top.subject)}, ${distinguishedName(top.issuer)}, was not sent by the server and no trusted store holds it: an intermediate certificate is missing, or the CA is not trusted (${verification})`,
    };
  }
  if (code && !SAID_ELSEWHERE.has(code) && !TRUST_CODES.has(code)) {
    return { rank: 3, title: 'Certificate did not verify', detail: `The chain reaches a trusted root (${anchor}), but ${verification}` };
  }
  return undefined;
}

function describeCertificate(tls: TlsInfo, store: TrustStore): string[] {
  const cert = tls.certificate;
  const { top, anchor } = chainTop(cert, store);
  const reaches = anchor ? `reaches ${distinguishedName(top.subject)}, trusted by ${anchor}` : 'reaches no trusted root';
  const strength = strengthOf(cert);
  // verified at the check's own security level (any), not at openssl's default
  const weak = strengthFindings(cert, store).length > 0;
  const verified = tls.authorized && !weak ? 'verified' : `not verified (${tls.authorized ? "a signature or key openssl's default security level refuses" : (tls.authorizationError ?? 'unknown reason')})`;
  return [
    `Protocol: ${tls.protocol ?? 'unknown'}`,
    `Subject: ${distinguishedName(cert.subject)}`,
    `Issuer: ${distinguishedName(cert.issuer)}`,
    `Valid: ${cert.valid_from} to ${cert.valid_to}`,
    ...(cert.subjectaltname ? [`Subject Alternative Name: ${oneLine(cert.subjectaltname)}`] : []),
    `Signature: ${strength.signature ?? 'unknown'}; key: ${strength.key ?? 'unknown'}`,
    `Chain: ${verified}; it ${reaches}`,
  ];
}

/** `CN=localhost, O=Example` from the parsed name (a repeated field is an array). */
export function distinguishedName(name: PeerCertificate['subject'] | undefined): string {
  if (!name) return '(none)';
  return oneLine(
    Object.entries(name)
      .flatMap(([key, value]) => (Array.isArray(value) ? value : [value]).map((v) => `${key}=${v}`))
      .join(', '),
  );
}
