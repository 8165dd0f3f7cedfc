/** Reading a page as its user does, for the browser tests. */
import assert from 'node:assert/strict';
import type { Locator } from 'playwright-core';

/** Retries an assertion until it holds (the page updates after its requests answer). */
export async function eventually(check: () => Promise<void> | void, timeout = 5000): Promise<void> {
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
export async function text(locator: Locator): Promise<string> {
  return (await locator.innerText()).replace(/\s+/g, ' ').trim();
}

/** Waits until the element shows every one of these texts. */
export async function shows(locator: Locator, ...expected: string[]): Promise<void> {
  await eventually(async () => {
    const actual = await text(locator);
    for (const part of expected) assert.ok(actual.includes(part), `expected “${part}” in “${actual}”`);
  });
}

/**
 * A page load's API calls: from the new document's first, its `GET /api/v1/auth`. Any before it
 * were the previous document's: its health check, due every 10 s, may fire while the next page
 * loads (once seen as a second `GET /debug/health` in a load of four calls).
 */
export function ofNewDocument(calls: string[]): string[] {
  const first = calls.findIndex((call) => call.startsWith('GET /api/v1/auth'));
  return first === -1 ? calls : calls.slice(first);
}
