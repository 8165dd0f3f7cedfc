/** nmap's XML output (`-oX`) read into ranked findings and a table, by a small tolerant scanner. */
import type { Finding } from '../types.js';

interface Tag {
  name: string;
  kind: 'open' | 'close' | 'empty';
  attrs: Record<string, string>;
  start: number;
  end: number;
}

interface Script {
  id: string;
  output: string;
}

interface Port {
  protocol: string;
  portid: string;
  state: string;
  service?: { name: string; product: string; version: string; extrainfo: string; tunnel: string };
  scripts: Script[];
  start: number;
  end?: number;
}

interface Host {
  addresses: string[];
  hostnames: string[];
  status: string;
  ports: Port[];
  /** `<extraports state count>`: ports not listed one by one. */
  extraports: { state: string; count: number }[];
  scripts: Script[];
}

const ENTITIES: Record<string, string> = { quot: '"', amp: '&', lt: '<', gt: '>', apos: "'" };
const MAX_QUOTE = 600;
const MAX_SCRIPT_OUTPUT = 2000;

/** Replaces the five named entities and numeric references; anything else is left as written. */
export function decodeEntities(text: string): string {
  return text.replace(/&(#[xX][0-9a-fA-F]{1,6}|#[0-9]{1,7}|quot|amp|lt|gt|apos);/g, (whole, ref: string) => {
    if (ref[0] !== '#') return ENTITIES[ref]!;
    const code = ref[1] === 'x' || ref[1] === 'X' ? parseInt(ref.slice(2), 16) : parseInt(ref.slice(1), 10);
    return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
  });
}

const NAME = /[A-Za-z_][\w.:-]*/y;
const ATTR_NAME = /[^\s=/>"']+/y;
const SPACE = /\s*/y;

function matchAt(re: RegExp, text: string, at: number): string {
  re.lastIndex = at;
  return re.exec(text)?.[0] ?? '';
}

/**
 * The element tags of `xml`, in order (comments, declarations, CDATA passed over). Returns
 * `false` when the text ends inside a tag or comment, `true` when it ends between them.
 */
function* scanTags(xml: string): Generator<Tag, boolean> {
  let i = 0;
  for (;;) {
    const lt = xml.indexOf('<', i);
    if (lt < 0) return true;
    const skipTo = (closer: string, from: number) => {
      const found = xml.indexOf(closer, from);
      return found < 0 ? -1 : found + closer.length;
    };
    if (xml.startsWith('<!--', lt) || xml.startsWith('<![CDATA[', lt) || xml.startsWith('<?', lt) || xml.startsWith('<!', lt)) {
      const closer = xml.startsWith('<!--', lt) ? '-->' : xml.startsWith('<![CDATA[', lt) ? ']]>' : xml[lt + 1] === '?' ? '?>' : '>';
      i = skipTo(closer, lt + 2);
      if (i < 0) return false;
      continue;
    }
    let j = lt + 1;
    const closing = xml[j] === '/';
    if (closing) j++;
    const name = matchAt(NAME, xml, j);
    if (!name) {
      i = lt + 1; // a stray '<' in text
      continue;
    }
    j += name.length;
    const attrs: Record<string, string> = {};
    let kind: Tag['kind'];
    for (;;) {
      j += matchAt(SPACE, xml, j).length;
      if (j >= xml.length) return false;
      if (xml[j] === '>') {
        kind = closing ? 'close' : 'open';
        j++;
        break;
      }
      if (xml.startsWith('/>', j)) {
        kind = 'empty';
        j += 2;
        break;
      }
      const attr = matchAt(ATTR_NAME, xml, j);
      if (!attr) {
        j++; // a character no attribute starts with: passed over
        continue;
      }
      j += attr.length;
      j += matchAt(SPACE, xml, j).length;
      if (xml[j] !== '=') {
        attrs[attr] = '';
        continue;
      }
      j++;
      j += matchAt(SPACE, xml, j).length;
      const quote = xml[j];
      if (quote === '"' || quote === "'") {
        const close = xml.indexOf(quote, j + 1);
        if (close < 0) return false;
        attrs[attr] = decodeEntities(xml.slice(j + 1, close));
        j = close + 1;
      } else {
        const value = matchAt(/[^\s>]*/y, xml, j);
        attrs[attr] = decodeEntities(value);
        j += value.length;
      }
    }
    yield { name, kind, attrs, start: lt, end: j };
    i = j;
  }
}

interface Scan {
  hosts: Host[];
  complete: boolean;
  nmaprun: boolean;
  version: string;
  args: string;
  finished: Record<string, string> | undefined;
}

function readScan(xml: string): Scan {
  const scan: Scan = { hosts: [], complete: false, nmaprun: false, version: '', args: '', finished: undefined };
  let host: Host | undefined;
  let port: Port | undefined;
  const currentHost = (): Host => {
    if (!host) scan.hosts.push((host = { addresses: [], hostnames: [], status: '', ports: [], extraports: [], scripts: [] }));
    return host;
  };
  for (const tag of scanTags(xml)) {
    const a = tag.attrs;
    if (tag.kind === 'close') {
      if (tag.name === 'port' && port) port.end = tag.end;
      if (tag.name === 'port' || tag.name === 'host') port = undefined;
      if (tag.name === 'host') host = undefined;
      if (tag.name === 'nmaprun') scan.complete = true;
      continue;
    }
    switch (tag.name) {
      case 'nmaprun':
        scan.nmaprun = true;
        scan.version = a.version ?? '';
        scan.args = a.args ?? '';
        break;
      case 'host':
        host = undefined;
        port = undefined;
        currentHost();
        break;
      case 'status':
        if (host) host.status = a.state ?? '';
        break;
      case 'address':
        if (a.addr) currentHost().addresses.push(a.addr);
        break;
      case 'hostname':
        if (a.name) currentHost().hostnames.push(a.name);
        break;
      case 'extraports':
        currentHost().extraports.push({ state: a.state ?? '', count: Number(a.count) || 0 });
        break;
      case 'port':
        port = { protocol: a.protocol ?? '', portid: a.portid ?? '', state: '', scripts: [], start: tag.start };
        currentHost().ports.push(port);
        if (tag.kind === 'empty') port = undefined;
        break;
      case 'state':
        if (port) port.state = a.state ?? '';
        break;
      case 'service':
        if (port) {
          port.service = { name: a.name ?? '', product: a.product ?? '', version: a.version ?? '', extrainfo: a.extrainfo ?? '', tunnel: a.tunnel ?? '' };
        }
        break;
      case 'script':
        if (a.id) (port ?? currentHost()).scripts.push({ id: a.id, output: a.output ?? '' });
        break;
      case 'finished':
        scan.finished = a;
        break;
    }
  }
  return scan;
}

function serviceName(port: Port): string {
  const s = port.service;
  if (!s?.name) return '';
  return s.tunnel ? `${s.tunnel}/${s.name}` : s.name;
}

function serviceVersion(port: Port): string {
  const s = port.service;
  return s ? [s.product, s.version, s.extrainfo].filter(Boolean).join(' ') : '';
}

function hostLabel(host: Host): string {
  const address = host.addresses[0] ?? 'unknown host';
  return host.hostnames.length > 0 ? `${address} (${host.hostnames[0]})` : address;
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/** The port's element as written (nmap writes one per line), its long service fingerprint elided. */
function quotePort(xml: string, port: Port): string {
  let end = port.end;
  if (end === undefined) {
    const newline = xml.indexOf('\n', port.start);
    end = newline < 0 ? xml.length : newline;
  }
  return clip(xml.slice(port.start, end).replace(/ servicefp="[^"]*"/, ' servicefp="…"'), MAX_QUOTE);
}

function table(rows: string[][]): string[] {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((row) => row[c]!.length)));
  return rows.map((row) => row.map((cell, c) => (c === row.length - 1 ? cell : cell.padEnd(widths[c]! + 2))).join('').trimEnd());
}

function scriptLines(script: Script): string[] {
  const [first = '', ...rest] = clip(script.output.trim(), MAX_SCRIPT_OUTPUT).split('\n');
  return [`| ${script.id}: ${first}`, ...rest.map((line) => `|   ${line}`)].map((line) => line.trimEnd());
}

function summarize(scan: Scan): string {
  const lines: string[] = [];
  if (scan.nmaprun) lines.push(`Nmap ${scan.version} scan${scan.args ? `: ${scan.args}` : ''}`);
  for (const host of scan.hosts) {
    lines.push('', `Host ${hostLabel(host)}${host.status ? `: ${host.status}` : ''}`);
    if (host.status === 'down') continue;
    const open = host.ports.filter((p) => p.state === 'open');
    if (open.length === 0) lines.push('No open port.');
    else {
      const rows = [['PORT', 'STATE', 'SERVICE', 'VERSION'], ...open.map((p) => [`${p.portid}/${p.protocol}`, p.state, serviceName(p), serviceVersion(p)])];
      const rendered = table(rows);
      lines.push(rendered[0]!);
      open.forEach((p, k) => lines.push(rendered[k + 1]!, ...p.scripts.flatMap(scriptLines)));
    }
    const others = new Map<string, number>();
    for (const p of host.ports) if (p.state !== 'open') others.set(p.state || 'unknown', (others.get(p.state || 'unknown') ?? 0) + 1);
    for (const e of host.extraports) others.set(e.state, (others.get(e.state) ?? 0) + e.count);
    if (others.size > 0) lines.push(`Not shown: ${[...others].map(([state, n]) => `${n} ${state} port${n === 1 ? '' : 's'}`).join(', ')}`);
    if (host.scripts.length > 0) lines.push('Host script results:', ...host.scripts.flatMap(scriptLines));
  }
  if (scan.finished?.summary) lines.push('', scan.finished.summary);
  if (scan.finished?.errormsg) lines.push(`nmap reported an error: ${scan.finished.errormsg}`);
  if (!scan.complete) {
    lines.push('', scan.nmaprun ? 'The XML was incomplete (the scan was interrupted or its output cut short): this is what could be read.' : 'No nmap XML output was found.');
  }
  return lines.join('\n').trim();
}

/** Reads nmap's `-oX` output: never throws, whatever the text; incomplete XML gives what could be read. */
export function parseNmapXml(xml: string): { findings: Finding[]; summary: string } {
  const scan = readScan(xml);
  const findings: Finding[] = [];
  const several = scan.hosts.filter((h) => h.ports.some((p) => p.state === 'open')).length > 1;
  for (const host of scan.hosts) {
    const where = several ? ` on ${host.addresses[0] ?? 'unknown host'}` : '';
    const anonymousFtp = (scripts: Script[], at: string) => {
      for (const script of scripts) {
        if (!/Anonymous FTP login allowed/i.test(script.output)) continue;
        findings.push({ rank: 3, title: `Anonymous FTP login allowed${at}${where}`, detail: clip(`${script.id}: ${script.output}`, MAX_SCRIPT_OUTPUT) });
      }
    };
    for (const port of host.ports) {
      if (port.state !== 'open') continue;
      const name = serviceName(port);
      const version = serviceVersion(port);
      const service = name ? `: ${name}${version ? ` (${version})` : ''}` : '';
      findings.push({ rank: 1, title: `Open port ${port.portid}/${port.protocol}${service}${where}`, detail: quotePort(xml, port) });
      anonymousFtp(port.scripts, ` on ${port.portid}/${port.protocol}`);
    }
    anonymousFtp(host.scripts, '');
  }
  if (!scan.complete) {
    const detail = scan.nmaprun
      ? `The XML ends before </nmaprun>: the scan was interrupted or its output cut short; ${findings.length} finding(s) read before the end.`
      : 'The output holds no <nmaprun> element.';
    findings.push({ rank: -1, title: scan.nmaprun ? 'Incomplete nmap output' : 'No nmap XML output', detail });
  } else if (findings.length === 0) {
    findings.push({ rank: 0, title: 'No open port found', detail: scan.finished?.summary ?? `${scan.hosts.length} host(s) scanned` });
  }
  return { findings, summary: summarize(scan) };
}
