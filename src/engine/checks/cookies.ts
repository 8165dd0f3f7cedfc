/** OWTF-SM-002: the flags of every cookie the page sets (redirects on the way included). */
import { fetchPage, headerLinesNamed, type FetchPage } from './client.js';
import { describeRequest, quote, redirectNotFollowed, shownBy, successful, unlessNoAnswer } from './outcome.js';
import type { CheckFinding, CheckInput, CheckResult } from '../types.js';

export function checkCookies(input: CheckInput, fetch: FetchPage = fetchPage): Promise<CheckResult> {
  return unlessNoAnswer(input, async () => {
    const page = await fetch(input.target.target_url, { timeoutMs: input.timeoutMs, signal: input.signal });
    const findings: CheckFinding[] = [];
    let count = 0;
    // A login redirect often sets the session cookie: every response on the way counts.
    for (const response of [...page.redirects, page]) {
      const https = new URL(response.url).protocol === 'https:';
      for (const line of headerLinesNamed(response.headerLines, 'set-cookie')) {
        count++;
        const missing = missingFlags(line, https);
        const name = line.slice(line.indexOf(':') + 1).split('=')[0]!.trim();
        const detail = `${quote(line)}\nRule: ${https ? COOKIE_RULE_HTTPS : COOKIE_RULE}`;
        findings.push(
          missing.length > 0
            ? { rank: 2, title: `Cookie ${name} lacks ${missing.join(', ')}`, detail, ...shownBy(response) }
            : { rank: 0, title: `Cookie ${name} has its flags`, detail, ...shownBy(response) },
        );
      }
    }
    // the cookies of the page a redirect leads to were not seen: no cookie seen is then no pass
    findings.push(...redirectNotFollowed(page));
    return successful(findings, [describeRequest(page), `${count} Set-Cookie header${count === 1 ? '' : 's'}.`]);
  });
}

const COOKIE_RULE = 'a cookie needs HttpOnly (no script reads it) and SameSite (not sent by other sites\' requests)';
const COOKIE_RULE_HTTPS = `${COOKIE_RULE}, and over https Secure (never sent over http)`;

/** The flags a `Set-Cookie: ...` line lacks: HttpOnly, SameSite, and Secure when served over https. */
export function missingFlags(line: string, https: boolean): string[] {
  const attributes = new Set(
    line
      .split(';')
      .slice(1)
      .map((part) => part.split('=')[0]!.trim().toLowerCase()),
  );
  const wanted = ['HttpOnly', 'SameSite', ...(https ? ['Secure'] : [])];
  return wanted.filter((flag) => !attributes.has(flag.toLowerCase()));
}
