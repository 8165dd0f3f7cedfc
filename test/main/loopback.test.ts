/** isLoopback and unmapped (src/options.ts): which hosts reach only this machine, held to node's own reading of an IPv4 address. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isIPv4 } from 'node:net';
import { isLoopback, unmapped } from '../../src/options.ts';

/** The rule, written with node's isIPv4: localhost, ::1, or an IPv4 address (mapped or not) in 127/8. */
function reference(host: string): boolean {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  const v4 = unmapped(bare);
  return bare.toLowerCase() === 'localhost' || bare === '::1' || (isIPv4(v4) && v4.startsWith('127.'));
}

test('loopback hosts, written every way, and names that only look like them', () => {
  const yes = ['127.0.0.1', '127.255.255.255', '127.1.2.3', 'localhost', 'LocalHost', '::1', '[::1]', '::ffff:127.0.0.1', '::FFFF:127.0.0.2', '::ffff:7f00:1', '[::ffff:7f00:1]'];
  const no = ['127.1', '127.0.0.01', '127.256.0.1', '127.0.0.1.', '127.0.0.1x', '127..0.1', '127.0.0.+1', ' 127.0.0.1', '127.0.0.1 ', '128.0.0.1', '::ffff:8.8.8.8', '::ffff:808:808', '8.8.8.8', 'example.com', '::2', '', '::ffff:'];
  for (const host of yes) assert.equal(isLoopback(host), true, host);
  for (const host of no) assert.equal(isLoopback(host), false, host);
});

test('a seeded sweep of near-addresses: the same answer as node\'s isIPv4 gives', () => {
  let seed = 20261127;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const pieces = ['127', '0', '00', '01', '1', '9', '10', '99', '255', '256', '999', '1000', '', '+1', '-1', 'a', ' ', '0x7f', '١'];
  for (let i = 0; i < 5000; i++) {
    const count = 3 + Math.floor(next() * 3);
    const parts = Array.from({ length: count }, (_, k) => (k === 0 && next() < 0.8 ? '127' : pieces[Math.floor(next() * pieces.length)]!));
    const host = (next() < 0.2 ? '::ffff:' : '') + parts.join('.');
    assert.equal(isLoopback(host), reference(host), JSON.stringify(host));
  }
});
