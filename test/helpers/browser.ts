/** Debian's Chromium driven by playwright-core for the browser tests: a page that reaches nothing but the server, and axe. */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type LaunchOptions, type Page } from 'playwright-core';
import { PROJECT_ROOT } from '../../src/paths.ts';

export const CHROMIUM = '/usr/bin/chromium';
export const WIDE = { width: 1280, height: 800 };
export const NARROW = { width: 390, height: 844 };
export const missingBrowser = !existsSync(CHROMIUM);
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

export interface WatchedPage {
  browser: Browser;
  context: BrowserContext;
  page: Page;
  /** API and debug requests since the last `take()`, as `METHOD /path?query`. */
  calls: { take(): string[] };
  /** Fails on a request that left the server, an uncaught page error, or a console error not `allowed`. */
  assertClean(allowed?: RegExp): void;
}

/** Lets the context's pages reach `base` only: any other request is refused and its URL kept in `offBox`. */
export async function keepOnBox(context: BrowserContext, base: string, offBox: string[]): Promise<void> {
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith(`${base}/`)) return route.continue();
    offBox.push(url);
    return route.abort('blockedbyclient');
  });
}

/**
 * Debian's Chromium as every browser test starts it: headless, no sandbox (the tests run as
 * root), nothing fetched from the network on its own, and one renderer process for all its
 * pages. Site isolation (a process per site) is a defence against pages that read a process's
 * memory; what a page may frame, read or send is decided the same without it, in the browser
 * process and its network service, and the verdicts' rows held to Chromium pass unchanged. It is
 * off since it cost most of the browser's CPU in the tests that visit many sites: the verdicts'
 * Chromium took ~80 s of CPU, ~45 s without (process accounting, one run each, 2 cores).
 *
 * `disabledFeatures`: Chromium reads the last `--disable-features` only, so a test that needs one
 * names it here and this list replaces playwright-core's own (site isolation's are added to it).
 */
export function launchChromium({ args = [], disabledFeatures, ...options }: LaunchOptions & { disabledFeatures?: string[] } = {}): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    ...options,
    args: [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync',
      '--disable-site-isolation-trials', '--renderer-process-limit=1',
      ...(disabledFeatures ? [`--disable-features=${[...disabledFeatures, 'IsolateOrigins', 'site-per-process'].join(',')}`] : []),
      ...args,
    ],
  });
}

export async function openBrowser(base: string): Promise<WatchedPage> {
  const browser = await launchChromium();
  // axe is put into the page by the test: the page's own policy would refuse an inline script
  const context = await browser.newContext({ viewport: WIDE, colorScheme: 'light', reducedMotion: 'reduce', bypassCSP: true });
  context.setDefaultTimeout(5000);
  const offBox: string[] = [];
  const consoleErrors: string[] = [];
  const pageErrors: string[] = [];
  let calls: string[] = [];
  await keepOnBox(context, base, offBox);
  const page = await context.newPage();
  page.on('console', (m) => {
    if (m.type() === 'error') consoleErrors.push(`${m.text()} (${m.location().url})`);
  });
  page.on('pageerror', (err) => pageErrors.push(err.stack ?? err.message));
  page.on('request', (r) => {
    const url = r.url();
    if (url.startsWith(`${base}/api/`) || url.startsWith(`${base}/debug/`)) calls.push(`${r.method()} ${url.slice(base.length)}`);
  });
  return {
    browser,
    context,
    page,
    calls: {
      take() {
        const taken = calls;
        calls = [];
        return taken;
      },
    },
    assertClean(allowed) {
      assert.deepEqual(offBox, [], 'requests to another host than the server');
      assert.deepEqual(pageErrors, [], 'uncaught errors in the page');
      const unexpected = consoleErrors.filter((e) => !allowed?.test(e));
      consoleErrors.length = 0;
      assert.deepEqual(unexpected, [], 'console errors');
    },
  };
}

interface AxeViolation {
  id: string;
  help: string;
  nodes: { target: string[]; failureSummary?: string }[];
}

/** axe-core's WCAG 2.1 A and AA rules on the page as it is now. */
export async function axeViolations(page: Page): Promise<string[]> {
  if (!(await page.evaluate(() => 'axe' in window))) await page.addScriptTag({ content: AXE_SOURCE });
  const violations = await page.evaluate(
    () =>
      (window as unknown as { axe: { run: (ctx: Document, options: object) => Promise<{ violations: AxeViolation[] }> } }).axe
        .run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] }, resultTypes: ['violations'] })
        .then((r) => r.violations.map((v) => ({ id: v.id, help: v.help, nodes: v.nodes.map((n) => ({ target: n.target, failureSummary: n.failureSummary })) }))),
  );
  return violations.map((v) => `${v.id} (${v.help}): ${v.nodes.slice(0, 3).map((n) => `${n.target.join(' ')} — ${n.failureSummary?.replace(/\s+/g, ' ')}`).join(' | ')}`);
}

export type Look = { size: 'wide' | 'narrow'; scheme: 'light' | 'dark' };

/**
 * Loads `url` light and wide, waits for `ready` and the rows added over the next frames, then sees
 * the page in each color scheme and width: axe's violations in each, and what `also` finds there,
 * as `<size> <scheme>: <problem>`. The page's layout is CSS alone (no script reads the width or the
 * scheme), so a change of either restyles it as a load would. Leaves the page light and wide.
 */
export async function problemsInEachLook(page: Page, url: string, ready: () => Promise<unknown>, also?: (look: Look) => Promise<string[]>): Promise<string[]> {
  await page.emulateMedia({ colorScheme: 'light' });
  await page.setViewportSize(WIDE);
  await page.goto(url);
  await ready();
  await page.waitForTimeout(150);
  const problems: string[] = [];
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    for (const [size, viewport] of [['wide', WIDE], ['narrow', NARROW]] as const) {
      await page.setViewportSize(viewport);
      for (const problem of [...(await axeViolations(page)), ...((await also?.({ size, scheme })) ?? [])]) problems.push(`${size} ${scheme}: ${problem}`);
    }
  }
  await page.emulateMedia({ colorScheme: 'light' });
  await page.setViewportSize(WIDE);
  return problems;
}

/**
 * Draws one of the README's pictures, docs/screenshots/<name>.png, only when asked
 * (UPDATE_SCREENSHOTS=1 npm test): a plain run checks the layouts without encoding PNGs, and
 * leaves the working tree as it found it.
 */
export async function picture(page: Page, name: string): Promise<void> {
  if (!process.env.UPDATE_SCREENSHOTS) return;
  const dir = join(PROJECT_ROOT, 'docs', 'screenshots');
  await mkdir(dir, { recursive: true });
  await page.screenshot({ path: join(dir, `${name}.png`), animations: 'disabled' });
}

/** What is wrong when the page scrolls sideways (`scrolls sideways: 420 > 390`), undefined when it does not. */
export async function sidewaysScroll(page: Page): Promise<string | undefined> {
  const { scrollWidth, innerWidth } = await page.evaluate(() => ({ scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth }));
  return scrollWidth > innerWidth ? `scrolls sideways: ${scrollWidth} > ${innerWidth}` : undefined;
}
