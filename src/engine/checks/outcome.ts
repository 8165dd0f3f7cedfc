/** What every check answers with: findings and summary lines, or the one "did not answer" finding. */
import { abortError, isNoAnswer, type Hop, type Page } from './client.js';
import type { CheckFinding, CheckInput, CheckResult } from '../types.js';

/** Evidence is quoted, not dumped: a line longer than this is cut and says so. */
export const MAX_QUOTE = 300;

export function quote(line: string): string {
  const flat = line.replace(/[\r\n]+/g, ' ').trim();
  return flat.length > MAX_QUOTE ? `${flat.slice(0, MAX_QUOTE)}… (cut)` : flat;
}

export { highestRank } from '../findings.js';

export function successful(findings: CheckFinding[], summaryLines: string[]): CheckResult {
  const verdict = findings.length === 0 ? 'Nothing found.' : findings.map((f) => `[rank ${f.rank}] ${f.title}: ${f.detail}`).join('\n');
  return { status: 'Successful', findings, summary: [...summaryLines, verdict].join('\n') };
}

/**
 * Runs a check's requests. A target that refuses, resets or does not answer in time (or answers
 * with what is not HTTP, or fails its TLS handshake) is not a crash: the check ran and the tester
 * must read why it saw nothing, so it ends `Successful` with one unranked finding saying why
 * (unranked, never 0: nothing was seen, so nothing passed). An abort (the input's signal)
 * rejects with the AbortError; a bug in a check rejects as it is.
 */
export async function unlessNoAnswer(input: CheckInput, run: () => Promise<CheckResult>): Promise<CheckResult> {
  try {
    return await run();
  } catch (error) {
    if (input.signal?.aborted) throw abortError(input.signal);
    if (!isNoAnswer(error)) throw error;
    const finding: CheckFinding = { rank: -1, title: error.title, detail: `${error.message} (time limit ${input.timeoutMs} ms)`, ...shownBy(error) };
    return successful([finding], [`${error.title}: ${input.target.target_url}.`]);
  }
}

/**
 * A page whose last answer is a redirect the client did not follow (to another origin, or one too
 * many: a loop): what it leads to was not seen, so a check judging the page found nothing, which is
 * not a pass. The unranked finding that says so; none for a page that is not such a redirect.
 */
export function redirectNotFollowed(page: Page): CheckFinding[] {
  if (!page.stoppedRedirect) return [];
  const { location, reason } = page.stoppedRedirect;
  const next = reason.startsWith('another origin') ? ': add it as a target to check it' : '';
  return [
    {
      rank: -1,
      title: 'Redirect not followed: the page was not seen',
      detail: `${quote(page.url)} answered ${page.status}, a redirect to ${quote(location)}, not followed (${reason})${next}`,
      ...shownBy(page),
    },
  ];
}

/** A finding's `sent`: the requests whose answers (or failures) show it, those the client noted in a transcript. */
export function shownBy(...responses: Array<Pick<Hop, 'sent'> | undefined>): Pick<CheckFinding, 'sent'> {
  const sent = [...new Set(responses.flatMap((r) => (r?.sent === undefined ? [] : [r.sent])))];
  return sent.length > 0 ? { sent } : {};
}

/** The line of `text` holding `needle` (the evidence of a body), quoted; a long line around it. */
export function lineHolding(text: string, needle: string): string | undefined {
  const line = text.split(/\r?\n/).find((l) => l.includes(needle));
  if (line === undefined || line.length <= MAX_QUOTE) return line === undefined ? undefined : quote(line);
  const at = Math.max(0, line.indexOf(needle) - 100);
  return `…${quote(line.slice(at, at + MAX_QUOTE - 10))}…`;
}

/** `GET https://host/robots.txt: 200, 123 bytes` (and a cut body or a stopped redirect). */
export function describeRequest(page: Page): string {
  const via = page.redirects.map((hop) => `${hop.url} (${hop.status}) -> `).join('');
  const size = page.bodyBytes ?? Buffer.byteLength(page.body);
  let line = `${page.method} ${via}${page.url}: ${page.status}, ${size} bytes${page.truncated ? ' (body cut at the size cap)' : ''}`;
  if (page.stoppedRedirect) line += `; redirect to ${page.stoppedRedirect.location} not followed (${page.stoppedRedirect.reason})`;
  return line;
}
