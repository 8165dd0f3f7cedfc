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

const COOKIE_RULE =
  "a cookie needs HttpOnly (no script reads it) and SameSite=Lax or Strict (not sent with other sites' requests; SameSite=None is sent with them, and a value browsers do not know counts as none)";
const COOKIE_RULE_HTTPS = `${COOKIE_RULE}, and over https Secure (never sent over http)`;

/**
 * What a `Set-Cookie: ...` line lacks: HttpOnly, a SameSite that keeps it from other sites'
 * requests, and Secure when served over https. Attributes as RFC 6265bis reads them: names
 * compared without case, the last SameSite the one that counts, its value one of Strict, Lax or
 * None (any other, or none, is ignored: the cookie is then as without it).
 */
export function missingFlags(line: string, https: boolean): string[] {
  const names = new Set<string>();
  let sameSite: string | undefined;
  for (const part of line.split(';').slice(1)) {
    const at = part.indexOf('=');
    const name = (at === -1 ? part : part.slice(0, at)).trim().toLowerCase();
    names.add(name);
    if (name === 'samesite') sameSite = at === -1 ? '' : part.slice(at + 1).trim();
  }
  const missing = names.has('httponly') ? [] : ['HttpOnly'];
  const known = sameSite?.toLowerCase();
  if (sameSite === undefined) missing.push('SameSite');
  else if (known === 'none') missing.push("SameSite=Lax or Strict (SameSite=None: sent with other sites' requests)");
  else if (known !== 'lax' && known !== 'strict') missing.push(`SameSite (${sameSite === '' ? 'SameSite without a value' : `SameSite=${sameSite.length > 40 ? `${sameSite.slice(0, 40)}…` : sameSite}`} is not a value browsers know: as if absent)`);
  if (https && !names.has('secure')) missing.push('Secure');
  return missing;
}
