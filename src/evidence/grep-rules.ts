/**
 * The rules of a grep plugin as its file writes them (`"grep": [...]`), checked when the catalogue
 * loads, and compiled (their regexes by the evidence's own linear-time engine) when one runs.
 */
import { compileRegex, RegexError, type Matcher } from './regex.js';

/** A rule as a plugin file writes it: exactly one of `header`, `headers`, `body`, `slowest`. */
export interface GrepRuleSpec {
  /** What a finding of the rule is, e.g. `Cookie without HttpOnly`. */
  title: string;
  /** Why it matters, said after the value. */
  detail?: string;
  /** The rank of each value found. */
  rank: number;
  /** A finding of this rank when no transaction the rule reads shows it (e.g. no HSTS). */
  rank_when_absent?: number;
  /** The title of that finding (default: `No <title>`). */
  absent_title?: string;
  /** Only transactions whose URL has this scheme. */
  scheme?: 'http' | 'https';
  /** Only responses whose media type this regex matches (body rules default to text-like ones). */
  content_type?: string;
  /** Response headers by name (any case). */
  header?: string[];
  /** Only values this regex matches (a header's: its value after the colon). */
  matching?: string;
  /** Only values this regex does not match (a cookie without its flag). */
  not_matching?: string;
  /** With `header`: the value shown is the header line (default), or (`cookie`) the line with the cookie's value hidden. */
  value?: 'line' | 'cookie';
  /** What this regex matches in a value is shown as `…` (a token that differs on every page: one value, not thousands). */
  mask?: string;
  /** A regex over each response header line (`Name: value`). */
  headers?: string;
  /** A regex over the response body: each distinct match is a value. */
  body?: string;
  /** The slowest responses: this many at most. */
  slowest?: number;
  /** With `slowest`: only responses that took at least this long. */
  min_seconds?: number;
}

export interface CompiledRule {
  spec: GrepRuleSpec;
  kind: 'header' | 'headers' | 'body' | 'slowest';
  /** Header names, lower case. */
  names: Set<string>;
  matching?: Matcher;
  notMatching?: Matcher;
  mask?: Matcher;
  regex?: Matcher;
  contentType?: Matcher;
}

export class GrepRuleError extends Error {}

/** Most rules a plugin holds, and the longest regex: one plugin file cannot make a run unbounded. */
export const MAX_RULES = 100;
const MAX_PATTERN = 1000;
export const MAX_SLOWEST = 100;
/** The media types body rules read unless a rule says otherwise: text (or none said). */
const TEXT_TYPES = '^$|^text/|[/+](html|xhtml|xml|json|javascript|ecmascript|css)\\b';

const KINDS = ['header', 'headers', 'body', 'slowest'] as const;
const FIELDS = new Set<string>(['title', 'detail', 'rank', 'rank_when_absent', 'absent_title', 'scheme', 'content_type', 'matching', 'not_matching', 'value', 'mask', ...KINDS, 'min_seconds']);
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$/;

const isRank = (v: unknown): v is number => Number.isInteger(v) && (v as number) >= -1 && (v as number) <= 5;
const isText = (v: unknown, max: number): v is string => typeof v === 'string' && v.trim().length > 0 && v.length <= max;

/** Compiles a regex of a rule; a bad one is named with its field and position. */
function regex(pattern: string, where: string, field: string, valued = false): Matcher {
  try {
    const matcher = compileRegex(pattern);
    // a body's value is the text matched: a pattern content with nothing finds no value
    if (valued && matcher.testString('')) throw new GrepRuleError(`${where}: "${field}" matches an empty text: it must say what a value is`);
    return matcher;
  } catch (err) {
    if (err instanceof RegexError) throw new GrepRuleError(`${where}: "${field}" is not a regex this server runs (position ${err.position}: ${err.message})`);
    throw err;
  }
}

/**
 * Checks a plugin's `grep` field (an array of rules) and answers the rules as plain data. Throws
 * GrepRuleError naming the rule (`grep[2]`) and the field.
 */
export function readGrepRules(raw: unknown): GrepRuleSpec[] {
  if (!Array.isArray(raw) || raw.length === 0 || raw.length > MAX_RULES) throw new GrepRuleError(`"grep" must be an array of 1 to ${MAX_RULES} rules`);
  return raw.map((value: unknown, i) => {
    const where = `grep[${i}]`;
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new GrepRuleError(`${where} must be an object`);
    const r = value as Record<string, unknown>;
    const unknown = Object.keys(r).filter((k) => !FIELDS.has(k));
    if (unknown.length > 0) throw new GrepRuleError(`${where}: unknown field ${unknown.map((k) => JSON.stringify(k)).join(', ')}`);
    const kinds = KINDS.filter((k) => r[k] !== undefined);
    if (kinds.length !== 1) throw new GrepRuleError(`${where}: a rule has exactly one of "header", "headers", "body" or "slowest"`);
    const kind = kinds[0];
    if (!isText(r.title, 200)) throw new GrepRuleError(`${where}: "title" must be a non-empty string`);
    if (r.detail !== undefined && !isText(r.detail, 4000)) throw new GrepRuleError(`${where}: "detail" must be a non-empty string`);
    if (r.absent_title !== undefined && !isText(r.absent_title, 200)) throw new GrepRuleError(`${where}: "absent_title" must be a non-empty string`);
    if (!isRank(r.rank)) throw new GrepRuleError(`${where}: "rank" must be an integer from -1 to 5`);
    if (r.rank_when_absent !== undefined && !isRank(r.rank_when_absent)) throw new GrepRuleError(`${where}: "rank_when_absent" must be an integer from -1 to 5`);
    if (r.absent_title !== undefined && r.rank_when_absent === undefined) throw new GrepRuleError(`${where}: "absent_title" needs "rank_when_absent"`);
    if (r.scheme !== undefined && r.scheme !== 'http' && r.scheme !== 'https') throw new GrepRuleError(`${where}: "scheme" must be "http" or "https"`);
    for (const field of ['content_type', 'matching', 'not_matching', 'mask', 'headers', 'body'] as const) {
      if (r[field] !== undefined && !isText(r[field], MAX_PATTERN)) throw new GrepRuleError(`${where}: "${field}" must be a regex (a non-empty string of at most ${MAX_PATTERN} characters)`);
    }
    if (kind !== 'header' && r.value !== undefined) throw new GrepRuleError(`${where}: "value" goes with "header"`);
    if (kind === 'slowest') {
      for (const field of ['matching', 'not_matching', 'mask'] as const) if (r[field] !== undefined) throw new GrepRuleError(`${where}: "${field}" does not go with "slowest"`);
    }
    if (kind !== 'slowest' && r.min_seconds !== undefined) throw new GrepRuleError(`${where}: "min_seconds" goes with "slowest"`);
    if (kind === 'slowest' && r.rank_when_absent !== undefined) throw new GrepRuleError(`${where}: "rank_when_absent" does not go with "slowest"`);
    const spec: GrepRuleSpec = { title: (r.title as string).trim(), rank: r.rank as number };
    for (const field of ['detail', 'absent_title', 'scheme', 'content_type', 'matching', 'not_matching', 'mask', 'headers', 'body'] as const) {
      if (r[field] !== undefined) (spec as unknown as Record<string, unknown>)[field] = r[field];
    }
    if (r.rank_when_absent !== undefined) spec.rank_when_absent = r.rank_when_absent as number;
    if (kind === 'header') {
      const names = typeof r.header === 'string' ? [r.header] : r.header;
      if (!Array.isArray(names) || names.length === 0 || names.length > 100 || !names.every((n) => typeof n === 'string' && HEADER_NAME.test(n))) {
        throw new GrepRuleError(`${where}: "header" must be a header name or an array of them`);
      }
      spec.header = names as string[];
      if (r.value !== undefined && r.value !== 'line' && r.value !== 'cookie') throw new GrepRuleError(`${where}: "value" must be "line" or "cookie"`);
      if (r.value !== undefined) spec.value = r.value;
    }
    if (kind === 'slowest') {
      if (!(Number.isInteger(r.slowest) && (r.slowest as number) >= 1 && (r.slowest as number) <= MAX_SLOWEST)) throw new GrepRuleError(`${where}: "slowest" must be an integer from 1 to ${MAX_SLOWEST}`);
      spec.slowest = r.slowest as number;
      if (r.min_seconds !== undefined && !(typeof r.min_seconds === 'number' && r.min_seconds >= 0 && r.min_seconds <= 86_400)) throw new GrepRuleError(`${where}: "min_seconds" must be a number of seconds`);
      if (r.min_seconds !== undefined) spec.min_seconds = r.min_seconds as number;
    }
    // every regex compiled once now: a bad one stops the start, not a run
    compileRule(spec, where);
    return spec;
  });
}

const compiled = new WeakMap<GrepRuleSpec, CompiledRule>();

/** A rule's regexes compiled (once per rule). */
export function compileRule(spec: GrepRuleSpec, where = 'grep rule'): CompiledRule {
  let rule = compiled.get(spec);
  if (rule) return rule;
  const kind = spec.header ? 'header' : spec.headers !== undefined ? 'headers' : spec.body !== undefined ? 'body' : 'slowest';
  rule = { spec, kind, names: new Set((spec.header ?? []).map((n) => n.toLowerCase())) };
  if (spec.matching !== undefined) rule.matching = regex(spec.matching, where, 'matching');
  if (spec.not_matching !== undefined) rule.notMatching = regex(spec.not_matching, where, 'not_matching');
  if (spec.mask !== undefined) rule.mask = regex(spec.mask, where, 'mask', true);
  if (spec.headers !== undefined) rule.regex = regex(spec.headers, where, 'headers');
  if (spec.body !== undefined) rule.regex = regex(spec.body, where, 'body', true);
  const types = spec.content_type ?? (kind === 'body' ? TEXT_TYPES : undefined);
  if (types !== undefined) {
    try {
      rule.contentType = compileRegex(types);
    } catch (err) {
      if (err instanceof RegexError) throw new GrepRuleError(`${where}: "content_type" is not a regex this server runs (position ${err.position}: ${err.message})`);
      throw err;
    }
  }
  compiled.set(spec, rule);
  return rule;
}
