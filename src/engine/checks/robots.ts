/** OWTF-IG-001: the paths `/robots.txt` asks crawlers to skip (or allows) are a map of what matters. */
import { fetchPage, type FetchPage } from './client.js';
import { describeRequest, quote, successful, unlessNoAnswer } from './outcome.js';
import type { CheckInput, CheckResult } from '../types.js';

/** A long robots.txt is listed up to here, then counted. */
export const MAX_LISTED_PATHS = 50;

export function checkRobots(input: CheckInput, fetch: FetchPage = fetchPage): Promise<CheckResult> {
  return unlessNoAnswer(input, async () => {
    const url = new URL('/robots.txt', input.target.target_url).href;
    const page = await fetch(url, { timeoutMs: input.timeoutMs, signal: input.signal });
    const summary = [describeRequest(page)];
    if (page.status !== 200) return successful([], [...summary, `No robots.txt (status ${page.status}).`]);
    const lines = robotsPathLines(page.body);
    if (lines.length === 0) return successful([], [...summary, 'robots.txt lists no Disallow or Allow path.']);
    const listed = lines.slice(0, MAX_LISTED_PATHS).map(quote);
    const more = lines.length > listed.length ? `\n… and ${lines.length - listed.length} more` : '';
    return successful(
      [{ rank: 1, title: `robots.txt lists ${lines.length} path${lines.length === 1 ? '' : 's'}`, detail: listed.join('\n') + more }],
      summary,
    );
  });
}

/** The `Disallow:` and `Allow:` lines that name a path (an empty Disallow allows everything). */
export function robotsPathLines(body: string): string[] {
  return body
    .split(/\r?\n/)
    .map((line) => line.replace(/#.*/, '').trim())
    .filter((line) => /^(dis)?allow\s*:\s*\S/i.test(line));
}
