/**
 * OWTF-WGP-002: whether another site's scripts can read the page, with the user's cookies. The
 * page is requested with several `Origin`s an allow list may wrongly accept, all at once (a silent
 * target costs the time limit once), and each answer is read as the Fetch standard's CORS check
 * reads it: every `Access-Control-Allow-Origin` line, compared byte for byte.
 */
import { abortError, fetchPage, headerLinesNamed, headerValue, type FetchPage, type Page } from './client.js';
import { describeRequest, quote, shownBy, successful, unlessNoAnswer } from './outcome.js';
import type { CheckFinding, CheckInput, CheckResult } from '../types.js';
import { crypto } from '../../lazy-builtins.js';

export type ProbeKind = 'foreign' | 'null' | 'suffix' | 'prefix' | 'subdomain' | 'http';

export interface Probe {
  kind: ProbeKind;
  origin: string;
  /** What the origin stands for, as a finding says it. */
  label: string;
  /** An attacker can hold this origin without holding the target's name (rank 4 when allowed with credentials). */
  attacker: boolean;
}

/**
 * The origins sent for a target `https://app.example`: a foreign one, `null`, the host as the
 * suffix of another name (`https://attackerapp.example`), as a prefix
 * (`https://app.example.attacker.test`), a subdomain (`https://x.app.example`), and for an https
 * target its http origin. The derived ones keep the target's scheme and port; a name that cannot
 * be an origin (a suffix of an IP address) is left out.
 */
export function probeOrigins(targetUrl: string, random = crypto().randomBytes(6).toString('hex')): Probe[] {
  const url = new URL(targetUrl);
  const port = url.port ? `:${url.port}` : '';
  const derived = (name: string) => `${url.protocol}//${name}${port}`;
  const candidates: Probe[] = [
    { kind: 'foreign', origin: `https://${random}.example`, label: 'a foreign origin', attacker: true },
    { kind: 'null', origin: 'null', label: 'the null origin (a sandboxed frame, a file, a data: URL)', attacker: true },
    { kind: 'suffix', origin: derived(`attacker${url.hostname}`), label: 'another name ending with the host (what an unanchored allow list accepts)', attacker: true },
    { kind: 'prefix', origin: derived(`${url.hostname}.attacker.test`), label: 'another name starting with the host (what an allow list anchored at its start only accepts)', attacker: true },
    { kind: 'subdomain', origin: derived(`x.${url.hostname}`), label: 'a subdomain of the host', attacker: false },
    ...(url.protocol === 'https:' ? [{ kind: 'http' as const, origin: `http://${url.host}`, label: 'the http origin of this https target', attacker: false }] : []),
  ];
  return candidates.filter((probe) => probe.origin === 'null' || isOrigin(probe.origin));
}

function isOrigin(text: string): boolean {
  try {
    return new URL(text).origin === text;
  } catch {
    return false;
  }
}

export function checkCors(input: CheckInput, fetch: FetchPage = fetchPage): Promise<CheckResult> {
  return unlessNoAnswer(input, async () => {
    const url = input.target.target_url;
    const probes = probeOrigins(url);
    const answers = await Promise.allSettled(
      probes.map((probe) => fetch(url, { timeoutMs: input.timeoutMs, signal: input.signal, headers: { origin: probe.origin } })),
    );
    if (input.signal?.aborted) throw abortError(input.signal);
    const answered = answers.flatMap((answer, i) => (answer.status === 'fulfilled' ? [{ probe: probes[i]!, page: answer.value }] : []));
    if (answered.length === 0) throw (answers[0] as PromiseRejectedResult).reason;
    const summary = answers.map((answer, i) =>
      answer.status === 'fulfilled'
        ? `Origin: ${probes[i]!.origin} -> ${describeRequest(answer.value)}`
        : `Origin: ${probes[i]!.origin} -> no answer (${(answer.reason as Error).message})`,
    );
    return successful(groupFindings(answered.map(({ probe, page }) => readVerdict(probe, page))), summary);
  });
}

export interface CorsVerdict {
  rank: number;
  title: string;
  /** The rule that decided, as the Fetch standard says it. */
  rule: string;
  /** The header lines received. */
  evidence: string[];
  origin: string;
  /** The response that decided, as the client noted it in a transcript. */
  sent?: number;
}

/** What a browser does with this answer to a credentialed fetch from the probe's origin. */
export function corsVerdict(probe: Probe, page: Pick<Page, 'headerLines'>): CorsVerdict | undefined {
  const allowOrigin = headerLinesNamed(page.headerLines, 'access-control-allow-origin');
  if (allowOrigin.length === 0) return undefined;
  const credentialLines = headerLinesNamed(page.headerLines, 'access-control-allow-credentials');
  // the Fetch standard reads a header's lines combined with ", ": two lines are never one value
  const value = allowOrigin.map(headerValue).join(', ');
  const credentials = credentialLines.map(headerValue).join(', ') === 'true';
  const evidence = [...allowOrigin, ...credentialLines].map(quote);
  const verdict = (rank: number, title: string, rule: string): CorsVerdict => ({ rank, title, rule, evidence, origin: probe.origin });
  if (allowOrigin.length > 1) {
    return verdict(0, 'Access-Control-Allow-Origin sent more than once: browsers refuse every cross-origin read',
      `the lines combine into "${quote(value)}", which is neither * nor the request's origin ("contains multiple values")`);
  }
  if (value === '*') {
    return verdict(1, 'Any origin may read the page, without credentials (*)',
      `* lets any origin read without credentials; a credentialed read is refused${credentials ? ', whatever Access-Control-Allow-Credentials says' : ''}`);
  }
  if (value !== probe.origin) {
    return verdict(0, 'CORS allows another origin than the one sent', `"${quote(value)}" is not the request's origin: the read is refused`);
  }
  if (credentials) {
    return verdict(probe.attacker ? 4 : 2, `${capitalized(probe.label)} may read the page with the user's credentials`,
      'Access-Control-Allow-Origin equals the request\'s origin and Access-Control-Allow-Credentials is "true": a credentialed read succeeds');
  }
  return probe.attacker
    ? verdict(1, 'Any origin may read the page, without credentials (its Origin echoed)', 'the request\'s origin is echoed without Access-Control-Allow-Credentials: "true": only reads without cookies succeed')
    : verdict(0, `${capitalized(probe.label)} may read the page, without credentials`, 'no Access-Control-Allow-Credentials: "true": only reads without cookies succeed');
}

/** What the origin may read of one response: with credentials (2), without (1), nothing (0). */
function grantOf(probe: Probe, headerLines: readonly string[]): number {
  const allowOrigin = headerLinesNamed(headerLines, 'access-control-allow-origin');
  if (allowOrigin.length !== 1) return 0;
  const value = headerValue(allowOrigin[0]!);
  if (value === '*') return 1;
  if (value !== probe.origin) return 0;
  return headerLinesNamed(headerLines, 'access-control-allow-credentials').map(headerValue).join(', ') === 'true' ? 2 : 1;
}

/**
 * The verdict on the page the redirects led to, unless one of them stops the browser first: the
 * CORS check runs on every response of a cross-origin fetch, a redirect included.
 */
export function readVerdict(probe: Probe, page: Pick<Page, 'headerLines' | 'redirects' | 'sent'>): CorsVerdict | undefined {
  const read = corsVerdict(probe, page);
  const verdict = read && page.sent !== undefined ? { ...read, sent: page.sent } : read;
  if (!verdict || page.redirects.length === 0) return verdict;
  const final = grantOf(probe, page.headerLines);
  for (const hop of page.redirects) {
    const grant = grantOf(probe, hop.headerLines);
    if (grant >= final) continue;
    const evidence = [`${hop.status} ${hop.url}`, ...headerLinesNamed(hop.headerLines, 'access-control-allow-origin'), ...headerLinesNamed(hop.headerLines, 'access-control-allow-credentials')].map(quote);
    const rule = `the redirect's own answer must pass the CORS check too (Fetch standard, HTTP fetch), and ${grant === 0 ? 'it allows no read by this origin' : 'it allows this origin no credentials'}`;
    const sent = hop.sent === undefined ? {} : { sent: hop.sent };
    return grant === 0 || !probe.attacker
      ? { rank: 0, title: 'A redirect on the way stops the read: browsers refuse it there', rule, evidence, origin: probe.origin, ...sent }
      : { rank: 1, title: 'Any origin may read the page, without credentials (a redirect on the way allows no credentials)', rule, evidence, origin: probe.origin, ...sent };
  }
  return verdict;
}

/** One finding per verdict: the origins that met it named together, with the headers each got. */
function groupFindings(verdicts: Array<CorsVerdict | undefined>): CheckFinding[] {
  const groups = new Map<string, CorsVerdict[]>();
  for (const verdict of verdicts) {
    if (!verdict) continue;
    const key = `${verdict.rank}\n${verdict.title}`;
    groups.set(key, [...(groups.get(key) ?? []), verdict]);
  }
  return [...groups.values()].map((group) => {
    const [first] = group as [CorsVerdict];
    const sent = group.map((v) => `Origin: ${v.origin}\n${v.evidence.join('\n')}`).join('\n');
    return { rank: first.rank, title: first.title, detail: `${sent}\nRule (Fetch standard, CORS check): ${first.rule}`, ...shownBy(...group) };
  });
}

function capitalized(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
