/** OWTF-IG-004: headers and a generator tag that name the software, worse with its version. */
import { fetchPage, headerLinesNamed, headerValue, type FetchPage } from './client.js';
import { pace } from '../pace.js';
import { startTags } from './html.js';
import { describeRequest, quote, redirectNotFollowed, shownBy, successful, unlessNoAnswer } from './outcome.js';
import type { CheckFinding, CheckInput, CheckResult } from '../types.js';

export const BANNER_HEADERS = ['Server', 'X-Powered-By', 'X-AspNet-Version', 'X-AspNetMvc-Version'];

/** `nginx/1.18.0`, `PHP/7.4.3`, `Apache/2`, `4.0.30319`, `WordPress 6.4`: a number after a slash, or dotted. */
const VERSION = /\/\s*v?\d|\b\d+\.\d+/i;

export function checkBanners(input: CheckInput, fetch: FetchPage = fetchPage): Promise<CheckResult> {
  return unlessNoAnswer(input, async () => {
    const page = await fetch(input.target.target_url, { timeoutMs: input.timeoutMs, signal: input.signal });
    const banners: Array<{ label: string; value: string; evidence: string }> = [];
    for (const name of BANNER_HEADERS) {
      for (const line of headerLinesNamed(page.headerLines, name)) banners.push({ label: name, value: headerValue(line), evidence: quote(line) });
    }
    for (const { tag, content } of await generatorMetas(page.body)) banners.push({ label: 'generator meta', value: content, evidence: quote(tag) });
    // one finding per banner said, however often the page says it (a page of 1,000 generator tags)
    const said = new Map<string, { label: string; value: string; evidence: string; times: number }>();
    for (const banner of banners) {
      const key = `${banner.label}\n${banner.value}`;
      const seen = said.get(key);
      if (seen) seen.times++;
      else said.set(key, { ...banner, times: 1 });
    }
    const findings: CheckFinding[] = [...said.values()].map(({ label, value, evidence, times }) => {
      const quoted = times > 1 ? `${evidence} (said ${times.toLocaleString('en')} times)` : evidence;
      return VERSION.test(value)
        ? { rank: 1, title: `${label} names a version`, detail: `${quoted}\nRule: a number after a slash, or a dotted number, is a version: it narrows the known flaws to try`, ...shownBy(page) }
        : { rank: 0, title: `${label} names software, no version`, detail: `${quoted}\nRule: no number after a slash and no dotted number: the software is named, not its version`, ...shownBy(page) };
    });
    // the redirect's own headers are read; the page it leads to (its generator meta) was not seen
    findings.push(...redirectNotFollowed(page));
    return successful(findings, [describeRequest(page), `Banners looked for: ${BANNER_HEADERS.join(', ')}, <meta name="generator">.`]);
  });
}

/** Every `<meta name="generator">` tag and its `content`, attributes in any order; read in slices. */
export async function generatorMetas(html: string): Promise<Array<{ tag: string; content: string }>> {
  const found: Array<{ tag: string; content: string }> = [];
  const tick = pace();
  for (const tag of startTags(html, 'meta')) {
    // a tick from inside a long tag stands for many characters read
    const wait = tick(tag ? 1 : 128);
    if (wait) await wait;
    if (!tag) continue;
    if (tag.attributes.get('name')?.trim().toLowerCase() !== 'generator') continue;
    const content = tag.attributes.get('content');
    if (content) found.push({ tag: tag.raw, content });
  }
  return found;
}
