/**
 * The shipped program plugins (web/active, network/active) and links (web/passive) run through the
 * API with stand-in programs: each argv element as the template says, the target's values whole,
 * configuration placeholders filled, nmap's XML (written where -oX says) ranked by the parser.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { addTarget, configure, get, outputs, queue, script, scriptDir, waitFor, type Output } from '../helpers/engine.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

const FIXTURES = new URL('../engine/fixtures/', import.meta.url).pathname;
const TOOL_KEYS = ['TOOL_NMAP', 'TOOL_WHATWEB', 'TOOL_WAFW00F', 'TOOL_GOBUSTER', 'TOOL_ARACHNI_BIN', 'TOOL_NIKTO_BIN', 'TOOL_WAPITI_BIN', 'TOOL_SKIPFISH_BIN'];

interface Plugin {
  key: string;
  code: string;
  group: string;
  type: string;
}

let tools: string;
/** Prints each argument as [arg]; copies `xml` to the path after -oX. */
let fake: (xml: string | null, name: string) => Promise<string>;
before(async () => {
  tools = await scriptDir();
  fake = (xml, name) =>
    script(
      tools,
      name,
      [
        'for a in "$@"; do printf "[%s]\\n" "$a"; done',
        'prev=""',
        `for a in "$@"; do if [ "$prev" = "-oX" ] && [ -n '${xml ?? ''}' ]; then cp '${xml ?? ''}' "$a"; fi; prev="$a"; done`,
      ].join('\n'),
    );
});
after(() => rm(tools, { recursive: true, force: true }));

async function runEvery(s: TestServer, id: number, form: Record<string, string | string[]>, count: number): Promise<Output[]> {
  assert.equal(await queue(s, { id: String(id), ...form }), count);
  return waitFor('every run', async () => {
    const outs = await outputs(s, id);
    return outs.length === count && outs.every((o) => o.status !== 'Running') ? outs : undefined;
  }, 15_000);
}

const argvOf = (out: Output) => [...out.output!.matchAll(/^\[(.*)\]$/gm)].map((m) => m[1]!);

describe('the shipped program plugins with stand-in programs', () => {
  let server: TestServer;
  let id: number;
  let active: Plugin[];
  let outs: Output[];
  before(async () => {
    server = await startServer({ workers: 2 });
    const program = await fake(join(FIXTURES, 'nmap-ftp-anon-http.xml'), 'fake-tool.sh');
    await configure(server, Object.fromEntries(TOOL_KEYS.map((k) => [k, program])));
    id = await addTarget(server, 'http://a.example:8080/app/');
    active = (await get(server, '/api/v1/plugins/')).filter((p: Plugin) => p.type === 'active');
    outs = await runEvery(server, id, { type: 'active' }, active.length);
  });
  after(() => server.close());

  test('every web/active and network/active plugin ran Successful, exit code 0', () => {
    assert.ok(active.length >= 6 + 10);
    for (const out of outs) {
      assert.equal(out.status, 'Successful', `${out.plugin_group}/${out.plugin_key}: ${out.error}`);
      assert.equal(out.exit_code, 0, out.plugin_key);
    }
  });

  test('the target\'s values arrive as whole argv elements; {output_dir} is the run\'s directory', () => {
    for (const out of outs) {
      const argv = argvOf(out);
      const dir = join(server.dataDir, 'outputs', String(id), out.plugin_group, out.plugin_type, out.plugin_code);
      assert.ok(argv.length > 0, `${out.plugin_key}: ${out.output}`);
      assert.equal(out.output_path, `${id}/${out.plugin_group}/${out.plugin_type}/${out.plugin_code}`);
      for (const arg of argv) {
        assert.doesNotMatch(arg, /\{[a-z_:A-Z]+\}/, `${out.plugin_key}: a placeholder left in ${arg}`);
        const at = arg.indexOf(server.dataDir);
        if (at >= 0) assert.ok(arg.slice(at).startsWith(dir), `${out.plugin_key}: ${arg} is under ${dir}`);
      }
      assert.ok(
        argv.some((a) => a === 'a.example' || a.includes('http://a.example:8080/app/') || a.includes('http://a.example:8080')),
        `${out.plugin_key} names the target: ${JSON.stringify(argv)}`,
      );
    }
  });

  test('nmap plugins: -oX names DATA_DIR/outputs/.../nmap.xml, the XML is ranked (anonymous FTP: 3) with findings', () => {
    const nmap = outs.filter((o) => argvOf(o).includes('-oX'));
    assert.ok(nmap.length >= 11, `${nmap.length} nmap runs`);
    for (const out of nmap) {
      const argv = argvOf(out);
      const xml = argv[argv.indexOf('-oX') + 1]!;
      assert.equal(xml, join(server.dataDir, 'outputs', out.output_path, 'nmap.xml'));
      assert.equal(argv.at(-1), 'a.example', 'the host is the last argument, whole');
      assert.equal(out.owtf_rank, 3, `${out.plugin_key}: ${JSON.stringify(out.findings)}`);
      assert.ok(out.findings.some((f) => f.rank === 3 && /ftp/i.test(f.title + f.detail)));
    }
  });

  test('the web/active nmap scan of the target\'s port gets -p 8080', () => {
    const discovery = outs.find((o) => o.plugin_key === 'active@OWTF-IG-005' && o.plugin_group === 'web');
    assert.ok(discovery);
    const argv = argvOf(discovery);
    assert.equal(argv[argv.indexOf('-p') + 1], '8080');
  });

  test('the network probes get their ports from the configuration', async () => {
    const config: { key: string; value: string }[] = await get(server, '/api/v1/configuration?key=FTP_PORT_NUMBER');
    assert.equal(config.length, 1);
    const ftp = outs.find((o) => o.plugin_key === 'active@PTES-001');
    assert.ok(ftp);
    const argv = argvOf(ftp);
    assert.equal(argv[argv.indexOf('-p') + 1], config[0]!.value);
  });

  test('the target\'s max_owtf_rank follows the parsed ranks', async () => {
    assert.equal((await get(server, `/api/v1/targets/${id}`)).max_owtf_rank, 3);
  });
});

describe('nmap output that cannot be ranked', () => {
  test('an nmap run that wrote no XML is not ranked passing: owtf_rank -1, error says why', async () => {
    const server = await startServer({ workers: 1 });
    try {
      await configure(server, { TOOL_NMAP: await fake(null, 'no-xml.sh') });
      const id = await addTarget(server, 'http://a.example/');
      const [out] = await runEvery(server, id, { group: 'web', type: 'active', code: 'OWTF-IG-005' }, 1);
      assert.equal(out!.status, 'Successful');
      assert.match(out!.error ?? '', /nmap XML/i);
      assert.equal(out!.owtf_rank, -1, `no XML is not "passing": ${JSON.stringify(out!.findings)}`);
    } finally {
      await server.close();
    }
  });

  test('an nmap XML with no open port ranks 0', async () => {
    const server = await startServer({ workers: 1 });
    try {
      await configure(server, { TOOL_NMAP: await fake(join(FIXTURES, 'nmap-closed.xml'), 'closed.sh') });
      const id = await addTarget(server, 'http://a.example/');
      const [out] = await runEvery(server, id, { group: 'web', type: 'active', code: 'OWTF-IG-005' }, 1);
      assert.equal(out!.owtf_rank, 0, JSON.stringify(out!.findings));
    } finally {
      await server.close();
    }
  });

  test('a file that is not nmap XML is not ranked passing: owtf_rank -1', async () => {
    const server = await startServer({ workers: 1 });
    try {
      const garbage = join(tools, 'garbage.xml');
      await (await import('node:fs/promises')).writeFile(garbage, 'this is not xml at all\n');
      await configure(server, { TOOL_NMAP: await fake(garbage, 'garbage.sh') });
      const id = await addTarget(server, 'http://a.example/');
      const [out] = await runEvery(server, id, { group: 'web', type: 'active', code: 'OWTF-IG-005' }, 1);
      assert.equal(out!.owtf_rank, -1, JSON.stringify(out!.findings));
    } finally {
      await server.close();
    }
  });
});

describe('the shipped web/passive plugins', () => {
  test('their output is the links with the target filled in, Successful, ranks -1, no request sent', async () => {
    const server = await startServer({ workers: 2 });
    try {
      const id = await addTarget(server, 'http://shop.a.example/');
      const passive = (await get(server, '/api/v1/plugins/web/passive')) as Plugin[];
      assert.ok(passive.length > 0);
      const outs = await runEvery(server, id, { group: 'web', type: 'passive' }, passive.length);
      for (const out of outs) {
        assert.equal(out.status, 'Successful');
        assert.deepEqual([out.owtf_rank, out.user_rank], [-1, -1]);
        assert.match(out.output!, /https?:\/\//);
        assert.doesNotMatch(out.output!, /\{(host_name|top_domain|target_url|host|top_url)\}/, out.output);
        assert.ok(out.output!.includes('shop.a.example') || out.output!.includes('a.example'), out.output);
      }
    } finally {
      await server.close();
    }
  });
});

