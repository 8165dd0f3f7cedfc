import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { syncBuiltinESMExports } from 'node:module';
import type { IncomingMessage } from 'node:http';
import { isIPv4 } from 'node:net';
import { createAccessCheck, hostName, isAllowedHostName } from '../../src/http/access.ts';
import { memoryLogins } from '../../src/store/logins.ts';

test('hostName: the name of a Host header, lowercase, without port or trailing dot; undefined when malformed', () => {
  const cases: [string, string | undefined][] = [
    ['Example.COM:8009', 'example.com'], ['localhost.', 'localhost'], ['127.0.0.1', '127.0.0.1'], ['[::1]:80', '::1'],
    ['[FE80::1]', 'fe80::1'], ['', undefined], [':8009', undefined], ['a b', undefined], ['a@b', undefined], ['a/b', undefined],
    ['[::1', undefined], ['[nope]:1', undefined], ['::1', undefined], ['host:port', undefined], ['host:123456', undefined],
  ];
  for (const [host, name] of cases) assert.equal(hostName(host), name, host);
});

test('isAllowedHostName: IP literals, localhost names, the machine, and the allowed list (.domain = domain and subdomains)', () => {
  const allowed = ['lab.example', '.corp.example'];
  for (const name of ['10.0.0.1', '::1', 'localhost', 'a.localhost', 'box', 'lab.example', 'corp.example', 'x.y.corp.example']) {
    assert.ok(isAllowedHostName(name, 'box', allowed), name);
  }
  for (const name of ['evil.example', 'x.lab.example', 'evilcorp.example', 'localhost.evil', '1.2.3.4.nip.io', 'box.evil']) {
    assert.ok(!isAllowedHostName(name, 'box', allowed), name);
  }
  // what a resolver may read as an address but is not one written out: a name, refused
  for (const name of ['0127.0.0.1', '127.1', '1.2.3', '256.0.0.1', '0x7f.0.0.1', '2130706433', '01.2.3.4', '1.2.3.4.', '1..2.3', '1.2.3.4.5', '١.2.3.4']) {
    assert.ok(!isAllowedHostName(name, 'box', []), name);
  }
});

test('the Host check reads IPv4 names as node\'s isIPv4 does (it no longer calls it: its pattern costs the first request)', () => {
  const digits = '0123456789.x';
  let seed = 7;
  const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  for (let i = 0; i < 50_000; i++) {
    let name = '';
    for (let n = Math.floor(random() * 16); n > 0; n--) name += digits[Math.floor(random() * digits.length)];
    assert.equal(isAllowedHostName(name, 'box', []), isIPv4(name), name);
  }
  for (const name of ['0.0.0.0', '255.255.255.255', '10.0.0.1', '192.168.001.1']) assert.equal(isAllowedHostName(name, 'box', []), isIPv4(name), name);
});

test('the token is compared in constant time: timingSafeEqual on equal-length digests, whatever the candidate length', () => {
  const calls: [number, number][] = [];
  const original = crypto.timingSafeEqual;
  crypto.timingSafeEqual = (a, b) => {
    calls.push([a.byteLength, b.byteLength]);
    return original(a, b);
  };
  syncBuiltinESMExports();
  try {
    const access = createAccessCheck({ allowedHosts: [], hostname: 'box', token: 'the-token', exempt: () => false, cookieName: () => 'c', logins: memoryLogins(), log: () => {} });
    assert.equal(access.tokenMatches('the-token'), true);
    assert.equal(access.tokenMatches('the-toke'), false);
    assert.equal(access.tokenMatches('the-token-and-more'), false);
    assert.equal(access.tokenMatches(''), false);
    const req = { headers: { host: 'localhost', authorization: 'Bearer x' }, socket: {}, url: '/' } as unknown as IncomingMessage;
    assert.equal(access.refusal(req, 'GET', '/api/v1/sessions/')?.status, 401);
    assert.equal(calls.length, 5);
    for (const [a, b] of calls) assert.ok(a === 32 && b === 32, `${a} vs ${b}`);
  } finally {
    crypto.timingSafeEqual = original;
    syncBuiltinESMExports();
  }
});

test('refused credentials: the first is logged at once, the rest counted into one line a minute later', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout', 'Date'] });
  const lines: string[] = [];
  const access = createAccessCheck({ allowedHosts: [], hostname: 'box', token: 't', exempt: () => false, cookieName: () => 'c', logins: memoryLogins(), log: (l) => lines.push(l) });
  for (let i = 0; i < 5; i++) access.noteFailure('a wrong token', '10.0.0.9');
  assert.equal(lines.length, 1);
  assert.match(lines[0], /refused a wrong token from 10\.0\.0\.9/);
  t.mock.timers.tick(60_000);
  assert.equal(lines.length, 2);
  assert.match(lines[1], /refused 4 more requests/);
  access.noteFailure('a wrong token', '10.0.0.9');
  assert.equal(lines.length, 2, 'still within a minute of the last line');
});
