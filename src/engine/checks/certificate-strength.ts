/**
 * What openssl's default security level (2, as Debian sets it) refuses in a chain that otherwise
 * verifies, and the tls check's own connection accepts (it asks for level 0, to reach any lab
 * server): a certificate signed with MD2, MD4, MD5 or SHA-1 (verify error 68, "CA signature digest
 * algorithm too weak"; browsers refuse such a certificate too), and a public key under 112 bits of
 * security: RSA or DSA under 2048 bits, a DSA subgroup under 224 bits, EC under 224 (66 "EE
 * certificate key too weak", 67 "CA certificate key too weak"). The trust anchor's own signature
 * is not checked, as openssl does not check it: a root is trusted for being in the store, not for
 * its self-signature.
 */
import type { DetailedPeerCertificate } from 'node:tls';
import { crypto } from '../../lazy-builtins.js';

/** Signature algorithms by object identifier, named as openssl names them. */
const SIGNATURE_ALGORITHMS: Record<string, { name: string; weak?: true }> = {
  '1.2.840.113549.1.1.2': { name: 'md2WithRSAEncryption', weak: true },
  '1.2.840.113549.1.1.3': { name: 'md4WithRSAEncryption', weak: true },
  '1.2.840.113549.1.1.4': { name: 'md5WithRSAEncryption', weak: true },
  '1.2.840.113549.1.1.5': { name: 'sha1WithRSAEncryption', weak: true },
  '1.3.14.3.2.29': { name: 'sha1WithRSA', weak: true },
  '1.2.840.10045.4.1': { name: 'ecdsa-with-SHA1', weak: true },
  '1.2.840.10040.4.3': { name: 'dsaWithSHA1', weak: true },
  '1.2.840.113549.1.1.11': { name: 'sha256WithRSAEncryption' },
  '1.2.840.113549.1.1.12': { name: 'sha384WithRSAEncryption' },
  '1.2.840.113549.1.1.13': { name: 'sha512WithRSAEncryption' },
  '1.2.840.113549.1.1.14': { name: 'sha224WithRSAEncryption' },
  '1.2.840.10045.4.3.1': { name: 'ecdsa-with-SHA224' },
  '1.2.840.10045.4.3.2': { name: 'ecdsa-with-SHA256' },
  '1.2.840.10045.4.3.3': { name: 'ecdsa-with-SHA384' },
  '1.2.840.10045.4.3.4': { name: 'ecdsa-with-SHA512' },
  '2.16.840.1.101.3.4.3.2': { name: 'dsa_with_SHA256' },
  '1.3.101.112': { name: 'ED25519' },
  '1.3.101.113': { name: 'ED448' },
};

/** Hash algorithms a signature scheme may name in its parameters (RSASSA-PSS), weak ones marked. */
const HASHES: Record<string, { name: string; weak?: true }> = {
  '1.2.840.113549.2.5': { name: 'MD5', weak: true },
  '1.3.14.3.2.26': { name: 'SHA-1', weak: true },
  '2.16.840.1.101.3.4.2.4': { name: 'SHA-224' },
  '2.16.840.1.101.3.4.2.1': { name: 'SHA-256' },
  '2.16.840.1.101.3.4.2.2': { name: 'SHA-384' },
  '2.16.840.1.101.3.4.2.3': { name: 'SHA-512' },
};
const RSASSA_PSS = '1.2.840.113549.1.1.10';
/** RSASSA-PSS's hash when its parameters name none (RFC 4055). */
const PSS_DEFAULT_HASH = '1.3.14.3.2.26';

/** The fewest bits openssl's level 2 takes, by key type. */
const LEAST_BITS: Record<string, number> = { rsa: 2048, 'rsa-pss': 2048, dsa: 2048, dh: 2048, ec: 224 };
/** Bits of security openssl's level 2 takes. */
const LEVEL_2_SECURITY = 112;

/**
 * The bits of security openssl gives a finite-field key (DSA, DH) of an `l`-bit modulus and an
 * `n`-bit subgroup (its BN_security_bits): the modulus's, or half the subgroup's when that is less
 * (none under 80). A 2048-bit DSA key with a 160-bit q is 80 bits: refused at level 2.
 */
export function finiteFieldSecurityBits(l: number, n: number | undefined): number {
  const fromModulus = l >= 15360 ? 256 : l >= 7680 ? 192 : l >= 3072 ? 128 : l >= 2048 ? 112 : l >= 1024 ? 80 : 0;
  if (n === undefined || fromModulus === 0) return fromModulus;
  const fromSubgroup = Math.floor(n / 2);
  return fromSubgroup < 80 ? 0 : Math.min(fromModulus, fromSubgroup);
}

export interface Strength {
  /** `sha256WithRSAEncryption`, or the object identifier of an algorithm not named here. */
  signature: string | undefined;
  weakSignature: boolean;
  /** `RSA 2048 bits`, `EC 256 bits`, `ED25519`. */
  key: string | undefined;
  weakKey: boolean;
}

/** One certificate's signature algorithm and key; what cannot be read is undefined, never weak. */
export function strengthOf(cert: DetailedPeerCertificate): Strength {
  const algorithm = cert.raw ? signatureAlgorithmOf(cert.raw) : undefined;
  const oid = algorithm?.oid;
  let known = oid === undefined ? undefined : SIGNATURE_ALGORITHMS[oid];
  if (oid === RSASSA_PSS) {
    // its hash is in its parameters (SHA-1 when they name none): openssl judges that hash
    const hashOid = algorithm!.pssHash ?? PSS_DEFAULT_HASH;
    const hash = HASHES[hashOid];
    known = { name: `rsassaPss with ${hash?.name ?? hashOid}`, ...(hash?.weak ? { weak: true as const } : {}) };
  }
  let key: string | undefined;
  let weakKey = false;
  try {
    const publicKey = new (crypto().X509Certificate)(cert.raw).publicKey;
    const type = publicKey.asymmetricKeyType;
    // the peer certificate's `bits` is the size of an EC key's curve; Node's key details name the curve only
    const bits = publicKey.asymmetricKeyDetails?.modulusLength ?? (type === 'ec' ? cert.bits : undefined);
    if (type !== undefined) {
      const subgroup = publicKey.asymmetricKeyDetails?.divisorLength;
      key = bits === undefined ? type.toUpperCase() : `${type.toUpperCase()} ${bits} bits`;
      if (bits !== undefined && subgroup !== undefined) key += ` (q ${subgroup} bits)`;
      const least = LEAST_BITS[type];
      weakKey = least !== undefined && bits !== undefined && bits < least;
      // a DSA key is as strong as its subgroup allows too
      if (bits !== undefined && subgroup !== undefined && finiteFieldSecurityBits(bits, subgroup) < LEVEL_2_SECURITY) weakKey = true;
    }
  } catch {
    // a certificate Node cannot read: its key is not said
  }
  return { signature: known?.name ?? oid, weakSignature: known?.weak === true, key, weakKey };
}

/**
 * Each certificate of the chain as Node built it (the server's, then the store's), from the leaf,
 * up to the first one `trusted` takes (included): openssl looks for a trusted certificate first,
 * and judges nothing above it (a cross-signed root the server also sends, a 1024-bit root that
 * once signed it).
 */
export function chainOf(leaf: DetailedPeerCertificate, trusted: (cert: DetailedPeerCertificate) => boolean = () => false): DetailedPeerCertificate[] {
  const chain = [leaf];
  for (let cert = leaf; !trusted(cert) && cert.issuerCertificate && cert.issuerCertificate !== cert && chain.length < 16; ) {
    cert = cert.issuerCertificate;
    if (chain.includes(cert)) break;
    chain.push(cert);
  }
  return chain;
}

/** A self-issued certificate: Node makes it its own issuer. */
export function selfIssued(cert: DetailedPeerCertificate): boolean {
  return cert.issuerCertificate === cert;
}

/**
 * The signature algorithm's identifier of a DER certificate: `Certificate ::= SEQUENCE {
 * tbsCertificate, signatureAlgorithm AlgorithmIdentifier, signatureValue }` (RFC 5280), the
 * algorithm the first element of AlgorithmIdentifier. Undefined for anything else.
 */
export function signatureAlgorithmOid(der: Buffer): string | undefined {
  return signatureAlgorithmOf(der)?.oid;
}

/**
 * The signature algorithm, and for RSASSA-PSS the hash its parameters name (`RSASSA-PSS-params ::=
 * SEQUENCE { hashAlgorithm [0] AlgorithmIdentifier DEFAULT sha1, ... }`, RFC 4055).
 */
export function signatureAlgorithmOf(der: Buffer): { oid: string; pssHash?: string } | undefined {
  const certificate = element(der, 0, der.length);
  if (certificate?.tag !== 0x30) return undefined;
  const tbs = element(der, certificate.start, certificate.end);
  if (tbs?.tag !== 0x30) return undefined;
  const algorithm = element(der, tbs.end, certificate.end);
  if (algorithm?.tag !== 0x30) return undefined;
  const oidElement = element(der, algorithm.start, algorithm.end);
  if (oidElement?.tag !== 0x06) return undefined;
  const oid = objectIdentifier(der.subarray(oidElement.start, oidElement.end));
  if (oid !== RSASSA_PSS) return oid === undefined ? undefined : { oid };
  const params = element(der, oidElement.end, algorithm.end);
  const hashField = params?.tag === 0x30 ? element(der, params.start, params.end) : undefined;
  if (hashField?.tag !== 0xa0) return { oid };
  const hashAlgorithm = element(der, hashField.start, hashField.end);
  const hashOid = hashAlgorithm?.tag === 0x30 ? element(der, hashAlgorithm.start, hashAlgorithm.end) : undefined;
  const pssHash = hashOid?.tag === 0x06 ? objectIdentifier(der.subarray(hashOid.start, hashOid.end)) : undefined;
  return pssHash === undefined ? { oid } : { oid, pssHash };
}

/** The DER element at `at` (a one-byte tag, a definite length), its content `start` to `end`, within `limit`. */
function element(der: Buffer, at: number, limit: number): { tag: number; start: number; end: number } | undefined {
  if (at + 2 > limit) return undefined;
  const tag = der[at]!;
  let length = der[at + 1]!;
  let start = at + 2;
  if (length & 0x80) {
    const count = length & 0x7f;
    // no indefinite length in DER, and no certificate past 4 GiB
    if (count === 0 || count > 4 || start + count > limit) return undefined;
    length = 0;
    for (let i = 0; i < count; i++) length = length * 256 + der[start + i]!;
    start += count;
  }
  const end = start + length;
  return end > limit ? undefined : { tag, start, end };
}

/** `1.2.840.113549.1.1.11` from its DER content (base-128 arcs, the first two packed in one). */
function objectIdentifier(content: Buffer): string | undefined {
  const arcs: number[] = [];
  let value = 0;
  for (const byte of content) {
    value = value * 128 + (byte & 0x7f);
    if (value > Number.MAX_SAFE_INTEGER / 128) return undefined;
    if (!(byte & 0x80)) {
      arcs.push(value);
      value = 0;
    }
  }
  if (arcs.length === 0 || content.at(-1)! & 0x80) return undefined;
  const first = Math.min(Math.floor(arcs[0]! / 40), 2);
  return [first, arcs[0]! - first * 40, ...arcs.slice(1)].join('.');
}
