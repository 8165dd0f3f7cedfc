/** SIGKILL of the compiled server during HAR imports: after a restart each import is there whole, or not at all. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { spawnServer, tempDir, type ChildServer } from '../helpers/server.ts';
import { harOf } from './helpers.ts';

const ENTRIES = 1500;

/** Sends a HAR a piece at a time; resolves with the status, or undefined when the server died first. */
function upload(server: ChildServer, har: Buffer, onProgress: (sent: number) => void): Promise<number | undefined> {
  const url = new URL(`${server.url}/api/v1/targets/1/transactions/`);
  return new Promise((resolve) => {
    const req = httpRequest(
      { hostname: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers: { 'content-type': 'application/json', 'content-length': har.length, authorization: `Bearer ${server.token}` } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode));
        res.on('error', () => resolve(undefined));
      },
    );
    req.on('error', () => resolve(undefined));
    let sent = 0;
    const piece = 256 * 1024;
    const next = () => {
      if (sent >= har.length) return req.end();
      const chunk = har.subarray(sent, sent + piece);
      sent += chunk.length;
      onProgress(sent);
      if (req.write(chunk)) setImmediate(next);
      else req.once('drain', next);
    };
    next();
  });
}

async function tags(server: ChildServer): Promise<Map<string, number>> {
  const res = await fetch(`${server.url}/api/v1/targets/1/transactions/?limit=10000`, { headers: { authorization: `Bearer ${server.token}` } });
  const rows = ((await res.json()) as { data: { url: string }[] }).data;
  const count = new Map<string, number>();
  for (const { url } of rows) {
    const tag = new URL(url).pathname.split('/')[1];
    count.set(tag, (count.get(tag) ?? 0) + 1);
  }
  return count;
}

test(`SIGKILL while a HAR of ${ENTRIES} entries is sent, parsed or committed: after a restart it is there whole or not at all`, { timeout: 300_000 }, async (t) => {
  const dir = await tempDir('assessd-kill-tx-');
  const first = await spawnServer(['--port', '0', '--data-dir', dir]);
  await fetch(`${first.url}/api/v1/targets/`, { method: 'POST', headers: { authorization: `Bearer ${first.token}` }, body: new URLSearchParams({ target_url: 'https://a.example/' }) });
  first.proc.kill('SIGTERM');
  await first.exited;
  const acknowledged = new Set<string>();
  const outcomes: string[] = [];
  // where the kill lands: a fraction of the bytes sent, or after all of them (parse, fsync, commit)
  const when = [0.2, 0.6, 0.95, 1, 1, 1];
  for (const [round, fraction] of when.entries()) {
    const tag = `r${round}`;
    const har = Buffer.from(harOf(Array.from({ length: ENTRIES }, (_, i) => ({ url: `https://a.example/${tag}/${i}`, responseBody: `${tag} ${i} `.padEnd(4000, '.') }))));
    const server = await spawnServer(['--port', '0', '--data-dir', dir]);
    let killed = false;
    const kill = () => {
      if (killed) return;
      killed = true;
      server.proc.kill('SIGKILL');
    };
    const status = upload(server, har, (sent) => {
      if (fraction < 1 && sent >= har.length * fraction) kill();
    });
    // after every byte: a little later, while the server parses, writes or commits
    if (fraction === 1) setTimeout(kill, 50 + round * 120);
    const answer = await status;
    kill();
    await server.exited;
    if (answer === 201) acknowledged.add(tag);

    const check = await spawnServer(['--port', '0', '--data-dir', dir]);
    const present = await tags(check);
    check.proc.kill('SIGTERM');
    await check.exited;
    for (const [seen, count] of present) assert.equal(count, ENTRIES, `round ${round}: import ${seen} is there in part (${count} of ${ENTRIES})`);
    for (const tagAcked of acknowledged) assert.ok(present.has(tagAcked), `round ${round}: the acknowledged import ${tagAcked} is lost`);
    outcomes.push(`${tag}: ${answer ?? 'killed'}, ${present.has(tag) ? 'there' : 'not there'}`);
  }
  // what the kills cut short was swept at the restarts: one file per import that committed
  const files = existsSync(join(dir, 'transactions')) ? readdirSync(join(dir, 'transactions')) : [];
  assert.equal(files.length, outcomes.filter((o) => o.endsWith(', there')).length, files.join(', '));
  t.diagnostic(`${outcomes.join('; ')}; files: ${files.join(', ')}`);
  assert.ok(outcomes.some((o) => o.includes('not there')), 'no kill landed before the commit');
  await rm(dir, { recursive: true, force: true });
});
