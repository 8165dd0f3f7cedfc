/** OWTF-IG-001: the paths `/robots.txt` asks crawlers to skip (or allows) are a map of what matters. */
import { fetchPage, type FetchPage } from './client.js';
import { pace } from '../pace.js';
import { describeRequest, quote, redirectNotFollowed, shownBy, successful, unlessNoAnswer } from './outcome.js';
import type { CheckInput, CheckResult } from '../types.js';

/** A long robots.txt is listed up to here, then counted. */
export const MAX_LISTED_PATHS = 50;

export function checkRobots(input: CheckInput, fetch: FetchPage = fetchPage): Promise<CheckResult> {
  return unlessNoAnswer(input, async () => {
    const url = new URL('/robots.txt', input.target.target_url).href;
    const page = await fetch(url, { timeoutMs: input.timeoutMs, signal: input.signal });
    const summary = [describeRequest(page)];
    if (page.stoppedRedirect) return successful(redirectNotFollowed(page), summary);
    if (page.status !== 200) return successful([], [...summary, `No robots.txt (status ${page.status}).`]);
    const lines = await robotsPathLines(page.body);
    if (lines.length === 0) return successful([], [...summary, 'robots.txt lists no Disallow or Allow path.']);
    const listed = lines.slice(0, MAX_LISTED_PATHS).map(quote);
    const more = lines.length > listed.length ? `\n… and ${lines.length - listed.length} more` : '';
    return successful(
      [{ rank: 1, title: `robots.txt lists ${lines.length} path${lines.length === 1 ? '' : 's'}`, detail: `${listed.join('\n')}${more}\nRule: a Disallow or Allow line naming a path tells anyone where to look`, ...shownBy(page) }],
      summary,
    );
  });
}

/** The `Disallow:` and `Allow:` lines that name a path (an empty Disallow allows everything), read in slices. */
export async function robotsPathLines(body: string): Promise<string[]> {
  const found: string[] = [];
  const tick = pace();
  for (let start = 0; start < body.length; ) {
    const end = body.indexOf('\n', start);
    const stop = end < 0 ? body.length : end;
    // the comment is looked for within the line only: a search to the end per line would be quadratic
    const raw = body.slice(start, stop);
    const hash = raw.indexOf('#');
    const line = (hash >= 0 ? raw.slice(0, hash) : raw).trim();
    if (PATH_LINE.test(line)) found.push(line);
    start = stop + 1;
    const wait = tick();
    if (wait) await wait;
  }
  return found;
}

const PATH_LINE = /^(dis)?allow\s*:\s*\S/i;
