/** Scope: the host and port a URL names, as the proxy's recorder, the bundle import and the forwarder read them. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bareHost, hostAndPort, scopeTest } from '../../src/evidence/scope.ts';

test('hostAndPort: lower case, IPv6 without brackets, the scheme\'s port when none is given (ws and wss as http and https)', () => {
  assert.deepEqual(hostAndPort('http://Shop.Example/a'), { host: 'shop.example', port: '80' });
  assert.deepEqual(hostAndPort('https://shop.example/'), { host: 'shop.example', port: '443' });
  assert.deepEqual(hostAndPort('ws://shop.example/live'), { host: 'shop.example', port: '80' });
  assert.deepEqual(hostAndPort(new URL('wss://shop.example/live')), { host: 'shop.example', port: '443' });
  assert.deepEqual(hostAndPort('https://[2001:DB8::7]:8443/x'), { host: '2001:db8::7', port: '8443' });
  assert.equal(hostAndPort('not a url'), undefined);
});

test('bareHost: a URL\'s or an authority\'s host as a socket takes it', () => {
  assert.equal(bareHost(new URL('http://[::1]:8009/')), '::1');
  assert.equal(bareHost('[::1]'), '::1');
  assert.equal(bareHost(new URL('http://Shop.example/')), 'shop.example');
  assert.equal(bareHost('10.0.0.1'), '10.0.0.1');
});

test('scopeTest: the target\'s host and port, whatever the scheme says of the port', () => {
  const inScope = scopeTest('Shop.Example', '443');
  assert.equal(inScope('https://shop.example/a'), true);
  assert.equal(inScope('wss://shop.example/live'), true);
  assert.equal(inScope('http://shop.example/'), false);
  assert.equal(inScope('https://shop.example:8443/'), false);
  assert.equal(inScope('https://other.example/'), false);
});
