/** OWTF-CM-008: the methods the target says it allows, and whether TRACE echoes a request back. */
import { randomBytes } from 'node:crypto';
import { abortError, fetchPage, headerLinesNamed, headerValue, type FetchPage, type Page } from './client.js';
import { describeRequest, lineHolding, quote, successful, unlessNoAnswer } from './outcome.js';
import type { CheckInput, CheckResult, Finding } from '../types.js';

/** The header whose unique value shows that TRACE sent our own request back. */
export const TRACE_MARK_HEADER = 'X-Assessd-Trace';

const RISKY_METHODS = ['PUT', 'DELETE'];

export function checkHttpMethods(input: CheckInput, fetch: FetchPage = fetchPage): Promise<CheckResult> {
  return unlessNoAnswer(input, async () => {
    const url = input.target.target_url;
    const mark = randomBytes(12).toString('hex');
    const ask = { timeoutMs: input.timeoutMs, signal: input.signal, maxRedirects: 0, maxBytes: 64 * 1024 };
    // Both at once: neither depends on the other.
    const [options, trace] = await Promise.allSettled([
      fetch(url, { ...ask, method: 'OPTIONS' }),
      fetch(url, { ...ask, method: 'TRACE', headers: { [TRACE_MARK_HEADER]: mark } }),
    ]);
    if (options.status === 'rejected' && trace.status === 'rejected') throw options.reason;
    if (input.signal?.aborted) throw abortError(input.signal);

    const findings: Finding[] = [];
    const summary: string[] = [];
    if (options.status === 'fulfilled') {
      summary.push(describeRequest(options.value));
      findings.push(...allowFindings(options.value));
    } else summary.push(`OPTIONS ${url}: no answer (${errorText(options.reason)})`);
    if (trace.status === 'fulfilled') {
      summary.push(describeRequest(trace.value));
      findings.push(...traceFindings(trace.value, mark));
    } else summary.push(`TRACE ${url}: no answer (${errorText(trace.reason)})`);
    return successful(findings, summary);
  });
}

function allowFindings(page: Page): Finding[] {
  const lines = headerLinesNamed(page.headerLines, 'allow');
  const allowed = lines.flatMap((line) => headerValue(line).split(',')).map((m) => m.trim().toUpperCase());
  const risky = RISKY_METHODS.filter((method) => allowed.includes(method));
  if (risky.length > 0) return [{ rank: 2, title: `${risky.join(' and ')} allowed`, detail: lines.map(quote).join('\n') }];
  return lines.length > 0 ? [{ rank: 0, title: 'Allowed methods', detail: lines.map(quote).join('\n') }] : [];
}

function traceFindings(page: Page, mark: string): Finding[] {
  const requestLine = `TRACE ${new URL(page.url).pathname}`;
  const evidence = lineHolding(page.body, mark) ?? lineHolding(page.body, requestLine);
  if (page.status < 300 && evidence) {
    return [{ rank: 3, title: 'TRACE echoes the request', detail: `${page.status} to TRACE, the body holds: ${evidence}` }];
  }
  return [];
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
