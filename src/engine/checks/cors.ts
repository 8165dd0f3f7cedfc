/** OWTF-WGP-002: whether the page lets another site's scripts read it, with the user's cookies. */
import { randomBytes } from 'node:crypto';
import { fetchPage, headerLinesNamed, headerValue, type FetchPage } from './client.js';
import { describeRequest, quote, successful, unlessNoAnswer } from './outcome.js';
import type { CheckInput, CheckResult, Finding } from '../types.js';

export function checkCors(input: CheckInput, fetch: FetchPage = fetchPage): Promise<CheckResult> {
  return unlessNoAnswer(input, async () => {
    // A fresh origin the target cannot have on an allow list: an echo of it reflects anything.
    const origin = `https://${randomBytes(6).toString('hex')}.example`;
    const page = await fetch(input.target.target_url, { timeoutMs: input.timeoutMs, signal: input.signal, headers: { origin } });
    const allowOrigin = headerLinesNamed(page.headerLines, 'access-control-allow-origin');
    const credentials = headerLinesNamed(page.headerLines, 'access-control-allow-credentials');
    const withCredentials = credentials.some((line) => headerValue(line).toLowerCase() === 'true');
    const evidence = [...allowOrigin, ...credentials].map(quote).join('\n');
    const value = allowOrigin.map(headerValue)[0];
    const summary = [`Origin: ${origin}`, describeRequest(page)];
    const findings: Finding[] = [];
    if (value === origin && withCredentials) {
      findings.push({ rank: 4, title: 'Any origin may read the page with the user’s credentials', detail: evidence });
    } else if (value === origin) {
      // the contract ranks 1 for `*` alone: an echo without credentials is noted, ranked passing
      findings.push({ rank: 0, title: 'Any origin is echoed as allowed (without credentials)', detail: evidence });
    } else if (value === '*') {
      findings.push({ rank: 1, title: 'Any origin may read the page (*)', detail: evidence });
    } else if (value !== undefined) {
      findings.push({ rank: 0, title: 'CORS allows a fixed origin', detail: evidence });
    }
    return successful(findings, summary);
  });
}
