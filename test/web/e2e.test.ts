/**
 * The web application driven as a user drives it, in headless Chromium against the real server:
 * every step checks what the page shows and what the API then returns. Any console error the step
 * did not expect, any page error and any request to another host than the server fail the test.
 */
import { after, before, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Locator, type Page } from 'playwright-core';
import { PROJECT_ROOT } from '../../src/paths.ts';
import { request, startServer, type TestServer } from '../helpers/server.ts';

const CHROMIUM = '/usr/bin/chromium';
const SCREENSHOTS = join(PROJECT_ROOT, 'docs', 'screenshots');
const WIDE = { width: 1280, height: 800 };
const NARROW = { width: 390, height: 844 };

interface Session {
  id: number;
  name: string;
  active: boolean;
}

let server: TestServer;
let browser: Browser | undefined;
let context: BrowserContext;
let page: Page;

const offBox: string[] = [];
const unexpectedConsole: string[] = [];
const pageErrors: string[] = [];
/** Console errors a step provokes on purpose (Chromium logs every 4xx answer to fetch). */
let expectedConsole: RegExp[] = [];

const missing = !existsSync(CHROMIUM);
// Only a developer's machine may go without the browser; in CI a missing browser is a failure.
const skip = missing && !process.env.CI;
if (skip) {
  console.warn(
    `\n${'!'.repeat(78)}\n!! SKIPPING the browser end-to-end test: ${CHROMIUM} is missing.\n` +
      `!! Install Debian's chromium (apt-get install chromium) to run it.\n${'!'.repeat(78)}\n`,
  );
}

before(async () => {
  if (missing) return;
  server = await startServer();
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  context = await browser.newContext({ viewport: WIDE, colorScheme: 'light', reducedMotion: 'reduce' });
  context.setDefaultTimeout(5000);
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith(`${server.url}/`)) return route.continue();
    offBox.push(url);
    return route.abort('blockedbyclient');
  });
  page = await context.newPage();
  page.on('console', (message) => {
    if (message.type() !== 'error') return;
    const text = `${message.text()} (${message.location().url})`;
    const i = expectedConsole.findIndex((re) => {
      re.lastIndex = 0; // a /g pattern remembers where it last matched
      return re.test(text);
    });
    if (i === -1) unexpectedConsole.push(text);
    else if (!expectedConsole[i].global) expectedConsole.splice(i, 1);
  });
  page.on('pageerror', (err) => pageErrors.push(err.stack ?? err.message));
});

after(async () => {
  await browser?.close();
  await server?.close();
});

/** Runs a step that provokes these console errors; a /g pattern tolerates any number of them. */
async function provoking<T>(patterns: RegExp[], step: () => Promise<T>): Promise<T> {
  expectedConsole = [...patterns];
  try {
    return await step();
  } finally {
    expectedConsole = [];
  }
}

const httpStatus = (status: number) => new RegExp(`status of ${status} `);

function assertClean(): void {
  assert.deepEqual(offBox, [], 'requests to another host than the server');
  assert.deepEqual(pageErrors, [], 'uncaught errors in the page');
  assert.deepEqual(unexpectedConsole, [], 'console errors');
}

/** Retries an assertion until it holds (the page updates after its requests answer). */
async function eventually(check: () => Promise<void> | void, timeout = 5000): Promise<void> {
  const deadline = Date.now() + timeout;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

/** What the user sees: rendered text only, white space collapsed. */
async function text(locator: Locator): Promise<string> {
  return (await locator.innerText()).replace(/\s+/g, ' ').trim();
}

/** Waits until the element shows every one of these texts. */
async function shows(locator: Locator, ...expected: string[]): Promise<void> {
  await eventually(async () => {
    const actual = await text(locator);
    for (const part of expected) assert.ok(actual.includes(part), `expected “${part}” in “${actual}”`);
  });
}

async function apiData<T = any>(path: string): Promise<T> {
  const res = await request(server.url, path);
  assert.equal(res.json.status, 'success', `${path}: ${res.text}`);
  return res.json.data as T;
}

async function sessions(): Promise<Session[]> {
  return apiData<Session[]>('/api/v1/sessions/');
}

async function sessionNamed(name: string): Promise<Session> {
  const found = (await sessions()).find((s) => s.name === name);
  assert.ok(found, `no session named ${name}`);
  return found;
}

async function targetUrls(sessionId: number): Promise<string[]> {
  return (await apiData<{ target_url: string }[]>(`/api/v1/targets/?session_id=${sessionId}`)).map((t) => t.target_url);
}

const sessionCard = (name: string) => page.locator('li.session').filter({ has: page.getByRole('heading', { name, exact: true }) });
const targetCard = (url: string) => page.locator('li.target').filter({ has: page.getByRole('heading', { name: url, exact: true }) });
const flash = () => page.locator('#flash');

/** The session's card carries the Active badge. */
async function showsActive(name: string): Promise<void> {
  await eventually(async () => assert.equal(await sessionCard(name).locator('.badge-active').isVisible(), true, `${name} is not shown active`));
}

async function noHorizontalScroll(): Promise<void> {
  const { scrollWidth, innerWidth } = await page.evaluate(() => ({ scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth }));
  assert.ok(scrollWidth <= innerWidth, `the page scrolls sideways: ${scrollWidth} > ${innerWidth}`);
}

const APP = 'https://app.example.com:8443/login';
const IP = 'http://10.0.0.5/';
let appId: number;

test('the web application, driven as a user in headless Chromium', { skip: skip && `${CHROMIUM} is missing` }, async (t: TestContext) => {
  assert.ok(!missing, `${CHROMIUM} is missing, and CI must run the browser test`);
  await t.test('the page loads with the default session active and the server online', async () => {
    await page.goto(`${server.url}/`);
    await shows(page.locator('h1'), 'Sessions');
    await showsActive('default session');
    await shows(sessionCard('default session'), '0 targets');
    await shows(page.locator('#active-session-name'), 'default session');
    await shows(page.locator('#health'), 'Server online');
    assert.deepEqual(await sessions(), [{ id: 1, name: 'default session', active: true }]);
    assertClean();
  });

  await t.test('create a session by keyboard: it is listed, active, and in the header', async () => {
    await page.getByLabel('New session name').fill('web audit');
    await page.getByLabel('New session name').press('Enter');
    await showsActive('web audit');
    await shows(page.locator('#active-session-name'), 'web audit');
    await shows(flash(), 'Session “web audit” created');
    assert.equal(await page.getByLabel('New session name').inputValue(), '');
    const created = await sessionNamed('web audit');
    assert.equal(created.active, true);
    assertClean();
  });

  await t.test('create a second session, then activate the first again', async () => {
    await page.getByLabel('New session name').fill('staging');
    await page.getByRole('button', { name: 'Create session' }).click();
    await showsActive('staging');
    assert.equal((await sessionNamed('staging')).active, true);

    await page.getByRole('button', { name: 'Activate web audit' }).click();
    await showsActive('web audit');
    await eventually(async () => assert.equal(await sessionCard('staging').locator('.badge-active').count(), 0));
    await shows(page.locator('#active-session-name'), 'web audit');
    assert.deepEqual(
      (await sessions()).map((s) => [s.name, s.active]),
      [['default session', false], ['web audit', true], ['staging', false]],
    );
    assertClean();
  });

  await t.test('add two targets, one URL per line; a bad line is refused on its own', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Targets' }).click();
    assert.equal(new URL(page.url()).pathname, '/targets');
    await shows(page.locator('h1'), 'Targets');
    await shows(page.getByRole('heading', { level: 2 }), 'Targets in “web audit” (0)');
    await page.getByLabel('Target URLs, one per line').fill(`${APP}\nnot a url\n${IP}`);
    await provoking([httpStatus(400)], async () => {
      await page.getByRole('button', { name: 'Add targets' }).click();
      await shows(page.locator('.add-results .failed'), 'not a url', 'Not an absolute http:// or https:// URL.');
    });
    await shows(page.locator('.add-results'), APP, IP);
    assert.equal(await page.locator('.add-results .added').count(), 2);
    assert.equal(await page.getByLabel('Target URLs, one per line').inputValue(), 'not a url');
    await shows(page.getByRole('heading', { level: 2 }), 'Targets in “web audit” (2)');

    await shows(targetCard(APP).locator('.facts'), 'app.example.com', '8443', 'https', 'not resolved');
    await shows(targetCard(IP).locator('.facts'), '10.0.0.5', '80', 'http');
    assert.deepEqual(await targetCard(IP).locator('.facts dd').allInnerTexts(), ['10.0.0.5', '80', 'http', '10.0.0.5']);
    const audit = await sessionNamed('web audit');
    assert.deepEqual(await targetUrls(audit.id), [IP, APP]);
    appId = (await apiData(`/api/v1/targets/?session_id=${audit.id}&target_url=${encodeURIComponent(APP)}`))[0].id;
    await page.getByLabel('Target URLs, one per line').fill('');
    assertClean();
  });

  await t.test('attach a target to another session, then detach it from this one', async () => {
    const card = targetCard(APP);
    await card.getByLabel('Attach to').selectOption({ label: 'staging' });
    await card.getByRole('button', { name: 'Attach' }).click();
    await eventually(async () => assert.deepEqual(await card.locator('.chip > span').allInnerTexts(), ['web audit', 'staging']));
    const staging = await sessionNamed('staging');
    assert.deepEqual(await targetUrls(staging.id), [APP]);

    await card.getByRole('button', { name: 'Detach from web audit' }).click();
    await shows(page.getByRole('heading', { level: 2 }), 'Targets in “web audit” (1)');
    assert.equal(await targetCard(APP).count(), 0);
    const audit = await sessionNamed('web audit');
    assert.deepEqual(await targetUrls(audit.id), [IP]);
    assert.deepEqual(await targetUrls(staging.id), [APP], 'still in staging, so not deleted');
    assertClean();
  });

  await t.test('a deep link to another session’s targets works, and so does its reload', async () => {
    const staging = await sessionNamed('staging');
    await page.goto(`${server.url}/targets?session=${staging.id}`);
    await shows(page.getByRole('heading', { level: 2 }), 'Targets in “staging” (1)');
    await shows(page.locator('.notice'), '“staging” is not the active session');
    await page.reload();
    await shows(page.getByRole('heading', { level: 2 }), 'Targets in “staging” (1)');
    await shows(targetCard(APP).locator('.chips'), 'staging');
    assert.equal(await page.getByLabel('Session', { exact: true }).inputValue(), String(staging.id));
    assertClean();
  });

  await t.test('configuration: a refused save is shown against the offending key and saves nothing', async () => {
    // A key the page shows but the server no longer has (as after an upgrade dropped it).
    await page.route(
      `${server.url}/api/v1/configuration`,
      async (route) => {
        const response = await route.fetch();
        const body = await response.json();
        body.data.push({ key: 'TOOL_RETIRED_BIN', value: '/usr/bin/retired', section: 'TOOLS', descrip: 'Gone from the server', dirty: false });
        await route.fulfill({ response, json: body });
      },
      { times: 1 },
    );
    await page.getByRole('link', { name: 'Configuration', exact: true }).click();
    await shows(page.locator('h1'), 'Configuration');
    await page.getByLabel('Filter by key or value').fill('TOOL_SET_DIR');
    await shows(page.locator('#config-count'), 'Showing 1 of 113 items');
    await page.getByLabel('TOOL_SET_DIR', { exact: true }).fill('/opt/set');
    await page.getByLabel('Filter by key or value').fill('retired');
    await page.getByLabel('TOOL_RETIRED_BIN', { exact: true }).fill('/usr/bin/still-here');
    await shows(page.locator('.savebar'), '2 unsaved changes');

    await provoking([httpStatus(400)], async () => {
      await page.getByRole('button', { name: 'Save changes' }).click();
      await shows(page.locator('.savebar [role=alert]'), 'Nothing was saved: Invalid configuration item specified (HTTP 400) — TOOL_RETIRED_BIN');
    });
    await shows(page.locator('[data-key=TOOL_RETIRED_BIN] .field-error'), 'The server refused this key: not a configuration item.');
    assert.equal(await page.getByLabel('TOOL_RETIRED_BIN', { exact: true }).getAttribute('aria-invalid'), 'true');
    const [item] = await apiData('/api/v1/configuration?key=TOOL_SET_DIR');
    assert.deepEqual(item, { ...item, value: '/usr/share/set', dirty: false });
    assertClean();
  });

  await t.test('configuration: unsaved changes are flagged before leaving', async () => {
    await page.getByRole('link', { name: 'Sessions', exact: true }).click();
    const dialog = page.getByRole('dialog', { name: 'Leave without saving?' });
    await shows(dialog, '2 unsaved changes');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    assert.equal(new URL(page.url()).pathname, '/configuration');
    assert.equal(await page.getByLabel('TOOL_RETIRED_BIN', { exact: true }).inputValue(), '/usr/bin/still-here');
    assertClean();
  });

  await t.test('configuration: edit a value, save, reload: the value is kept and marked changed', async () => {
    await page.getByRole('button', { name: 'Revert TOOL_RETIRED_BIN' }).click();
    await shows(page.locator('.savebar'), '1 unsaved change');
    await page.getByLabel('Show').selectOption({ label: 'Unsaved edits' });
    await page.getByLabel('Filter by key or value').fill('');
    await shows(page.locator('#config-count'), 'Showing 1 of 113 items');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await shows(flash(), 'Saved 1 change.');
    const [item] = await apiData('/api/v1/configuration?key=TOOL_SET_DIR');
    assert.deepEqual(item, { ...item, value: '/opt/set', dirty: true });

    await page.reload();
    await shows(page.locator('#config-count'), '112 items');
    assert.equal(await page.getByLabel('TOOL_SET_DIR', { exact: true }).inputValue(), '/opt/set');
    await page.getByLabel('Show').selectOption({ label: 'Changed from default' });
    await shows(page.locator('#config-count'), 'Showing 1 of 112 items');
    await shows(page.locator('.config-item:not([hidden]) .key'), 'TOOL_SET_DIR');
    assert.equal(await page.locator('.config-item:not([hidden]) .badge-changed').isVisible(), true);
    assert.equal(await page.locator('.config-item:not([hidden]) .badge-unsaved').isVisible(), false);
    assertClean();
  });

  await t.test('a duplicate, an empty and an over-long session name are refused inline', async () => {
    await page.getByRole('link', { name: 'Sessions', exact: true }).click();
    const input = page.getByLabel('New session name');
    const error = page.locator('#new-session-error');
    await provoking([httpStatus(409)], async () => {
      await input.fill('web audit');
      await input.press('Enter');
      await shows(error, 'A session named “web audit” already exists. Choose another name.');
    });
    assert.equal(await input.getAttribute('aria-invalid'), 'true');
    await provoking([httpStatus(400)], async () => {
      await input.fill('   ');
      await input.press('Enter');
      await shows(error, 'Enter a name for the session.');
    });
    await provoking([httpStatus(400)], async () => {
      await input.fill('x'.repeat(256));
      await input.press('Enter');
      await shows(error, 'The name is too long: 256 characters, at most 255.');
    });
    assert.deepEqual(
      (await sessions()).map((s) => s.name),
      ['default session', 'web audit', 'staging'],
    );
    await input.fill('');
    assertClean();
  });

  await t.test('delete a session, after a confirmation that Escape cancels', async () => {
    await page.getByRole('button', { name: 'Delete staging' }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete session “staging”?' });
    await shows(dialog, 'Its 1 target will be detached');
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    assert.equal(await sessionCard('staging').count(), 1);

    await page.getByRole('button', { name: 'Delete staging' }).click();
    await dialog.getByRole('button', { name: 'Delete session' }).click();
    await shows(flash(), 'Session “staging” deleted.');
    await eventually(async () => assert.equal(await sessionCard('staging').count(), 0));
    assert.deepEqual(
      (await sessions()).map((s) => s.name),
      ['default session', 'web audit'],
    );
    const gone = await request(server.url, `/api/v1/targets/${appId}`);
    assert.equal(gone.status, 400, 'its only target went with it');
    assertClean();
  });

  await t.test('the header notices the server going away and coming back', async () => {
    await new Promise((resolve) => {
      server.server.close(resolve);
      server.server.closeAllConnections();
    });
    await provoking([/ERR_CONNECTION_REFUSED/g], async () => {
      // Looking at the tab again makes it check at once.
      await page.evaluate(() => document.dispatchEvent(new Event('visibilitychange')));
      await shows(page.locator('#health'), 'Server unreachable');
      await shows(flash(), 'The server is unreachable.');
      await new Promise<void>((resolve) => server.server.listen(server.port, '127.0.0.1', resolve));
      await eventually(() => shows(page.locator('#health'), 'Server online'), 8000);
    });
    await shows(flash(), 'The server is back.');
    await showsActive('web audit');
    assertClean();
  });

  await t.test('screenshots of each view, wide and narrow; nothing scrolls sideways at 390 px', async () => {
    await mkdir(SCREENSHOTS, { recursive: true });
    // A little more to look at than the steps above left behind.
    await request(server.url, '/api/v1/targets/', { method: 'POST', form: { target_url: ['https://shop.example.org/', 'https://[2001:db8::7]:8080/api/v2'] } });
    const audit = await sessionNamed('web audit');
    const views: [name: string, path: string, ready: () => Promise<void>][] = [
      ['sessions', '/sessions', () => shows(sessionCard('web audit'), '3 targets')],
      ['targets', '/targets', () => shows(page.getByRole('heading', { level: 2 }), `Targets in “web audit” (3)`)],
      [
        'configuration',
        '/configuration',
        async () => {
          await shows(page.locator('#config-count'), '112 items');
          // An edit in progress, to show how unsaved changes look (discarded once the picture is taken).
          await page.getByLabel('EMAIL_FROM', { exact: true }).fill('audit@example.org');
          await shows(page.locator('.savebar'), '1 unsaved change');
        },
      ],
    ];
    assert.equal(audit.active, true);
    for (const [size, viewport] of [['wide', WIDE], ['narrow', NARROW]] as const) {
      await page.setViewportSize(viewport);
      for (const [name, path, ready] of views) {
        await page.goto(`${server.url}${path}`);
        await ready();
        await shows(page.locator('#health'), 'Server online');
        await noHorizontalScroll();
        await page.mouse.move(0, 0); // no hover effect where the last click happened
        await page.screenshot({ path: join(SCREENSHOTS, `${name}-${size}.png`), animations: 'disabled' });
        if (name === 'configuration') await page.getByRole('button', { name: 'Discard' }).click();
      }
    }
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.setViewportSize(WIDE);
    await page.goto(`${server.url}/targets`);
    await views[1][2]();
    await page.mouse.move(0, 0);
    await page.screenshot({ path: join(SCREENSHOTS, 'targets-dark-wide.png'), animations: 'disabled' });
    assertClean();
  });
});
