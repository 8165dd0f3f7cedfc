/** Whether a certificate chain ends at a trusted authority, dates aside. */
import { X509Certificate } from 'node:crypto';
import { rootCertificates, type DetailedPeerCertificate } from 'node:tls';

let bundledRoots: Set<string> | undefined;

/**
 * OpenSSL reports only its last verification error, so an expired leaf hides an untrusted issuer:
 * this walks the chain Node built (the peer's certificates, completed from the trusted store) and
 * asks whether its top is Node's bundled roots or one of `extraCa` (NODE_EXTRA_CA_CERTS is not seen).
 */
export function endsAtTrustedRoot(leaf: DetailedPeerCertificate, extraCa: Array<string | Buffer> = []): boolean {
  let top = leaf;
  const seen = new Set<DetailedPeerCertificate>();
  while (top.issuerCertificate && top.issuerCertificate !== top && !seen.has(top)) {
    seen.add(top);
    top = top.issuerCertificate;
  }
  if (top.issuerCertificate !== top) return false;
  bundledRoots ??= new Set(rootCertificates.map(fingerprint));
  return bundledRoots.has(top.fingerprint256) || extraCa.some((pem) => fingerprint(pem) === top.fingerprint256);
}

function fingerprint(pem: string | Buffer): string {
  return new X509Certificate(pem).fingerprint256;
}
