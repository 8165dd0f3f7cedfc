/**
 * The web application driven as a user drives it, in headless Chromium against the real server:
 * every step checks what the page shows and what the API then returns. Any console error the step
 * did not expect, any page error and any request to another host than the server fail the test.
 */
import { after, before, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { request, startServer, type TestServer } from '../helpers/server.ts';
import { CHROMIUM, keepOnBox, launchChromium, missingBrowser, NARROW, picture, sidewaysScroll, WIDE } from '../helpers/browser.ts';
import { eventually, ofNewDocument, shows, text } from '../helpers/page.ts';

interface Session {
  id: number;
  name: string;
  active: boolean;
}

let server: TestServer;
/** The engagement-size run's server. */
let big: TestServer | undefined;
let browser: Browser | undefined;
let context: BrowserContext;
let page: Page;

const offBox: string[] = [];
const unexpectedConsole: string[] = [];
const pageErrors: string[] = [];
/** Console errors a step provokes on purpose (Chromium logs every 4xx answer to fetch). */
let expectedConsole: RegExp[] = [];

// Only a developer's machine may go without the browser; in CI a missing browser is a failure.
const skip = missingBrowser && !process.env.CI;
if (skip) {
  console.warn(
    `\n${'!'.repeat(78)}\n!! SKIPPING the browser end-to-end test: ${CHROMIUM} is missing.\n` +
      `!! Install Debian's chromium (apt-get install chromium) to run it.\n${'!'.repeat(78)}\n`,
  );
}

/** A fresh context on `base`: every request elsewhere blocked and recorded, console and page errors watched. */
async function openPage(base: string, viewport = WIDE): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser!.newContext({ viewport, colorScheme: 'light', reducedMotion: 'reduce' });
  context.setDefaultTimeout(5000);
  await keepOnBox(context, base, offBox);
  const page = await context.newPage();
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
  return { context, page };
}

before(async () => {
  if (missingBrowser) return;
  server = await startServer();
  browser = await launchChromium();
  ({ context, page } = await openPage(server.url));
});

after(async () => {
  await browser?.close();
  await server?.close();
  await big?.close();
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
const targetRow = (url: string) => page.locator('tr.target').filter({ has: page.getByRole('rowheader', { name: url, exact: true }) });
const flash = () => page.locator('#flash');

/** The session's card carries the Active badge. */
async function showsActive(name: string): Promise<void> {
  await eventually(async () => assert.equal(await sessionCard(name).locator('.badge-active').isVisible(), true, `${name} is not shown active`));
}

async function noHorizontalScroll(): Promise<void> {
  assert.equal(await sidewaysScroll(page), undefined);
}

const APP = 'https://app.example.com:8443/login';
const IP = 'http://10.0.0.5/';
let appId: number;

test('the web application, driven as a user in headless Chromium', { skip: skip && `${CHROMIUM} is missing` }, async (t: TestContext) => {
  assert.ok(!missingBrowser, `${CHROMIUM} is missing, and CI must run the browser test`);
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

  await t.test('another tab activates a session: this tab’s header says so at once (it said the old one until a list was loaded here)', async () => {
    const other = await page.context().newPage();
    try {
      await other.goto(`${server.url}/sessions`);
      await other.getByRole('button', { name: 'Activate staging' }).click();
      await shows(page.locator('#active-session-name'), 'staging');
      await other.getByRole('button', { name: 'Activate web audit' }).click();
      await shows(page.locator('#active-session-name'), 'web audit');
    } finally {
      await other.close();
    }
    assertClean();
  });

  await t.test('a client outside the browser (curl) activates a session: the header follows once the window is in front again', async () => {
    const activate = async (name: string) => assert.equal((await request(server.url, `/api/v1/sessions/${(await sessionNamed(name)).id}/activate`, { method: 'PATCH' })).status, 200);
    await activate('staging');
    // the window's focus, as the desktop gives it when the user leaves the terminal (headless Chromium fires none)
    await page.evaluate(() => window.dispatchEvent(new FocusEvent('focus')));
    await shows(page.locator('#active-session-name'), 'staging');
    // the tab looked at again
    await activate('web audit');
    await page.evaluate(() => document.dispatchEvent(new Event('visibilitychange')));
    await shows(page.locator('#active-session-name'), 'web audit');
    assertClean();
  });

  await t.test('add two targets, one URL per line; a bad line is refused on its own', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Targets' }).click();
    assert.equal(new URL(page.url()).pathname, '/targets');
    await shows(page.locator('h1'), 'Targets');
    await shows(page.getByRole('heading', { level: 2 }), 'Targets in “web audit” (0)');
    assert.equal(await page.getByRole('button', { name: 'Add URLs' }).getAttribute('aria-expanded'), 'true', 'an empty session opens the form');
    await page.getByLabel('Target URLs, one per line').fill(`${APP}\nnot a url\n${IP}`);
    await page.getByRole('button', { name: 'Add targets' }).click();
    await shows(page.locator('.add-results .failed'), 'Line 2', 'not a url', 'Not an absolute http:// or https:// URL.');
    await shows(page.locator('.add-summary'), '2 targets added to “web audit”; 1 line refused, listed below.');
    assert.equal(await page.locator('#flash').getAttribute('data-kind'), 'info', 'a list partly added is not shown as an error');
    assert.equal(await page.locator('.add-results .failed').count(), 1, 'only the refused line is listed');
    assert.equal(await page.getByLabel('Target URLs, one per line').inputValue(), 'not a url');
    await shows(page.getByRole('heading', { level: 2 }), 'Targets in “web audit” (2)');

    assert.deepEqual(await targetRow(APP).locator('td[data-label]:not([data-label=Sessions])').allInnerTexts(), ['app.example.com', '8443', 'https', 'not resolved']);
    assert.deepEqual(await targetRow(IP).locator('td[data-label]:not([data-label=Sessions])').allInnerTexts(), ['10.0.0.5', '80', 'http', '10.0.0.5']);
    const audit = await sessionNamed('web audit');
    assert.deepEqual(await targetUrls(audit.id), [IP, APP]);
    appId = (await apiData(`/api/v1/targets/?session_id=${audit.id}&target_url=${encodeURIComponent(APP)}`))[0].id;
    await page.getByLabel('Target URLs, one per line').fill('');
    assertClean();
  });

  await t.test('attach a target to another session, then detach it from this one', async () => {
    await page.getByRole('checkbox', { name: `Select ${APP}` }).check();
    await shows(page.locator('#selection-count'), '1 target selected.');
    await page.getByLabel('Attach selected to').selectOption({ label: 'staging' });
    await page.getByRole('button', { name: 'Attach', exact: true }).click();
    await shows(page.locator('.bulk-result'), 'Attached 1 target to “staging”.');
    await eventually(async () => assert.deepEqual(await targetRow(APP).locator('.chip > span').allInnerTexts(), ['web audit', 'staging']));
    const staging = await sessionNamed('staging');
    assert.deepEqual(await targetUrls(staging.id), [APP]);

    await page.getByRole('button', { name: `Detach ${APP} from web audit` }).click();
    await shows(page.getByRole('heading', { level: 2 }), 'Targets in “web audit” (1)');
    assert.equal(await targetRow(APP).count(), 0);
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
    await shows(targetRow(APP).locator('.chips'), 'staging');
    await eventually(async () => assert.equal(await page.getByLabel('Session', { exact: true }).inputValue(), String(staging.id)));
    assertClean();
  });

  await t.test('adding to a session deleted meanwhile (in another tab): nothing added, said plainly, the lines kept', async () => {
    const active = (await sessions()).find((s) => s.active)!;
    assert.equal((await request(server.url, '/api/v1/sessions/', { method: 'POST', form: { name: 'doomed' } })).status, 201);
    const doomed = await sessionNamed('doomed');
    assert.equal((await request(server.url, `/api/v1/sessions/${active.id}/activate`, { method: 'PATCH' })).status, 200);
    await page.goto(`${server.url}/targets?session=${doomed.id}`);
    await shows(page.getByRole('heading', { level: 2 }), 'Targets in “doomed” (0)');
    assert.equal((await request(server.url, `/api/v1/sessions/${doomed.id}`, { method: 'DELETE' })).status, 200);
    await page.getByLabel('Target URLs, one per line').fill('http://late.example/');
    await provoking([httpStatus(400)], async () => {
      await page.getByRole('button', { name: 'Add targets' }).click();
      await shows(page.locator('.add-summary'), 'Nothing added: the session “doomed” was deleted (in another tab, or by another client).');
    });
    await shows(page.locator('.add-results .failed'), 'http://late.example/', 'Not sent: the session “doomed” no longer exists.');
    assert.equal(await page.getByLabel('Target URLs, one per line').inputValue(), 'http://late.example/');
    assert.equal((await sessions()).some((s) => s.name === 'doomed'), false);
    await page.goto(`${server.url}/targets`);
    await shows(page.getByRole('heading', { level: 2 }), `Targets in “${active.name}”`);
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
    await shows(page.locator('#config-count'), 'Showing 1 of 114 items');
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
    await shows(page.locator('#config-count'), 'Showing 1 of 114 items');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await shows(flash(), 'Saved 1 change.');
    const [item] = await apiData('/api/v1/configuration?key=TOOL_SET_DIR');
    assert.deepEqual(item, { ...item, value: '/opt/set', dirty: true });

    await page.reload();
    await shows(page.locator('#config-count'), '113 items');
    assert.equal(await page.getByLabel('TOOL_SET_DIR', { exact: true }).inputValue(), '/opt/set');
    await page.getByLabel('Show').selectOption({ label: 'Changed from default' });
    await shows(page.locator('#config-count'), 'Showing 1 of 113 items');
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

    // a session without targets says so, not "Its 0 targets will be detached"
    await page.getByRole('button', { name: 'Delete default session' }).click();
    const empty = page.getByRole('dialog', { name: 'Delete session “default session”?' });
    await shows(empty, 'It has no targets.');
    await page.keyboard.press('Escape');
    await empty.waitFor({ state: 'detached' });

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
          await shows(page.locator('#config-count'), '113 items');
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
        await picture(page, `${name}-${size}`);
        if (name === 'configuration') await page.getByRole('button', { name: 'Discard' }).click();
      }
    }
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.setViewportSize(WIDE);
    await page.goto(`${server.url}/targets`);
    await views[1][2]();
    await page.mouse.move(0, 0);
    await picture(page, 'targets-dark-wide');
    assertClean();
  });
});

// ---------------------------------------------------------------------------------------------
// Engagement size: 300 sessions, one of them with 5,000 targets, all made through the API.

const CLIENTS = 297;
const ENGAGEMENT = 5000;
/** Every seventh target of the engagement is an admin page: 715 of 5,000. */
const engagementUrl = (i: number) => `https://host${i}.acme.example/app/${i % 7 === 0 ? 'admin' : 'login'}`;

/** The API requests (and health checks) a step makes, in order, as `METHOD /path?query`. */
let calls: string[] = [];

/**
 * The requests a step makes. The header's health check runs at a page load, then every 10 s:
 * counted for a page load, left out otherwise (where it would only be the timer's doing). A page
 * load also asks once whether the server needs a token (GET /api/v1/auth).
 */
async function apiCalls(step: () => Promise<void>, { pageLoad = false } = {}): Promise<string[]> {
  calls = [];
  await step();
  await page.waitForTimeout(300); // anything late would be counted too
  return pageLoad ? ofNewDocument(calls) : calls.filter((c) => !c.startsWith('GET /debug/health'));
}

/** Waits until the element's whole text is exactly this. */
async function showsExactly(locator: Locator, expected: string): Promise<void> {
  await eventually(async () => assert.equal(await text(locator), expected));
}

const paths = (list: string[]) => list.map((c) => c.replace(/\?.*$/, ''));

test('the web application at engagement size: 300 sessions, 5,000 targets, each view in a fixed number of requests', { skip: skip && `${CHROMIUM} is missing` }, async (t: TestContext) => {
  big = await startServer();
  const base = big.url;
  const post = async (path: string, form: [string, string][]) => {
    const res = await request(base, path, { method: 'POST', form });
    assert.ok(res.status < 300, `${path}: ${res.text.slice(0, 200)}`);
  };
  for (let i = 1; i <= CLIENTS; i++) await post('/api/v1/sessions/', [['name', `client ${String(i).padStart(3, '0')} retest`]]);
  await post('/api/v1/sessions/', [['name', 'staging']]);
  await post('/api/v1/sessions/', [['name', 'acme web']]);
  // the upstream endpoint, all or nothing: 5,000 URLs in one request
  await post('/api/v1/targets/', Array.from({ length: ENGAGEMENT }, (_, i) => ['target_url', engagementUrl(i)] as [string, string]));
  const overview = async () => (await request(base, '/api/v1/overview/sessions')).json.data as { id: number; name: string; target_count: number }[];
  const sessionsNow = await overview();
  assert.equal(sessionsNow.length, 300);
  const acme = sessionsNow.find((s) => s.name === 'acme web')!;
  const client1 = sessionsNow.find((s) => s.name === 'client 001 retest')!;
  assert.equal(acme.target_count, ENGAGEMENT);
  const countOf = async (id: number) => (await overview()).find((s) => s.id === id)!.target_count;

  ({ context, page } = await openPage(base));
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
  page.on('request', (r) => {
    const url = r.url();
    if (url.startsWith(`${base}/api/`) || url.startsWith(`${base}/debug/`)) calls.push(`${r.method()} ${url.slice(base.length)}`);
  });
  const heading2 = () => page.getByRole('heading', { level: 2 }).first();
  const rows = () => page.locator('tbody tr.target');
  const selected = () => page.locator('#selection-count');
  const range = () => page.locator('.page-range');
  const result = () => page.locator('.bulk-result');

  await t.test('sessions: all 300 with their target counts from one request (with the active session’s findings and progress), the active one first', async () => {
    const made = await apiCalls(async () => {
      await page.goto(`${base}/sessions`);
      await eventually(async () => assert.equal(await page.locator('li.session').count(), 300));
    }, { pageLoad: true });
    // the sessions, and the active session's severity panel and progress
    assert.deepEqual(paths(made).sort(), ['GET /api/v1/auth', 'GET /api/v1/dashboard/severitypanel', 'GET /api/v1/overview/sessions', 'GET /api/v1/plugins/progress', 'GET /debug/health']);
    const first = page.locator('li.session').first();
    await shows(first.getByRole('heading'), 'acme web');
    await showsActive('acme web');
    await shows(first, '5,000 targets');
    await shows(sessionCard('client 001 retest'), '0 targets');
    await shows(page.locator('#active-session-name'), 'acme web');
    assertClean();
  });

  await t.test('sessions: filter by name, in the page, without a request', async () => {
    const made = await apiCalls(async () => {
      await page.getByLabel('Filter sessions by name').fill('client 00');
      await shows(page.locator('#session-count'), 'Showing 9 of 300 sessions');
    });
    assert.deepEqual(made, []);
    assert.equal(await page.locator('li.session:not([hidden])').count(), 9);
    await page.getByLabel('Filter sessions by name').fill('no such client');
    await shows(page.locator('.list-region .state.empty:not([hidden])'), 'No session matches.');
    await page.getByLabel('Filter sessions by name').fill('acme');
    assert.deepEqual(await page.locator('li.session:not([hidden]) h3').allInnerTexts(), ['acme web']);
    assertClean();
  });

  await t.test('from a session to its targets: two requests, the sessions and the first page', async () => {
    const made = await apiCalls(async () => {
      await page.getByRole('link', { name: '5,000 targets in acme web' }).click();
      await shows(heading2(), 'Targets in “acme web” (5,000)');
      await eventually(async () => assert.equal(await rows().count(), 100));
    });
    assert.deepEqual(paths(made), ['GET /api/v1/overview/sessions', 'GET /api/v1/targets/']);
    assert.match(made[1], /include=sessions/);
    assert.match(made[1], /limit=100&offset=0/);
    assert.equal(new URL(page.url()).search, `?session=${acme.id}`);
    assertClean();
  });

  await t.test('targets: a full load is three requests; a visible total; one page of 100 rows', async () => {
    const made = await apiCalls(async () => {
      await page.goto(`${base}/targets`);
      await eventually(async () => assert.equal(await rows().count(), 100));
    }, { pageLoad: true });
    assert.deepEqual(paths(made), ['GET /api/v1/auth', 'GET /debug/health', 'GET /api/v1/overview/sessions', 'GET /api/v1/targets/']);
    await showsExactly(page.locator('#target-count'), '5,000 targets');
    await shows(range(), '1–100 of 5,000');
    await shows(rows().first(), engagementUrl(4999));
    assert.equal(await page.locator('select#attach-session option').count(), 0, 'no attach options before a selection needs them');
    assert.equal(await page.locator('tbody select').count(), 0, 'no control per row for attaching');
    assertClean();
  });

  await t.test('targets: pages by the buttons and by number, one request each', async () => {
    let made = await apiCalls(async () => {
      await page.getByRole('button', { name: 'Next ›' }).click();
      await shows(range(), '101–200 of 5,000');
    });
    assert.deepEqual(paths(made), ['GET /api/v1/targets/']);
    assert.match(made[0], /offset=100/);
    made = await apiCalls(async () => {
      await page.getByRole('button', { name: 'Last page' }).click();
      await shows(range(), '4,901–5,000 of 5,000');
    });
    assert.equal(made.length, 1);
    await shows(rows().first(), engagementUrl(99));
    const pageField = page.getByLabel('Page', { exact: true });
    await pageField.fill('3');
    await pageField.press('Enter');
    await shows(range(), '201–300 of 5,000');
    assert.match(new URL(page.url()).search, /page=3/);
    await page.reload();
    await shows(range(), '201–300 of 5,000');
    await page.getByRole('button', { name: 'First page' }).click();
    await shows(range(), '1–100 of 5,000');
    // by keyboard: a button the page reached disables stays in the pager (the focus fell to the body, the next Tab at the page's top)
    const focusedId = () => page.evaluate(() => document.activeElement?.id ?? '');
    await page.getByRole('button', { name: 'Last page' }).focus();
    await page.keyboard.press('Enter');
    await shows(range(), '4,901–5,000 of 5,000');
    await eventually(async () => assert.equal(await focusedId(), 'target-page'));
    await page.getByRole('button', { name: 'First page' }).focus();
    await page.keyboard.press('Enter');
    await shows(range(), '1–100 of 5,000');
    await eventually(async () => assert.equal(await focusedId(), 'target-page'));
    assertClean();
  });

  await t.test('targets: filter by URL, host or IP on the server (one request), sort by host (one request)', async () => {
    let made = await apiCalls(async () => {
      await page.getByLabel('Filter by URL, host or IP').fill('ADMIN');
      await shows(page.locator('#target-count'), '715 of 5,000 targets match “ADMIN”');
    });
    assert.deepEqual(paths(made), ['GET /api/v1/targets/']);
    assert.match(made[0], /q=ADMIN/);
    made = await apiCalls(async () => {
      await page.getByLabel('Sort').selectOption({ label: 'By host' });
      await eventually(async () => assert.equal(await rows().first().getByRole('rowheader').innerText(), engagementUrl(0)));
    });
    assert.deepEqual(paths(made), ['GET /api/v1/targets/']);
    assert.match(made[0], /sort=host/);
    await page.getByLabel('Filter by URL, host or IP').fill('host4242.');
    await shows(page.locator('#target-count'), '1 of 5,000 targets match “host4242.”');
    await page.getByLabel('Filter by URL, host or IP').fill('nothing like this');
    await shows(page.locator('.table-region'), 'No target matches “nothing like this”.');
    await page.getByLabel('Sort').selectOption({ label: 'Newest first' });
    await eventually(async () => assert.equal(await rows().count(), 0));
    assertClean();
  });

  await t.test('select: a checkbox by keyboard, a shift-click range, the page, then all 715 matching', async () => {
    await page.getByLabel('Filter by URL, host or IP').fill('admin');
    await shows(page.locator('#target-count'), '715 of 5,000 targets match “admin”');
    const made = await apiCalls(async () => {
      await rows().nth(0).getByRole('checkbox').focus();
      await page.keyboard.press('Space');
      await shows(selected(), '1 target selected.');
      await rows().nth(4).getByRole('checkbox').click({ modifiers: ['Shift'] });
      await shows(selected(), '5 targets selected.');
      await page.getByRole('checkbox', { name: 'Select all on this page' }).check();
      await shows(selected(), '100 targets selected.');
      await page.getByRole('button', { name: 'Select all 715 matching' }).click();
      await shows(selected(), 'All 715 matching targets selected (filter “admin”).');
    });
    assert.deepEqual(made, [], 'selecting asks the server nothing');
    assertClean();
  });

  await t.test('attach all 715 to another session: one request for the change, one summary', async () => {
    const made = await apiCalls(async () => {
      await page.getByLabel('Attach selected to').selectOption({ label: 'client 001 retest' });
      await page.getByRole('button', { name: 'Attach', exact: true }).click();
      await shows(result(), 'Attached 715 targets to “client 001 retest”.');
      await shows(selected(), 'No target selected.');
    });
    assert.deepEqual(paths(made), ['POST /api/v1/targets/bulk', 'GET /api/v1/overview/sessions', 'GET /api/v1/targets/']);
    assert.equal(await countOf(client1.id), 715);
    await shows(rows().first().locator('.chips'), 'acme web', 'client 001 retest');
    assertClean();
  });

  await t.test('detach three targets that are in no other session: confirmed, then deleted with one request', async () => {
    await page.getByLabel('Filter by URL, host or IP').fill('login');
    await shows(page.locator('#target-count'), '4,285 of 5,000 targets match “login”');
    for (let i = 0; i < 3; i++) await rows().nth(i).getByRole('checkbox').check();
    await shows(selected(), '3 targets selected.');
    const made = await apiCalls(async () => {
      await page.getByRole('button', { name: 'Detach from “acme web”' }).click();
      const dialog = page.getByRole('dialog', { name: 'Detach 3 targets from “acme web”?' });
      await shows(dialog, 'Those in no other session are deleted.');
      await dialog.getByRole('button', { name: 'Detach 3 targets' }).click();
      await shows(result(), 'Detached 3 targets from “acme web”; 3 in no other session were deleted.');
    });
    assert.deepEqual(paths(made), ['POST /api/v1/targets/bulk', 'GET /api/v1/overview/sessions', 'GET /api/v1/targets/']);
    await shows(page.locator('#target-count'), '4,282 of 4,997 targets match “login”');
    assert.equal(await countOf(acme.id), 4997);
    assertClean();
  });

  await t.test('delete all 111 targets matching a filter: confirmed, one request', async () => {
    await page.getByLabel('Filter by URL, host or IP').fill('host12');
    await shows(page.locator('#target-count'), '111 of 4,997 targets match “host12”');
    await page.getByRole('checkbox', { name: 'Select all on this page' }).check();
    await page.getByRole('button', { name: 'Select all 111 matching' }).click();
    // a change of the filter clears "all matching" (the old filter's), and says so: it was dropped without a word
    await page.getByLabel('Filter by URL, host or IP').fill('host1');
    await shows(flash(), 'The selection of all 111 targets matching “host12” was cleared: the filter changed.');
    await shows(selected(), 'No target selected.');
    await page.getByLabel('Filter by URL, host or IP').fill('host12');
    await shows(page.locator('#target-count'), '111 of 4,997 targets match “host12”');
    await page.getByRole('checkbox', { name: 'Select all on this page' }).check();
    await page.getByRole('button', { name: 'Select all 111 matching' }).click();
    const made = await apiCalls(async () => {
      await page.getByRole('button', { name: 'Delete selected' }).click();
      const dialog = page.getByRole('dialog', { name: 'Delete 111 targets?' });
      await dialog.getByRole('button', { name: 'Delete 111 targets' }).click();
      await shows(result(), 'Deleted 111 targets.');
    });
    assert.deepEqual(paths(made), ['POST /api/v1/targets/bulk', 'GET /api/v1/overview/sessions', 'GET /api/v1/targets/']);
    await shows(page.locator('.table-region'), 'No target matches “host12”.');
    assert.equal(await countOf(acme.id), 4886);
    const adminsDeleted = [12, ...Array.from({ length: 10 }, (_, i) => 120 + i), ...Array.from({ length: 100 }, (_, i) => 1200 + i)].filter((i) => i % 7 === 0).length;
    assert.equal(await countOf(client1.id), 715 - adminsDeleted, 'the admin pages among them went from every session');
    await page.getByLabel('Filter by URL, host or IP').fill('');
    await showsExactly(page.locator('#target-count'), '4,886 targets');
    assertClean();
  });

  await t.test('a selection belongs to its session: shown another session, it is cleared and said so, and nothing offers to detach it there', async () => {
    for (let i = 0; i < 2; i++) await rows().nth(i).getByRole('checkbox').check();
    await shows(selected(), '2 targets selected.');
    await page.getByLabel('Session', { exact: true }).selectOption(String(client1.id));
    await shows(page.getByRole('heading', { level: 2 }), 'Targets in “client 001 retest”');
    await shows(selected(), 'No target selected.');
    assert.equal(await page.getByRole('button', { name: /^Detach from/ }).isVisible(), false);
    await page.getByLabel('Session', { exact: true }).selectOption(String(acme.id));
    await showsExactly(page.locator('#target-count'), '4,886 targets');
    await shows(selected(), 'No target selected.');
    assertClean();
  });

  await t.test('paste 1,004 lines: added in a few batches, only the refused lines listed, the list updated', async () => {
    const fresh = Array.from({ length: 1000 }, (_, i) => `https://pasted${i}.acme.example/`);
    const lines = [...fresh.slice(0, 500), 'not a url', engagementUrl(7), ...fresh.slice(500), fresh[3], engagementUrl(14)];
    await page.getByRole('button', { name: 'Add URLs' }).click();
    const box = page.getByLabel('Target URLs, one per line');
    await page.evaluate((text) => navigator.clipboard.writeText(text), lines.join('\n'));
    await box.press('Control+V');
    const made = await apiCalls(async () => {
      await page.getByRole('button', { name: 'Add targets' }).click();
      await shows(page.locator('.add-summary'), '1,000 targets added to “acme web”; 4 lines refused, listed below.');
      await shows(heading2(), 'Targets in “acme web” (5,886)');
    });
    assert.deepEqual(paths(made), ['POST /api/v1/targets/bulk', 'POST /api/v1/targets/bulk', 'POST /api/v1/targets/bulk', 'GET /api/v1/overview/sessions', 'GET /api/v1/targets/']);
    assert.deepEqual(await page.locator('.add-results .failed').allInnerTexts().then((items) => items.map((x) => x.replace(/\s+/g, ' ').trim())), [
      '✕ Line 501 not a url Not an absolute http:// or https:// URL.',
      `✕ Line 502 ${engagementUrl(7)} Already in this session.`,
      `✕ Line 1003 ${fresh[3]} Repeated in the list.`,
      `✕ Line 1004 ${engagementUrl(14)} Already in this session.`,
    ]);
    assert.equal(await box.inputValue(), ['not a url', engagementUrl(7), fresh[3], engagementUrl(14)].join('\n'));
    await shows(rows().first(), fresh[999]);
    assert.equal(await countOf(acme.id), 5886);
    assertClean();
  });

  await t.test('configuration: one request on the way in, three on a full load', async () => {
    let made = await apiCalls(async () => {
      await page.getByRole('link', { name: 'Configuration', exact: true }).click();
      await shows(page.locator('#config-count'), '113 items');
    });
    assert.deepEqual(paths(made), ['GET /api/v1/configuration']);
    made = await apiCalls(async () => {
      await page.goto(`${base}/configuration`);
      await shows(page.locator('#config-count'), '113 items');
      await shows(page.locator('#active-session-name'), 'acme web');
    }, { pageLoad: true });
    assert.deepEqual(made.sort(), ['GET /api/v1/auth', 'GET /api/v1/configuration', 'GET /api/v1/sessions/?active=true', 'GET /debug/health']);
    assertClean();
  });

  await t.test('screenshots of the big targets view, wide and narrow, with a selection; nothing scrolls sideways', async () => {
    for (const [size, viewport] of [['wide', WIDE], ['narrow', NARROW]] as const) {
      await page.setViewportSize(viewport);
      await page.goto(`${base}/targets?sort=host`);
      await eventually(async () => assert.equal(await rows().count(), 100));
      for (let i = 1; i <= 3; i++) await rows().nth(i).getByRole('checkbox').check();
      await shows(selected(), '3 targets selected.');
      await shows(page.locator('#health'), 'Server online');
      await noHorizontalScroll();
      // wide: the whole view from the top; narrow: from the list's heading, where the cards start
      await page.evaluate((narrow) => (narrow ? document.getElementById('targets-heading')!.scrollIntoView() : window.scrollTo(0, 0)), size === 'narrow');
      await page.mouse.move(0, 0);
      await picture(page, `targets-engagement-${size}`);
    }
    await page.setViewportSize(WIDE);
    assert.deepEqual(offBox, [], 'nothing left the box');
    assertClean();
  });
});
