/** The documentation's curl examples work as pasted: each call that needs the token sends it. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../../src/paths.ts';

/**
 * What answers without a token: the health check, the page, the login, the refusals shown on
 * purpose (403 comes first), and requests to a target through the proxy (not to the API).
 */
const NO_TOKEN_NEEDED = [/\/debug\/health/, /localhost:8009\/\s/, /\/api\/v1\/auth/, /-H 'Host: /, /-H 'Origin: /, /^\s*curl -x http:\/\/127\.0\.0\.1:8008 (?!.*:8009)/];

async function documents(): Promise<string[]> {
  const docs = (await readdir(join(PROJECT_ROOT, 'docs'))).filter((name) => name.endsWith('.md')).map((name) => join('docs', name));
  return ['README.md', ...docs];
}

/** The curl command lines inside the documents' code blocks, with where they are. */
async function curlLines(): Promise<{ where: string; line: string }[]> {
  const found: { where: string; line: string }[] = [];
  for (const file of await documents()) {
    let inBlock = false;
    (await readFile(join(PROJECT_ROOT, file), 'utf8')).split('\n').forEach((line, i) => {
      if (line.trimStart().startsWith('```')) inBlock = !inBlock;
      else if (inBlock && /^\s*curl /.test(line)) found.push({ where: `${file}:${i + 1}`, line });
    });
  }
  return found;
}

test('every curl example that calls the API sends the token (required on loopback too)', async () => {
  const lines = await curlLines();
  assert.ok(lines.length > 40, `${lines.length} curl examples found`);
  const missing = lines.filter(({ line }) => !line.includes('Authorization: Bearer') && !NO_TOKEN_NEEDED.some((pattern) => pattern.test(`${line} `)));
  assert.deepEqual(missing.map(({ where, line }) => `${where}: ${line.trim()}`), []);
});
