/**
 * The shipped tool plugins run for real through the API (nmap, and gobuster with Debian's dirb
 * wordlist, as .ci/run installs them) against local servers, with their default configuration:
 * what a tester queueing them gets. Servers: https with an expired certificate (signed by a test
 * CA) and with a self-signed one, http answering OPTIONS with PUT and DELETE and echoing TRACE.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { checkProgram } from '../../src/engine/process-group.ts';
import { makeCertificates, type KeyPair } from '../engine/fixtures/certs.ts';
import { addTarget, queue, waitForOutput, type Output } from '../helpers/engine.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

const nmapMissing = !(await checkProgram('nmap')).ok;
const gobusterMissing = !(await checkProgram('gobuster')).ok || !existsSync('/usr/share/dirb/wordlists/common.txt');
// CI installs them (.ci/run): there, a missing tool is a failure, not a skip
const skipNmap = nmapMissing && !process.env.CI ? 'nmap is not installed (apt-get install nmap)' : false;
const skipGobuster = gobusterMissing && !process.env.CI ? 'gobuster or dirb is not installed (apt-get install gobuster dirb)' : false;

/** A small site: /admin/ exists, TRACE is echoed, OPTIONS advertises write methods. */
function site(req: IncomingMessage, res: ServerResponse): void {
  if (req.method === 'TRACE') {
    const head = `${req.method} ${req.url} HTTP/${req.httpVersion}\r\n${req.rawHeaders.map((v, i) => (i % 2 === 0 ? `${v}: ` : `${v}\r\n`)).join('')}`;
    res.writeHead(200, { 'content-type': 'message/http' }).end(head);
  } else if (req.method === 'OPTIONS') {
    res.writeHead(200, { allow: 'GET, HEAD, POST, PUT, DELETE, OPTIONS, TRACE' }).end();
  } else if (req.url === '/admin' || req.url === '/admin/') {
    res.writeHead(200, { 'content-type': 'text/html' }).end('<title>admin</title>');
  } else if (req.url === '/') {
    res.writeHead(200, { 'content-type': 'text/html' }).end('<title>home</title>');
  } else {
    res.writeHead(404).end('not found');
  }
}

const servers: Server[] = [];
async function listen(server: Server): Promise<number> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}
const https = (pair: KeyPair) => listen(createHttpsServer({ key: pair.key, cert: pair.cert }, site));

let api: TestServer;
before(async () => {
  api = await startServer({ workers: 3, runTimeoutMs: 120_000 });
});
after(async () => {
  await api?.close();
  for (const server of servers) server.close();
});

const titles = (out: Output) => out.findings.map((f) => `[${f.rank}] ${f.title}`);

/** Queues one shipped web/active plugin on a new target and waits for its end. */
async function run(url: string, code: string): Promise<Output> {
  const id = await addTarget(api, url);
  assert.equal(await queue(api, { id: String(id), group: 'web', type: 'active', code }), 1);
  return waitForOutput(api, id, `active@${code}`, undefined, 110_000);
}

// nmap waits on the network most of its run: the scans go side by side
describe('nmap, for real', { skip: skipNmap, concurrency: true }, () => {
  const certs = makeCertificates();

  test('TLS (active@OWTF-CM-001) on an https port with an expired certificate: ranked 3 "expired", not just an open port', async () => {
    const out = await run(`https://localhost:${await https(certs.expired)}/`, 'OWTF-CM-001');
    assert.equal(out.status, 'Successful', JSON.stringify(out).slice(0, 2000));
    assert.equal(out.exit_code, 0);
    assert.ok(out.findings.some((f) => f.rank === 3 && /^Certificate expired on 2020-02-01 on \d+\/tcp$/.test(f.title)), titles(out).join('\n'));
    assert.ok(!out.findings.some((f) => /self-signed|not for localhost/.test(f.title)), titles(out).join('\n'));
    assert.ok(out.owtf_rank >= 3);
  });

  test('TLS (active@OWTF-CM-001) on a self-signed certificate: ranked 3 "self-signed"', async () => {
    const out = await run(`https://localhost:${await https(certs.selfSigned)}/`, 'OWTF-CM-001');
    assert.equal(out.status, 'Successful', JSON.stringify(out).slice(0, 2000));
    assert.ok(out.findings.some((f) => f.rank === 3 && /^Certificate self-signed/.test(f.title)), titles(out).join('\n'));
  });

  test('HTTP methods (active@OWTF-CM-008): TRACE echoed ranked 3, PUT and DELETE advertised ranked 2', async () => {
    const out = await run(`http://localhost:${await listen(createHttpServer(site))}/`, 'OWTF-CM-008');
    assert.equal(out.status, 'Successful', JSON.stringify(out).slice(0, 2000));
    assert.equal(out.owtf_rank, 3);
    const seen = titles(out);
    assert.ok(seen.some((t) => /^\[3\] TRACE is enabled/.test(t)), seen.join('\n'));
    assert.ok(seen.some((t) => /^\[2\] Write methods advertised: PUT DELETE/.test(t)), seen.join('\n'));
    assert.ok(seen.some((t) => /^\[1\] Open port \d+\/tcp/.test(t)), 'the open port stays information');
    // the files nmap wrote are there, the XML the findings came from among them
    assert.match(await readFile(join(api.dataDir, 'outputs', out.output_path, 'nmap.xml'), 'utf8'), /<script id="http-trace" output="TRACE is enabled"/);
  });
});

describe('gobuster, for real', { skip: skipGobuster }, () => {
  test('active@OWTF-CM-006 with its default wordlist (dirb\'s common.txt) on a self-signed https target: Successful, exit 0, /admin found', async () => {
    const certs = makeCertificates();
    const out = await run(`https://localhost:${await https(certs.selfSigned)}/`, 'OWTF-CM-006');
    assert.equal(out.status, 'Successful', JSON.stringify(out).slice(0, 2000));
    assert.equal(out.exit_code, 0);
    const found = await readFile(join(api.dataDir, 'outputs', out.output_path, 'gobuster.txt'), 'utf8');
    assert.match(found, /^\/admin\s+\(Status: (200|301)\)/m);
  });
});
