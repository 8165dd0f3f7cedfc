/**
 * OWTF-WGP-001: whether another site can frame the page (clickjacking), decided as a browser
 * decides it: an enforced CSP `frame-ancestors` governs when one is present (X-Frame-Options is
 * then ignored, CSP Level 3); otherwise X-Frame-Options as the HTML standard processes it.
 */
import { trimSpacesAndTabs } from '../../evidence/record.js';
import { fetchPage, headerLinesNamed, headerValue, type FetchPage } from './client.js';
import { pace, type Tick } from '../pace.js';
import { describeRequest, quote, redirectNotFollowed, shownBy, successful, unlessNoAnswer } from './outcome.js';
import type { CheckInput, CheckResult } from '../types.js';

export function checkFraming(input: CheckInput, fetch: FetchPage = fetchPage): Promise<CheckResult> {
  return unlessNoAnswer(input, async () => {
    const page = await fetch(input.target.target_url, { timeoutMs: input.timeoutMs, signal: input.signal });
    const frameOptions = headerLinesNamed(page.headerLines, 'x-frame-options');
    const policyLines = headerLinesNamed(page.headerLines, 'content-security-policy');
    const summary = [describeRequest(page)];
    // a browser never shows a redirect in a frame: it follows it, to a page not seen here
    if (page.stoppedRedirect) return successful(redirectNotFollowed(page), summary);
    const verdict = await framingVerdict(frameOptions.map(headerValue), policyLines.map(headerValue), new URL(page.url).origin);
    const seen = [...frameOptions, ...policyLines].map(quote);
    const evidence = seen.length > 0 ? `\n${seen.join('\n')}` : '';
    return successful([{ rank: verdict.rank, title: verdict.title, detail: `${verdict.rule}${evidence}`, ...shownBy(page) }], summary);
  });
}

export interface FramingVerdict {
  rank: number;
  title: string;
  /** Which rule decided, for the tester to check. */
  rule: string;
}

/** The verdict for these header values (each value of each line) on a page of `origin`; long policies read in slices. */
export async function framingVerdict(frameOptionValues: string[], policyValues: string[], origin: string): Promise<FramingVerdict> {
  const tick = pace();
  const ancestors: AncestorSources[] = [];
  for (const policy of policyValues.flatMap((value) => value.split(','))) {
    const sources = await frameAncestors(policy, tick);
    if (sources) ancestors.push(sources);
  }
  if (ancestors.length > 0) {
    const verdict = await cspVerdict(ancestors, origin, tick);
    // CSP Level 3 and the HTML standard: an enforced frame-ancestors makes X-Frame-Options ignored
    return frameOptionValues.length > 0 ? { ...verdict, rule: `${verdict.rule}; X-Frame-Options is ignored beside it` } : verdict;
  }
  return frameOptionsVerdict(frameOptionValues);
}

/** X-Frame-Options as the HTML standard's "check a navigation response's adherence to X-Frame-Options" reads it. */
function frameOptionsVerdict(values: string[]): FramingVerdict {
  const set = new Set(values.length === 0 ? [] : getDecodeSplit(values.join(', ')).map((v) => v.toLowerCase()));
  const rule = (what: string) => `X-Frame-Options (no CSP frame-ancestors): ${what}`;
  if (set.size === 0) return { rank: 2, title: 'Page may be framed by any site', rule: 'No X-Frame-Options header and no Content-Security-Policy frame-ancestors' };
  if (set.size > 1) {
    if (set.has('deny') || set.has('allowall') || set.has('sameorigin')) {
      return { rank: 0, title: 'Framing restricted', rule: rule(`conflicting values ${[...set].join(', ')}: browsers refuse to frame the page`) };
    }
    return { rank: 2, title: 'Page may be framed by any site', rule: rule(`only values browsers ignore (${[...set].join(', ')})`) };
  }
  const [only] = set;
  if (only === 'deny') return { rank: 0, title: 'Framing restricted', rule: rule('DENY') };
  if (only === 'sameorigin') return { rank: 0, title: 'Framing restricted', rule: rule('SAMEORIGIN: only the page\'s own origin may frame it') };
  return { rank: 2, title: 'Page may be framed by any site', rule: rule(`"${only}" is not a value browsers act on (ALLOW-FROM is ignored)`) };
}

async function cspVerdict(policies: AncestorSources[], origin: string, tick: Tick): Promise<FramingVerdict> {
  const invalid = policies.flatMap((p) => p.invalid);
  const ignored = invalid.length > 0 ? `; invalid sources ignored, as browsers ignore them: ${invalid.map((s) => JSON.stringify(s)).join(' ')}` : '';
  // every enforced policy must allow a framing site: the most restrictive one decides
  const restrictive = policies.filter((p) => !p.anySite);
  if (restrictive.length === 0) {
    return { rank: 2, title: 'Page may be framed by any site', rule: `CSP frame-ancestors allows any site (${policies.map((p) => p.valid.join(' ')).join(' / ')})${ignored}` };
  }
  const isOwn = ownSource(origin);
  const others = new Set<string>();
  const pathed = new Set<string>();
  // a site must be allowed by every restrictive policy; a policy with no foreign source allows none
  let everyAllowsOthers = true;
  let someAllowsNone = false;
  for (const policy of restrictive) {
    let allowsOthers = false;
    let allowsAny = false;
    for (const source of policy.valid) {
      if (matchesNoAncestor(source)) {
        pathed.add(source);
        continue;
      }
      allowsAny = true;
      if (!isOwn(source)) {
        allowsOthers = true;
        others.add(source);
      }
      const wait = tick();
      if (wait) await wait;
    }
    everyAllowsOthers &&= allowsOthers;
    someAllowsNone ||= !allowsAny;
  }
  const unmatched = pathed.size > 0 ? `; sources with a path match no page, as an ancestor is matched by its origin alone: ${[...pathed].join(' ')}` : '';
  if (everyAllowsOthers && others.size > 0) {
    return { rank: 1, title: 'Page may be framed by named third-party origins', rule: `CSP frame-ancestors: ${[...others].join(' ')}${ignored}${unmatched}` };
  }
  const none = someAllowsNone;
  const what = none ? 'CSP frame-ancestors allows no site' : 'CSP frame-ancestors allows only the page\'s own origin';
  return { rank: 0, title: 'Framing restricted', rule: `${what}${ignored}${unmatched}` };
}

/**
 * A host-source whose path is more than `/`: CSP matches an ancestor by its origin, whose URL's
 * path is `/`, and a path-part matches only itself or, ending in `/`, what it starts (CSP Level 3,
 * "path-part matches"): `https://partner.example/app/` lets no page frame, not even one under /app/.
 */
function matchesNoAncestor(source: string): boolean {
  if (source.startsWith("'") || SCHEME_SOURCE.test(source)) return false;
  const afterScheme = source.indexOf('://');
  const path = source.indexOf('/', afterScheme === -1 ? 0 : afterScheme + 3);
  return path !== -1 && source.slice(path) !== '/';
}

export interface AncestorSources {
  /** The sources CSP's grammar accepts (an `ancestor-source`), as written. */
  valid: string[];
  /** Tokens that are not sources: browsers ignore them (a list of only these allows no site). */
  invalid: string[];
  /** `*` or a scheme alone (`https:`): any site of that scheme. */
  anySite: boolean;
}

const SCHEME_SOURCE = /^[a-z][a-z0-9+.-]*:$/i;
/** host-source: [scheme "://"] host [":" port] [path], host `*`, `*.` + labels, or labels. */
/** A host-source whose host is `*` alone: any host (of its scheme). */
const ANY_HOST = /^(?:[a-z][a-z0-9+.-]*:\/\/)?\*(?:[:/]|$)/i;
const HOST_SOURCE = /^(?:[a-z][a-z0-9+.-]*:\/\/)?(?:\*|(?:\*\.)?[a-z0-9-]+(?:\.[a-z0-9-]+)*)(?::(?:[0-9]+|\*))?(?:\/[^\s;,]*)?$/i;

/**
 * The `frame-ancestors` directive of one policy (a header value may hold several, split on
 * commas), undefined when the policy has none. Its first occurrence counts, as CSP says; each
 * token is checked against the grammar of `ancestor-source-list`.
 */
export async function frameAncestors(policy: string, tick: Tick = pace()): Promise<AncestorSources | undefined> {
  for (const directive of policy.split(';')) {
    const wait = tick();
    if (wait) await wait;
    const [name, ...tokens] = directive.trim().split(/[\t\n\f\r ]+/);
    if (name?.toLowerCase() !== 'frame-ancestors') continue;
    const valid: string[] = [];
    const invalid: string[] = [];
    for (const token of tokens) {
      const wait = tick();
      if (wait) await wait;
      if (token === '') continue;
      const lower = token.toLowerCase();
      if (lower === "'none'") continue; // matches nothing
      if (lower === "'self'" || SCHEME_SOURCE.test(token) || HOST_SOURCE.test(token)) valid.push(token);
      else invalid.push(token);
    }
    const anySite = valid.some((s) => SCHEME_SOURCE.test(s) || ANY_HOST.test(s));
    return { valid, invalid, anySite };
  }
  return undefined;
}

/**
 * `'self'`, or a host-source naming exactly the page's origin; made once per page, asked per source.
 * A source without a port names its scheme's default port (CSP Level 3, "port-part matches"):
 * `localhost` on a page of `http://localhost:8080` names `http://localhost`, another origin.
 */
function ownSource(origin: string): (source: string) => boolean {
  const page = new URL(origin);
  const pagePort = page.port || (page.protocol === 'https:' ? '443' : '80');
  const pageHost = page.hostname.toLowerCase();
  return (source) => {
    if (source.toLowerCase() === "'self'") return true;
    const match = /^(?:([a-z][a-z0-9+.-]*):\/\/)?([^:/]+)(?::([0-9]+|\*))?/i.exec(source);
    if (!match) return false;
    const [, scheme, host, port] = match;
    if (host!.includes('*') || host!.toLowerCase() !== pageHost) return false;
    if (scheme && `${scheme.toLowerCase()}:` !== page.protocol) return false;
    return port === undefined ? pagePort === (page.protocol === 'https:' ? '443' : '80') : port === pagePort;
  };
}

/**
 * The Fetch standard's "get, decode, and split" of a header's combined value: split on commas
 * outside double-quoted strings (a quoted string is kept whole, quotes and all), each value
 * trimmed of spaces and tabs. One pass.
 */
export function getDecodeSplit(input: string): string[] {
  const values: string[] = [];
  let value = '';
  let position = 0;
  for (;;) {
    let next = position;
    while (next < input.length && input[next] !== '"' && input[next] !== ',') next++;
    value += input.slice(position, next);
    position = next;
    if (position < input.length && input[position] === '"') {
      const start = position++;
      while (position < input.length) {
        const c = input[position++];
        if (c === '\\') position++;
        else if (c === '"') break;
      }
      position = Math.min(position, input.length);
      value += input.slice(start, position);
      if (position < input.length) continue;
    }
    values.push(trimSpacesAndTabs(value));
    value = '';
    if (position >= input.length) return values;
    position++; // the comma
  }
}
