/**
 * The built-in checks' verdicts, held to the truth: real nginx, Apache (mod_dav, mod_headers) and
 * lighttpd from Debian, configured as testers find them, and what Chromium does with their answers
 * (a page of another origin frames the target; a credentialed and an uncredentialed `fetch` from
 * each probe origin, `null` through a sandboxed iframe), what `openssl s_client
 * -verify_return_error -verify_hostname` says of their certificates, and what the servers do with a
 * real write. One row per case: the check, the server and its configuration lines, the truth, the
 * rank we give and the words that say why. Each row asserts the truth AND our verdict, so that a
 * disagreement fails it. No check's request may change a document root: compared byte for byte.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { CHROMIUM, launchChromium } from '../helpers/browser.ts';
import { CHECK_RANKS, CHECKS, highestRank } from '../../src/engine/checks/index.ts';
import { probeOrigins, type ProbeKind } from '../../src/engine/checks/cors.ts';
import { CONTROL_METHOD } from '../../src/engine/checks/http-methods.ts';
import type { CheckName } from '../../src/engine/checks/names.ts';
import type { CheckInput, CheckResult, Finding } from '../../src/engine/types.ts';
import { makeCertificates, type KeyPair } from './fixtures/certs.ts';
import { documentRoots, installed, startServer, type RunningServer, type Site, type SiteConfig, type Software } from './fixtures/real-servers.ts';
import { targetFields } from './fixtures/targets.ts';

const certs = makeCertificates();

/** Who frames the target in Chromium: a page of another site, a named partner, the target's own origin. */
type Framer = 'another site' | 'partner' | 'itself' | 'its host on port 80';
const FRAMERS: Record<Framer, (target: string) => string> = {
  'another site': () => 'https://framer.example',
  partner: () => 'https://partner.example',
  itself: (target) => new URL(target).origin,
  'its host on port 80': (target) => `http://${new URL(target).hostname}`,
};

type Truth =
  /** Chromium frames the target from each of these origins, or refuses. */
  | { frames: Partial<Record<Framer, boolean>> }
  /** The probe origins from which Chromium's fetch reads the page, with and without credentials. */
  | { reads: { withCredentials: ProbeKind[]; withoutCredentials: ProbeKind[] } }
  /** The cookies Chromium sends with a form another site posts to the target (a top-level cross-site POST), of those the page set. */
  | { postedFromAnotherSite: string[] }
  /** `openssl s_client` verifies the certificate, or fails with this error. */
  | { openssl: 'verifies' | RegExp }
  /** Node's own https.get, as NODE_EXTRA_CA_CERTS is Node's variable. */
  | { node: 'verifies' }
  /** What the server answers to real requests (a path ending in `*`: one fresh name of the row's there), its headers or body holding a text. */
  | { server: Array<[method: string, path: string, status: number, holds?: string]> };

interface Row {
  /** The case, as a tester would say it. */
  name: string;
  check: CheckName;
  server: Software;
  /** The configuration lines of the site (empty: the server's defaults). */
  config: string;
  tls?: KeyPair;
  /** Directories made in the site's document root; `path` names one as the target (`uploads/`). */
  dirs?: string[];
  /** The target's path under the site's root URL (none: the root). */
  path?: string;
  /** Another row's site, checked under another configuration of ours. */
  site?: string;
  /** TLS_CA_FILES: the lab CA, or a certificate the tester trusts. */
  caFile?: string;
  /** The box's environment for this row (the system store as openssl reads it, NODE_EXTRA_CA_CERTS). */
  env?: Record<string, string>;
  truth: Truth;
  rank: number;
  /** Words of the findings that say which rule decided. */
  says: string;
}

const dir = mkdtempSync(join(tmpdir(), 'assessd-verdicts-'));
const LAB_CA = join(dir, 'lab-ca.pem');
const SELF = join(dir, 'self-signed.pem');
const SYSTEM_BUNDLE = join(dir, 'system-bundle.pem');
writeFileSync(LAB_CA, certs.ca);
writeFileSync(SELF, certs.selfSigned.cert);
writeFileSync(SYSTEM_BUNDLE, certs.ca);

const credentialed = (origin: string) => `set $cors "";
    if ($http_origin ~ "${origin}") { set $cors $http_origin; }
    add_header Access-Control-Allow-Origin $cors always;
    add_header Access-Control-Allow-Credentials true always;`;
/** nginx: /echo answers the Cookie header the request carried. */
const COOKIE_ECHO = 'location = /echo { default_type text/plain; return 200 "cookies: $http_cookie"; }';
const ATTACKERS: ProbeKind[] = ['foreign', 'null', 'suffix', 'prefix'];
const EVERY_HTTP_PROBE: ProbeKind[] = [...ATTACKERS, 'subdomain'];

const ROWS: Row[] = [
  // framing (OWTF-WGP-001): CSP frame-ancestors overrides X-Frame-Options; XFO values compared as a set
  { name: 'X-Frame-Options DENY beside frame-ancestors *', check: 'framing', server: 'nginx',
    config: `add_header X-Frame-Options DENY always; add_header Content-Security-Policy "frame-ancestors *" always;`,
    truth: { frames: { 'another site': true } }, rank: 2, says: 'CSP frame-ancestors allows any site (*); X-Frame-Options is ignored beside it' },
  { name: 'X-Frame-Options DENY beside frame-ancestors http: https:', check: 'framing', server: 'nginx',
    config: `add_header X-Frame-Options DENY always; add_header Content-Security-Policy "frame-ancestors http: https:" always;`,
    truth: { frames: { 'another site': true } }, rank: 2, says: 'CSP frame-ancestors allows any site (http: https:)' },
  { name: 'X-Frame-Options: SAMEORIGIN, SAMEORIGIN (two append lines)', check: 'framing', server: 'apache',
    config: `Header always append X-Frame-Options SAMEORIGIN\n  Header always append X-Frame-Options SAMEORIGIN`,
    truth: { frames: { 'another site': false, itself: true } }, rank: 0, says: "SAMEORIGIN: only the page's own origin may frame it\nX-Frame-Options: SAMEORIGIN, SAMEORIGIN" },
  { name: 'frame-ancestors naming a partner', check: 'framing', server: 'nginx',
    config: `add_header Content-Security-Policy "frame-ancestors 'self' https://partner.example" always;`,
    truth: { frames: { partner: true, 'another site': false, itself: true } }, rank: 1, says: 'named third-party origins\nCSP frame-ancestors: https://partner.example' },
  { name: 'frame-ancestors naming the host without a port (its scheme\'s default port, not the page\'s)', check: 'framing', server: 'nginx',
    config: `add_header Content-Security-Policy "frame-ancestors localhost" always;`,
    truth: { frames: { itself: false, 'its host on port 80': true, 'another site': false } }, rank: 1, says: 'named third-party origins\nCSP frame-ancestors: localhost' },
  { name: 'frame-ancestors naming a partner with a path', check: 'framing', server: 'nginx',
    config: `add_header Content-Security-Policy "frame-ancestors https://partner.example/app/" always;`,
    truth: { frames: { partner: false, 'another site': false, itself: false } }, rank: 0, says: 'CSP frame-ancestors allows no site; sources with a path match no page, as an ancestor is matched by its origin alone: https://partner.example/app/' },
  { name: 'no framing header (misconfigured)', check: 'framing', server: 'nginx', config: '',
    truth: { frames: { 'another site': true } }, rank: 2, says: 'No X-Frame-Options header and no Content-Security-Policy frame-ancestors' },
  { name: "DENY and frame-ancestors 'none' (hardened)", check: 'framing', server: 'nginx',
    config: `add_header X-Frame-Options DENY always; add_header Content-Security-Policy "frame-ancestors 'none'" always;`,
    truth: { frames: { 'another site': false, itself: false } }, rank: 0, says: 'CSP frame-ancestors allows no site' },
  { name: "frame-ancestors 'none' in a report-only policy", check: 'framing', server: 'nginx',
    config: `add_header Content-Security-Policy-Report-Only "frame-ancestors 'none'" always;`,
    truth: { frames: { 'another site': true } }, rank: 2, says: 'No X-Frame-Options header and no Content-Security-Policy frame-ancestors' },
  { name: 'X-Frame-Options ALLOW-FROM a partner', check: 'framing', server: 'nginx',
    config: `add_header X-Frame-Options "ALLOW-FROM https://partner.example" always;`,
    truth: { frames: { 'another site': true, partner: true } }, rank: 2, says: 'is not a value browsers act on (ALLOW-FROM is ignored)' },
  { name: 'X-Frame-Options: DENY, SAMEORIGIN (conflicting)', check: 'framing', server: 'lighttpd',
    config: `setenv.add-response-header = ("X-Frame-Options" => "DENY, SAMEORIGIN")`,
    truth: { frames: { 'another site': false, itself: false } }, rank: 0, says: 'conflicting values deny, sameorigin: browsers refuse to frame the page' },
  // node's parser refuses these answers whole; Chromium trims the space before a colon, skips a line whose name is not a token, and acts on the rest
  { name: 'X-Frame-Options with a space before its colon (add_header "X-Frame-Options " DENY)', check: 'framing', server: 'nginx',
    config: `add_header "X-Frame-Options " DENY always;`,
    truth: { frames: { 'another site': false, itself: false } }, rank: 0, says: 'X-Frame-Options (no CSP frame-ancestors): DENY\nX-Frame-Options: DENY' },
  { name: 'X-Frame-Options DENY after a header line whose name is not a token (Bad Name: x)', check: 'framing', server: 'nginx',
    config: `add_header "Bad Name" x always; add_header X-Frame-Options DENY always;`,
    truth: { frames: { 'another site': false, itself: false } }, rank: 0, says: 'X-Frame-Options (no CSP frame-ancestors): DENY' },
  { name: 'X-Frame-Options: "DENY" (quoted)', check: 'framing', server: 'nginx',
    config: `add_header X-Frame-Options '"DENY"' always;`,
    truth: { frames: { 'another site': true } }, rank: 2, says: '""deny"" is not a value browsers act on' },

  // cookies (OWTF-SM-002): SameSite as browsers read it; the page's /echo answers the Cookie header it got
  { name: 'a cookie with SameSite=None', check: 'cookies', server: 'nginx', tls: certs.valid, caFile: LAB_CA,
    config: `add_header Set-Cookie "sid=1; Path=/; Secure; HttpOnly; SameSite=None" always;\n    ${COOKIE_ECHO}`,
    truth: { postedFromAnotherSite: ['sid'] }, rank: 2, says: "Cookie sid lacks SameSite=Lax or Strict (SameSite=None: sent with other sites' requests)" },
  { name: 'a cookie with SameSite=Bogus, beside one without SameSite', check: 'cookies', server: 'nginx', tls: certs.valid, caFile: LAB_CA,
    config: `add_header Set-Cookie "bogus=1; Path=/; Secure; HttpOnly; SameSite=Bogus" always;\n    add_header Set-Cookie "unset=1; Path=/; Secure; HttpOnly" always;\n    ${COOKIE_ECHO}`,
    truth: { postedFromAnotherSite: ['bogus', 'unset'] }, rank: 2, says: 'Cookie bogus lacks SameSite (SameSite=Bogus is not a value browsers know: as if absent)' },
  { name: 'a cookie with SameSite=Lax, Secure, HttpOnly (hardened)', check: 'cookies', server: 'nginx', tls: certs.valid, caFile: LAB_CA,
    config: `add_header Set-Cookie "lax=1; Path=/; Secure; HttpOnly; SameSite=Lax" always;\n    ${COOKIE_ECHO}`,
    truth: { postedFromAnotherSite: [] }, rank: 0, says: 'Cookie lax has its flags' },

  // cors (OWTF-WGP-002): six probe origins; every Access-Control-Allow-Origin line read
  { name: 'a proxy adding ACAO $http_origin in front of an app that reflects it (two lines)', check: 'cors', server: 'nginx',
    config: `location / { proxy_pass http://127.0.0.1:{port:reflecting-app}; add_header Access-Control-Allow-Origin $http_origin always; }`,
    truth: { reads: { withCredentials: [], withoutCredentials: [] } }, rank: 0, says: 'Access-Control-Allow-Origin sent more than once: browsers refuse every cross-origin read' },
  { name: 'lighttpd allowing Origin: null with credentials', check: 'cors', server: 'lighttpd',
    config: `$REQUEST_HEADER["Origin"] == "null" { setenv.add-response-header = ("Access-Control-Allow-Origin" => "null", "Access-Control-Allow-Credentials" => "true") }`,
    truth: { reads: { withCredentials: ['null'], withoutCredentials: ['null'] } }, rank: 4, says: 'The null origin (a sandboxed frame, a file, a data: URL) may read the page with the user\'s credentials' },
  { name: 'an allow list anchored at its start only (^https?://localhost: accepts https://trusted.example.attacker.test for trusted.example)', check: 'cors', server: 'nginx',
    config: credentialed('^https?://localhost'),
    truth: { reads: { withCredentials: ['prefix'], withoutCredentials: ['prefix'] } }, rank: 4, says: 'Another name starting with the host' },
  { name: 'an unanchored allow list (localhost(:port)?$)', check: 'cors', server: 'nginx',
    config: credentialed('localhost(:[0-9]+)?$'),
    truth: { reads: { withCredentials: ['suffix', 'subdomain'], withoutCredentials: ['suffix', 'subdomain'] } }, rank: 4, says: 'Another name ending with the host' },
  { name: 'any Origin reflected with credentials (misconfigured)', check: 'cors', server: 'nginx',
    config: `add_header Access-Control-Allow-Origin $http_origin always; add_header Access-Control-Allow-Credentials true always;`,
    truth: { reads: { withCredentials: EVERY_HTTP_PROBE, withoutCredentials: EVERY_HTTP_PROBE } }, rank: 4, says: 'A foreign origin may read the page with the user\'s credentials' },
  { name: 'any Origin reflected, no credentials', check: 'cors', server: 'nginx',
    config: `add_header Access-Control-Allow-Origin $http_origin always;`,
    truth: { reads: { withCredentials: [], withoutCredentials: EVERY_HTTP_PROBE } }, rank: 1, says: 'Any origin may read the page, without credentials (its Origin echoed)' },
  { name: '* with credentials', check: 'cors', server: 'nginx',
    config: `add_header Access-Control-Allow-Origin * always; add_header Access-Control-Allow-Credentials true always;`,
    truth: { reads: { withCredentials: [], withoutCredentials: EVERY_HTTP_PROBE } }, rank: 1, says: 'Any origin may read the page, without credentials (*)' },
  { name: 'subdomains allowed with credentials', check: 'cors', server: 'nginx',
    config: credentialed('^http://([a-z0-9-]+\\.)+localhost(:[0-9]+)?$'),
    truth: { reads: { withCredentials: ['subdomain'], withoutCredentials: ['subdomain'] } }, rank: 2, says: 'A subdomain of the host may read the page with the user\'s credentials' },
  { name: 'an https site allowing its http origin with credentials', check: 'cors', server: 'nginx', tls: certs.valid,
    config: credentialed('^https?://localhost(:[0-9]+)?$'),
    truth: { reads: { withCredentials: ['http'], withoutCredentials: ['http'] } }, rank: 2, says: 'The http origin of this https target may read the page with the user\'s credentials' },
  { name: 'a redirect without CORS headers before a page that reflects Origin with credentials', check: 'cors', server: 'nginx',
    config: `location = / { return 302 /index.html; }
    location = /index.html { add_header Access-Control-Allow-Origin $http_origin always; add_header Access-Control-Allow-Credentials true always; }`,
    truth: { reads: { withCredentials: [], withoutCredentials: [] } }, rank: 0, says: 'A redirect on the way stops the read: browsers refuse it there' },
  { name: 'no CORS header (hardened)', check: 'cors', server: 'nginx', config: '',
    truth: { reads: { withCredentials: [], withoutCredentials: [] } }, rank: 0, says: '' },

  // http-methods (OWTF-CM-008): Allow is never believed alone
  { name: 'Apache mod_dav whose Allow lists only OPTIONS, HEAD, GET, POST', check: 'http-methods', server: 'apache',
    config: `TraceEnable off\n  <Directory {docroot}>\n    Dav On\n    Header set Allow "OPTIONS, HEAD, GET, POST"\n  </Directory>`,
    truth: { server: [['OPTIONS', '/index.html', 200, 'allow: OPTIONS, HEAD, GET, POST'], ['PUT', '*', 201], ['DELETE', '*', 204]] }, rank: 2, says: 'Write method handled: PUT (not all in Allow' },
  { name: 'nginx advertising PUT, DELETE in Allow, answering 405', check: 'http-methods', server: 'nginx',
    config: `add_header Allow "GET, HEAD, PUT, DELETE" always;`,
    truth: { server: [['PUT', '*', 405], ['DELETE', '/index.html', 405]] }, rank: 1, says: 'PUT, DELETE advertised, but refused' },
  { name: 'Apache with TraceEnable on', check: 'http-methods', server: 'apache', config: 'TraceEnable on',
    truth: { server: [['TRACE', '/', 200, 'TRACE / HTTP/1.1'], ['PUT', '*', 405]] }, rank: 3, says: 'TRACE echoes the request' },
  { name: 'nginx WebDAV (dav_methods PUT DELETE)', check: 'http-methods', server: 'nginx', config: 'dav_methods PUT DELETE;',
    truth: { server: [['PUT', '*', 201], ['DELETE', '*', 204]] }, rank: 2, says: 'Write method handled: PUT' },
  { name: 'Apache mod_dav on one directory, the target that directory', check: 'http-methods', server: 'apache', dirs: ['uploads'], path: 'uploads/',
    config: `TraceEnable off\n  <Directory {docroot}/uploads>\n    Dav On\n  </Directory>`,
    truth: { server: [['PUT', '*', 405], ['PUT', '/uploads/*', 201], ['DELETE', '/uploads/*', 204]] }, rank: 2, says: 'Write method handled: PUT' },
  { name: 'nginx answering every method from `return 200` (and 412 to any If-Match)', check: 'http-methods', server: 'nginx',
    config: `location / { return 200 "ok\\n"; }`,
    truth: { server: [['PUT', '*', 200], ['GET', '*', 200, 'ok'], [CONTROL_METHOD, '*', 200]] }, rank: 0, says: 'PUT: 412, DELETE: 412, as ASSESSD-NO-SUCH-METHOD, a method no server has, got 412' },
  { name: 'nginx answering every method from `return 200`, advertising PUT in Allow', check: 'http-methods', server: 'nginx',
    config: `location / { add_header Allow "GET, HEAD, PUT" always; return 200 "ok\\n"; }`,
    truth: { server: [['PUT', '*', 200], ['GET', '*', 200, 'ok'], [CONTROL_METHOD, '*', 200]] }, rank: 1, says: 'PUT advertised, but not shown handled' },
  { name: 'nginx serving files (hardened)', check: 'http-methods', server: 'nginx', config: '',
    truth: { server: [['PUT', '*', 405], ['DELETE', '/index.html', 405], ['TRACE', '/', 405]] }, rank: 0, says: '' },
  { name: 'Apache serving files, TraceEnable off', check: 'http-methods', server: 'apache', config: 'TraceEnable off',
    truth: { server: [['PUT', '/index.html', 405], ['DELETE', '/index.html', 405], ['TRACE', '/', 405]] }, rank: 0, says: 'Allowed methods' },
  { name: 'lighttpd serving files', check: 'http-methods', server: 'lighttpd', config: '',
    truth: { server: [['PUT', '/index.html', 501], ['DELETE', '/index.html', 501], ['TRACE', '/', 501]] }, rank: 0, says: 'Allowed methods' },

  // tls (OWTF-CM-001): trusted is what openssl on the box trusts, Node's roots, NODE_EXTRA_CA_CERTS, TLS_CA_FILES
  { name: 'a lab CA named in TLS_CA_FILES', check: 'tls', server: 'nginx', tls: certs.valid, config: '', caFile: LAB_CA,
    truth: { openssl: 'verifies' }, rank: 0, says: '' },
  { name: 'the same certificate, its CA trusted nowhere', check: 'tls', server: 'nginx', site: 'a lab CA named in TLS_CA_FILES', config: '',
    truth: { openssl: /unable to get local issuer certificate/ }, rank: 3, says: 'Incomplete or untrusted chain' },
  { name: 'the same certificate, its CA in the system store (update-ca-certificates writes the bundle openssl reads)', check: 'tls', server: 'nginx', site: 'a lab CA named in TLS_CA_FILES', config: '',
    env: { SSL_CERT_FILE: SYSTEM_BUNDLE, SSL_CERT_DIR: join(dir, 'no-such-dir') }, truth: { openssl: 'verifies' }, rank: 0, says: '' },
  { name: 'the same certificate, its CA in NODE_EXTRA_CA_CERTS', check: 'tls', server: 'nginx', site: 'a lab CA named in TLS_CA_FILES', config: '',
    env: { NODE_EXTRA_CA_CERTS: LAB_CA }, truth: { node: 'verifies' }, rank: 0, says: '' },
  { name: 'a chain sent up to a root trusted nowhere', check: 'tls', server: 'nginx', tls: { key: certs.valid.key, cert: certs.valid.cert + certs.ca }, config: '',
    truth: { openssl: /self-signed certificate in certificate chain/ }, rank: 3, says: 'Untrusted issuer' },
  { name: 'an intermediate not sent', check: 'tls', server: 'nginx', tls: certs.viaIntermediate, config: '', caFile: LAB_CA,
    truth: { openssl: /unable to get local issuer certificate/ }, rank: 3, says: 'Incomplete or untrusted chain' },
  { name: 'an intermediate sent', check: 'tls', server: 'nginx', tls: { key: certs.viaIntermediate.key, cert: certs.viaIntermediate.chain }, config: '', caFile: LAB_CA,
    truth: { openssl: 'verifies' }, rank: 0, says: '' },
  { name: 'an expired certificate', check: 'tls', server: 'nginx', tls: certs.expired, config: '', caFile: LAB_CA,
    truth: { openssl: /certificate has expired/ }, rank: 3, says: 'Certificate expired' },
  { name: 'a certificate not yet valid', check: 'tls', server: 'nginx', tls: certs.notYetValid, config: '', caFile: LAB_CA,
    truth: { openssl: /certificate is not yet valid/ }, rank: 3, says: 'Certificate not yet valid' },
  { name: 'a certificate for another host', check: 'tls', server: 'nginx', tls: certs.wrongHost, config: '', caFile: LAB_CA,
    truth: { openssl: /hostname mismatch/ }, rank: 3, says: 'Certificate is not for localhost' },
  { name: 'a certificate naming the host in its CN alone, no subjectAltName (openssl matches the CN; Chromium refuses it: ERR_CERT_COMMON_NAME_INVALID)', check: 'tls', server: 'nginx', tls: certs.cnOnly, config: '', caFile: LAB_CA,
    truth: { openssl: 'verifies' }, rank: 0, says: 'No Subject Alternative Name: browsers refuse it' },
  { name: 'a self-signed certificate', check: 'tls', server: 'nginx', tls: certs.selfSigned, config: '',
    truth: { openssl: /self-signed certificate/ }, rank: 3, says: 'Self-signed certificate' },
  { name: 'the same self-signed certificate, named in TLS_CA_FILES', check: 'tls', server: 'nginx', site: 'a self-signed certificate', config: '', caFile: SELF,
    truth: { openssl: 'verifies' }, rank: 0, says: '' },
  // the lab lowers its own security level to serve these; openssl's default level refuses them
  { name: 'a certificate signed with SHA-1', check: 'tls', server: 'nginx', tls: certs.sha1Signed, config: 'ssl_ciphers DEFAULT:@SECLEVEL=0;', caFile: LAB_CA,
    truth: { openssl: /CA signature digest algorithm too weak/ }, rank: 3, says: 'Certificate signed with a weak algorithm: ecdsa-with-SHA1' },
  { name: 'a certificate with an RSA key of 1024 bits', check: 'tls', server: 'nginx', tls: certs.weakKey, config: 'ssl_ciphers DEFAULT:@SECLEVEL=0;', caFile: LAB_CA,
    truth: { openssl: /EE certificate key too weak/ }, rank: 3, says: 'Certificate key too weak: RSA 1024 bits' },
  { name: 'lighttpd with a lab certificate', check: 'tls', server: 'lighttpd', tls: certs.valid, config: '', caFile: LAB_CA,
    truth: { openssl: 'verifies' }, rank: 0, says: '' },
];

/** Sites no row checks: what a row's site stands in front of. */
const HELPERS: Array<SiteConfig & { server: Software }> = [
  { name: 'reflecting-app', server: 'nginx', config: `add_header Access-Control-Allow-Origin $http_origin always; add_header Access-Control-Allow-Credentials true always;` },
];

const SOFTWARE: Software[] = ['nginx', 'apache', 'lighttpd'];
const missing = [...SOFTWARE.filter((s) => !installed(s)), ...(existsSync(CHROMIUM) ? [] : ['chromium'])];
// a developer's machine may go without them; in CI a missing one is a failure
const skip = missing.length > 0 && !process.env.CI;
if (skip) {
  console.warn(`\n!! SKIPPING the checks' verdicts against real servers: ${missing.join(', ')} missing (.ci/run installs them).\n`);
  rmSync(dir, { recursive: true, force: true });
}

const servers = new Map<Software, RunningServer>();
let browser: Browser;
const results = new Map<string, CheckResult>();
let before_: Record<string, string>;
let after_: Record<string, string>;

const siteOf = (row: Row): Site => servers.get(row.server)!.sites.get(row.site ?? row.name)!;

function inputOf(row: Row): CheckInput {
  return { target: targetFields(siteOf(row).url + (row.path ?? '')), timeoutMs: 5000, ...(row.caFile ? { config: (key: string) => (key === 'TLS_CA_FILES' ? row.caFile : undefined) } : {}) };
}

/** Runs the check with the row's environment in place (the trust store reads it when built). */
async function runWithEnv(row: Row): Promise<CheckResult> {
  const saved = Object.fromEntries(Object.keys(row.env ?? {}).map((k) => [k, process.env[k]]));
  Object.assign(process.env, row.env);
  try {
    return await CHECKS[row.check](inputOf(row));
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

// rows at once: each its own browser context (the snapshots compared first are taken before any row's truth)
describe('the checks\' verdicts against real servers, held to Chromium and openssl', { skip, concurrency: 4 }, () => {
  before(async () => {
    for (const software of SOFTWARE) {
      const sites: SiteConfig[] = [
        ...ROWS.filter((r) => r.server === software && !r.site).map((r) => ({ name: r.name, config: r.config, ...(r.tls ? { tls: r.tls } : {}), ...(r.dirs ? { dirs: r.dirs } : {}) })),
        ...HELPERS.filter((h) => h.server === software),
      ];
      servers.set(software, await startServer(software, dir, sites));
    }
    browser = await launchChromium({
      // The lab's targets are on loopback; Local Network Access (which guards private addresses
      // from public pages) is off, so the browser acts as between two public sites.
      disabledFeatures: ['LocalNetworkAccessChecks'],
    });
    before_ = documentRoots([...servers.values()]);
    // every check at once, as workers run them; rows that set the environment after, one by one
    await Promise.all(ROWS.filter((r) => !r.env).map(async (row) => results.set(row.name, await CHECKS[row.check](inputOf(row)))));
    for (const row of ROWS.filter((r) => r.env)) results.set(row.name, await runWithEnv(row));
    after_ = documentRoots([...servers.values()]);
  });

  after(async () => {
    await browser?.close();
    await Promise.all([...servers.values()].map((s) => s.close()));
    rmSync(dir, { recursive: true, force: true });
  });

  test('no check created, changed or deleted anything: every document root is the same, byte for byte', () => {
    assert.ok(Object.keys(before_).length >= ROWS.length);
    assert.deepEqual(after_, before_);
  });

  test('the table holds every rank each of its checks gives, as docs/PLUGINS.md lists them, and no other', () => {
    for (const check of new Set(ROWS.map((r) => r.check))) {
      const ranks = new Set(ROWS.filter((r) => r.check === check).map((r) => r.rank));
      assert.deepEqual([...ranks].sort(), [...CHECK_RANKS[check]].sort(), check);
    }
  });

  for (const row of ROWS) {
    test(`${row.check}: ${row.name} (${row.server}): ${describeTruth(row.truth)}, so rank ${row.rank}`, async () => {
      const site = siteOf(row);
      const result = results.get(row.name)!;
      assert.equal(result.status, 'Successful', `${JSON.stringify(result)}\n${servers.get(row.server)!.log()}`);
      const findings = result.status === 'Successful' ? result.findings : [];
      // the truth first: the browser, openssl or the server itself
      await assertTruth(row, site);
      // then our verdict, and the words saying why
      assert.equal(highestRank(findings), row.rank, text(findings));
      assert.ok(text(findings).includes(row.says), `"${row.says}" not in:\n${text(findings)}`);
      if (row.check === 'tls') {
        const summary = result.status === 'Successful' ? result.summary : '';
        assert.ok(!(summary.includes('Chain: verified') && findings.some((f) => f.rank === 3)), `a verified chain beside a rank-3 finding:\n${summary}`);
      }
    });
  }
});

function text(findings: Finding[]): string {
  return findings.map((f) => `[${f.rank}] ${f.title}\n${f.detail}`).join('\n');
}

function describeTruth(truth: Truth): string {
  if ('frames' in truth) return `Chromium ${Object.entries(truth.frames).map(([who, yes]) => `${yes ? 'frames it' : 'refuses to frame it'} from ${who}`).join(', ')}`;
  if ('reads' in truth) {
    const { withCredentials: w, withoutCredentials: wo } = truth.reads;
    return `Chromium reads it with credentials from ${w.join(', ') || 'no probe origin'}, without from ${wo.join(', ') || 'none'}`;
  }
  if ('postedFromAnotherSite' in truth) return `Chromium sends ${truth.postedFromAnotherSite.join(', ') || 'none of its cookies'} with another site's form POST`;
  if ('openssl' in truth) return truth.openssl === 'verifies' ? 'openssl verifies it' : `openssl fails: ${truth.openssl.source}`;
  if ('node' in truth) return 'Node verifies it';
  return `the server answers ${truth.server.map(([m, , s]) => `${m} ${s}`).join(', ')}`;
}

async function assertTruth(row: Row, site: Site): Promise<void> {
  const truth = row.truth;
  if ('frames' in truth) {
    await withPage(async (page) => {
      for (const [framer, expected] of Object.entries(truth.frames) as Array<[Framer, boolean]>) {
        assert.equal(await framedIn(page, FRAMERS[framer](site.url), site), expected, `Chromium framing from ${framer}`);
      }
    });
  } else if ('reads' in truth) {
    const seen = { withCredentials: [] as ProbeKind[], withoutCredentials: [] as ProbeKind[] };
    await withPage(async (page) => {
      for (const probe of probeOrigins(site.url)) {
        const read = await readsIn(page, probe.origin, site.url);
        if (read.include) seen.withCredentials.push(probe.kind);
        if (read.omit) seen.withoutCredentials.push(probe.kind);
      }
    });
    assert.deepEqual(seen, truth.reads, 'what Chromium reads');
  } else if ('postedFromAnotherSite' in truth) {
    await withPage(async (page) => assert.deepEqual(await postedFromAnotherSite(page, site), truth.postedFromAnotherSite, 'the cookies Chromium sent'));
  } else if ('openssl' in truth) {
    const said = await opensslVerify(site.port, row.caFile, row.env);
    if (truth.openssl === 'verifies') assert.equal(said.code, 0, said.text);
    else assert.match(said.text, truth.openssl);
  } else if ('node' in truth) {
    const said = await nodeVerify(site.port, row.env);
    assert.equal(said, 'authorized');
  } else {
    const fresh = `/truth-${randomBytes(6).toString('hex')}.txt`;
    for (const [method, path, status, holds] of truth.server) {
      const answer = await send(site.port, method, path.endsWith('*') ? `${path.slice(0, -1) || '/'}${fresh.slice(1)}` : path, method === 'PUT' ? 'written by the test' : undefined);
      assert.equal(answer.status, status, `${method} ${path}: ${answer.status}\n${answer.headers}`);
      if (holds) assert.ok(`${answer.headers}\n${answer.body}`.includes(holds), `${holds} not in:\n${answer.headers}\n${answer.body}`);
    }
  }
}

/** A page in a fresh context whose probe and framer pages are served by the test (the attacker's pages), everything else by the network. */
async function withPage(use: (page: Page) => Promise<void>): Promise<void> {
  const context = await browser.newContext({ ignoreHTTPSErrors: true });
  context.setDefaultTimeout(10_000);
  await context.route((url) => url.pathname === '/__framer' || url.pathname === '/__probe' || url.pathname === '/__poster', (route) => {
    const url = new URL(route.request().url());
    const target = url.searchParams.get('target') ?? '';
    const body =
      url.pathname === '/__framer' ? `<!doctype html><title>framer</title><iframe src="${target}"></iframe>`
      : url.pathname === '/__poster' ? `<!doctype html><title>poster</title><form method="post" action="${target}"><input name="a" value="1"></form>`
      : '<!doctype html><title>probe</title>';
    return route.fulfill({ status: 200, contentType: 'text/html', body });
  });
  try {
    await use(await context.newPage());
  } finally {
    await context.close();
  }
}

/** Whether Chromium shows the site's page in a frame of a page of `framerOrigin`. */
async function framedIn(page: Page, framerOrigin: string, site: Site): Promise<boolean> {
  await page.goto(`${framerOrigin}/__framer?target=${encodeURIComponent(site.url)}`, { waitUntil: 'load' });
  const [frame] = page.mainFrame().childFrames();
  // a refused frame shows Chromium's error page (chrome-error://chromewebdata/)
  if (!frame || frame.url() !== site.url) return false;
  return (await frame.locator('#site').textContent({ timeout: 10_000 }).catch(() => null)) === site.id;
}

/** The cookies (names, sorted) Chromium sends with a form https://framer.example posts to the site's /echo, after a visit to the site set them. */
async function postedFromAnotherSite(page: Page, site: Site): Promise<string[]> {
  await page.goto(site.url);
  // set, so that one not sent was kept from the POST, not refused
  assert.notEqual((await page.context().cookies(site.url)).length, 0, 'Chromium stored no cookie of the page');
  await page.goto(`https://framer.example/__poster?target=${encodeURIComponent(new URL('echo', site.url).href)}`);
  await Promise.all([page.waitForURL(new URL('echo', site.url).href), page.evaluate(() => document.forms[0]!.submit())]);
  const echoed = (await page.locator('body').textContent())!.trim();
  assert.match(echoed, /^cookies:/);
  return echoed.slice('cookies:'.length).split(';').map((pair) => pair.split('=')[0]!.trim()).filter(Boolean).sort();
}

/** Whether a script of `origin` (`null`: a sandboxed iframe's) reads the site's page with fetch, with credentials and without. */
async function readsIn(page: Page, origin: string, target: string): Promise<{ include: boolean; omit: boolean }> {
  await page.goto(`${origin === 'null' ? 'https://sandbox-host.example' : origin}/__probe`);
  // the same script, run by the page itself or by a sandboxed iframe of it (whose origin is null)
  const script = `Promise.all(['include', 'omit'].map((credentials) => fetch(${JSON.stringify(target)}, { credentials }).then((r) => r.text()).then(() => true, () => false)))`;
  const [include, omit] = await page.evaluate(([code, sandboxed]) => new Promise<boolean[]>((resolve) => {
    if (!sandboxed) return void (0, eval)(code).then(resolve);
    addEventListener('message', (event) => resolve(event.data), { once: true });
    const frame = document.createElement('iframe');
    frame.sandbox.add('allow-scripts');
    frame.srcdoc = `<script>${code}.then((read) => parent.postMessage(read, '*'))</${'script'}>`;
    document.body.append(frame);
  }), [script, origin === 'null'] as const);
  return { include: include!, omit: omit! };
}

/** `openssl s_client -verify_return_error -verify_hostname localhost`, with the box's store (or the row's environment) and the row's CA file. */
function opensslVerify(port: number, caFile: string | undefined, env: Record<string, string> = {}): Promise<{ code: number | undefined; text: string }> {
  const args = ['s_client', '-connect', `127.0.0.1:${port}`, '-servername', 'localhost', '-verify_return_error', '-verify_hostname', 'localhost', ...(caFile ? ['-CAfile', caFile] : [])];
  return new Promise((resolve) => {
    const child = execFile('openssl', args, { env: { ...process.env, ...env }, timeout: 10_000 }, (_err, stdout, stderr) => {
      const text = `${stdout}\n${stderr}`;
      const code = /Verify return code: (\d+)/.exec(text)?.[1] ?? /verify error:num=(\d+)/.exec(text)?.[1];
      resolve({ code: code === undefined ? undefined : Number(code), text: text.split('\n').filter((l) => /verify|Verify|error/.test(l)).join('\n') });
    });
    child.stdin?.end();
  });
}

/** Node's own https.get in a process of its own, with the row's environment: `authorized` or the error's code. */
function nodeVerify(port: number, env: Record<string, string> = {}): Promise<string> {
  const script = `require('node:https').get('https://localhost:${port}/', (res) => { console.log('authorized'); res.destroy(); }).on('error', (e) => console.log(e.code));`;
  return new Promise((resolve) => {
    execFile(process.execPath, ['-e', script], { env: { ...process.env, ...env }, timeout: 10_000 }, (_err, stdout) => resolve(stdout.trim()));
  });
}

function send(port: number, method: string, path: string, body: string | undefined): Promise<{ status: number; headers: string; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, headers: { host: `localhost:${port}`, ...(body ? { 'content-length': Buffer.byteLength(body) } : {}) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => {
        const headers: string[] = [];
        for (let i = 0; i < res.rawHeaders.length; i += 2) headers.push(`${res.rawHeaders[i]!.toLowerCase()}: ${res.rawHeaders[i + 1]}`);
        resolve({ status: res.statusCode ?? 0, headers: headers.join('\n'), body: text });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}
