import { test } from 'node:test';
import assert from 'node:assert/strict';
import { deriveTarget } from '../../src/store/targets.ts';

test('derived fields of a host name URL', () => {
  assert.deepEqual(deriveTarget(7, '  http://www.example.com/app?x=1  '), {
    id: 7,
    target_url: 'http://www.example.com/app?x=1',
    host_name: 'www.example.com',
    host_ip: '',
    port_number: '80',
    url_scheme: 'http',
    host_path: 'www.example.com/app',
    ip_url: '',
    top_domain: 'example.com',
    top_url: 'http://www.example.com:80',
    alternative_ips: [],
    scope: true,
    max_user_rank: -1,
    max_owtf_rank: -1,
  });
});

test('an explicit port, https default port, and a URL without a path', () => {
  assert.equal(deriveTarget(1, 'https://example.org:8443/')?.port_number, '8443');
  assert.equal(deriveTarget(1, 'https://example.org')?.port_number, '443');
  assert.equal(deriveTarget(1, 'https://example.org')?.host_path, 'example.org');
  assert.equal(deriveTarget(1, 'https://example.org/')?.host_path, 'example.org/');
});

test('IP literals fill host_ip, ip_url and alternative_ips', () => {
  const v4 = deriveTarget(1, 'http://192.168.1.10:8080/login')!;
  assert.equal(v4.host_ip, '192.168.1.10');
  assert.equal(v4.ip_url, 'http://192.168.1.10:8080/login');
  assert.deepEqual(v4.alternative_ips, ['192.168.1.10']);
  assert.equal(v4.top_domain, '192.168.1.10');
  const v6 = deriveTarget(1, 'http://[::1]:8000/')!;
  assert.equal(v6.host_name, '::1');
  assert.equal(v6.host_ip, '::1');
  assert.equal(v6.top_url, 'http://[::1]:8000');
});

test('anything but an absolute http(s) URL is refused', () => {
  for (const bad of ['', 'example.com', 'ftp://example.com/', 'javascript:alert(1)', 'http://', 'http:/x', 'http://exa mple.com/', 'http://a.com/\nx', 'http://a.com/\tx', `http://a.com/${'x'.repeat(2100)}`, 'mailto:a@b.c']) {
    assert.equal(deriveTarget(1, bad), undefined, JSON.stringify(bad));
  }
});

test('a URL without its authority as written (http:///path, a backslash) is refused by every new request (asWritten); a journal record from before still replays, oneHost or not', async () => {
  const { applyOp } = await import('../../src/store/ops.ts');
  const { emptyState } = await import('../../src/store/state.ts');
  const state = emptyState();
  applyOp(state, { op: 'createSession', name: 's' });
  applyOp(state, { op: 'activateSession', id: 1 });
  for (const url of ['http:///path', 'https:////x4.com', 'http://\\evil.example/', 'http://a.example\\@b.example/']) {
    assert.deepEqual(applyOp(state, { op: 'createTargets', urls: [url], oneHost: true, asWritten: true }), { ok: false, reason: 'invalid-url' }, url);
    const partial = applyOp(state, { op: 'addTargetsPartial', session: 1, urls: [url], oneHost: true, asWritten: true });
    assert.ok(partial.ok && partial.failed[0]?.reason === 'invalid-url', url);
  }
  assert.equal(state.targets.size, 0);
  // what the bug let in once replays as it was acknowledged: records without oneHost, and those of
  // the builds that checked oneHost but not the authority (they stopped the next start, or dropped
  // the targets and moved the later ones' ids)
  assert.ok(applyOp(state, { op: 'createTargets', urls: ['http:///path'] }).ok);
  assert.ok(applyOp(state, { op: 'createTargets', urls: ['https:////x4.com'], oneHost: true }).ok);
  const partial = applyOp(state, { op: 'addTargetsPartial', session: 1, urls: ['http://\\evil.example/', 'http://a.example\\@b.example/', 'https://later.example/'], oneHost: true });
  assert.ok(partial.ok && partial.added === 3 && partial.failed.length === 0, JSON.stringify(partial));
  const urls = ['http:///path', 'https:////x4.com', 'http://\\evil.example/', 'http://a.example\\@b.example/', 'https://later.example/'];
  assert.deepEqual(urls.map((url) => state.targetIdByUrl.get(url)), [1, 2, 3, 4, 5]);
  assert.equal(deriveTarget(0, 'http:///path')?.host_name, 'path');
});

test('a bulk add recorded by a build that may have refused a URL without its authority as written: replayed as added, and the start says so', async () => {
  const { mkdtemp, rm, writeFile } = await import('node:fs/promises');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const { openStore } = await import('../../src/store/store.ts');
  const dir = await mkdtemp(join(tmpdir(), 'assessd-legacy-'));
  try {
    const records = [
      { seq: 1, ops: [{ op: 'createSession', name: 'audit' }] },
      { seq: 2, ops: [{ op: 'addTargetsPartial', session: 1, urls: ['https://a.example/', 'http:///path'], oneHost: true }] },
      // what every request writes now: the rule said, nothing left to choose
      { seq: 3, ops: [{ op: 'addTargetsPartial', session: 1, urls: ['https://b.example/'], oneHost: true, asWritten: true }] },
    ];
    await writeFile(join(dir, 'journal.jsonl'), records.map((r) => `${JSON.stringify(r)}\n`).join(''));
    // the snapshot a directory has before its first record (a start writes it before it appends one)
    await writeFile(join(dir, 'sessions.json'), JSON.stringify({ version: 1, seq: 0, nextSessionId: 1, nextTargetId: 1, activeSessionId: 0, sessions: [], targets: [] }));
    const logs: string[] = [];
    const store = await openStore({ dir, defaults: [], log: (line) => logs.push(line) });
    try {
      assert.deepEqual(['https://a.example/', 'http:///path', 'https://b.example/'].map((url) => store.state.targetIdByUrl.get(url)), [1, 2, 3]);
      const notes = logs.filter((l) => l.includes('is a target, as the build that wrote the record may have made it'));
      assert.deepEqual(notes.map((l) => l.slice(0, l.indexOf(' is a target'))), ['journal record 2: "http:///path"']);
    } finally {
      await store.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
