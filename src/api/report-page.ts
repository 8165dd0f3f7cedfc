/**
 * A session's report as one self-contained HTML page: no script, no request to anything (its CSS
 * inline, allowed by hash alone), every value from the store escaped, laid out for A4 in print.
 */
import type { Finding } from '../engine/types.js';
import type { Target } from '../store/state.js';
import { pace } from '../engine/pace.js';
import { BLOCK_MAX, shown } from '../web/bidi.js';

/** One output as the report lists it under its target. */
export interface RankedOutput {
  /** The effective rank: the tester's when set, else the engine's. */
  rank: number;
  code: string;
  type: string;
  title: string;
  status: string;
  findings: Finding[];
  notes: string;
  /** The rank is the tester's. */
  byTester: boolean;
}

export interface ReportInput {
  session: { id: number; name: string; createdAt?: number };
  /** Newest first, as the store lists them. */
  targets: Target[];
  /** Configuration items whose value differs from the embedded default (`undefined`: no default). */
  changed: { key: string; section: string; value: string; defaultValue?: string }[];
  generatedAt: Date;
  /** The session's outputs by effective rank, critical first. */
  severity?: { id: number; label: string; value: number }[];
  /** A target's outputs worth reporting, highest rank first. */
  ranked?: (targetId: number) => RankedOutput[];
  /** The request line of a target's transaction (a finding's evidence), undefined when it is gone. */
  requestLine?: (targetId: number, transactionId: number) => string | undefined;
}

const RANK_WORDS: Record<number, string> = { [-1]: 'Unranked', 0: 'Passing', 1: 'Info', 2: 'Low', 3: 'Medium', 4: 'High', 5: 'Critical' };

const STYLE = `
:root{color-scheme:light;--ink:#1b1f24;--muted:#57606a;--line:#d0d7de;--band:#f3f5f7;--accent:#0b5cad}
*{box-sizing:border-box}
body{margin:0 auto;max-width:62rem;padding:2rem 1.5rem;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans",sans-serif;color:var(--ink);background:#fff}
header{border-bottom:3px solid var(--accent);padding-bottom:1rem;margin-bottom:1.5rem}
.kicker{margin:0;color:var(--muted);font-size:.8rem;letter-spacing:.08em;text-transform:uppercase}
h1{margin:.2rem 0 .8rem;font-size:1.8rem;overflow-wrap:anywhere}
h2{margin:2rem 0 .6rem;font-size:1.25rem;border-bottom:1px solid var(--line);padding-bottom:.25rem}
h3{margin:1.4rem 0 .4rem;font-size:1.05rem;overflow-wrap:anywhere}
h3 .ip{font-weight:normal;color:var(--muted);font-size:.9rem}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1.2rem;margin:0}
dt{color:var(--muted)}
dd{margin:0;overflow-wrap:anywhere}
table{width:100%;border-collapse:collapse;font-size:.9rem}
th,td{text-align:left;vertical-align:top;padding:.3rem .5rem;border-bottom:1px solid var(--line)}
th{background:var(--band);font-weight:600}
td{overflow-wrap:break-word}
td code{overflow-wrap:anywhere}
td.num,th.num{text-align:right;white-space:nowrap}
table.fixed{table-layout:fixed}
.w-url{width:50%}.w-scheme{width:11%}.w-port{width:9%}.w-ip{width:19%}.w-scope{width:11%}
.w-section{width:20%}.w-key{width:27%}.w-value{width:30%}.w-default{width:23%}
code{font-family:ui-monospace,"SFMono-Regular",Menlo,Consolas,monospace;font-size:.85em}
.counts{width:auto;min-width:20rem}
.none{color:var(--muted);font-style:italic}
.rank{display:inline-block;min-width:4.6rem;padding:0 .4rem;border:1px solid currentColor;border-radius:3px;font-size:.8rem;font-weight:600;text-align:center;color:var(--muted)}
.r5{color:#8e1020;background:#fde7e9}.r4{color:#9a3412;background:#fdeee2}.r3{color:#724a00;background:#fff4d6}.r2{color:#1e4fa3;background:#e7f0fd}.r1{color:#0d5960;background:#e3f5f6}.r0{color:#166534;background:#e5f5ea}
.ranked{list-style:none;margin:0;padding:0}
.ranked>li{border-top:1px solid var(--line);padding:.5rem 0}
.ranked-head{margin:0;overflow-wrap:anywhere}
.ranked-head .how{color:var(--muted);font-size:.85rem}
.findings{margin:.3rem 0 0;padding-left:1.2rem}
.findings li{margin:.2rem 0;overflow-wrap:anywhere}
.evidence{margin:.2rem 0 0;padding-left:1.2rem;font-size:.8rem;color:var(--muted)}
.evidence li{margin:0;overflow-wrap:anywhere}
.evidence code{font-size:inherit;color:var(--ink)}
pre{margin:.2rem 0 0;padding:.3rem .5rem .3rem calc(.5rem + 2ch);text-indent:-2ch each-line;background:var(--band);border-left:3px solid var(--line);white-space:pre-wrap;overflow-wrap:anywhere;font-family:ui-monospace,"SFMono-Regular",Menlo,Consolas,monospace;font-size:.8rem}
.notes{margin:.3rem 0 0;white-space:pre-wrap;overflow-wrap:anywhere}
.notes strong{white-space:normal}
footer{margin-top:2.5rem;color:var(--muted);font-size:.8rem;border-top:1px solid var(--line);padding-top:.5rem}
@page{size:A4;margin:16mm 14mm 18mm}
@media print{
body{max-width:none;padding:0;font-size:9.5pt;color:#000}
header{border-bottom-color:#000}
th{background:#eee}
thead{display:table-header-group}
tr,dl,.counts{break-inside:avoid}
h2,h3{break-after:avoid}
section.host{break-inside:auto}
.ranked>li{break-inside:avoid}
.rank{-webkit-print-color-adjust:exact;print-color-adjust:exact}
}
`;

/** No script at all; styles only by the hash of the one inline style sheet; images only the empty icon (data:). */
let policy: Promise<string> | undefined;
export function reportPolicy(): Promise<string> {
  // node:crypto is loaded on the first report: nothing at start-up needs it
  policy ??= import('node:crypto').then(({ createHash }) => {
    const hash = createHash('sha256').update(STYLE).digest('base64');
    return `default-src 'none'; style-src 'sha256-${hash}'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`;
  });
  return policy;
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/**
 * Every value from the store goes through this: text in an element or in a quoted attribute, shown
 * as the web application shows it (src/web/bidi.ts), cut after `max` characters.
 */
export function escapeHtml(value: unknown, max?: number): string {
  return shown(String(value), max).replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

function when(ms: number | undefined): string {
  if (ms === undefined) return '<span class="none">not recorded (made before this version of assessd)</span>';
  return escapeHtml(`${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`);
}

function ipsOf(targets: Target[]): string[] {
  const ips = new Set<string>();
  for (const t of targets) {
    if (t.host_ip) ips.add(t.host_ip);
    for (const ip of t.alternative_ips) ips.add(ip);
  }
  return [...ips].sort();
}

function countRows(targets: Target[], hosts: number): string {
  const schemes = new Map<string, number>();
  for (const t of targets) schemes.set(t.url_scheme, (schemes.get(t.url_scheme) ?? 0) + 1);
  const ports = new Set(targets.map((t) => t.port_number));
  const inScope = targets.filter((t) => t.scope).length;
  const rows: [string, string | number][] = [
    ['Targets', targets.length],
    ['Hosts', hosts],
    ['IP addresses', ipsOf(targets).length],
    ['Distinct ports', ports.size],
    ...[...schemes].sort().map(([scheme, n]): [string, number] => [`${scheme.toUpperCase()} targets`, n]),
    ['In scope', inScope],
    ['Out of scope', targets.length - inScope],
  ];
  return rows.map(([label, n]) => `<tr><th scope="row">${escapeHtml(label)}</th><td class="num">${escapeHtml(n)}</td></tr>`).join('');
}

function hostSections(targets: Target[], byHost: Map<string, Target[]>): string {
  if (targets.length === 0) return '<p class="none">This session has no targets.</p>';
  const parts: string[] = [];
  for (const host of [...byHost.keys()].sort()) {
    const list = byHost.get(host)!.sort((a, b) => (a.target_url < b.target_url ? -1 : a.target_url > b.target_url ? 1 : 0));
    const ips = ipsOf(list);
    const ipNote = ips.length > 0 ? ips.join(', ') : 'IP not resolved';
    const rows = list.map((t) =>
      `<tr><td><code>${escapeHtml(t.target_url)}</code></td><td>${escapeHtml(t.url_scheme)}</td>` +
      `<td class="num">${escapeHtml(t.port_number)}</td><td>${escapeHtml(t.host_ip || '—')}</td><td>${t.scope ? 'in' : 'out'}</td></tr>`,
    );
    parts.push(
      `<section class="host"><h3>${escapeHtml(host)} <span class="ip">(${escapeHtml(ipNote)})</span></h3>` +
      '<table class="fixed"><thead><tr><th class="w-url">URL</th><th class="w-scheme">Scheme</th><th class="num w-port">Port</th>' +
      '<th class="w-ip">IP</th><th class="w-scope">Scope</th></tr></thead>' +
      `<tbody>${rows.join('')}</tbody></table></section>`,
    );
  }
  return parts.join('\n');
}

function configurationSection(changed: ReportInput['changed']): string {
  if (changed.length === 0) return '<p class="none">Every setting has its default value.</p>';
  const rows = changed.map((item) =>
    `<tr><td>${escapeHtml(item.section)}</td><td><code>${escapeHtml(item.key)}</code></td><td><code>${escapeHtml(item.value, BLOCK_MAX)}</code></td>` +
    `<td>${item.defaultValue === undefined ? '<span class="none">not in the defaults</span>' : `<code>${escapeHtml(item.defaultValue, BLOCK_MAX)}</code>`}</td></tr>`,
  );
  const head = '<tr><th class="w-section">Section</th><th class="w-key">Key</th><th class="w-value">Value</th><th class="w-default">Default</th></tr>';
  return `<table class="fixed"><thead>${head}</thead><tbody>${rows.join('')}</tbody></table>`;
}

function rankWord(rank: number): string {
  return RANK_WORDS[rank] ?? 'Unranked';
}

function rankTag(rank: number): string {
  return `<span class="rank r${rank >= 0 && rank <= 5 ? rank : 'n'}">${escapeHtml(rankWord(rank))}</span>`;
}

function severitySection(severity: NonNullable<ReportInput['severity']>): string {
  const ranked = severity.reduce((n, c) => n + c.value, 0);
  const rows = severity.map((c) => `<tr><th scope="row">${rankTag(c.id)}</th><td class="num">${escapeHtml(c.value)}</td></tr>`).join('');
  return `<table class="counts"><thead><tr><th>Rank</th><th class="num">Outputs</th></tr></thead><tbody>${rows}</tbody></table>` +
    `<p class="none">${escapeHtml(ranked === 0 ? 'No ranked output yet.' : `${ranked} ranked output${ranked === 1 ? '' : 's'}; the tester’s rank counts where set, else the engine’s. Unranked outputs are not counted.`)}</p>`;
}

/** A finding's evidence: the request line of each transaction it names, and how many more there were. */
function evidenceList(f: Finding, lineOf: (id: number) => string | undefined): string {
  const ids = f.transactions ?? [];
  if (ids.length === 0) return '';
  const items = ids.map((id) => `<li><code>#${escapeHtml(id)}</code> ${escapeHtml(lineOf(id) ?? '(deleted since)')}</li>`).join('');
  const total = f.transactions_total ?? ids.length;
  const more = total > ids.length ? `<li>${escapeHtml(`… ${total - ids.length} more (${total} transactions in all)`)}</li>` : '';
  return `<ol class="evidence" aria-label="Evidence">${items}${more}</ol>`;
}

/** An output's head line, as `<li><p class="ranked-head">...</p>` (its findings and notes follow, then `</li>`). */
function outputHead(o: RankedOutput): string {
  const how = `${o.type.replace(/_/g, '-')}, ${o.byTester ? 'ranked by the tester' : o.rank === -1 ? 'not ranked' : 'ranked by the engine'}${o.status === 'Successful' ? '' : `, ${o.status}`}`;
  return `<li><p class="ranked-head">${rankTag(o.rank)} <code>${escapeHtml(o.code)}</code> ${escapeHtml(o.title)} <span class="how">(${escapeHtml(how)})</span></p>`;
}

function findingItem(f: Finding, lineOf: (id: number) => string | undefined): string {
  return `<li>${rankTag(f.rank)} ${escapeHtml(f.title)}${f.detail ? `<pre>${escapeHtml(f.detail, BLOCK_MAX)}</pre>` : ''}${evidenceList(f, lineOf)}</li>`;
}

const notesOf = (o: RankedOutput) => (o.notes.trim() === '' ? '' : `<p class="notes"><strong>Tester’s notes:</strong> ${escapeHtml(o.notes, BLOCK_MAX)}</p>`);

/**
 * Bytes (UTF-8) of the findings section at most: past them, what is left (the least severe, as
 * it comes last) is counted, not shown. One legal session bundle (1,000 findings of 65,000 `<` in
 * one output) made a page of 260 MB, and three of them a string longer than V8 holds: a 500 after
 * 36 s. Each target's heading, output, finding and note is counted before it goes on the page.
 */
export const FINDINGS_BUDGET = 32 * 1024 * 1024;
/** Bytes of budget too few for an output's head line: past it, the rest is counted without being made. */
const NO_ROOM = 256;

async function findingsSection(targets: Target[], ranked: NonNullable<ReportInput['ranked']>, requestLine: ReportInput['requestLine'], budget: number): Promise<string> {
  const withOutputs = targets.map((t) => ({ t, outputs: ranked(t.id) })).filter((x) => x.outputs.length > 0);
  if (withOutputs.length === 0) return '<p class="none">No target has a ranked output, a finding or a note yet.</p>';
  withOutputs.sort((a, b) => b.outputs[0].rank - a.outputs[0].rank || (a.t.target_url < b.t.target_url ? -1 : 1));
  const quiet = targets.length - withOutputs.length;
  let left = budget;
  /** Whether `pieces` fit in what is left of the budget: taken from it when they do. */
  const fits = (...pieces: string[]) => {
    let bytes = 0;
    for (const piece of pieces) bytes += Buffer.byteLength(piece);
    if (bytes > left) return false;
    left -= bytes;
    return true;
  };
  const notShown = { outputs: 0, findings: 0 };
  // a report of a big session is rendered a slice at a time: the server answers meanwhile (a
  // turn of work per 8 KiB made)
  const tick = pace();
  const turn = async (bytes = 0) => tick(1 + (bytes >> 13));
  const parts: string[] = [];
  for (const { t, outputs } of withOutputs) {
    const head = left < NO_ROOM ? '' : `<section class="target-findings"><h3><code>${escapeHtml(t.target_url)}</code> <span class="ip">highest: ${escapeHtml(rankWord(outputs[0].rank))}</span></h3><ol class="ranked">`;
    const tail = '</ol></section>';
    if (left < NO_ROOM || !fits(head, tail, '\n')) {
      notShown.outputs += outputs.length;
      for (const o of outputs) notShown.findings += o.findings.length;
      await turn();
      continue;
    }
    const items: string[] = [];
    for (const o of outputs) {
      const lineOf = (id: number) => requestLine?.(t.id, id);
      // (once there is no room, what is left is only counted: nothing more is escaped for nothing)
      const itemHead = left < NO_ROOM ? '' : outputHead(o);
      const notes = left < NO_ROOM ? '' : notesOf(o);
      if (left < NO_ROOM || !fits(itemHead, notes, '</li>')) {
        notShown.outputs++;
        notShown.findings += o.findings.length;
        await turn();
        continue;
      }
      let findings = '';
      if (o.findings.length > 0 && fits('<ul class="findings"></ul>')) {
        const shown: string[] = [];
        let i = 0;
        for (; i < o.findings.length; i++) {
          const item = findingItem(o.findings[i]!, lineOf);
          if (!fits(item)) break;
          shown.push(item);
          await turn(item.length);
        }
        if (i < o.findings.length) {
          notShown.findings += o.findings.length - i;
          shown.push(`<li class="none">${escapeHtml(`${o.findings.length - i} more finding${o.findings.length - i === 1 ? '' : 's'} of this output not shown: the page holds ${budget / (1024 * 1024)} MiB of findings.`)}</li>`);
        }
        findings = `<ul class="findings">${shown.join('')}</ul>`;
      } else if (o.findings.length > 0) notShown.findings += o.findings.length;
      items.push(`${itemHead}${findings}${notes}</li>`);
      await turn();
    }
    // (a heading without one output under it is not shown either: its room goes back)
    if (items.length === 0) left += Buffer.byteLength(head) + Buffer.byteLength(tail) + 1;
    else parts.push(`${head}${items.join('')}${tail}`);
  }
  if (notShown.outputs > 0 || notShown.findings > 0) {
    const said = `Not shown: ${notShown.outputs} more output${notShown.outputs === 1 ? '' : 's'} and ${notShown.findings} more finding${notShown.findings === 1 ? '' : 's'}; the page holds ${budget / (1024 * 1024)} MiB of findings. The web application and the API show them all.`;
    parts.push(`<p class="none">${escapeHtml(said)}</p>`);
  }
  if (quiet > 0) parts.push(`<p class="none">${escapeHtml(`${quiet} other target${quiet === 1 ? ' has' : 's have'} no ranked output, finding or note.`)}</p>`);
  return parts.join('\n');
}

/**
 * The page; `policy` (from reportPolicy) is repeated in a meta tag, so that a saved copy keeps it.
 * Its findings are rendered a slice at a time, at most `budget` bytes of them.
 */
export async function renderReport(input: ReportInput, policy: string, budget = FINDINGS_BUDGET): Promise<string> {
  const { session, targets } = input;
  const findings = input.ranked ? await findingsSection(targets, input.ranked, input.requestLine, budget) : '';
  const byHost = new Map<string, Target[]>();
  for (const t of targets) {
    const list = byHost.get(t.host_name);
    if (list) list.push(t);
    else byHost.set(t.host_name, [t]);
  }
  const name = escapeHtml(session.name);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="${escapeHtml(policy.replace(/; frame-ancestors 'none'$/, ''))}">
<meta name="referrer" content="no-referrer">
<link rel="icon" href="data:,">
<title>Assessment report: ${name}</title>
<style>${STYLE}</style>
</head>
<body>
<header>
<p class="kicker">Assessment report</p>
<h1>${name}</h1>
<dl>
<dt>Session</dt><dd>${escapeHtml(session.id)}</dd>
<dt>Created</dt><dd>${when(session.createdAt)}</dd>
<dt>Report generated</dt><dd>${when(input.generatedAt.getTime())}</dd>
</dl>
</header>
<main>
${input.severity ? `<section id="severity">
<h2>Findings by rank</h2>
${severitySection(input.severity)}
</section>` : ''}
${input.ranked ? `<section id="findings">
<h2>Findings by target</h2>
${findings}
</section>` : ''}
<section>
<h2>Summary</h2>
<table class="counts"><tbody>${countRows(targets, byHost.size)}</tbody></table>
</section>
<section>
<h2>Targets by host</h2>
${hostSections(targets, byHost)}
</section>
<section>
<h2>Configuration changed from the defaults</h2>
${configurationSection(input.changed)}
</section>
</main>
<footer>Made by assessd from session ${escapeHtml(session.id)}. This page holds no script and loads nothing.</footer>
</body>
</html>
`;
}
