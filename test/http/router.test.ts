import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRouter, splitPath } from '../../src/http/router.ts';

function sessionsRouter() {
  const router = createRouter<string>();
  router.add('GET', '/api/v1/sessions', 'list');
  router.add('GET', '/api/v1/sessions/{session_id:int}', 'one');
  router.add('GET', '/api/v1/sessions/{action:word}', 'action');
  router.add('PATCH', '/api/v1/sessions/{session_id:int}/{action:word}', 'patch');
  router.add('GET', '/static/*', 'static');
  return router;
}

test('a literal path matches with and without one trailing slash, not with two', () => {
  const router = sessionsRouter();
  assert.equal(router.match('GET', '/api/v1/sessions').kind, 'found');
  assert.equal(router.match('GET', '/api/v1/sessions/').kind, 'found');
  assert.equal(router.match('GET', '/api/v1/sessions//').kind, 'not-found');
});

test('typed parameters: int takes digits only, word takes letters and underscores only', () => {
  const router = sessionsRouter();
  assert.deepEqual(router.match('GET', '/api/v1/sessions/42'), { kind: 'found', handler: 'one', params: { session_id: '42' }, rest: [] });
  assert.deepEqual(router.match('GET', '/api/v1/sessions/add_x'), { kind: 'found', handler: 'action', params: { action: 'add_x' }, rest: [] });
  for (const bad of ['-1', '1.5', '4a', 'a4', '%20', '1e3']) {
    assert.equal(router.match('GET', `/api/v1/sessions/${bad}`).kind, 'not-found', bad);
  }
});

test('segments are percent-decoded once before matching', () => {
  const router = sessionsRouter();
  assert.deepEqual(router.match('GET', '/api/v1/sessions/%34%32'), { kind: 'found', handler: 'one', params: { session_id: '42' }, rest: [] });
  // decoded once: %2531 is the text "%31", not a number
  assert.equal(router.match('GET', '/api/v1/sessions/%2531').kind, 'not-found');
  assert.equal(router.match('GET', '/api/v1/sessions/4%2F2').kind, 'not-found');
});

test('a segment that is not valid percent-encoding stays as it is, and matches nothing typed', () => {
  assert.equal(sessionsRouter().match('GET', '/api/v1/sessions/%E0%A4%A').kind, 'not-found');
  assert.deepEqual(splitPath('/%/a%zz/%41'), ['%', 'a%zz', 'A']);
});

test('a known path with another method is method-not-allowed, listing the methods (HEAD with GET)', () => {
  const result = sessionsRouter().match('PUT', '/api/v1/sessions/3/activate');
  assert.deepEqual(result, { kind: 'method-not-allowed', allow: ['PATCH'] });
  const list = sessionsRouter().match('DELETE', '/api/v1/sessions');
  assert.deepEqual(list, { kind: 'method-not-allowed', allow: ['GET', 'HEAD'] });
});

test('HEAD uses the GET handler', () => {
  assert.equal(sessionsRouter().match('HEAD', '/api/v1/sessions/7').kind, 'found');
});

test('a final * hands over the rest of the path as decoded segments, a trailing slash kept', () => {
  assert.deepEqual(sessionsRouter().match('GET', '/static/a%20b/c%2Fd.js'), { kind: 'found', handler: 'static', params: {}, rest: ['a b', 'c/d.js'] });
  assert.deepEqual(sessionsRouter().match('GET', '/static/dir/'), { kind: 'found', handler: 'static', params: {}, rest: ['dir', ''] });
  assert.deepEqual(sessionsRouter().match('GET', '/static'), { kind: 'found', handler: 'static', params: {}, rest: [] });
});

test('patterns are checked when added', () => {
  const router = createRouter<string>();
  assert.throws(() => router.add('GET', '/x/{id:uuid}', 'h'), /unknown parameter type/);
  assert.throws(() => router.add('GET', '/x/*/y', 'h'), /must end/);
});

test('unknown paths are not-found', () => {
  assert.equal(sessionsRouter().match('GET', '/api/v2/sessions').kind, 'not-found');
  assert.equal(sessionsRouter().match('GET', '/').kind, 'not-found');
});
