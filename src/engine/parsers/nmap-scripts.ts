/**
 * NSE script results read into ranked findings (the table in docs/PLUGINS.md): risky HTTP methods,
 * TRACE, WebDAV, certificates (expired, not yet valid, self-signed, weak key or signature, another
 * host's), weak protocols and ciphers, anything nmap's vulns library calls VULNERABLE, anonymous FTP,
 * SMB signing not required, open relays and displays, default credentials, and CVEs with a CVSS
 * score. Each reads one script's text output line by line: linear, no expression that backtracks,
 * and at most MAX_PER_SCRIPT findings from one script.
 */
import { isIP } from 'node:net';
import { headOf } from '../findings.js';
import type { Finding } from '../types.js';

/** What a script's result is read against: the scan, the host, the port. */
export interface ScriptContext {
  /** The name the scan was given for the host (`<hostname type="user">`), if any. */
  hostname?: string;
  /** The host's address. */
  address?: string;
  /** When the scan started (ms since the epoch): a certificate's dates are judged at that time. */
  scanTime?: number;
}

export const MAX_PER_SCRIPT = 100;
/** A finding's detail quotes at most this much of the script's output. */
const MAX_QUOTE = 2000;

/**
 * `text` cut to `max` characters, marked; never between the halves of a surrogate pair (a lone
 * half is no UTF-8, and strict JSON readers refuse it).
 */
export function clip(text: string, max = MAX_QUOTE): string {
  return text.length <= max ? text : `${headOf(text, max)}…`;
}
const lines = (output: string) => output.split('\n').map((l) => l.trim()).filter((l) => l !== '');

/** The value after `label:` on the first line that starts with it. */
function field(all: string[], label: string): string | undefined {
  const line = all.find((l) => l.startsWith(`${label}:`));
  return line === undefined ? undefined : line.slice(label.length + 1).trim();
}

/** Methods that change what a server holds. */
const WRITE_METHODS = new Set(['PUT', 'DELETE', 'PATCH', 'MOVE', 'COPY', 'MKCOL', 'PROPPATCH', 'LOCK', 'UNLOCK']);

function httpMethods(output: string): Finding[] {
  const risky = field(lines(output), 'Potentially risky methods')?.split(/\s+/).filter(Boolean) ?? [];
  if (risky.length === 0) return [];
  const writes = risky.filter((m) => WRITE_METHODS.has(m.toUpperCase()));
  const what = writes.length > 0 ? `Write methods advertised: ${writes.join(' ')}` : `Risky methods advertised: ${risky.join(' ')}`;
  return [{ rank: 2, title: `${what} (nmap read the Allow header of OPTIONS: not confirmed)`, detail: clip(`http-methods: ${output.trim()}`) }];
}

/** Certificate dates as ssl-cert writes them (`2036-11-23T14:37:25`, or older `2013-04-01 23:59:59`), UTC. */
function certDate(text: string | undefined): number | undefined {
  const m = text === undefined ? null : /^(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)/.exec(text);
  return m ? Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!) : undefined;
}

/** Whether a certificate name (`*.example.com` matches one label) names `host`. */
function nameMatches(pattern: string, host: string): boolean {
  const [p, h] = [pattern.toLowerCase().replace(/\.$/, ''), host.toLowerCase().replace(/\.$/, '')];
  if (p === h) return true;
  if (!p.startsWith('*.')) return false;
  const dot = h.indexOf('.');
  return dot > 0 && h.slice(dot + 1) === p.slice(2);
}

function sslCert(output: string, ctx: ScriptContext): Finding[] {
  const all = lines(output);
  const found: Finding[] = [];
  const detail = clip(`ssl-cert: ${output.trim()}`);
  const add = (title: string) => found.push({ rank: 3, title: `Certificate ${title}`, detail });
  const subject = field(all, 'Subject');
  const issuer = field(all, 'Issuer');
  const notBefore = certDate(field(all, 'Not valid before'));
  const notAfter = certDate(field(all, 'Not valid after'));
  const at = ctx.scanTime ?? Date.now();
  const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
  if (notAfter !== undefined && notAfter < at) add(`expired on ${day(notAfter)}`);
  if (notBefore !== undefined && notBefore > at) add(`not valid before ${day(notBefore)}`);
  if (subject !== undefined && subject === issuer) add(`self-signed (issuer = subject: ${clip(subject, 200)})`);
  const type = field(all, 'Public Key type')?.toLowerCase();
  const bits = Number(field(all, 'Public Key bits'));
  if (Number.isFinite(bits) && ((type === 'rsa' || type === 'dsa' || type === 'dh') && bits < 2048 || type === 'ec' && bits < 224)) {
    add(`key too weak: ${type?.toUpperCase()} ${bits} bits`);
  }
  const signature = field(all, 'Signature Algorithm');
  if (signature !== undefined && /md2|md4|md5|sha1(?!\d)|sha-1/i.test(signature)) add(`signed with a weak algorithm: ${signature}`);
  // the host the scan was given: its name in a DNS name of the certificate (or the CN without any), an address in its IP names
  const san = field(all, 'Subject Alternative Name') ?? '';
  const dnsNames = [...san.matchAll(/DNS:([^,\s]+)/g)].map((m) => m[1]!);
  const ipNames = [...san.matchAll(/IP Address:([^,\s]+)/g)].map((m) => m[1]!);
  const cn = /commonName=([^/,]+)/.exec(subject ?? '')?.[1];
  const host = ctx.hostname && !isIP(ctx.hostname) ? ctx.hostname : (ctx.hostname ?? ctx.address);
  if (host !== undefined && (subject !== undefined || san !== '')) {
    const names = dnsNames.length > 0 ? dnsNames : cn ? [cn] : [];
    const matches = isIP(host) ? ipNames.includes(host) : names.some((n) => nameMatches(n, host));
    if (!matches) add(`not for ${host} (it names ${[...names, ...ipNames].join(', ') || 'no host'})`);
  }
  return found;
}

const GRADE_RANK: Record<string, number> = { B: 2, C: 3, D: 4, E: 4, F: 4 };

function sslEnumCiphers(output: string): Finding[] {
  const all = lines(output);
  const found: Finding[] = [];
  const detail = clip(`ssl-enum-ciphers: ${output.trim()}`);
  const protocols = all.filter((l) => /^(SSLv2|SSLv3|TLSv1\.[0-3]):$/.test(l)).map((l) => l.slice(0, -1));
  const old = protocols.filter((p) => p === 'SSLv2' || p === 'SSLv3');
  const deprecated = protocols.filter((p) => p === 'TLSv1.0' || p === 'TLSv1.1');
  if (old.length > 0) found.push({ rank: 3, title: `Broken protocol offered: ${old.join(', ')}`, detail });
  if (deprecated.length > 0) found.push({ rank: 2, title: `Deprecated protocol offered: ${deprecated.join(', ')}`, detail });
  const least = field(all, 'least strength');
  const rank = least === undefined ? undefined : GRADE_RANK[least];
  if (rank !== undefined) {
    // why nmap capped the grade: the lines of its "warnings:" sections, once each
    const warnings = new Set<string>();
    let inWarnings = false;
    for (const l of all) {
      if (l === 'warnings:') inWarnings = true;
      else if (l.endsWith(':') || l.includes(': ')) inWarnings = false;
      else if (inWarnings) warnings.add(l);
    }
    const weakest = all.filter((l) => l.endsWith(` - ${least}`)).map((l) => l.slice(0, -4));
    const because = warnings.size > 0 ? `: ${[...warnings].slice(0, 3).join('; ')}` : '';
    found.push({ rank, title: `Weak cipher suites offered (least strength ${least}${because})`, detail: clip(`weakest (${least}): ${[...new Set(weakest)].slice(0, 20).join(', ')}\n\n${detail}`) });
  }
  return found;
}

const RISK_RANK: Record<string, number> = { HIGH: 4, MEDIUM: 3, LOW: 2 };

/**
 * The value of an `IDs: CVE:...` line, up to a line terminator, without a regex: `^\s*IDs:\s*(.+)$`
 * took quadratic time over spaces then a terminator `.` does not take (`\u2028`, `\r`): 3 s for
 * 60,000 of them in one script's output.
 */
function idsOf(line: string): string | undefined {
  const start = line.trimStart();
  if (!start.startsWith('IDs:')) return undefined;
  return start.slice(4).split(/[\r\u2028\u2029]/, 1)[0]!.trim() || undefined;
}

/** The lines of a vulnerability's block read after its state, and looked back over for its title. */
const BLOCK_LINES = 40;

/** nmap's vulns library: a block per vulnerability, `State: VULNERABLE` (or LIKELY VULNERABLE), `Risk factor`, `IDs`. */
function vulnerabilities(id: string, output: string): Finding[] {
  const all = output.split('\n');
  const found: Finding[] = [];
  for (let i = 0; i < all.length && found.length < MAX_PER_SCRIPT; i++) {
    const state = /^\s*State:\s*(LIKELY VULNERABLE|VULNERABLE)/.exec(all[i]!)?.[1];
    if (!state) continue;
    // the title is the line above the state (the first line of the block), looked for as far back
    // as the block is read forward: each state walked back over every blank line before it, 64 KiB
    // of them and a state were 30 ms, and a scan has thousands of scripts
    let t = i - 1;
    const blank = (at: number) => all[at]!.trim() === '' || /^\s*VULNERABLE:\s*$/.test(all[at]!);
    while (t >= 0 && i - t < BLOCK_LINES && blank(t)) t--;
    // its first sentence: some titles are a paragraph
    const line = t >= 0 && !blank(t) ? all[t]!.trim() : id;
    const stop = line.indexOf('. ');
    const title = stop > 0 && stop < 200 ? line.slice(0, stop + 1) : line;
    let end = i + 1;
    while (end < all.length && !/^\s*State:/.test(all[end]!) && end - i < BLOCK_LINES) end++;
    const block = all.slice(Math.max(0, t), end);
    const risk = block.map((l) => /^\s*Risk factor:\s*(\w+)/i.exec(l)?.[1]?.toUpperCase()).find(Boolean);
    const ids = block.map(idsOf).find(Boolean);
    // no risk factor said: medium; LIKELY VULNERABLE: one rank lower than VULNERABLE would be
    const risked = risk ? (RISK_RANK[risk] ?? 3) : 3;
    const rank = state === 'VULNERABLE' ? risked : Math.max(2, risked - 1);
    found.push({ rank, title: `${clip(title, 200)} (${id}: ${state}${ids ? `, ${clip(ids, 200)}` : ''})`, detail: clip(`${id}: ${block.join('\n').trim()}`) });
  }
  return found;
}

/** CVSS (v2 or v3) to a rank: critical 9+, high 7+, medium 4+, low above 0. */
export function cvssRank(score: number): number {
  if (score >= 9) return 5;
  if (score >= 7) return 4;
  if (score >= 4) return 3;
  return score > 0 ? 2 : 1;
}

/** `CVE-2021-41773<separators>7.5`: vulners' `\tCVE\tscore\tlink` and vulscan-style `[CVE] score`. */
const CVE_WITH_SCORE = /(CVE-\d{4}-\d{4,7})[\]\s|,;:]{1,8}(10(?:\.0)?|\d\.\d)(?![\d.])/;

function cves(id: string, output: string, service: string): Finding[] {
  const seen = new Set<string>();
  const found: Finding[] = [];
  for (const line of output.split('\n')) {
    if (found.length >= MAX_PER_SCRIPT) break;
    const m = CVE_WITH_SCORE.exec(line);
    if (!m || seen.has(m[1]!)) continue;
    seen.add(m[1]!);
    const score = Number(m[2]);
    const exploit = /\*EXPLOIT\*/.test(line) ? ', a public exploit is listed' : '';
    found.push({ rank: cvssRank(score), title: `${m[1]} (CVSS ${m[2]}${exploit})${service ? ` in ${service}` : ''}`, detail: clip(`${id}: ${line.trim()}`) });
  }
  return found;
}

/**
 * "Security types:" with `None` first on a later line (vnc-info). As a regex (`Security
 * types:\s*\n\s*None\b`), a run of blank lines made it quadratic: 64 KiB of them took 5.7 s, and
 * one nmap.xml held hundreds (the target writes them).
 */
function vncWithoutAuthentication(output: string): boolean {
  for (let at = output.indexOf('Security types:'); at !== -1; at = output.indexOf('Security types:', at + 1)) {
    let i = at + 'Security types:'.length;
    let newline = false;
    for (; i < output.length && /\s/.test(output[i]!); i++) if (output[i] === '\n') newline = true;
    if (newline && output.startsWith('None', i) && !/\w/.test(output[i + 4] ?? '')) return true;
  }
  return false;
}

/** What ends a line for a regex's `.` and `^` (m). */
const LINES = /[\n\r\u2028\u2029]/;

/**
 * A line `[user:password] at /path` (http-default-accounts), read line by line: as the regex
 * `^\s*\[.+\] at ` (m), blank lines made it quadratic.
 */
const defaultAccount = (output: string): boolean =>
  output.split(LINES).some((line) => {
    const text = line.trimStart();
    return text.startsWith('[') && text.indexOf('] at ', 2) !== -1;
  });

/**
 * WebDAV said (http-webdav-scan): its type, or PROPFIND after "Allowed Methods:" on one line (as
 * a regex, one line of many of them was quadratic).
 */
const webDav = (output: string): boolean =>
  output.includes('WebDAV type:') ||
  output.split(LINES).some((line) => {
    const at = line.indexOf('Allowed Methods:');
    return at !== -1 && /\bPROPFIND\b/.test(line.slice(at + 'Allowed Methods:'.length));
  });

/**
 * Phrases of a script's output that are findings in themselves: a regex where it runs in linear
 * time whatever the target wrote (a literal, or a literal then `\s*` then a literal), else a
 * function.
 */
const PHRASES: { id: RegExp; says: RegExp | ((output: string) => boolean); rank: number; title: string }[] = [
  { id: /^http-trace$/, says: /TRACE is enabled/, rank: 3, title: 'TRACE is enabled: the server echoes the request (cross-site tracing)' },
  { id: /^http-webdav-scan$/, says: webDav, rank: 2, title: 'WebDAV is enabled' },
  { id: /^ftp-anon$/, says: /Anonymous FTP login allowed/i, rank: 3, title: 'Anonymous FTP login allowed' },
  { id: /^smb-security-mode$/, says: /message_signing:\s*disabled/, rank: 3, title: 'SMB signing disabled' },
  { id: /^smb2-security-mode$/, says: /Message signing is disabled/, rank: 3, title: 'SMB signing disabled' },
  { id: /^smb2-security-mode$/, says: /Message signing enabled but not required/, rank: 2, title: 'SMB signing not required' },
  { id: /^smb-security-mode$/, says: /message_signing:\s*supported/, rank: 2, title: 'SMB signing not required' },
  { id: /^smtp-open-relay$/, says: /Server is an open relay/, rank: 4, title: 'The SMTP server is an open relay' },
  { id: /^dns-recursion$/, says: /Recursion appears to be enabled/, rank: 2, title: 'The DNS server answers recursive queries for anyone' },
  { id: /^x11-access$/, says: /X server access is granted/, rank: 4, title: 'The X server accepts connections: its display can be watched and controlled' },
  { id: /^vnc-info$/, says: vncWithoutAuthentication, rank: 4, title: 'VNC without authentication' },
  { id: /^ms-sql-empty-password$/, says: /=> Login Success/, rank: 4, title: 'SQL Server login with an empty password' },
  { id: /^http-default-accounts$/, says: defaultAccount, rank: 4, title: 'Default credentials accepted' },
];

/**
 * The scripts a vulnerability is read from. Most scripts quote what the target sent (a banner, a
 * certificate's subject, a page's title, an SMTP greeting), where the target can write
 * `State: VULNERABLE` or `CVE-2021-44228 10.0 *EXPLOIT*` itself: those lines count only from
 * nmap's vulns library reports (the scripts named for a vulnerability, a CVE or a backdoor, and
 * the others of nmap 7.93 that report through it) and from the CVE lists of vulners and vulscan.
 */
const NAMED_FOR_A_VULNERABILITY = /vuln|cve|backdoor/;
const VULNS_LIBRARY = new Set([
  'clamav-exec', 'ftp-libopie', 'http-avaya-ipoffice-users', 'http-cross-domain-policy', 'http-frontpage-login',
  'http-iis-short-name-brute', 'http-method-tamper', 'http-phpmyadmin-dir-traversal', 'http-sap-netweaver-leak',
  'http-shellshock', 'http-slowloris-check', 'http-tplink-dir-traversal', 'ipmi-cipher-zero', 'qconn-exec',
  'realvnc-auth-bypass', 'ssl-ccs-injection', 'ssl-dh-params', 'ssl-heartbleed', 'ssl-poodle', 'sslv2-drown',
  'supermicro-ipmi-conf', 'tls-ticketbleed',
]);
const CVE_LISTS = new Set(['vulners', 'vulscan']);

/** The findings one script's result holds (none for most scripts: its output is in the summary). */
export function scriptFindings(id: string, output: string, ctx: ScriptContext & { service?: string } = {}): Finding[] {
  const found: Finding[] = [];
  if (id === 'http-methods') found.push(...httpMethods(output));
  else if (id === 'ssl-cert') found.push(...sslCert(output, ctx));
  else if (id === 'ssl-enum-ciphers') found.push(...sslEnumCiphers(output));
  for (const phrase of PHRASES) {
    if (!phrase.id.test(id)) continue;
    if (typeof phrase.says === 'function' ? phrase.says(output) : phrase.says.test(output)) found.push({ rank: phrase.rank, title: phrase.title, detail: clip(`${id}: ${output.trim()}`) });
  }
  if ((NAMED_FOR_A_VULNERABILITY.test(id) || VULNS_LIBRARY.has(id)) && output.includes('VULNERABLE')) found.push(...vulnerabilities(id, output));
  if (CVE_LISTS.has(id) && output.includes('CVE-')) found.push(...cves(id, output, ctx.service ?? ''));
  return found.slice(0, MAX_PER_SCRIPT);
}
