/**
 * The session bundle: one session, its targets and their outputs as a file that travels between
 * boxes, `{"format":"assessd-session","version":1,"exported_at","session":{"name"},"targets":[...]}`.
 */
import { PLUGIN_GROUPS, PLUGIN_TYPES, type PluginGroup } from '../engine/types.js';
import { MAX_FINDINGS, MAX_NOTES, MAX_SUMMARY, targetOutputs } from './engine.js';
import type { ImportedOutput } from './import.js';
import { dayExists } from './dates.js';
import { normalizeSessionName } from './sessions.js';
import type { Finding, OutputRow, OutputStatus, State, Target } from './state.js';
import { deriveTarget, listTargets, notOneHost } from './targets.js';

export const BUNDLE_FORMAT = 'assessd-session';
export const BUNDLE_VERSION = 1;
/** One import is one op applied at once: this bounds the time it holds the event loop. */
export const MAX_BUNDLE_TARGETS = 100_000;
/**
 * Outputs a bundle may give one target. A target has one output per plugin, and a catalogue holds a
 * few hundred; a bundle naming 40,000 made codes held the server 12 s at each look at the target's
 * results, 350,000 for minutes.
 */
export const MAX_BUNDLE_OUTPUTS_PER_TARGET = 5_000;
export const MAX_FINDING_TITLE = 4096;
/** Deepest nesting of arrays and objects a bundle may have (an exported one has 7 levels). */
export const MAX_BUNDLE_DEPTH = 64;
/**
 * Most values open at any point of a bundle: the elements of the arrays and objects that enclose
 * that point, summed. JSON.parse holds each open container's elements until it closes, and the
 * young generation's every collection (kept small by the CLI) scans them all again: 63 MB of `{},`
 * in one array held the server 200 s at 1.7 GB, one array of a million `{}` then 60 MB more held
 * it 30 s. An export of 80,000 transactions of one target (53 MB) imports in 2.6 s.
 */
export const MAX_OPEN_VALUES = 250_000;
/** A finding's detail and an output's error, in characters. */
export const MAX_FINDING_DETAIL = MAX_NOTES;
export const MAX_OUTPUT_ERROR = MAX_NOTES;
/** Why an output that was running when exported is not running any more. */
export const WAS_RUNNING = 'was running when exported';

/** An output as a bundle carries it: `started_at`/`ended_at` ISO 8601, `output` its text. */
export interface BundleOutput {
  plugin_key: string;
  plugin_code: string;
  plugin_group: string;
  plugin_type: string;
  status: OutputStatus;
  owtf_rank: number;
  user_rank: number;
  user_notes: string;
  findings: Finding[];
  exit_code: number | null;
  error: string | null;
  started_at: string | null;
  ended_at: string | null;
  output: string;
}

/** What an export reads at one instant: the session's targets, newest first, and their outputs, copied. */
export interface SessionSnapshot {
  name: string;
  targets: { target: Target; outputs: OutputRow[] }[];
}

/** Copies the session's targets and outputs (not the whole store); undefined for an unknown session. */
export function snapshotSession(state: State, sessionId: number): SessionSnapshot | undefined {
  const row = state.sessions.get(sessionId);
  if (!row) return undefined;
  const targets = listTargets(state, { sessionId }).map((target) => ({
    target: { ...target },
    outputs: targetOutputs(state, target.id).map((output) => ({ ...output })),
  }));
  return { name: row.name, targets };
}

const isoOrNull = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/**
 * The bundle as JSON text; each output's text is looked up by output id (`''` when absent), each
 * target's transactions (HAR 1.2 entries) by target id: a target without any has no `transactions`.
 */
export function buildBundle(snapshot: SessionSnapshot, texts: ReadonlyMap<number, string>, now: Date, transactions: ReadonlyMap<number, unknown[]> = new Map()): string {
  return [...bundlePieces(snapshot, texts, now, transactions)].join('');
}

/**
 * buildBundle's text in pieces, a target's head, then each of its transactions: one piece is
 * never more than a target or an entry, so that an export of 480,000 transactions (JSON.stringify
 * of it all: 7.5 s of a blocked event loop) can let the server answer between them.
 */
export function* bundlePieces(snapshot: SessionSnapshot, texts: ReadonlyMap<number, string>, now: Date, transactions: ReadonlyMap<number, unknown[]> = new Map()): Generator<string> {
  // the document's head up to its targets' `[`, as JSON.stringify writes an empty list: `"targets":[]}`
  const head = JSON.stringify({ format: BUNDLE_FORMAT, version: BUNDLE_VERSION, exported_at: now.toISOString(), session: { name: snapshot.name }, targets: [] });
  yield head.slice(0, -2);
  let first = true;
  for (const { target, outputs } of snapshot.targets) {
    const text = JSON.stringify({
      ...target,
      outputs: outputs.map((o): BundleOutput => ({
        plugin_key: o.plugin_key,
        plugin_code: o.plugin_code,
        plugin_group: o.plugin_group,
        plugin_type: o.plugin_type,
        status: o.status,
        owtf_rank: o.owtf_rank,
        user_rank: o.user_rank,
        user_notes: o.user_notes,
        findings: o.findings,
        exit_code: o.exit_code,
        error: o.error,
        started_at: isoOrNull(o.started_at),
        ended_at: isoOrNull(o.ended_at),
        output: texts.get(o.id) ?? '',
      })),
    });
    yield first ? '' : ',';
    first = false;
    const entries = transactions.get(target.id);
    if (!entries?.length) {
      yield text;
      continue;
    }
    // its last key, as the object would have written it
    yield `${text.slice(0, -1)},"transactions":[`;
    for (let i = 0; i < entries.length; i++) yield `${i === 0 ? '' : ','}${JSON.stringify(entries[i])}`;
    yield ']}';
  }
  yield ']}';
}

/** A field of an output (`finding.*`: of one of its findings) that a bundle got wrong. */
export type OutputField =
  | keyof BundleOutput
  | 'finding'
  | 'finding.rank'
  | 'finding.title'
  | 'finding.detail'
  | 'finding.transactions'
  | 'finding.transactions_total';

/** Why a bundle was refused; `index` is the position in its `targets` list, `output` in that target's `outputs`. */
export type BundleProblem =
  | { kind: 'not-utf8' | 'not-json' | 'not-object' | 'format' | 'session' | 'name-type' | 'no-name' | 'targets' | 'too-deep' | 'too-many-values' }
  | { kind: 'version'; version: unknown }
  | { kind: 'invalid-name'; from: 'argument' | 'bundle' }
  | { kind: 'too-many'; count: number }
  | { kind: 'target'; index: number }
  | { kind: 'target-url'; index: number; what: 'missing' | 'not-string' | 'invalid' | 'not-one-host' }
  | { kind: 'outputs'; index: number }
  | { kind: 'too-many-outputs'; index: number }
  | { kind: 'transactions'; index: number }
  | { kind: 'output'; index: number; output: number }
  | { kind: 'output-field'; index: number; output: number; field: OutputField; finding?: number; what: 'missing' | 'invalid' | 'repeated' };

/** A target's transactions as a bundle carries them: HAR entries, checked by the evidence store (`index`: the target's place in `targets`). */
export interface BundledTransactions {
  url: string;
  index: number;
  entries: unknown[];
}

export type ParsedBundle =
  | { ok: true; name: string; urls: string[]; outputs: ImportedOutput[]; transactions: BundledTransactions[] }
  | { ok: false; problem: BundleProblem };

/** A property of the object itself: a `__proto__` or `toString` key in a bundle never reaches a prototype. */
function own(value: object, key: string): unknown {
  return Object.hasOwn(value, key) ? (value as Record<string, unknown>)[key] : undefined;
}

const isObject = (v: unknown): v is object => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Bounds the bundle's shape before JSON.parse builds it, in one pass over the bytes: the nesting
 * (MAX_BUNDLE_DEPTH) and the values open at any point (MAX_OPEN_VALUES; a container's values are
 * counted by its commas). What is not JSON is left for JSON.parse to refuse.
 */
function shapeProblem(bytes: Uint8Array): BundleProblem | undefined {
  /** The commas of each open container. */
  const commas: number[] = [];
  let open = 0;
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i];
    if (byte === 0x22) {
      // a string, to its closing quote: `"` and `\` are never inside a UTF-8 sequence
      for (i++; i < bytes.length && bytes[i] !== 0x22; i++) if (bytes[i] === 0x5c) i++;
    } else if (byte === 0x7b || byte === 0x5b) {
      if (commas.length === MAX_BUNDLE_DEPTH) return { kind: 'too-deep' };
      commas.push(0);
      open++;
    } else if (byte === 0x7d || byte === 0x5d) {
      open -= (commas.pop() ?? 0) + 1;
    } else if (byte === 0x2c && commas.length > 0) {
      commas[commas.length - 1]++;
      if (++open > MAX_OPEN_VALUES) return { kind: 'too-many-values' };
    }
  }
  return undefined;
}

function decode(bytes: Uint8Array): string | undefined {
  try {
    // fatal: a stray byte is refused rather than turned into U+FFFD inside a name; a BOM is dropped
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

/**
 * Checks a bundle from top to bottom and returns the session name (the `name` argument if given,
 * else the bundle's, trimmed), its target URLs, trimmed, each once, OLDEST first (the order to
 * create them in, so that the new box lists them newest first as the old one did), and their
 * outputs, checked, in the same order. Every field of a target but `target_url` and `outputs` is
 * ignored: they are derived again. Unknown fields are ignored.
 */
export function parseBundle(bytes: Uint8Array, nameArgument?: string): ParsedBundle {
  const fail = (problem: BundleProblem): ParsedBundle => ({ ok: false, problem });
  const text = decode(bytes);
  if (text === undefined) return fail({ kind: 'not-utf8' });
  const shape = shapeProblem(bytes);
  if (shape) return fail(shape);
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return fail({ kind: 'not-json' });
  }
  if (!isObject(doc)) return fail({ kind: 'not-object' });
  if (own(doc, 'format') !== BUNDLE_FORMAT) return fail({ kind: 'format' });
  const version = own(doc, 'version');
  if (version !== BUNDLE_VERSION) return fail({ kind: 'version', version });

  const session = own(doc, 'session');
  if (session !== undefined && !isObject(session)) return fail({ kind: 'session' });
  let rawName = nameArgument;
  if (rawName === undefined) {
    const bundled = session && own(session, 'name');
    if (bundled === undefined) return fail({ kind: 'no-name' });
    if (typeof bundled !== 'string') return fail({ kind: 'name-type' });
    rawName = bundled;
  }
  const name = normalizeSessionName(rawName);
  if (name === undefined) return fail({ kind: 'invalid-name', from: nameArgument === undefined ? 'bundle' : 'argument' });

  const targets = own(doc, 'targets');
  if (!Array.isArray(targets)) return fail({ kind: 'targets' });
  if (targets.length > MAX_BUNDLE_TARGETS) return fail({ kind: 'too-many', count: targets.length });
  const urls: string[] = [];
  const outputsOf: ImportedOutput[][] = [];
  const transactions: BundledTransactions[] = [];
  // each target URL's plugin keys: a URL may be repeated, its outputs may not
  const keysOf = new Map<string, Set<string>>();
  for (let index = 0; index < targets.length; index++) {
    const target: unknown = targets[index];
    if (!isObject(target)) return fail({ kind: 'target', index });
    const url = own(target, 'target_url');
    if (url === undefined) return fail({ kind: 'target-url', index, what: 'missing' });
    if (typeof url !== 'string') return fail({ kind: 'target-url', index, what: 'not-string' });
    const derived = deriveTarget(0, url, { asWritten: true });
    if (!derived) return fail({ kind: 'target-url', index, what: 'invalid' });
    if (notOneHost(derived.host_name) !== undefined) return fail({ kind: 'target-url', index, what: 'not-one-host' });
    urls.push(derived.target_url);
    const entries = own(target, 'transactions');
    if (entries !== undefined) {
      if (!Array.isArray(entries)) return fail({ kind: 'transactions', index });
      if (entries.length > 0) transactions.push({ url: derived.target_url, index, entries });
    }

    const outputs = own(target, 'outputs');
    if (outputs === undefined) continue;
    if (!Array.isArray(outputs)) return fail({ kind: 'outputs', index });
    let keys = keysOf.get(derived.target_url);
    if (!keys) keysOf.set(derived.target_url, (keys = new Set()));
    const parsed: ImportedOutput[] = [];
    for (let output = 0; output < outputs.length; output++) {
      const value: unknown = outputs[output];
      if (!isObject(value)) return fail({ kind: 'output', index, output });
      const result = parseOutput(value, derived.target_url);
      if ('field' in result) return fail({ kind: 'output-field', index, output, ...result });
      if (keys.has(result.plugin_key)) return fail({ kind: 'output-field', index, output, field: 'plugin_key', what: 'repeated' });
      keys.add(result.plugin_key);
      if (keys.size > MAX_BUNDLE_OUTPUTS_PER_TARGET) return fail({ kind: 'too-many-outputs', index });
      parsed.push(result);
    }
    outputsOf.push(parsed);
  }
  return { ok: true, name, urls: [...new Set(urls)].reverse(), outputs: outputsOf.reverse().flat(), transactions };
}

type FieldProblem = { field: OutputField; finding?: number; what: 'missing' | 'invalid' };

const OUTPUT_STATUSES: readonly OutputStatus[] = ['Successful', 'Aborted', 'Crashed', 'Skipped', 'Running'];
/** A code as the catalogue takes it. */
const CODE = /^[A-Za-z0-9][A-Za-z0-9-]{0,63}$/;
/** ISO 8601 with a date, a time and an offset, as toISOString writes it (other offsets and precisions too). */
const ISO_TIME = /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{1,9})?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$/;

const isRank = (v: unknown): v is number => Number.isInteger(v) && (v as number) >= -1 && (v as number) <= 5;
const isId = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) > 0;
/** Transaction ids one finding of a bundle may name. */
const MAX_FINDING_TRANSACTIONS = 1000;

/** Every transaction id the outputs' findings name (a bundle's transactions carry their old id as `_id`). */
export function referencedTransactions(outputs: readonly ImportedOutput[]): Set<number> {
  const ids = new Set<number>();
  for (const o of outputs) for (const f of o.findings) for (const id of f.transactions ?? []) ids.add(id);
  return ids;
}
const isText = (v: unknown, max: number): v is string => typeof v === 'string' && v.length <= max;
/** Notes and texts are limited in bytes, as `PATCH .../poutput/` limits notes and an answer limits a text. */
const isUtf8Text = (v: unknown, max: number): v is string => typeof v === 'string' && v.length <= max && Buffer.byteLength(v) <= max;

/** Milliseconds since the epoch, null for null, undefined for anything else. */
function parseTime(v: unknown): number | null | undefined {
  if (v === null) return null;
  // a day its month has: Date.parse takes 2026-02-31 for March 3rd
  if (typeof v !== 'string' || !ISO_TIME.test(v) || !dayExists(v)) return undefined;
  const ms = Date.parse(v);
  return Number.isSafeInteger(ms) && ms >= 0 ? ms : undefined;
}

/** One output of a bundle, checked field by field in the order an export writes them. */
function parseOutput(value: object, url: string): ImportedOutput | FieldProblem {
  const field = (name: keyof BundleOutput): unknown => own(value, name);
  /** A field that may be left out, and what it is then. */
  const or = (name: keyof BundleOutput, fallback: unknown): unknown => {
    const given = field(name);
    return given === undefined ? fallback : given;
  };
  const [key, code, group, type] = [field('plugin_key'), field('plugin_code'), field('plugin_group'), field('plugin_type')];
  if (key === undefined) return { field: 'plugin_key', what: 'missing' };
  if (typeof key !== 'string') return { field: 'plugin_key', what: 'invalid' };
  if (code === undefined) return { field: 'plugin_code', what: 'missing' };
  if (typeof code !== 'string' || !CODE.test(code)) return { field: 'plugin_code', what: 'invalid' };
  if (group === undefined) return { field: 'plugin_group', what: 'missing' };
  if (!PLUGIN_GROUPS.includes(group as PluginGroup)) return { field: 'plugin_group', what: 'invalid' };
  if (type === undefined) return { field: 'plugin_type', what: 'missing' };
  if (typeof type !== 'string' || !PLUGIN_TYPES[group as PluginGroup].includes(type)) return { field: 'plugin_type', what: 'invalid' };
  if (key !== `${type}@${code}`) return { field: 'plugin_key', what: 'invalid' };
  const status = field('status');
  if (status === undefined) return { field: 'status', what: 'missing' };
  if (!OUTPUT_STATUSES.includes(status as OutputStatus)) return { field: 'status', what: 'invalid' };

  const [owtfRank, userRank, notes, findings] = [or('owtf_rank', -1), or('user_rank', -1), or('user_notes', ''), or('findings', [])];
  if (!isRank(owtfRank)) return { field: 'owtf_rank', what: 'invalid' };
  if (!isRank(userRank)) return { field: 'user_rank', what: 'invalid' };
  if (!isUtf8Text(notes, MAX_NOTES)) return { field: 'user_notes', what: 'invalid' };
  if (!Array.isArray(findings) || findings.length > MAX_FINDINGS) return { field: 'findings', what: 'invalid' };
  const checked: Finding[] = [];
  for (let finding = 0; finding < findings.length; finding++) {
    const f: unknown = findings[finding];
    if (!isObject(f)) return { field: 'finding', finding, what: 'invalid' };
    const [rank, title, detail] = [own(f, 'rank'), own(f, 'title'), own(f, 'detail')];
    if (rank === undefined) return { field: 'finding.rank', finding, what: 'missing' };
    if (!isRank(rank)) return { field: 'finding.rank', finding, what: 'invalid' };
    if (title === undefined) return { field: 'finding.title', finding, what: 'missing' };
    if (!isText(title, MAX_FINDING_TITLE)) return { field: 'finding.title', finding, what: 'invalid' };
    if (detail === undefined) return { field: 'finding.detail', finding, what: 'missing' };
    if (!isText(detail, MAX_FINDING_DETAIL)) return { field: 'finding.detail', finding, what: 'invalid' };
    // the ids of the exporting box's transactions: an import gives them the new ids of the same transactions
    const [transactions, total] = [own(f, 'transactions'), own(f, 'transactions_total')];
    if (transactions !== undefined && !(Array.isArray(transactions) && transactions.length <= MAX_FINDING_TRANSACTIONS && transactions.every(isId))) {
      return { field: 'finding.transactions', finding, what: 'invalid' };
    }
    if (total !== undefined && !isId(total)) return { field: 'finding.transactions_total', finding, what: 'invalid' };
    checked.push({ rank, title, detail, ...(transactions === undefined ? {} : { transactions: transactions as number[] }), ...(total === undefined ? {} : { transactions_total: total }) });
  }
  const [exitCode, error] = [or('exit_code', null), or('error', null)];
  if (exitCode !== null && !Number.isSafeInteger(exitCode)) return { field: 'exit_code', what: 'invalid' };
  if (error !== null && !isText(error, MAX_OUTPUT_ERROR)) return { field: 'error', what: 'invalid' };
  const startedAt = parseTime(or('started_at', null));
  if (startedAt === undefined) return { field: 'started_at', what: 'invalid' };
  const endedAt = parseTime(or('ended_at', null));
  if (endedAt === undefined || (endedAt !== null && startedAt !== null && endedAt < startedAt)) return { field: 'ended_at', what: 'invalid' };
  const output = or('output', '');
  if (!isUtf8Text(output, MAX_SUMMARY)) return { field: 'output', what: 'invalid' };

  const running = status === 'Running';
  return {
    url,
    plugin_key: key,
    plugin_code: code,
    plugin_group: group as string,
    plugin_type: type,
    status: running ? 'Aborted' : (status as ImportedOutput['status']),
    owtf_rank: owtfRank,
    user_rank: userRank,
    user_notes: notes,
    findings: checked,
    exit_code: exitCode as number | null,
    error: running ? WAS_RUNNING : (error as string | null),
    started_at: startedAt,
    ended_at: endedAt,
    output,
  };
}
