/**
 * OWTF-CM-008: which methods the target handles, seen in its answers, never believed from `Allow`
 * alone. Every probe changes nothing: OPTIONS, TRACE, PROPFIND (Depth 0) of the page, and a PUT
 * and a DELETE of a random collection under a directory that does not exist, in the target's
 * directory (`https://h/dav/` is probed at `/dav/<random>/<random>/`), each with an `If-Match`
 * of a random entity tag: a server that implements PUT answers 412 (Apache mod_dav checks
 * If-Match) or 409 (nginx's dav module ignores If-Match, and refuses to PUT a collection or into a
 * missing directory); nothing exists there to delete. Beside them, the same request with a method
 * no server has (CONTROL_METHOD): a server that answers it as it answers the PUT (nginx's `return
 * 200` answers any method 200, and 412 to any If-Match; an application that answers everything)
 * shows that the answer says nothing of the method.
 */
import { abortError, fetchPage, headerLinesNamed, headerValue, type FetchPage, type Page } from './client.js';
import { describeRequest, lineHolding, quote, shownBy, successful, unlessNoAnswer } from './outcome.js';
import type { CheckFinding, CheckInput, CheckResult } from '../types.js';
import { crypto } from '../../lazy-builtins.js';

/** The header whose unique value shows that TRACE sent our own request back. */
export const TRACE_MARK_HEADER = 'X-Assessd-Trace';

/** Methods that change the server's content, as `Allow` may advertise them. */
export const WRITE_METHODS = ['PUT', 'DELETE', 'PATCH', 'MKCOL', 'COPY', 'MOVE', 'PROPPATCH', 'LOCK'];
/** A method no server implements: the control the write probes' answers are compared with. */
export const CONTROL_METHOD = 'ASSESSD-NO-SUCH-METHOD';
/** What a server that does not implement a method answers (RFC 9110). */
const REFUSED = new Set([405, 501]);

type Probe = 'OPTIONS' | 'TRACE' | 'PROPFIND' | 'PUT' | 'DELETE' | typeof CONTROL_METHOD;

export function checkHttpMethods(input: CheckInput, fetch: FetchPage = fetchPage): Promise<CheckResult> {
  return unlessNoAnswer(input, async () => {
    const url = input.target.target_url;
    const mark = crypto().randomBytes(12).toString('hex');
    // a collection under a directory that does not exist, in the target's own directory (a WebDAV
    // share may be that directory alone): a PUT that ignored If-Match creates nothing there
    const nowhere = new URL(`${crypto().randomBytes(8).toString('hex')}/${crypto().randomBytes(8).toString('hex')}/`, url).href;
    const unmatched = { 'if-match': `"${crypto().randomBytes(8).toString('hex')}"` };
    const ask = { timeoutMs: input.timeoutMs, signal: input.signal, maxRedirects: 0, maxBytes: 64 * 1024 };
    const probes: Array<[Probe, string, Record<string, string>]> = [
      ['OPTIONS', url, {}],
      ['TRACE', url, { [TRACE_MARK_HEADER]: mark }],
      // no body: allprop, of the page alone
      ['PROPFIND', url, { depth: '0' }],
      ['PUT', nowhere, { ...unmatched, 'content-length': '0' }],
      ['DELETE', nowhere, unmatched],
      [CONTROL_METHOD, nowhere, { ...unmatched, 'content-length': '0' }],
    ];
    // All at once: none depends on another, and a silent target costs the time limit once.
    const answers = await Promise.allSettled(probes.map(([method, to, headers]) => fetch(to, { ...ask, method, headers })));
    if (input.signal?.aborted) throw abortError(input.signal);
    if (answers.every((a) => a.status === 'rejected')) throw (answers[0] as PromiseRejectedResult).reason;
    const pages = new Map<Probe, Page>();
    const summary = answers.map((answer, i) => {
      const [method, to] = probes[i]!;
      if (answer.status === 'fulfilled') {
        pages.set(method, answer.value);
        return describeRequest(answer.value);
      }
      return `${method} ${to}: no answer (${(answer.reason as Error).message})`;
    });
    return successful(methodFindings(pages, mark), summary);
  });
}

/** The findings from what each probe got: TRACE echoed 3, a write method handled 2, advertised but refused 1. */
export function methodFindings(pages: ReadonlyMap<Probe, Page>, mark: string): CheckFinding[] {
  const findings: CheckFinding[] = [];
  const trace = pages.get('TRACE');
  if (trace) {
    const evidence = lineHolding(trace.body, mark) ?? lineHolding(trace.body, `TRACE ${new URL(trace.url).pathname}`);
    if (trace.status < 300 && evidence) {
      findings.push({ rank: 3, title: 'TRACE echoes the request', detail: `${trace.status} to TRACE, the body holds: ${evidence}\nRule: the request's own header came back in the body (cross-site tracing)`, ...shownBy(trace) });
    }
  }
  const allowPages = [pages.get('OPTIONS'), pages.get('PUT'), pages.get('DELETE')].filter((page) => page && headerLinesNamed(page.headerLines, 'allow').length > 0);
  const allowLines = [...new Set(allowPages.flatMap((page) => headerLinesNamed(page!.headerLines, 'allow')))];
  const allowValues = allowLines.map((line) => headerValue(line).toUpperCase());
  // asked per method, not split: an Allow may list 40,000 methods
  const inAllow = (method: string) => allowValues.some((value) => listed(value, method));
  const advertised = WRITE_METHODS.filter(inAllow);
  const allowText = allowLines.length > 0 ? allowLines.slice(0, 3).map(quote).join('\n') : 'no Allow header';
  const handled: string[] = [];
  const refused: string[] = [];
  const handledPages: Page[] = [];
  const refusedPages: Page[] = [];
  // answered as a method no server has is answered: an answer that says nothing of the method
  const control = pages.get(CONTROL_METHOD);
  const alike: string[] = [];
  for (const method of ['PUT', 'DELETE'] as const) {
    const page = pages.get(method);
    if (!page) continue;
    const how = writeAnswer(method, page.status);
    if (how === 'handled' && control?.status === page.status) {
      alike.push(`${method}: ${page.status}`);
    } else if (how === 'handled') {
      handled.push(`${method} ${page.url}: ${page.status} (${HANDLED_MEANING[page.status] ?? 'a success'})`);
      handledPages.push(page);
    } else if (how === 'refused') {
      refused.push(`${method}: ${page.status}`);
      refusedPages.push(page);
    }
  }
  const alikeText = alike.length > 0 ? `${alike.join(', ')}, as ${CONTROL_METHOD}, a method no server has, got ${control!.status}: the answer says nothing of the method` : undefined;
  const propfind = pages.get('PROPFIND');
  const dav = propfind?.status === 207 ? `PROPFIND ${propfind.url} (Depth: 0): 207 Multi-Status: WebDAV answers` : undefined;
  if (handled.length > 0) {
    const notAdvertised = handled.some((line) => !inAllow(line.split(' ')[0]!)) ? ' (not all in Allow: Allow is not what decides)' : '';
    findings.push({
      rank: 2,
      title: `Write method handled: ${handled.map((line) => line.split(' ')[0]).join(' and ')}${notAdvertised}`,
      detail: `${handled.join('\n')}${dav ? `\n${dav}` : ''}\n${allowText}\nRule: an answer that only an implemented method gives (2xx, 412 to the If-Match, 409 to the PUT of a collection, and not what ${CONTROL_METHOD}, a method no server has, got${control ? `: ${control.status}` : ''}), whatever Allow says`,
      ...shownBy(...handledPages, dav ? propfind : undefined),
    });
  } else if (advertised.length > 0 || dav) {
    const what = advertised.length > 0 ? `${advertised.join(', ')} advertised` : 'WebDAV answers PROPFIND';
    const probes = refused.length > 0 ? `the probes were refused (${refused.join(', ')})` : 'no probe showed a write method handled';
    findings.push({
      rank: 1,
      title: `${what}, but ${alike.length > 0 && refused.length === 0 ? 'not shown handled' : 'refused'}`,
      detail: `${allowText}${dav ? `\n${dav}` : ''}\n${capital(probes)}${alikeText ? `\n${alikeText}` : ''}\nRule: advertised is not handled; only the answers decide`,
      ...shownBy(...allowPages, dav ? propfind : undefined, ...refusedPages, ...(alikeText ? [control] : [])),
    });
  } else if (alikeText) {
    findings.push({
      rank: 0,
      title: 'Every method answered alike',
      detail: `${alikeText}${allowLines.length > 0 ? `\n${allowText}` : ''}\nRule: an answer counts as a write method handled only when a method no server has is not answered so`,
      ...shownBy(control, ...allowPages),
    });
  } else if (allowLines.length > 0) {
    findings.push({ rank: 0, title: 'Allowed methods', detail: `${allowText}${refused.length > 0 ? `\nWrite probes refused: ${refused.join(', ')}` : ''}\nRule: no write method advertised, none handled`, ...shownBy(...allowPages, ...refusedPages) });
  }
  return findings;
}

const HANDLED_MEANING: Record<number, string> = {
  409: 'Conflict: the method is implemented; it refused to write a collection, or into a missing directory',
  412: 'Precondition Failed: the method is implemented and checked If-Match',
};

/** `method` is an element of the comma-separated `list` (upper case), spaces and tabs around it. */
function listed(list: string, method: string): boolean {
  for (let at = list.indexOf(method); at !== -1; at = list.indexOf(method, at + 1)) {
    let before = at - 1;
    while (before >= 0 && (list[before] === ' ' || list[before] === '\t')) before--;
    let after = at + method.length;
    while (after < list.length && (list[after] === ' ' || list[after] === '\t')) after++;
    if ((before < 0 || list[before] === ',') && (after === list.length || list[after] === ',')) return true;
  }
  return false;
}

/** A PUT or DELETE of a path that does not exist, with an If-Match that matches nothing. */
function writeAnswer(method: 'PUT' | 'DELETE', status: number): 'handled' | 'refused' | 'unclear' {
  if (REFUSED.has(status)) return 'refused';
  if ((status >= 200 && status < 300) || status === 412) return 'handled';
  // a PUT into a missing directory is refused for the directory, not the method (RFC 4918 9.7.1)
  if (method === 'PUT' && status === 409) return 'handled';
  // 404, 403, 400...: any server says them, whatever it implements
  return 'unclear';
}

function capital(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
