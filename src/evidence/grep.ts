/**
 * A grep plugin's run: its rules over a target's transactions as they are when it starts (those in
 * scope with a response), records read a few MiB at a time in file order, the event loop given back
 * every few milliseconds. Each distinct value a rule finds is one finding, with the ids of the
 * transactions that show it.
 */
import { MAX_FINDING_TRANSACTIONS, type Finding } from '../store/state.js';
import { compileRule, type CompiledRule, type GrepRuleSpec } from './grep-rules.js';
import { urlBytesOf, urlOf } from './index.js';
import { readRecords, recordParts, type ReadBytes } from './query.js';
import { recordHeadLength } from './record.js';
import { SearchTimeout, type Matcher } from './regex.js';
import { FLAG_DEAD, FLAG_RESPONSE, FLAG_SCOPE } from './segment.js';
import type { LoadedTarget } from './store.js';

export interface GrepInput {
  loaded: LoadedTarget;
  read: ReadBytes;
  rules: readonly GrepRuleSpec[];
  /** Ends the run (a user's abort, a stop): it rejects with the signal's reason. */
  signal?: AbortSignal;
  /** performance.now() past which it stops, rejecting with a SearchTimeout. */
  deadline?: number;
}

export interface GrepResult {
  findings: Finding[];
  summary: string;
  /** Transactions read (in scope, with a response). */
  read: number;
}

export { MAX_FINDING_TRANSACTIONS };
/** Distinct values kept per rule: past them, matches are counted, not listed. */
const MAX_VALUES = 1000;
/** Characters of a value kept (its key), and of a title's quote of it. */
const MAX_VALUE = 1000;
const MAX_TITLE_VALUE = 120;
const SLICE_MS = 8;
/**
 * Milliseconds one rule may read one transaction (as a search's test of one): a body a target
 * crafted (16 MiB of `/*`, a match every five bytes) is then left unread past it, and said so,
 * rather than holding the server for seconds.
 */
const RULE_READ_MS = 500;
const BATCH_ROWS = 256;
const BATCH_BYTES = 4 * 1024 * 1024;
/** A record read for its headers alone: its first bytes hold them nearly always. */
const HEAD_READ = 64 * 1024;

interface Seen {
  ids: number[];
  count: number;
  /** The last transaction that showed it: one that shows it twice counts once. */
  last: number;
}

interface RuleState {
  rule: CompiledRule;
  values: Map<string, Seen>;
  /** Matches of values past MAX_VALUES. */
  unlisted: number;
  /** Transactions the rule read, and the first of them. */
  applies: number;
  appliedIds: number[];
  /** By the index's interned media type: whether the rule reads it. */
  types: Map<number, boolean>;
  /** slowest: [row, ms], longest first. */
  slowest: [number, number][];
  /** Transactions the rule could not read whole within RULE_READ_MS. */
  unread: number;
}

const flat = (text: string) => text.replace(/\s+/g, ' ').trim();
const cut = (text: string, max: number) => (text.length > max ? `${text.slice(0, max)}…` : text);
const plural = (n: number, one: string, many = `${one}s`) => `${n.toLocaleString('en')} ${n === 1 ? one : many}`;

/** `Set-Cookie: id=…; Path=/; Secure`: a cookie's value differs per session, its flags are the evidence. */
function maskCookie(line: string): string {
  const colon = line.indexOf(':');
  const value = line.slice(colon + 1).trimStart();
  const eq = value.indexOf('=');
  const semi = value.indexOf(';');
  if (eq === -1 || (semi !== -1 && semi < eq)) return line;
  const end = semi === -1 ? value.length : semi;
  return `${line.slice(0, colon)}: ${value.slice(0, eq + 1)}${end > eq + 1 ? '…' : ''}${value.slice(end)}`;
}

/**
 * Each match of `mask` in `text` shown as `…`; throws SearchTimeout past `deadline`, the rule's
 * time for the transaction (a value is up to 256 KiB of the target's bytes).
 */
function masked(mask: Matcher, text: string, deadline?: number): string {
  const bytes = Buffer.from(text);
  let out = '';
  let at = 0;
  mask.matches(bytes, 0, bytes.length, (s, e) => {
    out += `${bytes.toString('utf8', at, s)}…`;
    at = e;
    return false;
  }, deadline);
  return out === '' ? text : out + bytes.toString('utf8', at);
}

/** Whether `matching` and `not_matching` keep the value at `bytes[start..end)`. */
function kept(rule: CompiledRule, bytes: Buffer, start: number, end: number, deadline?: number): boolean {
  return (!rule.matching || rule.matching.test(bytes, start, end, deadline)) && !rule.notMatching?.test(bytes, start, end, deadline);
}

/** A value found in transaction `id` (kept), shown as the rule says (value, mask), its mask applied before `deadline`. */
function note(state: RuleState, bytes: Buffer, start: number, end: number, id: number, deadline: number): void {
  const { rule } = state;
  let value = bytes.toString('utf8', start, end);
  if (rule.spec.value === 'cookie') value = maskCookie(value);
  if (rule.mask) value = masked(rule.mask, value, deadline);
  const key = cut(value, MAX_VALUE);
  let seen = state.values.get(key);
  if (!seen) {
    if (state.values.size >= MAX_VALUES) {
      state.unlisted++;
      return;
    }
    state.values.set(key, (seen = { ids: [], count: 0, last: -1 }));
  }
  if (seen.last === id) return;
  seen.count++;
  seen.last = id;
  if (seen.ids.length < MAX_FINDING_TRANSACTIONS) seen.ids.push(id);
}

/** The lines of a response's header block, `[start, end)` each. */
function headerLines(bytes: Buffer, start: number, end: number): [number, number][] {
  const lines: [number, number][] = [];
  for (let at = start; at < end; ) {
    const crlf = bytes.indexOf('\r\n', at);
    const lineEnd = crlf === -1 || crlf > end ? end : crlf;
    if (lineEnd > at) lines.push([at, lineEnd]);
    at = lineEnd + 2;
  }
  return lines;
}

/** Applies a rule to one transaction for RULE_READ_MS at most (the run's deadline still ends the run). */
function applyRule(state: RuleState, bytes: Buffer, parts: ReturnType<typeof recordParts>, id: number, deadline?: number): void {
  const own = performance.now() + RULE_READ_MS;
  try {
    readWith(state, bytes, parts, id, deadline === undefined ? own : Math.min(own, deadline));
  } catch (err) {
    if (!(err instanceof SearchTimeout) || (deadline !== undefined && performance.now() > deadline)) throw err;
    state.unread++;
  }
}

function readWith(state: RuleState, bytes: Buffer, parts: ReturnType<typeof recordParts>, id: number, deadline: number): void {
  const { rule } = state;
  if (rule.kind === 'body') {
    const [start, end] = parts.responseBody;
    rule.regex!.matches(bytes, start, Math.min(end, bytes.length), (s, e) => {
      if (kept(rule, bytes, s, e, deadline)) note(state, bytes, s, e, id, deadline);
      return false;
    }, deadline);
    return;
  }
  for (const [start, end] of headerLines(bytes, ...parts.responseHeaders)) {
    if (rule.kind === 'headers') {
      if (rule.regex!.test(bytes, start, end, deadline) && kept(rule, bytes, start, end, deadline)) note(state, bytes, start, end, id, deadline);
      continue;
    }
    const colon = bytes.indexOf(0x3a, start);
    if (colon === -1 || colon >= end) continue;
    if (!rule.names.has(bytes.toString('latin1', start, colon).trim().toLowerCase())) continue;
    let valueStart = colon + 1;
    while (valueStart < end && (bytes[valueStart] === 0x20 || bytes[valueStart] === 0x09)) valueStart++;
    // a header's value is tested, the line is shown
    if (kept(rule, bytes, valueStart, end, deadline)) note(state, bytes, start, end, id, deadline);
  }
}

/** Runs the rules over the target's transactions in scope with a response, as they are now. */
export async function runGrep(input: GrepInput): Promise<GrepResult> {
  const { loaded, read, signal, deadline } = input;
  const { index, interner } = loaded;
  const started = performance.now();
  const states: RuleState[] = input.rules.map((spec) => ({ rule: compileRule(spec), values: new Map(), unlisted: 0, applies: 0, appliedIds: [], types: new Map(), slowest: [], unread: 0 }));
  const check = () => {
    if (signal?.aborted) throw signal.reason ?? new Error('aborted');
    if (deadline !== undefined && performance.now() > deadline) throw new SearchTimeout('the grep took too long');
  };
  const reads = (state: RuleState, row: number, https: boolean): boolean => {
    const { spec, contentType } = state.rule;
    if (spec.scheme !== undefined && (spec.scheme === 'https') !== https) return false;
    if (!contentType) return true;
    const type = index.responseType[row];
    let yes = state.types.get(type);
    if (yes === undefined) state.types.set(type, (yes = contentType.testString(interner.text(type))));
    return yes;
  };

  /** Rows waiting for their records, and for each the rules that read them. */
  let batch: { row: number; rules: RuleState[]; body: boolean }[] = [];
  let batchBytes = 0;
  async function flush(): Promise<void> {
    if (batch.length === 0) return;
    const whole = batch.filter((b) => b.body || index.len[b.row] <= HEAD_READ).map((b) => b.row);
    const records = new Map<number, { bytes: Buffer; start: number }>();
    for (const r of await readRecords(index, whole, read)) r.rows.forEach((row, k) => records.set(row, { bytes: r.bytes, start: r.starts[k] }));
    for (const { row } of batch) {
      if (records.has(row)) continue;
      // headers only: the record's start, and more when its head is longer
      let bytes = await read(index.seg[row], index.off[row], HEAD_READ);
      const head = recordHeadLength(bytes);
      if (head > bytes.length) bytes = await read(index.seg[row], index.off[row], head);
      records.set(row, { bytes, start: 0 });
    }
    for (const { row, rules } of batch) {
      const { bytes, start } = records.get(row)!;
      const parts = recordParts(bytes, start);
      for (const state of rules) {
        applyRule(state, bytes, parts, index.ids[row], deadline);
        // a batch of large bodies is read with the event loop given back between them too
        if (performance.now() - slice >= SLICE_MS) {
          check();
          await new Promise((resolve) => setImmediate(resolve));
          slice = performance.now();
        }
      }
    }
    batch = [];
    batchBytes = 0;
  }

  const n = index.n;
  let readCount = 0;
  let slice = performance.now();
  // rows keep their places while the run waits for reads
  index.scans++;
  try {
    for (let row = 0; row < n; row++) {
      const flags = index.flags[row];
      if (flags & FLAG_DEAD || !(flags & FLAG_SCOPE) || !(flags & FLAG_RESPONSE)) continue;
      readCount++;
      const url = urlBytesOf(index, row);
      const https = url.length > 6 && (url[4] === 0x73 || url[4] === 0x53) && url[5] === 0x3a;
      const rules: RuleState[] = [];
      let body = false;
      for (const state of states) {
        if (!reads(state, row, https)) continue;
        state.applies++;
        if (state.appliedIds.length < MAX_FINDING_TRANSACTIONS) state.appliedIds.push(index.ids[row]);
        if (state.rule.kind === 'slowest') {
          keepSlowest(state, row, index.time[row]);
          continue;
        }
        rules.push(state);
        if (state.rule.kind === 'body') body = true;
      }
      if (rules.length > 0) {
        batch.push({ row, rules, body });
        batchBytes += body ? index.len[row] : Math.min(index.len[row], HEAD_READ);
      }
      if (batch.length >= BATCH_ROWS || batchBytes >= BATCH_BYTES) await flush();
      if (performance.now() - slice >= SLICE_MS) {
        check();
        await new Promise((resolve) => setImmediate(resolve));
        slice = performance.now();
      }
    }
    await flush();
    check();
  } finally {
    index.scans--;
  }

  const findings: Finding[] = [];
  const lines = [`Read ${plural(readCount, 'transaction')} (in scope, with a response) of ${plural(index.live, 'stored transaction')} in ${Math.round(performance.now() - started)} ms.`];
  for (const state of states) {
    const { spec } = state.rule;
    if (state.rule.kind === 'slowest') {
      const min = (spec.min_seconds ?? 0) * 1000;
      const shown = state.slowest.filter(([, ms]) => ms >= min);
      for (const [row, ms] of shown) {
        const what = `${interner.text(index.method[row])} ${urlOf(index, row)}`;
        findings.push({ rank: spec.rank, title: `${spec.title}: ${cut(what, MAX_TITLE_VALUE)} took ${(ms / 1000).toFixed(2)} s`, detail: [what, spec.detail].filter(Boolean).join('\n\n'), transactions: [index.ids[row]] });
      }
      lines.push(`${spec.title}: ${shown.length === 0 ? `none${min > 0 ? ` took ${spec.min_seconds} s or more` : ''}` : plural(shown.length, 'response')} of ${plural(state.applies, 'read')}.`);
      continue;
    }
    for (const [value, seen] of state.values) {
      findings.push({
        rank: spec.rank,
        title: `${spec.title}: ${cut(flat(value), MAX_TITLE_VALUE)}`,
        detail: [value, spec.detail, `Seen in ${plural(seen.count, 'transaction')}.`].filter(Boolean).join('\n\n'),
        transactions: seen.ids,
        ...(seen.count > seen.ids.length ? { transactions_total: seen.count } : {}),
      });
    }
    // a transaction not read whole may hold it: nothing is said absent then
    const absent = state.values.size === 0 && state.unlisted === 0 && state.unread === 0;
    if (absent && spec.rank_when_absent !== undefined && state.applies > 0) {
      findings.push({
        rank: spec.rank_when_absent,
        title: spec.absent_title ?? `No ${spec.title}`,
        detail: [`None of the ${plural(state.applies, 'response')} read shows it.`, spec.detail].filter(Boolean).join('\n\n'),
        transactions: state.appliedIds,
        ...(state.applies > state.appliedIds.length ? { transactions_total: state.applies } : {}),
      });
    }
    const unlisted = state.unlisted > 0 ? ` (and ${plural(state.unlisted, 'match', 'matches')} of values past the first ${MAX_VALUES}, not listed)` : '';
    const unread = state.unread > 0 ? `; ${plural(state.unread, 'transaction')} not read whole (the rule stops reading one after ${RULE_READ_MS / 1000} s)` : '';
    lines.push(`${spec.title}: ${state.applies === 0 ? 'no transaction to read' : absent ? `not seen in ${plural(state.applies, 'transaction')}` : `${plural(state.values.size, 'distinct value')} in ${plural(state.applies, 'transaction')} read${unlisted}`}${unread}.`);
  }
  lines.push('', ...(findings.length === 0 ? ['Nothing found.'] : findings.map((f) => `[rank ${f.rank}] ${f.title}`)));
  return { findings, summary: lines.join('\n'), read: readCount };
}

/** Keeps the rule's slowest responses, longest first. */
function keepSlowest(state: RuleState, row: number, ms: number): void {
  const list = state.slowest;
  const most = state.rule.spec.slowest!;
  if (list.length === most && ms <= list[list.length - 1][1]) return;
  let at = list.length;
  while (at > 0 && list[at - 1][1] < ms) at--;
  list.splice(at, 0, [row, ms]);
  if (list.length > most) list.pop();
}
