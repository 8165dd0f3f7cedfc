/**
 * The tarball as a user gets it: packed with npm pack, installed offline into an empty project, used
 * there by `npx assessd` and by a node:test file that embeds the server with `start()`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { access, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { PROJECT_ROOT } from '../../src/paths.ts';
import { tempDir } from '../helpers/server.ts';

const run = promisify(execFile);
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';

const EMBEDDING_TEST = `
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { start } from 'assessd';

test('an embedding project starts assessd, writes, closes, and finds its data after a restart', async () => {
  const dataDir = await mkdtemp(join(tmpdir(), 'embedded-'));
  const server = await start({ host: '127.0.0.1', port: 0, dataDir, log: () => {} });
  const headers = { authorization: 'Bearer ' + server.token };
  // a failed assertion must not leave a server running: the test's process would never end
  let closed = false;
  try {
  assert.match(server.url, /^http:\\/\\/127\\.0\\.0\\.1:\\d+$/);
  assert.equal((await fetch(server.url + '/api/v1/sessions/')).status, 401, 'a token on loopback too');
  const created = await fetch(server.url + '/api/v1/sessions/', { method: 'POST', headers, body: new URLSearchParams({ name: 'from the embedder' }) });
  assert.equal(created.status, 201);
  // a built-in check runs from the installed package too (its code is loaded with the first run)
  await fetch(server.url + '/api/v1/targets/', { method: 'POST', headers, body: new URLSearchParams({ target_url: 'http://127.0.0.1:9/' }) });
  const queued = await fetch(server.url + '/api/v1/worklist/', { method: 'POST', headers, body: new URLSearchParams({ id: '1', type: 'semi_passive', code: 'OWTF-IG-001' }) });
  assert.deepEqual((await queued.json()).data, { queued: 1 });
  let outputs = [];
  for (let i = 0; i < 200 && !(outputs[0] && outputs[0].status !== 'Running'); i++) {
    await new Promise((r) => setTimeout(r, 50));
    outputs = (await (await fetch(server.url + '/api/v1/targets/1/poutput/', { headers })).json()).data;
  }
  assert.equal(outputs[0].status, 'Successful', JSON.stringify(outputs[0]));
  assert.equal(outputs[0].findings[0].title, 'Target did not answer');
  closed = true;
  await server.close();
  } finally {
    if (!closed) await server.close();
  }
  const again = await start({ port: 0, dataDir, log: () => {} });
  try {
    assert.equal(again.token, server.token, 'the generated token is reused');
    const { data } = await (await fetch(again.url + '/api/v1/sessions/', { headers })).json();
    assert.deepEqual(data.map((s) => s.name), ['default session', 'from the embedder']);
  } finally {
    await again.close();
  }
});
`;

const TYPED_USE = `
import { start, type AssessdServer, type StartOptions } from 'assessd';
const options: StartOptions = { host: '127.0.0.1', port: 0, dataDir: '/tmp/x', allowedHosts: ['lab.example'] };
const server: AssessdServer = await start(options);
const url: string = server.url;
await server.close();
// @ts-expect-error dataDir is required
await start({ port: 0 });
// @ts-expect-error port is a number or a decimal string
await start({ dataDir: '/tmp/x', port: true });
export { url };
`;

test('npm pack holds what a user runs and its documents, and no tests, benches or TypeScript sources', async () => {
  const { stdout } = await run(NPM, ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: PROJECT_ROOT });
  const files: string[] = JSON.parse(stdout)[0].files.map((f: { path: string }) => f.path);
  for (const needed of ['package.json', 'README.md', 'LICENSE', 'dist/assessd.cjs', 'dist/main.js', 'dist/main.cjs', 'dist/main.cjs.cache', 'dist/load-bundle.cjs', 'dist/index.js', 'dist/compactor.js', 'dist/types/index.d.ts', 'dist/types/start.d.ts', 'dist/web/static/index.html', 'dist/web/static/app.js', 'data/default-configuration.json', 'data/wordlists/wordpress.txt', 'data/attack-vectors/xss.txt', 'data/set-phishing/README.txt']) {
    assert.ok(files.includes(needed), `${needed} is missing from the tarball`);
  }
  for (const file of files) {
    assert.ok(!/^(src|test|bench|\.ci)\//.test(file), `${file} should not be in the tarball`);
    assert.ok(!file.endsWith('.ts') || file.endsWith('.d.ts'), `${file}: a TypeScript source`);
    assert.ok(!file.endsWith('.map'), `${file}: a source map of sources that are not shipped`);
  }
});

test('the tarball installs offline into an empty project, where npx assessd and an embedding node:test file work', async () => {
  const work = await tempDir('assessd-pack-');
  const { stdout } = await run(NPM, ['pack', '--json', '--ignore-scripts', '--pack-destination', work], { cwd: PROJECT_ROOT });
  const tarball = join(work, JSON.parse(stdout)[0].filename);
  const project = join(work, 'embedder');
  await mkdir(project);
  await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'embedder', private: true, type: 'module' }));
  // an empty npm cache and --offline: nothing may come from a registry
  await run(NPM, ['install', '--offline', '--no-audit', '--no-fund', '--cache', join(work, 'empty-cache'), tarball], { cwd: project });
  const pkg = JSON.parse(await readFile(join(PROJECT_ROOT, 'package.json'), 'utf8'));
  // the README the user gets links only to files they got
  const installedRoot = join(project, 'node_modules', 'assessd');
  const readme = await readFile(join(installedRoot, 'README.md'), 'utf8');
  const links = [...readme.matchAll(/\]\(([^)#\s]+)(#[^)\s]*)?\)/g)].map((m) => m[1]);
  assert.ok(links.length > 5, 'the README has links to check');
  for (const link of links) {
    assert.ok(!/^[a-z]+:/i.test(link), `${link}: a link off the box`);
    await access(join(installedRoot, link)).catch(() => assert.fail(`README links to ${link}, which the package does not hold`));
  }
  const installed = JSON.parse(await readFile(join(project, 'package.json'), 'utf8'));
  assert.deepEqual(Object.keys(installed.dependencies), ['assessd']);
  assert.equal((await run(NPM, ['exec', '--offline', '--', 'assessd', '--version'], { cwd: project })).stdout.trim(), pkg.version);

  await writeFile(join(project, 'embed.test.mjs'), EMBEDDING_TEST);
  // without the parent runner's NODE_TEST_CONTEXT, the child reports as a user's own `node --test` does
  const { NODE_TEST_CONTEXT: _runner, ...env } = process.env;
  const result = await run(process.execPath, ['--test', '--test-reporter=tap', 'embed.test.mjs'], { cwd: project, env }).catch((err) => err);
  assert.equal(result.code ?? 0, 0, `${result.stdout}\n${result.stderr}`);
  assert.match(result.stdout, /# pass 1/);

  // the types, through the exports map, as a TypeScript project resolves them
  await writeFile(join(project, 'use.ts'), TYPED_USE);
  const compilerOptions = { strict: true, noEmit: true, module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', types: [] };
  await writeFile(join(project, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['use.ts'] }));
  const tsc = join(PROJECT_ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  const typed = await run(process.execPath, [tsc, '-p', '.'], { cwd: project }).catch((err) => err);
  assert.equal(typed.code ?? 0, 0, `${typed.stdout}${typed.stderr}`);
});
