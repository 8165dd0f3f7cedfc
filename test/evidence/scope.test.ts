/** Scope: the host and port a URL names, as the proxy's recorder, the bundle import and the forwarder read them. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bareHost, hostAndPort, pathAsWritten, percentEncoded, scopeTest } from '../../src/evidence/scope.ts';
import { sessionTokens } from '../../src/evidence/record.ts';
import { requestAsCode } from '../../src/evidence/code.ts';

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

test('pathAsWritten: the path and query as written (dot segments, backslashes and quotes kept), no fragment, what a request line cannot carry percent-encoded', () => {
  assert.equal(pathAsWritten('http://h:1/echo/../../etc/passwd'), '/echo/../../etc/passwd');
  assert.equal(pathAsWritten('http://h/a\\..\\b?x=<script>"\''), '/a\\..\\b?x=<script>"\'');
  assert.equal(pathAsWritten('http://h/%2e%2e/./x'), '/%2e%2e/./x');
  assert.equal(pathAsWritten('http://h'), '/');
  assert.equal(pathAsWritten('http://h?x=1'), '/?x=1');
  assert.equal(pathAsWritten('http://user:pw@h/x#part'), '/x');
  // a URL parser ends the authority at a backslash too: the same host, the same path
  assert.equal(pathAsWritten('http://h\\p/q'), '/p/q');
  assert.equal(pathAsWritten('/a/./b?c'), '/a/./b?c');
  // the scheme followed by any run of slashes and backslashes, or none, as a URL parser reads http(s)
  for (const [url, path] of [['http:///h:1/y', '/y'], ['http:////x/y', '/y'], ['http:/x/a//b', '/a//b'], ['http:x/y', '/y'], ['HTTP:\\\\x\\y', '/y'], ['http://x?q', '/?q']]) {
    assert.equal(pathAsWritten(url!), path, url);
    assert.equal(new URL(url!).host === 'x' || new URL(url!).host === 'h:1', true, `${url}: the host a URL parser reads is the one skipped`);
  }
  assert.equal(pathAsWritten('http://h/a b\u0001c'), '/a%20b%01c');
  // what a URL parser removes first: the same path as the host it reads (the authority was read twice)
  for (const url of ['\u0001http://h:1/ctl', 'ht\ttp://h:1/ctl', ' http://h:1/c\tt\nl\r \u0000', 'http://h:1/ctl\u001f']) {
    assert.equal(pathAsWritten(url), '/ctl', JSON.stringify(url));
    assert.equal(new URL(url).pathname, '/ctl', JSON.stringify(url));
  }
  assert.equal(pathAsWritten('http://h/\u00e9\u{1F600}'), '/%C3%A9%F0%9F%98%80');
  assert.equal(pathAsWritten('http://h/\ud800'), '/%EF%BF%BD');
});

test('percentEncoded: what a character at a time wrote (seeded sweep of every kind of character: ASCII, controls, DEL, Latin-1, astral, lone surrogates), in one pass over the bytes', () => {
  const aCharacterAtATime = (text: string) => text.replace(/[^\x21-\x7e]/gu, (c) => [...Buffer.from(c, 'utf8')].map((byte) => `%${byte.toString(16).toUpperCase().padStart(2, '0')}`).join(''));
  let seed = 2026;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const pool = ['a', 'Z', '/', '%', '~', '!', ' ', '\x00', '\x1f', '\x7f', '\x80', 'ÿ', 'é', '\u2028', '\u{1F600}', '\ud800', '\udc00'];
  for (let i = 0; i < 5000; i++) {
    let text = '';
    for (let n = Math.floor(random() * 12); n > 0; n--) text += pool[Math.floor(random() * pool.length)];
    assert.equal(percentEncoded(text), aCharacterAtATime(text), JSON.stringify(text));
  }
  const plain = '/a/b?c=d';
  assert.equal(percentEncoded(plain), plain);
});

test('sessionTokens: the attributes a browser reads, no other (an attribute named name or value does not rename the cookie)', () => {
  assert.deepEqual(JSON.parse(sessionTokens([['Set-Cookie', 'real=1; name=evil; value=forged; constructor=y; Path=/; HttpOnly; Max-Age=5']])), [
    { name: 'real', value: '1', path: '/', httponly: true, max_age: '5' },
  ]);
});

test('copy as fetch: when fetch would change the recorded path (it resolves .. and encodes quotes), a comment says what it sends instead', () => {
  const code = (url: string) => requestAsCode({ method: 'GET', url, headers: [], body: Buffer.alloc(0) }, ['fetch']).toString();
  assert.match(code('http://h/a/../b?q=\'x'), /^\/\/ fetch sends the path \/b\?q=%27x, not the recorded \/a\/\.\.\/b\?q='x \(/m);
  assert.doesNotMatch(code('http://h/a/b?q=1'), /fetch sends the path/);
});
