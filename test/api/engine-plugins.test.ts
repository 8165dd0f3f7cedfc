/**
 * The plugin catalogue over HTTP: its content, its filters, one plugin by group/type/code, the
 * errors, and plugin files a user drops in DATA_DIR/plugins (a bad one stops the start).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ENGINE_MESSAGES as E } from '../../src/api/messages.ts';
import { openEngine } from '../../src/engine/index.ts';
import { defaultConfiguration, PROJECT_ROOT } from '../../src/paths.ts';
import { parseDefaults } from '../../src/store/defaults.ts';
import { openStore } from '../../src/store/store.ts';
import { assertFail, get, SEMI_PASSIVE, send, writePluginFile } from '../helpers/engine.ts';
import { runCli, startServer, tempDir, type TestServer } from '../helpers/server.ts';

const PLUGIN_KEYS = ['attr', 'code', 'descrip', 'file', 'group', 'key', 'min_time', 'name', 'title', 'type'];
const TYPES: Record<string, string[]> = {
  web: ['external', 'passive', 'semi_passive', 'active', 'grep'],
  network: ['active', 'bruteforce'],
};

interface Plugin {
  key: string;
  code: string;
  group: string;
  type: string;
  name: string;
  title: string;
  descrip: string;
  file: string;
  attr: string | null;
  min_time: string | null;
}

/** The upstream framework's test groups (group, code, priority, name): a copy kept with the tests. */
function referenceFile(): string {
  return join(PROJECT_ROOT, 'test', 'fixtures', 'upstream-test-groups.tsv');
}

/** The upstream test groups: group, code, priority, name. */
const TEST_GROUPS = readFileSync(referenceFile(), 'utf8')
  .trim()
  .split('\n')
  .slice(1)
  .map((line) => {
    const [group, code, priority, name] = line.split('\t');
    return { group: group!, code: code!, priority: Number(priority), name: name! };
  });

describe('the shipped catalogue', () => {
  let server: TestServer;
  let all: Plugin[];
  before(async () => {
    server = await startServer({ workers: 0 });
    all = await get(server, '/api/v1/plugins/');
  });
  after(() => server.close());

  test('GET /plugins/ answers every plugin, each with exactly the upstream keys and key = type@code', () => {
    assert.ok(all.length > 0);
    for (const p of all) {
      assert.deepEqual(Object.keys(p).sort(), PLUGIN_KEYS, p.key);
      assert.equal(p.key, `${p.type}@${p.code}`);
      assert.ok(['web', 'network', 'auxiliary'].includes(p.group), p.key);
      if (p.group !== 'auxiliary') assert.ok(TYPES[p.group]!.includes(p.type), `${p.key}: type ${p.type} in group ${p.group}`);
      for (const field of ['code', 'name', 'title', 'descrip', 'file'] as const) assert.equal(typeof p[field], 'string', `${p.key}.${field}`);
      assert.ok(p.attr === null || typeof p.attr === 'string');
      assert.ok(p.min_time === null || typeof p.min_time === 'string');
    }
  });

  test('no two plugins share a group and key', () => {
    const seen = new Set(all.map((p) => `${p.group}/${p.key}`));
    assert.equal(seen.size, all.length);
  });

  test('every web code of the upstream test groups has a web/external plugin', () => {
    const web = TEST_GROUPS.filter((g) => g.group === 'web');
    assert.equal(web.length, 77);
    const external = new Set(all.filter((p) => p.group === 'web' && p.type === 'external').map((p) => p.code));
    assert.deepEqual(web.map((g) => g.code).filter((code) => !external.has(code)), []);
  });

  test('the seven built-in semi_passive plugins exist', () => {
    const semi = all.filter((p) => p.group === 'web' && p.type === 'semi_passive').map((p) => p.code);
    for (const code of Object.keys(SEMI_PASSIVE)) assert.ok(semi.includes(code), `web/semi_passive@${code} missing; semi_passive: ${JSON.stringify(semi)}`);
  });

  test('the required web/active programs exist', () => {
    const active = all.filter((p) => p.group === 'web' && p.type === 'active').map((p) => p.code);
    for (const code of ['OWTF-IG-005', 'OWTF-WVS-002', 'OWTF-IG-004', 'OWTF-CM-006', 'OWTF-WVS-003', 'OWTF-WVS-006']) {
      assert.ok(active.includes(code), `web/active@${code} missing; web/active: ${JSON.stringify(active)}`);
    }
  });

  test('the network/active service probes PTES-001..010 exist', () => {
    const probes = all.filter((p) => p.group === 'network' && p.type === 'active').map((p) => p.code);
    for (let i = 1; i <= 10; i++) {
      const code = `PTES-${String(i).padStart(3, '0')}`;
      assert.ok(probes.includes(code), `network/active@${code} missing`);
    }
  });

  test('web/passive holds at least one plugin (links to public resources)', () => {
    assert.ok(all.some((p) => p.group === 'web' && p.type === 'passive'));
  });

  const filters: { name: string; query: string; expect: (p: Plugin) => boolean }[] = [
    { name: 'group', query: 'group=network', expect: (p) => p.group === 'network' },
    { name: 'group repeated (any-of)', query: 'group=network&group=web', expect: (p) => p.group === 'network' || p.group === 'web' },
    { name: 'type', query: 'type=external', expect: (p) => p.type === 'external' },
    { name: 'type repeated (any-of)', query: 'type=external&type=semi_passive', expect: (p) => p.type === 'external' || p.type === 'semi_passive' },
    { name: 'code', query: 'code=OWTF-IG-001', expect: (p) => p.code === 'OWTF-IG-001' },
    { name: 'code repeated (any-of)', query: 'code=OWTF-IG-001&code=OWTF-CM-008', expect: (p) => p.code === 'OWTF-IG-001' || p.code === 'OWTF-CM-008' },
    { name: 'name', query: 'name=Spiders_Robots_and_Crawlers', expect: (p) => p.name === 'Spiders_Robots_and_Crawlers' },
    { name: 'group and type together', query: 'group=web&type=external&code=OWTF-IG-002', expect: (p) => p.group === 'web' && p.type === 'external' && p.code === 'OWTF-IG-002' },
  ];
  for (const { name, query, expect } of filters) {
    test(`GET /plugins/?${query} filters by ${name}`, async () => {
      const found: Plugin[] = await get(server, `/api/v1/plugins/?${query}`);
      assert.deepEqual(found, all.filter(expect));
      assert.ok(found.length > 0, 'the filter matches something');
    });
  }

  test('a filter naming nothing answers an empty array', async () => {
    assert.deepEqual(await get(server, '/api/v1/plugins/?code=NOPE-999'), []);
    assert.deepEqual(await get(server, '/api/v1/plugins/?group=web&type=bruteforce'), []);
  });

  test('the filters come from the body too (arguments are query plus body)', async () => {
    // GET with a body is unusual; the query string is what clients send
    const found: Plugin[] = await get(server, '/api/v1/plugins?group=network&type=active');
    assert.deepEqual(found, all.filter((p) => p.group === 'network' && p.type === 'active'));
  });

  test('GET /plugins/web answers the web plugins; /plugins/web/external the web external ones', async () => {
    assert.deepEqual(await get(server, '/api/v1/plugins/web'), all.filter((p) => p.group === 'web'));
    assert.deepEqual(await get(server, '/api/v1/plugins/web/'), all.filter((p) => p.group === 'web'));
    assert.deepEqual(await get(server, '/api/v1/plugins/web/external/'), all.filter((p) => p.group === 'web' && p.type === 'external'));
    assert.deepEqual(await get(server, '/api/v1/plugins/network/active'), all.filter((p) => p.group === 'network' && p.type === 'active'));
  });

  test('GET /plugins/web/external/<code> answers the one plugin object', async () => {
    const one: Plugin = await get(server, '/api/v1/plugins/web/external/OWTF-IG-001');
    assert.deepEqual(one, all.find((p) => p.key === 'external@OWTF-IG-001' && p.group === 'web'));
    assert.deepEqual(await get(server, '/api/v1/plugins/web/external/OWTF-IG-001/'), one);
  });

  for (const code of Object.keys(SEMI_PASSIVE)) {
    test(`GET /plugins/web/semi_passive/${code} answers one plugin`, async () => {
      const one: Plugin = await get(server, `/api/v1/plugins/web/semi_passive/${code}`);
      assert.equal(one.key, `semi_passive@${code}`);
      assert.equal(one.group, 'web');
    });
  }

  const errors: { path: string; status: number; message: string }[] = [
    { path: '/api/v1/plugins/web/bruteforce', status: 422, message: E.pluginTypeNotInGroup },
    { path: '/api/v1/plugins/web/bruteforce/OWTF-IG-001', status: 422, message: E.pluginTypeNotInGroup },
    { path: '/api/v1/plugins/network/external', status: 422, message: E.pluginTypeNotInGroup },
    { path: '/api/v1/plugins/network/semi_passive/', status: 422, message: E.pluginTypeNotInGroup },
    { path: '/api/v1/plugins/web/nosuchtype', status: 422, message: E.pluginTypeNotInGroup },
    { path: '/api/v1/plugins/web/external/OWTF-NOPE-999', status: 404, message: E.pluginNotFound },
    { path: '/api/v1/plugins/web/semi_passive/OWTF-IG-002', status: 404, message: E.pluginNotFound },
    { path: '/api/v1/plugins/network/active/OWTF-IG-001', status: 404, message: E.pluginNotFound },
    { path: '/api/v1/plugins/nosuchgroup/active', status: 422, message: E.pluginTypeNotInGroup },
    { path: '/api/v1/plugins/nosuchgroup/active/OWTF-IG-001', status: 422, message: E.pluginTypeNotInGroup },
  ];
  for (const { path, status, message } of errors) {
    test(`GET ${path} is ${status} ${message}`, async () => {
      assertFail(await send(server, 'GET', path), status, message);
    });
  }

  test('GET /api/v1/plugins/<a group that does not exist> is 200 [], as upstream (a group alone filters)', async () => {
    const res = await send(server, 'GET', '/api/v1/plugins/nosuchgroup/');
    assert.equal(res.status, 200);
    assert.deepEqual(res.json.data, []);
  });
});

const USER_GROUPS = [
  { code: 'USR-T-001', descrip: 'User test one', hint: 'Hint one' },
  { code: 'USR-T-002', descrip: 'User test two' },
  { code: 'USR-T-003', descrip: 'User test three' },
];

describe('user plugin files (DATA_DIR/plugins)', () => {
  test('plugins of a file in DATA_DIR/plugins join the catalogue, with their own test groups', async () => {
    const dataDir = await tempDir();
    await writePluginFile(dataDir, 'mine.json', {
      test_groups: USER_GROUPS,
      plugins: [
        { code: 'USR-T-001', group: 'web', type: 'external', name: 'Mine_One', title: 'Mine one', descrip: 'My checklist', checklist: 'Look at {target_url}' },
        { code: 'USR-T-002', group: 'web', type: 'active', name: 'Mine_Two', tool: 'TOOL_LBD', argv: ['{host_name}'] },
        { code: 'USR-T-003', group: 'web', type: 'semi_passive', check: 'robots' },
        { code: 'USR-T-001', group: 'web', type: 'passive', links: [{ title: 'Search', url: 'https://example.org/?q={host_name}' }] },
      ],
    });
    const server = await startServer({ dataDir, workers: 0 });
    try {
      const mine: Plugin[] = await get(server, '/api/v1/plugins/?code=USR-T-001&code=USR-T-002&code=USR-T-003');
      assert.deepEqual(mine.map((p) => p.key).sort(), ['active@USR-T-002', 'external@USR-T-001', 'passive@USR-T-001', 'semi_passive@USR-T-003']);
      const one: Plugin = await get(server, '/api/v1/plugins/web/external/USR-T-001');
      assert.deepEqual(one, {
        key: 'external@USR-T-001',
        code: 'USR-T-001',
        group: 'web',
        type: 'external',
        name: 'Mine_One',
        title: 'Mine one',
        descrip: 'My checklist',
        file: 'mine.json',
        attr: null,
        min_time: null,
      });
      // the shipped ones are still there
      assert.ok((await get(server, '/api/v1/plugins/web/external/OWTF-IG-001')).key === 'external@OWTF-IG-001');
    } finally {
      await server.close();
    }
  });

  const bad: { name: string; file: string; text: string | object; says: RegExp }[] = [
    { name: 'a file that does not parse', file: 'broken.json', text: '{"plugins": [', says: /JSON/ },
    {
      name: 'a plugin of an unknown type',
      file: 'unknown-type.json',
      text: { test_groups: [USER_GROUPS[0]], plugins: [{ code: 'USR-T-001', group: 'web', type: 'exploit', checklist: 'x' }] },
      says: /type/,
    },
    {
      name: 'a plugin of an unknown group',
      file: 'unknown-group.json',
      text: { test_groups: [USER_GROUPS[0]], plugins: [{ code: 'USR-T-001', group: 'mobile', type: 'external', checklist: 'x' }] },
      says: /group/,
    },
    {
      name: 'a test group whose url is not http(s) (javascript:)',
      file: 'script-url.json',
      text: { test_groups: [{ ...USER_GROUPS[0], url: 'javascript:alert(document.cookie)' }] },
      says: /"url" must be an http:\/\/ or https:\/\/ address/,
    },
    {
      name: 'a passive link whose url is not http(s) (data:)',
      file: 'data-link.json',
      text: { test_groups: [USER_GROUPS[0]], plugins: [{ code: 'USR-T-001', group: 'web', type: 'passive', links: [{ title: 'x', url: 'data:text/html,<script>alert(1)</script>' }] }] },
      says: /must begin with http:\/\/ or https:\/\//,
    },
    {
      name: 'a checklist naming a placeholder that does not exist',
      file: 'unknown-placeholder.json',
      text: { test_groups: [USER_GROUPS[0]], plugins: [{ code: 'USR-T-001', group: 'web', type: 'external', checklist: 'Look at {hostname}' }] },
      says: /"checklist" names unknown placeholders: \{hostname\}/,
    },
    {
      name: 'a brace of no placeholder in an argument ({ host_name } with spaces)',
      file: 'stray-brace.json',
      text: { test_groups: [USER_GROUPS[0]], plugins: [{ code: 'USR-T-001', group: 'web', type: 'active', program: '/bin/true', argv: ['{ host_name }'] }] },
      says: /argv\[0\] names unknown placeholders: a "\{" that begins or ends no placeholder/,
    },
    {
      name: 'a lone brace in a checklist',
      file: 'lone-brace.json',
      text: { test_groups: [USER_GROUPS[0]], plugins: [{ code: 'USR-T-001', group: 'web', type: 'external', checklist: 'Look at {target_url} }' }] },
      says: /a "\}" that begins or ends no placeholder/,
    },
    {
      name: 'a passive plugin with a program\'s fields (no argv: it would never run them)',
      file: 'passive-program.json',
      text: { test_groups: [USER_GROUPS[0]], plugins: [{ code: 'USR-T-001', group: 'web', type: 'passive', links: [{ title: 'x', url: 'https://example.org/' }], program: '/bin/true', tool: 'TOOL_NMAP' }] },
      says: /a passive plugin runs no program: "tool" and "program" belong to a program plugin's action/,
    },
    {
      name: 'a network plugin under a web test group\'s code',
      file: 'group-mismatch.json',
      text: { plugins: [{ code: 'OWTF-IG-001', group: 'network', type: 'active', program: '/bin/true', argv: [] }] },
      says: /test group OWTF-IG-001 is a web one: a network plugin needs a network test group/,
    },
    {
      name: 'a plugin redefining a shipped one',
      file: 'duplicate.json',
      text: { plugins: [{ code: 'OWTF-IG-001', group: 'web', type: 'external', checklist: 'again' }] },
      // both files named, and what to do instead
      says: /external@OWTF-IG-001 is defined twice, here and in .*web-external\.json.*new code.*configuration/,
    },
    {
      name: 'a passive plugin with a program (argv): passive sends nothing to the target',
      file: 'passive-program.json',
      text: { test_groups: [USER_GROUPS[0]], plugins: [{ code: 'USR-T-001', group: 'web', type: 'passive', tool: 'TOOL_NMAP', argv: ['{host_name}'] }] },
      says: /a passive plugin's action is "links" \(links to public resources: nothing is sent to the target\), and only that: found "argv"/,
    },
    {
      name: 'a passive plugin with links and a program',
      file: 'passive-both.json',
      text: { test_groups: [USER_GROUPS[0]], plugins: [{ code: 'USR-T-001', group: 'web', type: 'passive', links: [{ title: 'x', url: 'https://example.org/' }], program: '/bin/true', argv: [] }] },
      says: /found "links" and "argv"/,
    },
    {
      name: 'an external plugin running a built-in check',
      file: 'external-check.json',
      text: { test_groups: [USER_GROUPS[0]], plugins: [{ code: 'USR-T-001', group: 'web', type: 'external', check: 'robots' }] },
      says: /an external plugin's action is "checklist"/,
    },
    {
      name: 'an active plugin with a checklist',
      file: 'active-checklist.json',
      text: { test_groups: [USER_GROUPS[0]], plugins: [{ code: 'USR-T-001', group: 'web', type: 'active', checklist: 'x' }] },
      says: /an active plugin's action is "argv" with "tool" or "program"/,
    },
    {
      name: 'a semi_passive plugin running a program',
      file: 'semi-program.json',
      text: { test_groups: [USER_GROUPS[0]], plugins: [{ code: 'USR-T-001', group: 'web', type: 'semi_passive', program: '/bin/true', argv: [] }] },
      says: /a semi_passive plugin's action is "check"/,
    },
    {
      name: 'a plugin without "name"',
      file: 'no-name.json',
      text: JSON.stringify({ test_groups: [{ code: 'USR-T-001', group: 'web', priority: 1, descrip: 'd', hint: '', url: '', mappings: {} }], plugins: [{ code: 'USR-T-001', group: 'web', type: 'external', title: 't', descrip: 'd', checklist: 'x' }] }),
      says: /"name" is required/,
    },
    {
      name: 'a plugin without "title"',
      file: 'no-title.json',
      text: JSON.stringify({ test_groups: [{ code: 'USR-T-001', group: 'web', priority: 1, descrip: 'd', hint: '', url: '', mappings: {} }], plugins: [{ code: 'USR-T-001', group: 'web', type: 'external', name: 'n', descrip: 'd', checklist: 'x' }] }),
      says: /"title" is required/,
    },
    {
      name: 'a plugin with an empty "descrip"',
      file: 'no-descrip.json',
      text: JSON.stringify({ test_groups: [{ code: 'USR-T-001', group: 'web', priority: 1, descrip: 'd', hint: '', url: '', mappings: {} }], plugins: [{ code: 'USR-T-001', group: 'web', type: 'external', name: 'n', title: 't', descrip: '', checklist: 'x' }] }),
      says: /"descrip" is required/,
    },
    {
      // docs/PLUGINS.md: a wrong field stops the start; a misspelt one was ignored (its default ran)
      name: 'a plugin with a misspelt field ("timout")',
      file: 'misspelt.json',
      text: JSON.stringify({ test_groups: [{ code: 'USR-T-001', group: 'web', priority: 1, descrip: 'd', hint: '', url: '', mappings: {} }], plugins: [{ code: 'USR-T-001', group: 'web', type: 'active', name: 'n', title: 't', descrip: 'd', program: '/bin/true', argv: [], timout: 5 }] }),
      says: /plugins\[0\] \(USR-T-001\): unknown field "timout" \(a misspelt one is ignored otherwise\)/,
    },
    {
      name: 'a test group with an unknown field, and a file with one',
      file: 'stray.json',
      text: JSON.stringify({ test_groups: [{ code: 'USR-T-001', group: 'web', priority: 1, descrip: 'd', hint: '', url: '', mappings: {}, prio: 2 }] }),
      says: /test_groups\[0\]: unknown field "prio"/,
    },
    {
      name: 'a file with a field beside plugins and test_groups',
      file: 'stray-top.json',
      text: JSON.stringify({ plugin: [] }),
      says: /unknown field "plugin" .*: a plugin file holds "plugins" and "test_groups" only/,
    },
    {
      name: 'a test group defined again',
      file: 'group-again.json',
      text: { test_groups: [{ code: 'OWTF-IG-001' }] },
      says: /test group OWTF-IG-001 is defined twice, here and in .*test-groups\.json/,
    },
  ];
  for (const { name, file, text, says } of bad) {
    test(`${name} stops the start with a message naming the file (openEngine throws)`, async () => {
      const dataDir = await tempDir();
      const path = await writePluginFile(dataDir, file, text as never);
      const { text: defaultsText, file: defaultsFile } = defaultConfiguration();
      const store = await openStore({ dir: dataDir, defaults: parseDefaults(defaultsText, defaultsFile), log: () => {} });
      try {
        await assert.rejects(openEngine({ store, dataDir, workers: 1, runTimeoutMs: 10_000, log: () => {} }), (err: Error) => {
          assert.ok(err.message.includes(path), `names ${path}: ${err.message}`);
          assert.match(err.message, says);
          return true;
        });
      } finally {
        await store.close();
        await rm(dataDir, { recursive: true, force: true });
      }
    });
  }

  for (const { name, file, text } of bad.slice(0, 2)) {
    test(`the compiled server exits non-zero on ${name}, naming the file`, async () => {
      const dataDir = await tempDir();
      const path = await writePluginFile(dataDir, file, text as never);
      try {
        const { code, stdout, stderr } = await runCli(['--port', '0', '--data-dir', dataDir, '--token', 'test-token-0123456789abcdef0123456789', '--workers', '0']);
        assert.notEqual(code, 0, stdout + stderr);
        assert.ok(stderr.includes(path), `stderr names ${path}: ${stderr}`);
        assert.doesNotMatch(stdout, /listening/);
        assert.doesNotMatch(stderr, /\n\s+at /, 'no stack trace');
      } finally {
        await rm(dataDir, { recursive: true, force: true });
      }
    });
  }

  test('the start logs each plugin file and what it added', async () => {
    const dataDir = await tempDir();
    const path = await writePluginFile(dataDir, 'mine.json', {
      test_groups: [USER_GROUPS[0]],
      plugins: [
        { code: 'USR-T-001', group: 'web', type: 'external', checklist: 'Look at {target_url}' },
        { code: 'USR-T-001', group: 'web', type: 'passive', links: [{ title: 'Search', url: 'https://example.org/?q={host_name}' }] },
      ],
    });
    const server = await startServer({ dataDir, workers: 0 });
    try {
      const lines = server.logs.filter((l) => l.startsWith('plugin file '));
      assert.ok(lines.includes(`plugin file ${path}: 2 plugin(s), 1 test group(s)`), lines.join('\n'));
      assert.ok(lines.some((l) => /web-external\.json: 77 plugin\(s\), 0 test group\(s\)$/.test(l)), lines.join('\n'));
      assert.ok(lines.some((l) => /test-groups\.json: 0 plugin\(s\), 88 test group\(s\)$/.test(l)), lines.join('\n'));
      assert.equal(lines.length, 8, 'seven shipped files and the user\'s');
    } finally {
      await server.close();
    }
  });

  test('a plugin file installed as a symlink, one named .JSON and one with a byte-order mark are read and logged like any other', async () => {
    const dataDir = await tempDir();
    const elsewhere = await tempDir();
    try {
      const real = await writePluginFile(elsewhere, 'kept-elsewhere.json', { test_groups: [{ code: 'USR-L-001' }], plugins: [{ code: 'USR-L-001', group: 'web', type: 'external', checklist: 'linked' }] });
      await mkdir(join(dataDir, 'plugins'), { recursive: true });
      await symlink(real, join(dataDir, 'plugins', 'linked.json'));
      const upper = await writePluginFile(dataDir, 'UPPER.JSON', { test_groups: [{ code: 'USR-L-002' }], plugins: [{ code: 'USR-L-002', group: 'web', type: 'external', checklist: 'upper' }] });
      const bom = await writePluginFile(dataDir, 'bom.json', { test_groups: [{ code: 'USR-L-003' }], plugins: [{ code: 'USR-L-003', group: 'web', type: 'external', checklist: 'bom' }] });
      await writeFile(bom, `\uFEFF${readFileSync(bom, 'utf8')}`);
      const server = await startServer({ dataDir, workers: 0 });
      try {
        const lines = server.logs.filter((l) => l.startsWith('plugin file '));
        for (const path of [join(dataDir, 'plugins', 'linked.json'), upper, bom]) assert.ok(lines.includes(`plugin file ${path}: 1 plugin(s), 1 test group(s)`), lines.join('\n'));
        const codes = (await get(server, '/api/v1/plugins/web/external/')).map((p: Plugin) => p.code);
        for (const code of ['USR-L-001', 'USR-L-002', 'USR-L-003']) assert.ok(codes.includes(code), code);
      } finally {
        await server.close();
      }
    } finally {
      await rm(dataDir, { recursive: true, force: true });
      await rm(elsewhere, { recursive: true, force: true });
    }
  });

  const unreadable: Array<[string, (dir: string) => Promise<void>, RegExp]> = [
    ['a directory named *.json', (dir) => mkdir(join(dir, 'broken.json')), /not a regular file/],
    ['a symlink to nothing', (dir) => symlink(join(dir, 'gone'), join(dir, 'broken.json')), /cannot be read \(ENOENT/],
    ['a file over 8 MiB', (dir) => writeFile(join(dir, 'broken.json'), `{"plugins":[]${' '.repeat(8 * 1024 * 1024)}}`), /bytes, larger than the 8 MiB a plugin file may hold/],
    // read as UTF-8, the byte became U+FFFD in the program's path without a word
    ['a file that is not UTF-8', (dir) => writeFile(join(dir, 'broken.json'), Buffer.from('{"plugins":[],"x":"caf\xe9"}', 'latin1')), /not UTF-8 text/],
  ];
  for (const [name, make, says] of unreadable) {
    test(`${name} in DATA_DIR/plugins stops the start with a message naming it, not a silent skip`, async () => {
      const dataDir = await tempDir();
      await mkdir(join(dataDir, 'plugins'), { recursive: true });
      await make(join(dataDir, 'plugins'));
      const { text: defaultsText, file: defaultsFile } = defaultConfiguration();
      const store = await openStore({ dir: dataDir, defaults: parseDefaults(defaultsText, defaultsFile), log: () => {} });
      try {
        await assert.rejects(openEngine({ store, dataDir, workers: 1, runTimeoutMs: 10_000, log: () => {} }), (err: Error) => {
          assert.ok(err.message.startsWith(`plugin file ${join(dataDir, 'plugins', 'broken.json')}: `), err.message);
          assert.match(err.message, says);
          return true;
        });
      } finally {
        await store.close();
        await rm(dataDir, { recursive: true, force: true });
      }
    });
  }

  test('a file that is not .json in DATA_DIR/plugins is left alone', async () => {
    const dataDir = await tempDir();
    await writePluginFile(dataDir, 'notes.txt', 'not a plugin file');
    const server = await startServer({ dataDir, workers: 0 });
    try {
      assert.ok((await get(server, '/api/v1/plugins/')).length > 0);
      assert.ok(!(await get(server, '/api/v1/plugins/')).some((p: Plugin) => p.file === 'notes.txt'));
    } finally {
      await server.close();
    }
  });
});

