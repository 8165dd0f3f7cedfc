/** OWTF-WGP-001: whether the page forbids being framed by another site (clickjacking). */
import { fetchPage, headerLinesNamed, headerValue, type FetchPage } from './client.js';
import { describeRequest, quote, successful, unlessNoAnswer } from './outcome.js';
import type { CheckInput, CheckResult, Finding } from '../types.js';

export function checkFraming(input: CheckInput, fetch: FetchPage = fetchPage): Promise<CheckResult> {
  return unlessNoAnswer(input, async () => {
    const page = await fetch(input.target.target_url, { timeoutMs: input.timeoutMs, signal: input.signal });
    const frameOptions = headerLinesNamed(page.headerLines, 'x-frame-options');
    const policies = headerLinesNamed(page.headerLines, 'content-security-policy');
    const protective = [
      ...frameOptions.filter((line) => /^(deny|sameorigin)$/i.test(headerValue(line))),
      ...policies.filter((line) => frameAncestors(headerValue(line)) !== undefined),
    ];
    const summary = [describeRequest(page)];
    if (protective.length > 0) {
      return successful([{ rank: 0, title: 'Framing restricted', detail: protective.map(quote).join('\n') }], summary);
    }
    const seen = [...frameOptions, ...policies].map(quote);
    const finding: Finding = {
      rank: 2,
      title: 'Page may be framed by any site',
      detail:
        seen.length > 0
          ? `Neither X-Frame-Options DENY/SAMEORIGIN nor CSP frame-ancestors; seen:\n${seen.join('\n')}`
          : 'No X-Frame-Options header and no Content-Security-Policy frame-ancestors',
    };
    return successful([finding], summary);
  });
}

/**
 * The sources of a policy's `frame-ancestors`, undefined when absent or when it allows any site
 * (`*`): browsers ignore ALLOW-FROM and a meta CSP cannot say frame-ancestors, so only these count.
 */
export function frameAncestors(policy: string): string | undefined {
  for (const directive of policy.split(/[;,]/)) {
    const [name, ...sources] = directive.trim().split(/\s+/);
    if (name?.toLowerCase() !== 'frame-ancestors') continue;
    return sources.includes('*') ? undefined : sources.join(' ');
  }
  return undefined;
}
