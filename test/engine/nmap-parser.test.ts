import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeEntities, parseNmapXml, parseNmapXmlInSlices } from '../../src/engine/parsers/nmap.ts';
import { boundFindings, MAX_TITLE } from '../../src/engine/findings.ts';
import { clip, cvssRank } from '../../src/engine/parsers/nmap-scripts.ts';
import { checkProgram, runProgram } from '../../src/engine/process-group.ts';

const fixture = (name: string) => readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8');
const ranksAndTitles = (xml: string) => parseNmapXml(xml).findings.map((f) => [f.rank, f.title]);

test('a real scan of 127.0.0.1: open ports with their services, anonymous FTP at rank 3', () => {
  const { findings, summary } = parseNmapXml(fixture('nmap-ftp-anon-http.xml'));
  assert.deepEqual(
    findings.map((f) => [f.rank, f.title]),
    [
      [1, 'Open port 2121/tcp: ftp (vsftpd 3.0.3)'],
      [3, 'Anonymous FTP login allowed on 2121/tcp'],
      [1, 'Open port 18090/tcp: http (Apache httpd 2.4.57 (Debian))'],
    ],
  );
  assert.ok(findings[0]!.detail.startsWith('<port protocol="tcp" portid="2121"><state state="open"'));
  assert.ok(findings[0]!.detail.endsWith('</port>'));
  assert.equal(findings[1]!.detail, "ftp-anon: Anonymous FTP login allowed (FTP code 230)\nCan't get directory listing: PASV failed: 500 Unknown command.");
  const lines = summary.split('\n');
  for (const line of [
    'Host 127.0.0.1 (localhost): up',
    'PORT       STATE  SERVICE  VERSION',
    '2121/tcp   open   ftp      vsftpd 3.0.3',
    '| ftp-anon: Anonymous FTP login allowed (FTP code 230)',
    "|   Can't get directory listing: PASV failed: 500 Unknown command.",
    '18090/tcp  open   http     Apache httpd 2.4.57 (Debian)',
    // the page's title was "Tom &amp; Jerry's": one level of entities decoded, no more
    `| http-title: Tom &amp; Jerry's "page"`,
    'Not shown: 1 closed port',
  ]) {
    assert.ok(lines.includes(line), `summary lacks ${JSON.stringify(line)}:\n${summary}`);
  }
  assert.doesNotMatch(summary, /incomplete/);
});

test('an unidentified service: its long fingerprint is elided from the quoted line', () => {
  const { findings, summary } = parseNmapXml(fixture('nmap-unknown-service.xml'));
  assert.deepEqual(findings.map((f) => [f.rank, f.title]), [[1, 'Open port 18080/tcp: unknown']]);
  assert.equal(findings[0]!.detail, '<port protocol="tcp" portid="18080"><state state="open" reason="syn-ack" reason_ttl="64"/><service name="unknown" servicefp="…" method="table" conf="3"/></port>');
  assert.match(summary, /^18080\/tcp {2}open {3}unknown$/m);
});

test('an attribute holding a line break (a banner nmap quotes as &#xa;) adds no line: written \\n, in the summary and the findings; a script\'s output keeps its lines', () => {
  const xml = `<?xml version="1.0"?><nmaprun scanner="nmap" version="7.93"><host><status state="up"/><address addr="192.0.2.9"/><ports>
<port protocol="tcp" portid="80"><state state="open"/><service name="http" product="evil&#xa;Nothing was scanned&#xd;&#xa;[rank 0] x" version="1&#xa;2"/><script id="http-title" output="line one&#xa;line two"/></port>
</ports></host><runstats><finished exit="success" summary="1 IP address (1 host up)"/></runstats></nmaprun>`;
  const { findings, summary } = parseNmapXml(xml);
  assert.ok(!summary.split('\n').some((line) => /^(Nothing was scanned|\[rank 0\] x|2)/.test(line)), summary);
  assert.match(summary, /evil\\nNothing was scanned\\r\\n\[rank 0\] x 1\\n2/);
  assert.match(summary, /line one\n/);
  for (const finding of findings) assert.ok(!finding.title.includes('\n'), finding.title);
});

test('nothing scanned (no host up, a name that did not resolve, nmap\'s own error) is unranked, not a passing rank 0', () => {
  const run = (hosts: string, finished: string) => parseNmapXml(`<?xml version="1.0"?><nmaprun scanner="nmap" version="7.93">${hosts}<runstats>${finished}</runstats></nmaprun>`).findings.map((f) => [f.rank, f.title]);
  // nmap 7.93 against a name that does not resolve: exit 0, a whole file, no host
  assert.deepEqual(run('', '<finished exit="success" summary="Nmap done: 0 IP addresses (0 hosts up) scanned"/>'), [[-1, 'Nothing was scanned: no host was up']]);
  assert.deepEqual(run('<host><status state="down"/><address addr="192.0.2.9"/></host>', '<finished exit="success" summary="1 IP address (0 hosts up)"/>'), [[-1, 'Nothing was scanned: no host was up']]);
  assert.deepEqual(run('', '<finished exit="error" errormsg="Failed to open device eth9"/>'), [[-1, 'nmap failed: nothing was scanned']]);
  assert.deepEqual(run('<host><status state="up"/><address addr="192.0.2.9"/><ports></ports></host>', '<finished exit="success" summary="1 IP address (1 host up)"/>'), [[0, 'No open port found']]);
});

test('no open port: one rank-0 finding', () => {
  assert.deepEqual(ranksAndTitles(fixture('nmap-closed.xml')), [[0, 'No open port found']]);
  const { findings, summary } = parseNmapXml(fixture('nmap-no-open-port.xml'));
  assert.deepEqual(findings.map((f) => [f.rank, f.title]), [[0, 'No open port found']]);
  assert.match(findings[0]!.detail, /2 IP addresses \(1 host up\)/);
  assert.match(summary, /Host 192\.0\.2\.20: up\nNo open port\.\nNot shown: 1000 filtered ports/);
  assert.match(summary, /Host 192\.0\.2\.21: down/);
});

test('anonymous FTP with a listing, entities decoded in the detail and the table', () => {
  const { findings, summary } = parseNmapXml(fixture('nmap-ftp-anon-listing.xml'));
  assert.deepEqual(
    findings.map((f) => [f.rank, f.title]),
    [
      [1, 'Open port 21/tcp: ftp (vsftpd 3.0.3)'],
      [3, 'Anonymous FTP login allowed on 21/tcp'],
      [1, 'Open port 22/tcp: ssh (OpenSSH 9.2p1 Debian 2+deb12u3 protocol 2.0)'],
    ],
  );
  assert.match(findings[1]!.detail, /\n-rw-r--r-- +1 ftp +ftp +512 Nov 21 17:03 backup & "keys"\.tar\.gz$/);
  assert.ok(findings[0]!.detail.length <= 601, 'a long port element is clipped');
  assert.match(summary, /^Host 192\.0\.2\.10 \(files\.example\.test\): up$/m);
  assert.match(summary, /^22\/tcp {2}open {3}ssh {6}OpenSSH 9\.2p1 Debian 2\+deb12u3 protocol 2\.0$/m);
  assert.match(summary, /^\| ftp-syst: STAT:\n\| {3}FTP server status:$/m);
  assert.match(summary, /^Not shown: 998 closed ports$/m);
});

test('truncated XML: what could be read, and a finding saying it is incomplete', () => {
  const { findings, summary } = parseNmapXml(fixture('nmap-truncated.xml'));
  assert.deepEqual(
    findings.map((f) => [f.rank, f.title]),
    [
      [1, 'Open port 2121/tcp: ftp (vsftpd 3.0.3)'],
      [3, 'Anonymous FTP login allowed on 2121/tcp'],
      [1, 'Open port 18090/tcp: http (Apache httpd 2.4.57 (Debian))'],
      [-1, 'Incomplete nmap output'],
    ],
  );
  assert.match(summary, /The XML was incomplete/);
  assert.match(summary, /^2121\/tcp {3}open {3}ftp {6}vsftpd 3\.0\.3$/m);
});

test('every prefix of a real scan parses without throwing; only the whole is complete', () => {
  const xml = fixture('nmap-ftp-anon-http.xml');
  const full = xml.lastIndexOf('</nmaprun>') + '</nmaprun>'.length;
  let lastOpenPorts = 0;
  for (let cut = 0; cut <= xml.length; cut++) {
    const { findings } = parseNmapXml(xml.slice(0, cut));
    const incomplete = findings.some((f) => f.rank === -1);
    assert.equal(incomplete, cut < full, `cut at ${cut}`);
    const openPorts = findings.filter((f) => f.rank === 1).length;
    assert.ok(openPorts >= lastOpenPorts, `cut at ${cut}: a longer prefix never loses a port`);
    lastOpenPorts = openPorts;
  }
  assert.equal(lastOpenPorts, 2);
});

test('not nmap XML at all: no throw, one unranked finding', () => {
  for (const text of ['', 'Starting Nmap 7.93\nQUITTING!', '<<<>>>&&&;', '<a b="c', '\u0000\uffff<nmap', '<x/><y a=1 b>']) {
    const { findings, summary } = parseNmapXml(text);
    assert.deepEqual(findings.map((f) => [f.rank, f.title]), [[-1, 'No nmap XML output']], JSON.stringify(text));
    assert.match(summary, /No nmap XML output was found/);
  }
});

test('entities: the five named ones and numeric references, one level only', () => {
  assert.equal(decodeEntities('&quot;&amp;&lt;&gt;&apos;&#65;&#x42;&#xa;&#45;&#45;'), `"&<>'AB\n--`);
  assert.equal(decodeEntities('&amp;amp; &amp;lt;'), '&amp; &lt;');
  assert.equal(decodeEntities('&nbsp; &#x110000; &#0; & &amp'), '&nbsp; &#x110000; &#0; & &amp');
  assert.equal(decodeEntities('&#x1F600;'), '\u{1F600}');
  // a surrogate's number is no character: a lone half was in the API's JSON (strict readers refuse it)
  assert.equal(decodeEntities('ht&#xDFFF;tp &#55357;'), 'ht\ufffdtp \ufffd');
});

test('a quote cut at its bound keeps surrogate pairs whole', () => {
  assert.equal(clip(`${'a'.repeat(9)}😀b`, 10), `${'a'.repeat(9)}…`);
  assert.equal(clip(`${'a'.repeat(8)}😀b`, 10), `${'a'.repeat(8)}😀…`);
  assert.equal(clip('short', 10), 'short');
  // and a finding or summary cut at its bound (boundFindings, boundSummary)
  const [finding] = boundFindings([{ rank: 1, title: `${'t'.repeat(MAX_TITLE - 1)}😀`, detail: 'd' }]);
  assert.equal(finding!.title, `${'t'.repeat(MAX_TITLE - 1)}… (cut)`);
});

test('several hosts, UDP, an SSL tunnel, single quotes, a port without a service', () => {
  const xml = `<?xml version="1.0"?><nmaprun scanner='nmap' version='7.93' args='nmap -sU -sS'>
<host><status state="up"/><address addr="192.0.2.1" addrtype="ipv4"/><ports>
<port protocol="tcp" portid="443"><state state="open"/><service name="http" tunnel="ssl" product="nginx" version="1.22.1"/></port>
<port protocol="udp" portid="161"><state state="open|filtered"/><service name="snmp"/></port>
</ports></host>
<host><status state="up"/><address addr="192.0.2.2" addrtype="ipv4"/><ports>
<port protocol='udp' portid='53'><state state='open'/></port>
</ports></host>
<runstats><finished exit="error" errormsg="sendto failed: Operation not permitted"/></runstats></nmaprun>`;
  const { findings, summary } = parseNmapXml(xml);
  assert.deepEqual(
    findings.map((f) => [f.rank, f.title]),
    [
      [1, 'Open port 443/tcp: ssl/http (nginx 1.22.1) on 192.0.2.1'],
      [1, 'Open port 53/udp on 192.0.2.2'],
    ],
  );
  assert.match(summary, /Not shown: 1 open\|filtered port/);
  assert.match(summary, /nmap reported an error: sendto failed: Operation not permitted/);
});

test('nmap run by runProgram against a local server: its XML file parses to the open port', { timeout: 15_000 }, async (t) => {
  if (!(await checkProgram('nmap')).ok) return t.skip('nmap is not installed');
  const server = createServer((_req, res) => res.end('ok'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const outputDir = mkdtempSync(join(tmpdir(), 'assessd-nmap-'));
  try {
    const xmlPath = join(outputDir, 'nmap.xml');
    const handle = runProgram({
      program: 'nmap',
      argv: ['-Pn', '-n', '-p', String(port), '-oX', xmlPath, '127.0.0.1'],
      outputDir,
      maxOutputBytes: 1024 * 1024,
      timeoutMs: 12_000,
    });
    const end = await handle.done;
    assert.deepEqual([end.outcome, end.exitCode], ['exited', 0]);
    const { findings, summary } = parseNmapXml(readFileSync(xmlPath, 'utf8'));
    assert.equal(findings.length, 1);
    assert.equal(findings[0]!.rank, 1);
    assert.match(findings[0]!.title, new RegExp(`^Open port ${port}/tcp`));
    assert.match(summary, new RegExp(`^${port}/tcp +open`, 'm'));
  } finally {
    server.close();
    rmSync(outputDir, { recursive: true, force: true });
  }
});

/**
 * NSE results ranked: real nmap recorded against Debian's nginx, apache2 and lighttpd
 * (fixtures/nmap/make-fixtures.sh), and a handmade file in the documented output formats of the
 * scripts this box cannot run (vulners, vulscan, SMB, FTP, SMTP). Each row: the file, and every
 * finding as [rank, title], in order.
 */
const SCRIPT_RESULTS: [file: string, findings: [number, string][]][] = [
  ['nginx-tls-expired.xml', [
    [1, 'Open port 34553/tcp: ssl/http (nginx 1.22.1)'],
    [3, 'Certificate expired on 2021-01-01 on 34553/tcp'],
    [3, 'Certificate self-signed (issuer = subject: commonName=localhost) on 34553/tcp'],
    [2, 'Deprecated protocol offered: TLSv1.0, TLSv1.1 on 34553/tcp'],
    [4, 'Weak cipher suites offered (least strength F: Anonymous key exchange, score capped at F) on 34553/tcp'],
  ]],
  // -sV calls Apache's https port "http": the + prefix ran the TLS scripts anyway
  ['apache-tls-weak.xml', [
    [1, 'Open port 50483/tcp: http (Apache httpd 2.4.71 (Debian) OpenSSL/3.0.19)'],
    [2, 'Deprecated protocol offered: TLSv1.0, TLSv1.1 on 50483/tcp'],
    [4, 'Weak cipher suites offered (least strength F: Insecure certificate signature (SHA1), score capped at F) on 50483/tcp'],
    [3, 'Certificate self-signed (issuer = subject: commonName=localhost) on 50483/tcp'],
    [3, 'Certificate key too weak: RSA 1024 bits on 50483/tcp'],
    [3, 'Certificate signed with a weak algorithm: sha1WithRSAEncryption on 50483/tcp'],
    [3, 'Diffie-Hellman Key Exchange Insufficient Group Strength (ssl-dh-params: VULNERABLE) on 50483/tcp'],
  ]],
  // the same port without the + prefix: no TLS script ran, only the open port is seen
  ['apache-tls-weak-without-plus.xml', [[1, 'Open port 50483/tcp: http (Apache httpd 2.4.71 (Debian) OpenSSL/3.0.19)']]],
  ['lighttpd-tls-wrong-host.xml', [
    [1, 'Open port 37007/tcp: ssl/http (lighttpd 1.4.69)'],
    [3, 'Certificate self-signed (issuer = subject: commonName=wrong.example) on 37007/tcp'],
    [3, 'Certificate not for localhost (it names wrong.example) on 37007/tcp'],
  ]],
  ['nginx-methods.xml', [
    [1, 'Open port 39513/tcp: http (nginx 1.22.1)'],
    [2, 'Write methods advertised: PUT DELETE (nmap read the Allow header of OPTIONS: not confirmed) on 39513/tcp'],
  ]],
  ['apache-methods-dav-trace.xml', [
    [1, 'Open port 46021/tcp: http (Apache httpd 2.4.71 (Debian) OpenSSL/3.0.19)'],
    [3, 'TRACE is enabled: the server echoes the request (cross-site tracing) on 46021/tcp'],
    [2, 'Risky methods advertised: TRACE (nmap read the Allow header of OPTIONS: not confirmed) on 46021/tcp'],
  ]],
  ['handmade-vulns-cves-smb.xml', [
    [1, 'Open port 21/tcp: ftp (vsftpd 3.0.3)'],
    [3, 'Anonymous FTP login allowed on 21/tcp'],
    [1, 'Open port 25/tcp: smtp (Postfix smtpd)'],
    [4, 'The SMTP server is an open relay on 25/tcp'],
    [1, 'Open port 80/tcp: http (Apache httpd 2.4.49)'],
    [5, 'CVE-2021-42013 (CVSS 9.8) in Apache httpd 2.4.49 on 80/tcp'],
    [4, 'CVE-2021-41773 (CVSS 7.5) in Apache httpd 2.4.49 on 80/tcp'],
    [4, 'CVE-2021-41524 (CVSS 7.5, a public exploit is listed) in Apache httpd 2.4.49 on 80/tcp'],
    [3, 'CVE-2021-33193 (CVSS 5.3) in Apache httpd 2.4.49 on 80/tcp'],
    [3, 'CVE-2021-36160 (CVSS 5.0) in Apache httpd 2.4.49 on 80/tcp'],
    [3, 'CVE-2021-34798 (CVSS 5.0) in Apache httpd 2.4.49 on 80/tcp'],
    [2, 'CVE-2020-13938 (CVSS 2.1) in Apache httpd 2.4.49 on 80/tcp'],
    [1, 'Open port 443/tcp: ssl/http (Apache httpd 2.4.49)'],
    [4, 'The Heartbleed Bug is a serious vulnerability in the popular OpenSSL cryptographic software library. (ssl-heartbleed: VULNERABLE) on 443/tcp'],
    [1, 'Open port 445/tcp: microsoft-ds'],
    [4, 'Remote Code Execution vulnerability in Microsoft SMBv1 servers (ms17-010) (smb-vuln-ms17-010: VULNERABLE, CVE:CVE-2017-0143)'],
    [2, 'SMB signing not required'],
  ]],
  // the target's own text, dressed as a vulns library report or a vulners line, in scripts that quote it: no finding
  ['handmade-target-quotes.xml', [
    [1, 'Open port 21/tcp: ftp'],
    [1, 'Open port 25/tcp: smtp'],
    [1, 'Open port 80/tcp: http (Apache httpd 2.4.49)'],
    [4, 'CVE-2021-41773 (CVSS 7.5) in Apache httpd 2.4.49 on 80/tcp'],
  ]],
];

for (const [file, expected] of SCRIPT_RESULTS) {
  test(`script results ranked: ${file}`, () => {
    const { findings, summary } = parseNmapXml(fixture(`nmap/${file}`));
    assert.deepEqual(findings.map((f) => [f.rank, f.title]), expected);
    // every finding quotes its evidence, and the summary still shows every script's output
    for (const f of findings) assert.ok(f.detail.length > 0 && f.detail.length <= 2100, f.title);
    assert.doesNotMatch(summary, /incomplete/);
  });
}

test('a certificate is judged at the scan\'s time, not the reader\'s: an expired one stays expired, a valid one valid', () => {
  const expired = parseNmapXml(fixture('nmap/nginx-tls-expired.xml')).findings.find((f) => f.title.startsWith('Certificate expired'))!;
  assert.match(expired.detail, /Not valid after: {2}2021-01-01T00:00:00/);
  const weak = parseNmapXml(fixture('nmap/apache-tls-weak.xml')).findings.map((f) => f.title);
  assert.ok(!weak.some((t) => /expired|not valid before/.test(t)), weak.join('\n'));
});

test('a CVE without a score is not ranked (it stays in the text), a repeated one is listed once, NOT VULNERABLE is no finding', () => {
  const { findings, summary } = parseNmapXml(fixture('nmap/handmade-vulns-cves-smb.xml'));
  assert.ok(!findings.some((f) => f.title.includes('CVE-2021-40438')));
  assert.match(summary, /CVE-2021-40438/);
  assert.equal(findings.filter((f) => f.title.startsWith('CVE-2021-41773')).length, 1);
  assert.ok(!findings.some((f) => /POODLE/.test(f.title)));
});

test('cvssRank: critical 9+, high 7+, medium 4+, low above 0, info at 0', () => {
  assert.deepEqual([10, 9, 8.9, 7, 6.9, 4, 3.9, 0.1, 0].map(cvssRank), [5, 5, 4, 4, 3, 3, 2, 2, 1]);
});

test('script findings past the bound are counted, not kept; the scan still ends', () => {
  const cve = (i: number) => `&#x9;CVE-2020-${String(10000 + i)}&#x9;9.8&#x9;https://vulners.com/cve/CVE-2020-${10000 + i}`;
  const script = (n: number) => `<script id="vulners" output="${Array.from({ length: 100 }, (_, i) => cve(n * 100 + i)).join('&#xa;')}"/>`;
  const ports = Array.from({ length: 20 }, (_, p) => `<port protocol="tcp" portid="${p + 1}"><state state="open"/><service name="http" product="x" version="1"/>${script(p)}</port>`);
  const { findings } = parseNmapXml(`<nmaprun start="1700000000"><host><address addr="192.0.2.1"/><ports>${ports.join('')}</ports></host><runstats><finished summary="done"/></runstats></nmaprun>`);
  assert.ok(findings.length <= 1000);
  assert.match(findings.at(-1)!.title, /more finding\(s\) not listed/);
});

test('the phrases read as before, line by line, without the regexes a target made quadratic (vnc-info, http-default-accounts, http-webdav-scan)', () => {
  const attr = (text: string) => text.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/\n/g, '&#xa;');
  const titles = (scripts: [string, string][]) => {
    const port = `<port protocol="tcp" portid="1"><state state="open"/><service name="x"/>${scripts.map(([id, out]) => `<script id="${id}" output="${attr(out)}"/>`).join('')}</port>`;
    return parseNmapXml(`<nmaprun start="1700000000"><host><address addr="192.0.2.1"/><ports>${port}</ports></host><runstats><finished summary="done"/></runstats></nmaprun>`).findings.map((f) => f.title);
  };
  const cases: [string, string, string | undefined][] = [
    ['vnc-info', '\n  Protocol version: 3.8\n  Security types: \n    None (1)\n', 'VNC without authentication'],
    ['vnc-info', '\n  Security types:\r\n\t\tNone\n', 'VNC without authentication'],
    ['vnc-info', '\n  Security types: None\n', undefined],
    ['vnc-info', '\n  Security types: \n    VNC Authentication (2)\n  Other: None\n', undefined],
    ['vnc-info', '\n  Security types: \n    Nonesuch (3)\n', undefined],
    ['http-default-accounts', '\n  [Apache Tomcat] at /manager/html/\n    tomcat:tomcat\n', 'Default credentials accepted'],
    ['http-default-accounts', '\n\n   [x] at /\n', 'Default credentials accepted'],
    ['http-default-accounts', '\n  [] at /\n  no [x] at /\n', undefined],
    ['http-webdav-scan', '\n  Allowed Methods: OPTIONS, GET, PROPFIND, PUT\n', 'WebDAV is enabled'],
    ['http-webdav-scan', '\n  WebDAV type: Apache DAV\n', 'WebDAV is enabled'],
    ['http-webdav-scan', '\n  Allowed Methods: OPTIONS, GET\n  Public: PROPFIND\n', undefined],
    ['http-webdav-scan', '\n  Allowed Methods: PROPFINDX\n', undefined],
  ];
  for (const [id, output, title] of cases) {
    const found = titles([[id, output]]).filter((t) => /VNC|Default credentials|WebDAV/.test(t));
    assert.deepEqual(found, title ? [`${title} on 1/tcp`] : [], `${id}: ${JSON.stringify(output)}`);
  }
  // what made them quadratic: 64 KiB runs of blank lines after the phrase, and of the phrase itself, read (the hostile-target test holds the time)
  const blank = '\n'.repeat(60_000);
  assert.deepEqual(titles([['vnc-info', `Security types:${blank}x`], ['http-default-accounts', `${blank}[x`], ['http-webdav-scan', 'Allowed Methods: '.repeat(3_000)]]).filter((t) => /VNC|Default|WebDAV/.test(t)), []);
});

test('past the 1,000 script findings a scan keeps, the most severe are kept: a critical CVE after 1,200 low ones ranks the scan 5', () => {
  const cve = (id: string, score: string) => `&#x9;${id}&#x9;${score}&#x9;https://vulners.com/cve/${id}`;
  const script = (lines: string[]) => `<script id="vulners" output="${lines.join('&#xa;')}"/>`;
  const port = (p: number, body: string) => `<port protocol="tcp" portid="${p}"><state state="open"/><service name="http" product="x" version="1"/>${body}</port>`;
  const low = Array.from({ length: 12 }, (_, p) => port(p + 1, script(Array.from({ length: 100 }, (_, i) => cve(`CVE-2019-${10000 + p * 100 + i}`, '2.1')))));
  const critical = port(99, script([cve('CVE-2021-44228', '10.0'), cve('CVE-2021-45046', '9.0')]));
  const { findings } = parseNmapXml(`<nmaprun start="1700000000"><host><status state="up"/><address addr="192.0.2.1"/><ports>${low.join('')}${critical}</ports></host><runstats><finished summary="done"/></runstats></nmaprun>`);
  assert.ok(findings.length <= 1000, `${findings.length} findings`);
  assert.ok(findings.some((f) => f.rank === 5 && f.title.startsWith('CVE-2021-44228')), findings.filter((f) => f.rank > 2).map((f) => f.title).join('\n'));
  assert.ok(findings.some((f) => f.rank === 5 && f.title.startsWith('CVE-2021-45046')));
  assert.equal(Math.max(...findings.map((f) => f.rank)), 5);
  assert.ok(findings.some((f) => /more script finding\(s\) not read one by one|more finding\(s\) not listed/.test(f.title)));
});

test('script findings that are listed nowhere (a port not open) take no place of listed ones', () => {
  const cve = (id: string, score: string) => `&#x9;${id}&#x9;${score}&#x9;https://vulners.com/cve/${id}`;
  const script = (lines: string[]) => `<script id="vulners" output="${lines.join('&#xa;')}"/>`;
  const port = (p: number, state: string, body: string) => `<port protocol="tcp" portid="${p}"><state state="${state}"/><service name="http" product="x" version="1"/>${body}</port>`;
  const open = Array.from({ length: 10 }, (_, p) => port(p + 1, 'open', script(Array.from({ length: 100 }, (_, i) => cve(`CVE-2019-${10000 + p * 100 + i}`, '2.1')))));
  const filtered = port(99, 'filtered', script(Array.from({ length: 50 }, (_, i) => cve(`CVE-2020-${10000 + i}`, '9.8'))));
  const { findings } = parseNmapXml(`<nmaprun start="1700000000"><host><status state="up"/><address addr="192.0.2.1"/><ports>${open.join('')}${filtered}</ports></host><runstats><finished summary="done"/></runstats></nmaprun>`);
  // the 1,000 findings a scan lists, the most severe first: every low CVE but the one the note takes the place of (the 50 of the filtered port evicted 50)
  assert.equal(findings.filter((f) => f.title.startsWith('CVE-2019-')).length, 999);
  assert.equal(findings.filter((f) => f.title.startsWith('CVE-2020-')).length, 0);
});

// the time limit catches only a freeze: the parse takes milliseconds, and took ~1 min when a regex
// read the IDs line (quadratic over spaces then a terminator `.` does not take)
test('a vulns block\'s IDs line: its value up to a line terminator; spaces then a U+2028 read in linear time', { timeout: 20_000 }, () => {
  const xml = (ids: string) =>
    `<nmaprun><host><status state="up"/><address addr="10.0.0.1" addrtype="ipv4"/><ports><port protocol="tcp" portid="445"><state state="open"/><service name="microsoft-ds"/>` +
    `<script id="smb-vuln-ms17-010" output="&#xa;  VULNERABLE:&#xa;  Remote Code Execution vulnerability&#xa;    State: VULNERABLE&#xa;    IDs:${ids}&#xa;"/></port></ports></host></nmaprun>`;
  const title = (ids: string) => parseNmapXml(xml(ids)).findings.find((f) => f.title.includes('smb-vuln'))?.title;
  assert.equal(title('  CVE:CVE-2017-0143\u2028rest'), 'Remote Code Execution vulnerability (smb-vuln-ms17-010: VULNERABLE, CVE:CVE-2017-0143) on 445/tcp');
  assert.equal(title(`${' '.repeat(250_000)}\u2028`), 'Remote Code Execution vulnerability (smb-vuln-ms17-010: VULNERABLE) on 445/tcp');
});

test('a tag keeps its first 64 attributes, the rest read and passed over (5.9 million names in one tag took 34 s and 1 GB); the scan reads on', () => {
  const junk = (n: number) => Array.from({ length: n }, (_, i) => `x${i}="${i}"`).join(' ');
  const port = (attributes: string) => `<port ${attributes}><state state="open"/><service name="http"/></port>`;
  const xml = `<nmaprun start="1700000000"><host><status state="up"/><address addr="192.0.2.1"/><ports>${port(`protocol="tcp" portid="80" ${junk(100_000)}`)}${port(`${junk(63)} protocol="tcp" portid="81"`)}${port(`${junk(64)} protocol="tcp" portid="82"`)}</ports></host><runstats><finished summary="done"/></runstats></nmaprun>`;
  assert.deepEqual(ranksAndTitles(xml), [
    [1, 'Open port 80/tcp: http'],
    // the 64th kept, the 65th not
    [1, 'Open port /tcp: http'],
    [1, 'Open port /: http'],
  ]);
});

test('parseNmapXml reads the whole file: 2,000 open ports, the first 999 listed and the rest counted (it stopped at its scanner\'s first tick: 342 ports and "Incomplete nmap output")', () => {
  const ports = Array.from({ length: 2000 }, (_, p) => `<port protocol="tcp" portid="${p + 1}"><state state="open"/><service name="http"/></port>`).join('');
  const { findings } = parseNmapXml(`<nmaprun start="1700000000"><host><status state="up"/><address addr="192.0.2.1"/><ports>${ports}</ports></host><runstats><finished summary="done"/></runstats></nmaprun>`);
  assert.equal(findings.filter((f) => f.title.startsWith('Open port ')).length, 999);
  assert.equal(findings.at(-1)!.title, '1001 more finding(s) not listed');
});

test('the parse in slices looks at the clock after every script and every 64 KiB of an unquoted value (a script\'s cost is not its length: 64 KiB of blank lines in a vulns block cost 30 ms, and 35 of them ran between two looks)', async () => {
  const scripts = Array.from({ length: 150 }, (_, i) => `<script id="s${i}" output="x"/>`).join('');
  const xml = `<nmaprun args=${'a'.repeat(1024 * 1024)} start="1700000000"><host><status state="up"/><address addr="192.0.2.1"/><ports><port protocol="tcp" portid="80"><state state="open"/>${scripts}</port></ports></host><runstats><finished summary="done"/></runstats></nmaprun>`;
  let turns = 0;
  let counting = true;
  const count = () => {
    if (!counting) return;
    turns++;
    setImmediate(count);
  };
  setImmediate(count);
  // a slice of no time: the parse yields each time it looks at the clock
  const { findings } = await parseNmapXmlInSlices(xml, { sliceMs: 0 }).finally(() => (counting = false));
  assert.deepEqual(findings.map((f) => f.title), ['Open port 80/tcp']);
  assert.ok(turns >= 150 + 16, `the event loop turned ${turns} times`);
});

test('a vulns block\'s title is looked for 40 lines above its state at most (each state walked back over every blank line before it)', () => {
  const xml = (blanks: number) =>
    `<nmaprun><host><status state="up"/><address addr="10.0.0.1" addrtype="ipv4"/><ports><port protocol="tcp" portid="445"><state state="open"/><service name="microsoft-ds"/>` +
    `<script id="smb-vuln-ms17-010" output="&#xa;  VULNERABLE:&#xa;  Remote Code Execution vulnerability${'&#xa;'.repeat(blanks)}&#xa;    State: VULNERABLE&#xa;"/></port></ports></host></nmaprun>`;
  const title = (blanks: number) => parseNmapXml(xml(blanks)).findings.find((f) => f.title.includes('smb-vuln'))?.title;
  // the title 40 lines above, then 41
  assert.equal(title(39), 'Remote Code Execution vulnerability (smb-vuln-ms17-010: VULNERABLE) on 445/tcp');
  assert.equal(title(40), 'smb-vuln-ms17-010 (smb-vuln-ms17-010: VULNERABLE) on 445/tcp');
});

test('terminal text: a string command (OSC, DCS, SOS, PM, APC) left unfinished loses its introducer only, not the lines after it (a product name ending in ESC ] hid every later port); finished ones go whole; linear over many introducers', async () => {
  const { stripTerminalEscapes } = await import('../../src/engine/terminal-text.ts');
  assert.equal(stripTerminalEscapes('80/tcp Apache\x1b]\n443/tcp TRACE is enabled\n'), '80/tcp Apache\n443/tcp TRACE is enabled\n');
  assert.equal(stripTerminalEscapes('a\x1bPq#0;2;0;0;0\nb\x1b_x'), 'aq#0;2;0;0;0\nbx');
  assert.equal(stripTerminalEscapes('a\x1b]0;title\x07b\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\c\x1bPdata\x1b\\d'), 'ablinkcd');
  // past 4 KiB without its end: only the introducer goes
  const long = `\x1b]${'t'.repeat(5000)}\x07`;
  assert.equal(stripTerminalEscapes(long), 't'.repeat(5000));
  const many = `${'\x1b]x'.repeat(300_000)}\n`;
  assert.equal(stripTerminalEscapes(many), `${'x'.repeat(300_000)}\n`);
});
