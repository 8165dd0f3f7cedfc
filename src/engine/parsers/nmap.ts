/**
 * nmap's XML output (`-oX`) read into ranked findings and a table, by a small tolerant scanner.
 * The file is the tool's, and the tool reads a target: whatever it holds, the scan is one linear
 * pass (no regular expression that can backtrack over it, nothing searched to the end of the text
 * once per tag), what is kept is bounded (ports, hosts, scripts, attribute values), and the async
 * form yields to the event loop every few milliseconds.
 */
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { boundFindings, MAX_FINDINGS, MAX_SUMMARY, oneLine } from '../findings.js';
import type { Finding } from '../types.js';
import { clip, scriptFindings } from './nmap-scripts.js';

interface Tag {
  name: string;
  kind: 'open' | 'close' | 'empty';
  /** Without a prototype: an attribute named `__proto__` is just a name. */
  attrs: Record<string, string>;
  start: number;
  end: number;
}

interface Script {
  id: string;
  output: string;
  /** What its result means (nmap-scripts.ts), read from its whole output when the tag was read. */
  findings: Finding[];
}

interface Port {
  protocol: string;
  portid: string;
  state: string;
  service?: { name: string; product: string; version: string; extrainfo: string; tunnel: string };
  scripts: Script[];
  start: number;
  end?: number;
  /** Listed one by one (within MAX_PORTS), or only counted. */
  kept: boolean;
}

/** What a scan keeps no more of one by one: the rest are counted. */
export const MAX_PORTS = 10_000;
export const MAX_HOSTS = 4_096;
export const MAX_SCRIPTS = 10_000;
/** An attribute value is cut here before its entities are decoded. */
const MAX_ATTRIBUTE = 64 * 1024;
/** The states nmap gives a port. */
const NMAP_PORT_STATES = new Set(['open', 'closed', 'filtered', 'unfiltered', 'open|filtered', 'closed|filtered']);
/** A port's element is quoted from at most this much of the text after its start. */
const QUOTE_WINDOW = 8 * 1024;

interface Host {
  addresses: string[];
  hostnames: string[];
  /** The name the scan was given for it (`<hostname type="user">`): a certificate must name it. */
  userName?: string;
  status: string;
  ports: Port[];
  /** `<extraports state count>`: ports not listed one by one. */
  extraports: { state: string; count: number }[];
  scripts: Script[];
  /** Ports past MAX_PORTS, by state. */
  uncounted: Map<string, number>;
}

const ENTITIES: Record<string, string> = { quot: '"', amp: '&', lt: '<', gt: '>', apos: "'" };
const MAX_QUOTE = 600;
const MAX_SCRIPT_OUTPUT = 2000;

/** Replaces the five named entities and numeric references; anything else is left as written. */
export function decodeEntities(text: string): string {
  return text.replace(/&(#[xX][0-9a-fA-F]{1,6}|#[0-9]{1,7}|quot|amp|lt|gt|apos);/g, (whole, ref: string) => {
    if (ref[0] !== '#') return ENTITIES[ref]!;
    const code = ref[1] === 'x' || ref[1] === 'X' ? parseInt(ref.slice(2), 16) : parseInt(ref.slice(1), 10);
    // a surrogate's number is no character (XML 1.0 2.2): its half alone would be no UTF-8 in the API's JSON
    if (code >= 0xd800 && code <= 0xdfff) return '\ufffd';
    return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
  });
}

/**
 * An attribute's value as written (entities decoded), one line but for a script's `output`: a
 * product name holding `&#xa;` (the target's banner, as nmap quotes it) added a line to the
 * output that read as the parser's own.
 */
function attributeValue(name: string, written: string): string {
  const value = decodeEntities(written);
  return name === 'output' ? value : oneLine(value);
}

/** A name is read this long at most: the rest of a longer one is read as what follows it. */
const MAX_NAME = 256;
const NAME = new RegExp(`[A-Za-z_][\\w.:-]{0,${MAX_NAME - 1}}`, 'y');
const ATTR_NAME = new RegExp(`[^\\s=/>"']{1,${MAX_NAME}}`, 'y');
const SPACE = /\s*/y;
/** An unquoted value, a window at a time: one match over a 32 MiB value held the loop 270 ms. */
const UNQUOTED = new RegExp(`[^\\s>]{0,${MAX_ATTRIBUTE}}`, 'y');
/**
 * The attributes a tag keeps (nmap writes at most ~15): the rest are read and passed over. Kept
 * all, 5.9 million names in one tag (32 MiB) filled one object: 34 s and 1 GB.
 */
const MAX_TAG_ATTRIBUTES = 64;
/** Loop turns of the scanner between two ticks (a look at the clock by whoever drives it). */
const TICK_STEPS = 4096;
/** Characters searched for a comment's or declaration's end between two ticks. */
const SEARCH_WINDOW = 256 * 1024;

function matchAt(re: RegExp, text: string, at: number): string {
  re.lastIndex = at;
  return re.exec(text)?.[0] ?? '';
}

/**
 * The element tags of `xml`, in order (comments, declarations, CDATA passed over). Returns
 * `false` when the text ends inside a tag or comment, `true` when it ends between them.
 */
function* scanTags(xml: string): Generator<Tag | null, boolean> {
  let i = 0;
  let steps = 0;
  for (;;) {
    // a tick now and then, tags or not: a text of nothing but '<' is still read in slices
    if (++steps % TICK_STEPS === 0) yield null;
    const lt = xml.indexOf('<', i);
    if (lt < 0) return true;
    const next = xml.charCodeAt(lt + 1);
    if (next === 0x21 /* ! */ || next === 0x3f /* ? */) {
      const closer = next === 0x3f ? '?>' : xml.startsWith('<!--', lt) ? '-->' : xml.startsWith('<![CDATA[', lt) ? ']]>' : '>';
      // searched a window at a time, ticking between windows: one search of 32 MiB holds the loop too long
      let found = -1;
      for (let from = lt + 2; from < xml.length; from += SEARCH_WINDOW) {
        const at = xml.slice(from, from + SEARCH_WINDOW + closer.length - 1).indexOf(closer);
        if (at >= 0) {
          found = from + at;
          break;
        }
        yield null;
      }
      if (found < 0) return false;
      i = found + closer.length;
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
    const attrs: Record<string, string> = Object.create(null) as Record<string, string>;
    let attributes = 0;
    let kind: Tag['kind'];
    for (;;) {
      // a tag can be the whole text (attributes that never end): ticks from inside it too
      if (++steps % TICK_STEPS === 0) yield null;
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
      const keep = ++attributes <= MAX_TAG_ATTRIBUTES;
      j += matchAt(SPACE, xml, j).length;
      if (xml[j] !== '=') {
        if (keep) attrs[attr] = '';
        continue;
      }
      j++;
      j += matchAt(SPACE, xml, j).length;
      const quote = xml[j];
      if (quote === '"' || quote === "'") {
        const close = xml.indexOf(quote, j + 1);
        if (close < 0) return false;
        if (keep) attrs[attr] = attributeValue(attr, xml.slice(j + 1, Math.min(close, j + 1 + MAX_ATTRIBUTE)));
        j = close + 1;
      } else {
        let value = matchAt(UNQUOTED, xml, j);
        if (keep) attrs[attr] = attributeValue(attr, value);
        j += value.length;
        // the rest of a longer one passed over a window at a time, ticking between windows
        while (value.length === MAX_ATTRIBUTE) {
          yield null;
          value = matchAt(UNQUOTED, xml, j);
          j += value.length;
        }
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
  /** When the scan started (ms since the epoch), if it says. */
  start?: number;
  /** Script findings kept, and those past MAX_FINDINGS only counted. */
  scriptFindings: number;
  scriptFindingsNotKept: number;
  /** The script findings kept, by rank: once MAX_FINDINGS are, a more severe one takes the place of one of the least. */
  keptByRank: Map<number, Finding[]>;
  /** Kept, then given up for a more severe one. */
  evicted: Set<Finding>;
  finished: Record<string, string> | undefined;
  /** Hosts past MAX_HOSTS: not listed, counted. */
  hostsNotKept: number;
  scriptsKept: number;
}

/** Reads the tags of `xml` into a scan, a slice at a time: `step(n)` reads up to n tags (less at a tick), true once done. */
function scanReader(xml: string): { scan: Scan; step(maxTags: number): boolean } {
  const scan: Scan = { hosts: [], complete: false, nmaprun: false, version: '', args: '', finished: undefined, hostsNotKept: 0, scriptsKept: 0, scriptFindings: 0, scriptFindingsNotKept: 0, keptByRank: new Map(), evicted: new Set() };
  const newHost = (): Host => ({ addresses: [], hostnames: [], status: '', ports: [], extraports: [], scripts: [], uncounted: new Map() });
  // the hosts past MAX_HOSTS are all read into this one, which no list holds
  const sink = newHost();
  let host: Host | undefined;
  let port: Port | undefined;
  let portsKept = 0;
  const currentHost = (): Host => {
    if (host) return host;
    if (scan.hosts.length < MAX_HOSTS) scan.hosts.push((host = newHost()));
    else {
      scan.hostsNotKept++;
      host = sink;
    }
    return host;
  };
  const tags = scanTags(xml);
  /**
   * A kept finding of a rank below `rank` given up for one of `rank` (the least severe, the last
   * kept of them), or undefined when none is less severe.
   */
  const giveUpBelow = (rank: number): Finding | undefined => {
    const below = [...scan.keptByRank.keys()].filter((r) => r < rank && scan.keptByRank.get(r)!.length > 0);
    if (below.length === 0) return undefined;
    const given = scan.keptByRank.get(Math.min(...below))!.pop()!;
    scan.evicted.add(given);
    return given;
  };
  /**
   * Reads a script's result: its findings kept within MAX_FINDINGS in all, the most severe (in file
   * order, 1,200 low CVEs of vulners pushed out a critical one after them); the rest counted.
   */
  const readScript = (a: Record<string, string>): Script => {
    const output = a.output ?? '';
    const h = currentHost();
    const service = port ? [port.service?.product || port.service?.name, port.service?.version].filter(Boolean).join(' ') : '';
    // findings listed only for an open port kept, or the host itself, of a host kept: others would
    // take the place of listed ones, and be listed nowhere
    const listed = h !== sink && (port === undefined || (port.kept && port.state === 'open'));
    const found = listed ? scriptFindings(a.id!, output, { hostname: h.userName, address: h.addresses[0], scanTime: scan.start, service }) : [];
    const kept: Finding[] = [];
    for (const finding of found) {
      if (scan.scriptFindings < MAX_FINDINGS) scan.scriptFindings++;
      else {
        scan.scriptFindingsNotKept++;
        if (giveUpBelow(finding.rank) === undefined) continue;
      }
      kept.push(finding);
      const ofRank = scan.keptByRank.get(finding.rank);
      if (ofRank) ofRank.push(finding);
      else scan.keptByRank.set(finding.rank, [finding]);
    }
    return { id: a.id!, output: clip(output, MAX_SCRIPT_OUTPUT), findings: kept };
  };
  /** Reads one tag; answers how many tags' worth of work it was (a script's, whose output is read whole: all a step may do). */
  const take = (tag: Tag): number => {
    const a = tag.attrs;
    if (tag.kind === 'close') {
      if (tag.name === 'port' && port) port.end = tag.end;
      if (tag.name === 'port' || tag.name === 'host') port = undefined;
      if (tag.name === 'host') host = undefined;
      if (tag.name === 'nmaprun') scan.complete = true;
      return 1;
    }
    switch (tag.name) {
      case 'nmaprun':
        scan.nmaprun = true;
        scan.version = a.version ?? '';
        scan.args = a.args ?? '';
        if (/^[0-9]{1,12}$/.test(a.start ?? '')) scan.start = Number(a.start) * 1000;
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
        if (a.addr && currentHost().addresses.length < 16) currentHost().addresses.push(a.addr);
        break;
      case 'hostname':
        if (a.name && currentHost().hostnames.length < 16) currentHost().hostnames.push(a.name);
        if (a.name && a.type === 'user') currentHost().userName ??= a.name;
        break;
      case 'extraports':
        if (currentHost().extraports.length < 16) currentHost().extraports.push({ state: a.state ?? '', count: Number(a.count) || 0 });
        break;
      case 'port':
        // past MAX_PORTS a port is counted once its state is known (below), never kept
        port = { protocol: a.protocol ?? '', portid: a.portid ?? '', state: '', scripts: [], start: tag.start, kept: portsKept < MAX_PORTS };
        if (port.kept) {
          portsKept++;
          currentHost().ports.push(port);
        }
        if (tag.kind === 'empty') port = undefined;
        break;
      case 'state':
        if (port) {
          port.state = a.state ?? '';
          if (!port.kept) {
            const { uncounted } = currentHost();
            // a state nmap does not write is counted as such: the map stays small
            const state = NMAP_PORT_STATES.has(port.state) ? port.state : 'unknown';
            uncounted.set(state, (uncounted.get(state) ?? 0) + 1);
          }
        }
        break;
      case 'service':
        if (port) {
          port.service = { name: a.name ?? '', product: a.product ?? '', version: a.version ?? '', extrainfo: a.extrainfo ?? '', tunnel: a.tunnel ?? '' };
        }
        break;
      case 'script':
        if (a.id && scan.scriptsKept < MAX_SCRIPTS) {
          scan.scriptsKept++;
          (port ?? currentHost()).scripts.push(readScript(a));
          // a look at the clock after each: what a script's output costs to read is not its length
          // (64 KiB of blank lines in a vulns block cost as much as 30,000 tags)
          return Infinity;
        }
        break;
      case 'finished':
        scan.finished = a;
        break;
    }
    return 1;
  };
  return {
    scan,
    step(maxTags) {
      for (let n = 0; n < maxTags; ) {
        const next = tags.next();
        if (next.done) return true;
        // a tick: TICK_STEPS turns of the scanner went by, time to look at the clock
        if (!next.value) return false;
        n += take(next.value);
      }
      return false;
    },
  };
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

/**
 * The port's element as written (nmap writes one per line), its long service fingerprint elided:
 * read from a window after its start, so that unclosed ports never make a search to the end.
 */
function quotePort(xml: string, port: Port): string {
  const window = xml.slice(port.start, Math.min(port.end ?? xml.length, port.start + QUOTE_WINDOW));
  const newline = port.end === undefined ? window.indexOf('\n') : -1;
  const element = newline < 0 ? window : window.slice(0, newline);
  return clip(element.replace(/ servicefp="[^"]*(?:"|$)/, ' servicefp="…"'), MAX_QUOTE);
}

/** Each row's cells padded to their column's width (no spread: a table may have many rows). */
function table(rows: string[][]): string[] {
  const widths = rows[0]!.map(() => 0);
  for (const row of rows) row.forEach((cell, c) => (widths[c] = Math.max(widths[c]!, cell.length)));
  return rows.map((row) => row.map((cell, c) => (c === row.length - 1 ? cell : cell.padEnd(widths[c]! + 2))).join('').trimEnd());
}

function scriptLines(script: Script): string[] {
  const [first = '', ...rest] = script.output.trim().split('\n');
  return [`| ${script.id}: ${first}`, ...rest.map((line) => `|   ${line}`)].map((line) => line.trimEnd());
}

/** Lines of text that stop growing at `max` characters, saying they were cut. */
function boundedLines(max: number): { push(...lines: string[]): void; text(): string } {
  const lines: string[] = [];
  let size = 0;
  let cut = false;
  return {
    push(...more) {
      for (const line of more) {
        if (cut) return;
        if (size + line.length + 1 > max - 64) {
          cut = true;
          lines.push('… (the rest of the summary is cut: see the XML file)');
          return;
        }
        lines.push(line);
        size += line.length + 1;
      }
    },
    text: () => lines.join('\n').trim(),
  };
}

function summarize(scan: Scan): string {
  const lines = boundedLines(MAX_SUMMARY);
  if (scan.nmaprun) lines.push(`Nmap ${scan.version} scan${scan.args ? `: ${clip(scan.args, 2000)}` : ''}`);
  for (const host of scan.hosts) {
    lines.push('', `Host ${hostLabel(host)}${host.status ? `: ${host.status}` : ''}`);
    if (host.status === 'down') continue;
    const open = host.ports.filter((p) => p.state === 'open');
    if (open.length === 0) lines.push('No open port.');
    else {
      const rows = [['PORT', 'STATE', 'SERVICE', 'VERSION'], ...open.map((p) => [`${p.portid}/${p.protocol}`, p.state, serviceName(p), serviceVersion(p)])];
      const rendered = table(rows);
      lines.push(rendered[0]!);
      open.forEach((p, k) => {
        lines.push(rendered[k + 1]!);
        for (const script of p.scripts) lines.push(...scriptLines(script));
      });
    }
    const others = new Map<string, number>();
    for (const p of host.ports) if (p.state !== 'open') others.set(p.state || 'unknown', (others.get(p.state || 'unknown') ?? 0) + 1);
    for (const [state, n] of host.uncounted) others.set(state, (others.get(state) ?? 0) + n);
    for (const e of host.extraports) others.set(e.state, (others.get(e.state) ?? 0) + e.count);
    if (others.size > 0) lines.push(`Not shown: ${[...others].map(([state, n]) => `${n} ${state} port${n === 1 ? '' : 's'}`).join(', ')}`);
    if (host.scripts.length > 0) {
      lines.push('Host script results:');
      for (const script of host.scripts) lines.push(...scriptLines(script));
    }
  }
  if (scan.hostsNotKept > 0) lines.push('', `… and ${scan.hostsNotKept} more host(s), not listed (past ${MAX_HOSTS})`);
  if (scan.finished?.summary) lines.push('', scan.finished.summary);
  if (scan.finished?.errormsg) lines.push(`nmap reported an error: ${scan.finished.errormsg}`);
  if (!scan.complete) {
    lines.push('', scan.nmaprun ? 'The XML was incomplete (the scan was interrupted or its output cut short): this is what could be read.' : 'No nmap XML output was found.');
  }
  return lines.text();
}

function findingsOf(scan: Scan, xml: string): Finding[] {
  const findings: Finding[] = [];
  const several = scan.hosts.filter((h) => h.ports.some((p) => p.state === 'open')).length > 1;
  let notKept = 0;
  for (const host of scan.hosts) notKept += host.uncounted.get('open') ?? 0;
  for (const host of scan.hosts) {
    const where = several ? ` on ${host.addresses[0] ?? 'unknown host'}` : '';
    // what the scripts found, each said where (scripts of a port that is not open found nothing there)
    const scriptsSay = (scripts: Script[], at: string) => {
      // one finding said by two scripts (a CVE vulners and vulscan both list) is listed once
      const said = new Set<string>();
      for (const script of scripts) {
        for (const f of script.findings) {
          if (scan.evicted.has(f) || said.has(f.title)) continue;
          said.add(f.title);
          findings.push({ rank: f.rank, title: `${f.title}${at}${where}`, detail: f.detail });
        }
      }
    };
    for (const port of host.ports) {
      if (port.state !== 'open') continue;
      const name = serviceName(port);
      const version = serviceVersion(port);
      const service = name ? `: ${name}${version ? ` (${version})` : ''}` : '';
      // quoting reads the text: only for the ports a finding can keep
      const detail = findings.length < MAX_FINDINGS ? quotePort(xml, port) : '';
      // an open port is information: what is wrong with it is in its scripts' findings
      findings.push({ rank: 1, title: `Open port ${port.portid}/${port.protocol}${service}${where}`, detail });
      scriptsSay(port.scripts, ` on ${port.portid}/${port.protocol}`);
    }
    scriptsSay(host.scripts, '');
  }
  if (notKept > 0) findings.push({ rank: 1, title: `${notKept} more open port(s) not read one by one`, detail: `A scan keeps ${MAX_PORTS} ports; the XML file has them all.` });
  if (scan.scriptFindingsNotKept > 0) {
    findings.push({ rank: 1, title: `${scan.scriptFindingsNotKept} more script finding(s) not read one by one`, detail: `A scan keeps ${MAX_FINDINGS} script findings; the XML file has them all.` });
  }
  if (!scan.complete) {
    const detail = scan.nmaprun
      ? `The XML ends before </nmaprun>: the scan was interrupted or its output cut short; ${findings.length} finding(s) read before the end.`
      : 'The output holds no <nmaprun> element.';
    findings.push({ rank: -1, title: scan.nmaprun ? 'Incomplete nmap output' : 'No nmap XML output', detail });
  } else if (findings.length === 0) {
    // no open port is a verdict only where ports were scanned: a name that did not resolve, a host
    // down, nmap's own error scan nothing, and counted as Passing they hid that (rank 0)
    const summary = scan.finished?.summary ?? `${scan.hosts.length} host(s) in the output`;
    if (scan.finished?.exit === 'error') findings.push({ rank: -1, title: 'nmap failed: nothing was scanned', detail: scan.finished.errormsg ?? summary });
    else if (!scan.hosts.some((host) => host.status === 'up')) findings.push({ rank: -1, title: 'Nothing was scanned: no host was up', detail: summary });
    else findings.push({ rank: 0, title: 'No open port found', detail: summary });
  }
  return boundFindings(findings);
}

export interface NmapResult {
  findings: Finding[];
  summary: string;
}

/** Reads nmap's `-oX` output: never throws, whatever the text; incomplete XML gives what could be read. */
export function parseNmapXml(xml: string): NmapResult {
  const reader = scanReader(xml);
  // a step ends at every tick of the scanner and after every script
  while (!reader.step(Infinity));
  return { findings: findingsOf(reader.scan, xml), summary: summarize(reader.scan) };
}

/** Tags read between two looks at the clock. */
const TAGS_PER_LOOK = 2048;

/**
 * As parseNmapXml, in slices of at most `sliceMs` of work, yielding to the event loop between them
 * (a 32 MiB file never holds the server); rejects with the signal's reason once it is aborted.
 */
export async function parseNmapXmlInSlices(xml: string, { signal, sliceMs = 10 }: { signal?: AbortSignal; sliceMs?: number } = {}): Promise<NmapResult> {
  const reader = scanReader(xml);
  let sliceStart = performance.now();
  while (!reader.step(TAGS_PER_LOOK)) {
    if (performance.now() - sliceStart < sliceMs) continue;
    await yieldToLoop();
    signal?.throwIfAborted();
    sliceStart = performance.now();
  }
  await yieldToLoop();
  signal?.throwIfAborted();
  const findings = findingsOf(reader.scan, xml);
  await yieldToLoop();
  signal?.throwIfAborted();
  return { findings, summary: summarize(reader.scan) };
}
