/**
 * What the tls check trusts: what openssl on the box trusts (its system store: the bundle file and
 * the hashed directory, or SSL_CERT_FILE / SSL_CERT_DIR as openssl reads them), Node's bundled
 * roots, NODE_EXTRA_CA_CERTS, and the CA files the tester names (TLS_CA_FILES). One TLS context
 * holds them all, so the handshake's own verification and the chain's anchor agree.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { createSecureContext, rootCertificates, type DetailedPeerCertificate, type SecureContext } from 'node:tls';
import { pace } from '../pace.js';
import { crypto } from '../../lazy-builtins.js';

/** The configuration item naming the tester's CA files. */
export const CA_FILES_KEY = 'TLS_CA_FILES';

/** Where openssl looks when SSL_CERT_FILE / SSL_CERT_DIR are not set (its OPENSSLDIR, by distribution). */
const SYSTEM_FILES = ['/usr/lib/ssl/cert.pem', '/etc/ssl/certs/ca-certificates.crt', '/etc/pki/tls/cert.pem', '/etc/pki/tls/certs/ca-bundle.crt', '/etc/ssl/cert.pem'];
const SYSTEM_DIRS = ['/usr/lib/ssl/certs', '/etc/ssl/certs', '/etc/pki/tls/certs'];
/** openssl's hashed directory holds `<subject hash>.<n>` (CRLs are `.r<n>`). */
const HASHED_NAME = /^[0-9a-f]{8}\.\d+$/;
const MAX_CA_FILE = 16 * 1024 * 1024;
const PEM = /-----BEGIN (?:TRUSTED )?CERTIFICATE-----[\s\S]*?-----END (?:TRUSTED )?CERTIFICATE-----/g;

export interface TrustStore {
  /** A TLS context verifying against every trusted certificate, and reaching old servers (TLS 1.0, weak ciphers). */
  context: SecureContext;
  /** Where a trusted certificate came from, by its `fingerprint256`; undefined when it is not trusted. */
  sourceOf(fingerprint256: string): string | undefined;
  /**
   * Whether a certificate (DER) is trusted as openssl finds one: a trusted certificate with its
   * subject and public key (a cross-signed copy of a trusted root is that root).
   */
  trusts(raw: Buffer): boolean;
  /** Each source read and its count of certificates, for the summary. */
  sources: string[];
}

export type TrustResult = { ok: true; store: TrustStore } | { ok: false; reason: string };

/** The tester's CA files: paths separated by commas (or newlines), blanks ignored. */
export function caFilesOf(value: string | undefined): string[] {
  return (value ?? '').split(/[,\n]/).map((p) => p.trim()).filter((p) => p !== '');
}

interface Source {
  label: string;
  pems: string[];
}

/** The last few stores by what they were built from (a store costs ~100 ms of CPU, in slices). */
const cache = new Map<string, Promise<TrustResult>>();
const CACHED_STORES = 4;

/**
 * The store for these CA files, built once and kept while the files (and the box's store) are
 * unchanged; built in slices (adding a certificate to a context takes about a millisecond).
 */
export async function trustStore(caFiles: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<TrustResult> {
  const files = await boxFiles(env);
  const configured = caFiles.map((path) => ({ path, label: `${CA_FILES_KEY} ${path}` }));
  const key = JSON.stringify(await Promise.all([...files, ...configured].map(async ({ path }) => [path, await signature(path)])));
  let store = cache.get(key);
  if (!store) {
    store = build(files, configured);
    cache.set(key, store);
    if (cache.size > CACHED_STORES) cache.delete(cache.keys().next().value!);
  }
  const result = await store;
  // a failure is not kept: the tester fixes the file and runs again
  if (!result.ok) cache.delete(key);
  return result;
}

/** The box's own sources: the system bundle file and hashed directory, and NODE_EXTRA_CA_CERTS. */
async function boxFiles(env: NodeJS.ProcessEnv): Promise<Array<{ path: string; label: string; dir?: boolean }>> {
  const file = env.SSL_CERT_FILE || (await firstExisting(SYSTEM_FILES, (s) => s.isFile()));
  const dirs = env.SSL_CERT_DIR ? env.SSL_CERT_DIR.split(':').filter(Boolean) : [await firstExisting(SYSTEM_DIRS, (s) => s.isDirectory())].filter((d): d is string => d !== undefined);
  return [
    ...(file ? [{ path: file, label: `the system store ${file}` }] : []),
    ...dirs.map((dir) => ({ path: dir, label: `the system store ${dir}`, dir: true })),
    ...(env.NODE_EXTRA_CA_CERTS ? [{ path: env.NODE_EXTRA_CA_CERTS, label: `NODE_EXTRA_CA_CERTS ${env.NODE_EXTRA_CA_CERTS}` }] : []),
  ];
}

async function firstExisting(paths: string[], is: (s: Awaited<ReturnType<typeof stat>>) => boolean): Promise<string | undefined> {
  for (const path of paths) {
    if (await stat(path).then(is, () => false)) return path;
  }
  return undefined;
}

/** Changes when the file (or directory) does: size and modification time. */
async function signature(path: string): Promise<string> {
  return stat(path).then((s) => `${s.size}:${s.mtimeMs}`, (err: NodeJS.ErrnoException) => err.code ?? 'error');
}

async function build(box: Array<{ path: string; label: string; dir?: boolean }>, configured: Array<{ path: string; label: string }>): Promise<TrustResult> {
  const sources: Source[] = [{ label: "Node's bundled roots", pems: [...rootCertificates] }];
  const tester: Source[] = [];
  for (const { path, label } of configured) {
    let pems: string[];
    try {
      pems = await readPems(path);
    } catch (err) {
      return { ok: false, reason: `${CA_FILES_KEY}: ${path} could not be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})` };
    }
    if (pems.length === 0) return { ok: false, reason: `${CA_FILES_KEY}: ${path} holds no PEM certificate` };
    tester.push({ label, pems });
  }
  for (const { path, label, dir } of box) {
    // the box's store is read as far as it can be: what cannot be read is not trusted (the count says 0)
    const pems = dir ? await readHashedDirectory(path) : await readPems(path).catch(() => []);
    sources.push({ label, pems });
  }
  sources.push(...tester);
  const origin = new Map<string, string>();
  const added: string[] = [];
  const context = createSecureContext({ minVersion: 'TLSv1', ciphers: 'DEFAULT:@SECLEVEL=0' });
  const tick = pace();
  for (const { label, pems } of sources) {
    for (const pem of pems) {
      const print = fingerprintOf(pem);
      if (print === undefined || origin.has(print)) continue;
      try {
        addCaCertificate(context, pem);
      } catch {
        continue; // not a certificate openssl reads: openssl would not trust it either
      }
      origin.set(print, label);
      added.push(pem);
      const wait = tick(128);
      if (wait) await wait;
    }
  }
  const counts = sources.map(({ label, pems }) => `${label} (${pems.length})`);
  // read with the first question: most checks never ask it
  let identities: Set<string> | undefined;
  const trusts = (certificate: string | Buffer) => {
    identities ??= new Set(added.map(identityOf));
    return identities.has(identityOf(certificate));
  };
  return { ok: true, store: { context, sourceOf: (print) => origin.get(print), trusts, sources: counts } };
}

/** A certificate's subject and public key, as openssl matches a trusted one; '' for what cannot be read. */
function identityOf(certificate: string | Buffer): string {
  try {
    const x = new (crypto().X509Certificate)(certificate);
    const key = x.publicKey.export({ type: 'spki', format: 'der' });
    return `${x.subject}\n${crypto().createHash('sha256').update(key).digest('hex')}`;
  } catch {
    return '';
  }
}

/** One more trusted certificate in a context Node made (its own createSecureContext does the same, per `ca`). */
function addCaCertificate(context: SecureContext, pem: string): void {
  (context as SecureContext & { context: { addCACert(pem: string): void } }).context.addCACert(pem);
}

async function readPems(path: string): Promise<string[]> {
  const info = await stat(path);
  if (!info.isFile()) throw Object.assign(new Error('not a regular file'), { code: 'not a regular file' });
  if (info.size > MAX_CA_FILE) throw Object.assign(new Error('too large'), { code: `over ${MAX_CA_FILE} bytes` });
  return (await readFile(path, 'utf8')).match(PEM) ?? [];
}

async function readHashedDirectory(dir: string): Promise<string[]> {
  const names = await readdir(dir).catch(() => [] as string[]);
  const read = await Promise.all(names.filter((n) => HASHED_NAME.test(n)).map((n) => readPems(join(dir, n)).catch(() => [])));
  return read.flat();
}

/** `AB:CD:...`, as Node's `fingerprint256`: SHA-256 of the DER bytes. */
export function fingerprintOf(pem: string): string | undefined {
  const base64 = pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, '');
  if (base64 === '') return undefined;
  const digest = crypto().createHash('sha256').update(Buffer.from(base64, 'base64')).digest('hex').toUpperCase();
  return digest.match(/../g)!.join(':');
}

/**
 * The top of the chain Node built (the peer's certificates, completed from the context's trusted
 * certificates), and whether it is a trusted root. OpenSSL reports only its last verification
 * error, so an expired leaf would hide an untrusted issuer: this answers the trust question alone.
 */
export function chainTop(leaf: DetailedPeerCertificate, store: TrustStore): { top: DetailedPeerCertificate; selfIssued: boolean; anchor?: string } {
  let top = leaf;
  const seen = new Set<DetailedPeerCertificate>();
  while (top.issuerCertificate && top.issuerCertificate !== top && !seen.has(top)) {
    seen.add(top);
    top = top.issuerCertificate;
  }
  const selfIssued = top.issuerCertificate === top;
  const anchor = selfIssued ? store.sourceOf(top.fingerprint256) : undefined;
  return { top, selfIssued, ...(anchor ? { anchor } : {}) };
}
