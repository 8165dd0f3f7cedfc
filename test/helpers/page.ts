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
