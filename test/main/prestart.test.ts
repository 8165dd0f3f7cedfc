/**
 * `npm start` builds when the build is missing or older than its sources: after `git pull && npm
 * ci && npm start` the previous version's build kept running (npm ci builds nothing).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { staleBuild } from '../../src/prestart.mjs';
import { tempDir } from '../helpers/server.ts';

const at = (path: string, seconds: number) => utimesSync(path, seconds, seconds);

test('the build is made again when missing, or when a source or the lock file is newer; not when current, nor for an installed package (no src/)', async () => {
  const root = await tempDir();
  mkdirSync(join(root, 'src', 'web'), { recursive: true });
  for (const file of ['src/web/app.ts', 'src/main.ts', 'package.json', 'package-lock.json']) {
    writeFileSync(join(root, file), 'x');
    at(join(root, file), 1_000);
  }
  assert.equal(staleBuild(root), 'there is no build yet');
  mkdirSync(join(root, 'dist'));
  writeFileSync(join(root, 'dist', 'assessd.cjs'), 'built');
  // a build cut short (killed, failed) after its bundle was written: its last step never came
  assert.equal(staleBuild(root), 'the last build did not finish');
  writeFileSync(join(root, 'dist', 'build-complete'), 'done');
  at(join(root, 'dist', 'build-complete'), 2_000);
  assert.equal(staleBuild(root), undefined);
  // a pull that changed a page's source, then one that changed only the dependencies
  at(join(root, 'src/web/app.ts'), 3_000);
  assert.equal(staleBuild(root), 'its sources changed since it was built');
  at(join(root, 'src/web/app.ts'), 1_000);
  at(join(root, 'package-lock.json'), 3_000);
  assert.equal(staleBuild(root), 'its sources changed since it was built');
  at(join(root, 'dist', 'build-complete'), 4_000);
  assert.equal(staleBuild(root), undefined);
  // as npm runs it: exit 1 (npm then builds) and says why
  at(join(root, 'src/main.ts'), 5_000);
  const script = join(import.meta.dirname, '..', '..', 'src', 'prestart.mjs');
  const copy = join(root, 'src', 'prestart.mjs');
  writeFileSync(copy, (await import('node:fs')).readFileSync(script));
  at(copy, 1_000);
  const ran = await promisify(execFile)(process.execPath, [copy]).then(() => ({ code: 0, stderr: '' }), (err: { code: number; stderr: string }) => err);
  assert.equal(ran.code, 1);
  assert.match(ran.stderr, /assessd: building \(its sources changed since it was built\)/);
  // an installed package ships dist/ without src/
  const installed = await tempDir();
  mkdirSync(join(installed, 'dist'));
  writeFileSync(join(installed, 'dist', 'assessd.cjs'), 'built');
  assert.equal(staleBuild(installed), undefined);
});
