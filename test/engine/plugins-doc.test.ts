import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { loadCatalogue } from '../../src/engine/catalogue.ts';
import { CHECK_RANKS } from '../../src/engine/checks/index.ts';
import { CHECK_NAMES, type CheckName } from '../../src/engine/checks/names.ts';
import { PROJECT_ROOT, shippedPluginFiles } from '../../src/paths.ts';

test("docs/PLUGINS.md's examples are plugin files the server accepts beside the shipped ones", async () => {
  const doc = await readFile(join(PROJECT_ROOT, 'docs', 'PLUGINS.md'), 'utf8');
  const blocks = [...doc.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => m[1].replace(/^ {3}/gm, ''));
  assert.ok(blocks.length >= 2, `${blocks.length} JSON examples`);
  // the how-to's file, and the network example (a lone plugin) with the test group it would need
  const file = JSON.parse(blocks.find((b) => b.includes('"test_groups"') && b.includes('LOCAL-TLS-001'))!);
  const lone = JSON.parse(blocks.find((b) => b.includes('LOCAL-SSH-001'))!);
  const user = [
    { file: 'local-tls.json', text: JSON.stringify(file) },
    { file: 'local-ssh.json', text: JSON.stringify({ test_groups: [{ code: lone.code, group: 'network', priority: 1, descrip: 'ssh' }], plugins: [lone] }) },
  ];
  const catalogue = loadCatalogue(shippedPluginFiles(), user, new Set(CHECK_NAMES));
  assert.equal(catalogue.get('active@LOCAL-TLS-001')?.plugin.group, 'web');
  assert.equal(catalogue.get('active@LOCAL-SSH-001')?.action.kind, 'program');
});

test('the shipped catalogue loads: a checklist for every web test group, the seven checks, programs by tool key', () => {
  const catalogue = loadCatalogue(shippedPluginFiles(), [], new Set(CHECK_NAMES));
  const web = catalogue.testGroups.filter((g) => g.group === 'web');
  assert.equal(web.length, 77);
  for (const group of web) assert.ok(catalogue.get(`external@${group.code}`), `no checklist for ${group.code}`);
  assert.deepEqual(catalogue.filter({ type: ['semi_passive'] }).map((p) => p.code).sort(), ['OWTF-CM-001', 'OWTF-CM-008', 'OWTF-IG-001', 'OWTF-IG-004', 'OWTF-SM-002', 'OWTF-WGP-001', 'OWTF-WGP-002']);
  for (const plugin of catalogue.filter({ type: ['active'] })) {
    const action = catalogue.get(plugin.key)!.action;
    assert.ok(action.kind === 'program' && action.tool?.startsWith('TOOL_'), plugin.key);
  }
});

test("docs/PLUGINS.md's table of built-in checks names each check once, with the ranks it gives", async () => {
  const doc = await readFile(join(PROJECT_ROOT, 'docs', 'PLUGINS.md'), 'utf8');
  const table = doc.slice(doc.indexOf('Built-in checks (`check`):'), doc.indexOf('Programs (`active`, `bruteforce`):'));
  const rows = table.split('\n').filter((line) => /^\| `[a-z-]+` \|/.test(line));
  assert.deepEqual(rows.map((row) => /^\| `([a-z-]+)`/.exec(row)![1]).sort(), [...CHECK_NAMES].sort());
  for (const row of rows) {
    const check = /^\| `([a-z-]+)`/.exec(row)![1] as CheckName;
    const rankCell = row.slice(row.lastIndexOf(' | ') + 3);
    const ranks = new Set([...rankCell.matchAll(/`([0-5])`/g)].map((m) => Number(m[1])));
    assert.deepEqual([...ranks].sort(), [...CHECK_RANKS[check]].sort(), `${check}: the doc says ${[...ranks]}, the code gives ${CHECK_RANKS[check]}`);
  }
});
