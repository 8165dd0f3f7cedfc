/**
 * The proxy's certificate authority: made once per data directory (an ECDSA P-256 key, kept with
 * its certificate in `DATA_DIR/proxy/ca.pem`, mode 0600, never served), and a leaf per host name or
 * address, signed by it on demand and cached: subjectAltName (browsers ignore the common name),
 * serverAuth, valid a year (browsers refuse more than 397 days), all sharing one key made at
 * start, so a new leaf costs one signature.
 */
import type { KeyObject } from 'node:crypto';
import { chmodSync, mkdirSync, statSync } from 'node:fs';
import { isIP } from 'node:net';
import { hostname as machineName } from 'node:os';
import { join, resolve } from 'node:path';
import { nodeFileSystem } from '../store/atomic-file.js';
import { readDataFile } from '../store/data-file.js';
import { DataFileError } from '../store/state.js';
import { bitString, boolean, explicit, implicit, name, namedBits, octetString, oid, pem, sequence, smallInteger, time, unsignedInteger } from './der.js';
import { crypto } from '../lazy-builtins.js';

export const CA_DIR = 'proxy';
export const CA_FILE = 'ca.pem';

const OID = {
  ecdsaWithSha256: '1.2.840.10045.4.3.2',
  commonName: '2.5.4.3',
  organization: '2.5.4.10',
  organizationalUnit: '2.5.4.11',
  basicConstraints: '2.5.29.19',
  keyUsage: '2.5.29.15',
  extKeyUsage: '2.5.29.37',
  subjectAltName: '2.5.29.17',
  subjectKeyIdentifier: '2.5.29.14',
  authorityKeyIdentifier: '2.5.29.35',
  serverAuth: '1.3.6.1.5.5.7.3.1',
};
/** The AlgorithmIdentifier of ecdsa-with-SHA256, DER; encoded with the first certificate, not at start. */
let signatureAlgorithm: Buffer | undefined;
const signatureAlgorithmDer = () => (signatureAlgorithm ??= sequence(oid(OID.ecdsaWithSha256)));
const DAY = 24 * 3600 * 1000;
/** Leaves: a day back (clocks drift), a year ahead: under the 397 days browsers accept. */
const LEAF_DAYS = 365;
const CA_YEARS = 10;
/** Leaves kept: a browsing session names a few hundred hosts at most. */
const MAX_LEAVES = 1000;

export interface Leaf {
  /** The leaves' one private key, PEM. */
  keyPem: string;
  /** The leaf, then the CA: the chain a client is sent. */
  cert: string;
}

export interface ProxyCa {
  /** The CA certificate, PEM: what a browser is told to trust. */
  readonly certPem: string;
  /** SHA-256 of the certificate, `AB:CD:...`, as browsers show it. */
  readonly fingerprint256: string;
  readonly subject: string;
  /** The leaf for a DNS name or an IP address (cached). */
  leaf(host: string): Leaf;
}

function extension(id: string, critical: boolean, value: Buffer): Buffer {
  return sequence(oid(id), ...(critical ? [boolean(true)] : []), octetString(value));
}

/** SHA-1 of the subjectPublicKey bits, as RFC 5280 4.2.1.2 (1) suggests for a key identifier. */
function keyIdentifier(spki: Buffer): Buffer {
  // SubjectPublicKeyInfo SEQUENCE { algorithm SEQUENCE, subjectPublicKey BIT STRING }
  let at = headerLength(spki, 0);
  at += headerLength(spki, at) + contentLength(spki, at);
  const start = at + headerLength(spki, at);
  // past the BIT STRING's unused-bits byte
  return crypto().createHash('sha1').update(spki.subarray(start + 1, start + contentLength(spki, at))).digest();
}

function headerLength(der: Buffer, at: number): number {
  const first = der[at + 1]!;
  return first < 0x80 ? 2 : 2 + (first & 0x7f);
}

function contentLength(der: Buffer, at: number): number {
  const first = der[at + 1]!;
  if (first < 0x80) return first;
  let n = 0;
  for (let i = 0; i < (first & 0x7f); i++) n = n * 256 + der[at + 2 + i]!;
  return n;
}

function serialNumber(): Buffer {
  const bytes = crypto().randomBytes(16);
  bytes[0]! &= 0x7f;
  return unsignedInteger(bytes);
}

interface CertificateSpec {
  subject: Buffer;
  issuer: Buffer;
  notBefore: Date;
  notAfter: Date;
  spki: Buffer;
  extensions: Buffer[];
  signer: KeyObject;
}

/** The DER of a v3 certificate, signed ECDSA with SHA-256. */
function certificate(spec: CertificateSpec): Buffer {
  const tbs = sequence(
    explicit(0, smallInteger(2)),
    serialNumber(),
    signatureAlgorithmDer(),
    spec.issuer,
    sequence(time(spec.notBefore), time(spec.notAfter)),
    spec.subject,
    spec.spki,
    explicit(3, sequence(...spec.extensions)),
  );
  return sequence(tbs, signatureAlgorithmDer(), bitString(crypto().sign('sha256', tbs, spec.signer)));
}

const spkiOf = (key: KeyObject) => key.export({ type: 'spki', format: 'der' });

/** A subjectAltName for a DNS name or an IP address (IPv6 without brackets). */
function subjectAltName(host: string): Buffer {
  const family = isIP(host);
  if (family === 4) return sequence(implicit(7, Buffer.from(host.split('.').map(Number))));
  if (family === 6) return sequence(implicit(7, ipv6Bytes(host)));
  return sequence(implicit(2, Buffer.from(host, 'ascii')));
}

function ipv6Bytes(address: string): Buffer {
  const [head, tail = ''] = address.split('::');
  const groups = (part: string) => (part === '' ? [] : part.split(':'));
  let left = groups(head!);
  let right = address.includes('::') ? groups(tail) : [];
  // a dotted IPv4 tail (::ffff:1.2.3.4) is two groups
  const dotted = (list: string[]) => {
    const last = list.at(-1);
    if (!last?.includes('.')) return list;
    const [a, b, c, d] = last.split('.').map(Number);
    return [...list.slice(0, -1), ((a! << 8) | b!).toString(16), ((c! << 8) | d!).toString(16)];
  };
  left = dotted(left);
  right = dotted(right);
  const missing = 8 - left.length - right.length;
  const all = [...left, ...Array.from({ length: address.includes('::') ? missing : 0 }, () => '0'), ...right];
  const bytes = Buffer.alloc(16);
  all.forEach((group, i) => bytes.writeUInt16BE(parseInt(group, 16), i * 2));
  return bytes;
}

function makeCa(dataDir: string, now: Date): { key: KeyObject; certDer: Buffer } {
  const { privateKey, publicKey } = crypto().generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const dirTag = crypto().createHash('sha256').update(resolve(dataDir)).digest('hex').slice(0, 12);
  const subject = name([
    [OID.commonName, `assessd proxy CA on ${machineName().slice(0, 40)}`],
    [OID.organization, 'assessd'],
    // the same for a CA made again for the directory: NSS (Chromium's store) refuses a second
    // subject under a nickname it holds, and the documented steps trust it as "assessd proxy CA"
    // (its validity and fingerprint tell it from the one before)
    [OID.organizationalUnit, `data directory ${dirTag}`],
  ]);
  const spki = spkiOf(publicKey);
  const certDer = certificate({
    subject,
    issuer: subject,
    notBefore: new Date(now.getTime() - DAY),
    notAfter: new Date(now.getTime() + CA_YEARS * 365 * DAY),
    spki,
    extensions: [
      extension(OID.basicConstraints, true, sequence(boolean(true))),
      extension(OID.keyUsage, true, namedBits([0, 5, 6])), // digitalSignature, keyCertSign, cRLSign
      extension(OID.subjectKeyIdentifier, false, octetString(keyIdentifier(spki))),
    ],
    signer: privateKey,
  });
  return { key: privateKey, certDer };
}

/**
 * The CA for a start: made now when there is none (the first start); otherwise its file is looked
 * at now without node:crypto (a file without a private key and a certificate stops the start,
 * naming it, as openCa would) and read with it when the proxy first needs it (a CONNECT, the Proxy
 * page): a restart loads no cryptography before its first answer.
 */
export async function prepareCa(dataDir: string): Promise<() => Promise<ProxyCa>> {
  const file = join(dataDir, CA_DIR, CA_FILE);
  const text = readDataFile(file)?.toString('utf8');
  if (text === undefined) {
    const made = await openCa(dataDir);
    return async () => made;
  }
  const blocks = ['PRIVATE KEY', 'CERTIFICATE'].filter((label) => !new RegExp(`-----BEGIN (?:EC |RSA )?${label}-----[\\s\\S]+?-----END (?:EC |RSA )?${label}-----`).test(text));
  if (blocks.length > 0) {
    throw new DataFileError(file, `not the proxy's CA (a private key and its certificate, PEM): no ${blocks.join(' and no ').toLowerCase()}; move it away to have a new CA made`);
  }
  let opened: Promise<ProxyCa> | undefined;
  // the text read now: a file removed meanwhile is not silently replaced by a new CA
  return () => (opened ??= openCa(dataDir, new Date(), text));
}

/**
 * The CA of `dataDir`: read from DATA_DIR/proxy/ca.pem, or made (and written atomically, 0600)
 * when there is none (`known`: its text, read already). A file that is there but does not hold a
 * key and its certificate stops the start, naming it (it is never overwritten: a browser may trust it).
 */
export async function openCa(dataDir: string, now = new Date(), known?: string): Promise<ProxyCa> {
  const dir = join(dataDir, CA_DIR);
  const file = join(dir, CA_FILE);
  const text = known ?? readDataFile(file)?.toString('utf8');
  let key: KeyObject;
  let certPem: string;
  if (text === undefined) {
    const made = makeCa(dataDir, now);
    key = made.key;
    certPem = pem('CERTIFICATE', made.certDer);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    await nodeFileSystem.writeFileAtomic(file, `${key.export({ type: 'pkcs8', format: 'pem' }) as string}${certPem}`);
    await nodeFileSystem.syncDir(dir);
  } else {
    // its key is the CA's: a file left readable by others (copied back, restored) is made 0600 again
    try {
      if ((statSync(file).mode & 0o077) !== 0) chmodSync(file, 0o600);
    } catch {
      // read already (`known`), and gone since: the read below says what is wrong, if anything
    }
    try {
      key = crypto().createPrivateKey(text);
      const match = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\n?/.exec(text);
      if (!match) throw new Error('no certificate');
      certPem = match[0].endsWith('\n') ? match[0] : `${match[0]}\n`;
      if (!new (crypto().X509Certificate)(certPem).checkPrivateKey(key)) throw new Error('the certificate is not the key\'s');
    } catch (err) {
      throw new DataFileError(file, `not the proxy's CA (a private key and its certificate, PEM): ${(err as Error).message}; move it away to have a new CA made`);
    }
  }
  const caCert = new (crypto().X509Certificate)(certPem);
  const caSubject = Buffer.from(subjectOf(caCert.raw));
  const caKeyId = keyIdentifier(spkiOf(crypto().createPublicKey(key)));
  // one key for every leaf (made with the first): issuing a leaf is then one signature, a few milliseconds
  let leafKey: { pem: string; spki: Buffer; id: Buffer } | undefined;
  const leafKeyOnce = () => {
    if (leafKey) return leafKey;
    const { privateKey, publicKey } = crypto().generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    const spki = spkiOf(publicKey);
    return (leafKey = { pem: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string, spki, id: keyIdentifier(spki) });
  };
  const leaves = new Map<string, Leaf>();

  return {
    certPem,
    fingerprint256: caCert.fingerprint256,
    subject: caCert.subject.replace(/\n/g, ', '),
    leaf(host) {
      const lower = host.toLowerCase();
      const cached = leaves.get(lower);
      if (cached) {
        // most recently used last: the oldest goes first when the cache is full
        leaves.delete(lower);
        leaves.set(lower, cached);
        return cached;
      }
      const at = Date.now();
      const { pem: keyPem, spki: leafSpki, id: leafKeyId } = leafKeyOnce();
      const der = certificate({
        // browsers read only the subjectAltName; the common name (at most 64 characters) is for people
        subject: name(lower.length <= 64 ? [[OID.commonName, lower]] : [[OID.organization, 'assessd proxy']]),
        issuer: caSubject,
        notBefore: new Date(at - DAY),
        notAfter: new Date(at + LEAF_DAYS * DAY),
        spki: leafSpki,
        extensions: [
          extension(OID.basicConstraints, true, sequence()),
          extension(OID.keyUsage, true, namedBits([0])), // digitalSignature
          extension(OID.extKeyUsage, false, sequence(oid(OID.serverAuth))),
          extension(OID.subjectAltName, false, subjectAltName(lower)),
          extension(OID.subjectKeyIdentifier, false, octetString(leafKeyId)),
          extension(OID.authorityKeyIdentifier, false, sequence(implicit(0, caKeyId))),
        ],
        signer: key,
      });
      const leaf = { keyPem, cert: `${pem('CERTIFICATE', der)}${certPem}` };
      if (leaves.size >= MAX_LEAVES) leaves.delete(leaves.keys().next().value!);
      leaves.set(lower, leaf);
      return leaf;
    },
  };
}

/** The DER of a certificate's subject Name: the issuer of every leaf, byte for byte. */
function subjectOf(certDer: Buffer): Buffer {
  // Certificate SEQUENCE { tbsCertificate SEQUENCE { [0] version, serial, signature, issuer, validity, subject, ... } }
  let at = headerLength(certDer, 0); // into the certificate
  at += headerLength(certDer, at); // into the tbsCertificate
  const skip = () => (at += headerLength(certDer, at) + contentLength(certDer, at));
  skip(); // version
  skip(); // serial
  skip(); // signature
  skip(); // issuer
  skip(); // validity
  return certDer.subarray(at, at + headerLength(certDer, at) + contentLength(certDer, at));
}
