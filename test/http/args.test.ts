import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isFormContentType, parseFormArgs } from '../../src/http/args.ts';
import { acceptsGzip } from '../../src/api/page.ts';

test('query arguments come before body arguments in one multi-map', () => {
  const args = parseFormArgs('name=q&x=1', 'name=b&y=2&x=3');
  assert.equal(args.get('name'), 'q');
  assert.deepEqual(args.getAll('name'), ['q', 'b']);
  assert.deepEqual(args.getAll('x'), ['1', '3']);
  assert.equal(args.get('y'), '2');
});

test('form decoding: + is a space, percent-escapes are UTF-8', () => {
  const args = parseFormArgs('', 'name=a+b%20c%C3%A9');
  assert.equal(args.get('name'), 'a b cé');
});

test('malformed escapes and invalid UTF-8 never throw', () => {
  const args = parseFormArgs('a=%ZZ&b=%FF', 'c=%');
  assert.equal(args.get('a'), '%ZZ');
  assert.equal(args.get('b'), '\uFFFD');
  assert.equal(args.get('c'), '%');
});

test('form content types: urlencoded (with parameters, any case) or none', () => {
  assert.equal(isFormContentType(undefined), true);
  assert.equal(isFormContentType('application/x-www-form-urlencoded'), true);
  assert.equal(isFormContentType('Application/X-WWW-Form-Urlencoded; charset=UTF-8'), true);
  assert.equal(isFormContentType('application/json'), false);
  assert.equal(isFormContentType('multipart/form-data; boundary=x'), false);
});

test('gzip negotiation honours q=0 and *', () => {
  assert.equal(acceptsGzip(undefined), false);
  assert.equal(acceptsGzip('gzip, deflate, br'), true);
  assert.equal(acceptsGzip('br;q=1.0, gzip;q=0.8'), true);
  assert.equal(acceptsGzip('gzip;q=0'), false);
  assert.equal(acceptsGzip('identity'), false);
  assert.equal(acceptsGzip('*'), true);
  assert.equal(acceptsGzip('*;q=1, gzip;q=0'), false, 'a named gzip overrides *');
  assert.equal(acceptsGzip('gzip;q=0, *'), false);
  assert.equal(acceptsGzip('identity, *;q=0'), false);
  assert.equal(acceptsGzip('deflate, *;q=0.5'), true);
  // RFC 9110 8.4.1.3: x-gzip is gzip
  assert.equal(acceptsGzip('x-gzip'), true);
  assert.equal(acceptsGzip('X-GZIP;q=0.5, *;q=0'), true);
  assert.equal(acceptsGzip('x-gzip;q=0'), false);
});
