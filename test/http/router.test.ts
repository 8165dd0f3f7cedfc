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

test('a rest of at most N segments (`*N`): none empty, no more than N; `*` takes any rest', () => {
  const router = createRouter<string>();
  router.add('GET', '/api/v1/plugins/*3', 'plugins');
  router.add('GET', '/static/*', 'static');
  for (const path of ['/api/v1/plugins/web', '/api/v1/plugins/web/', '/api/v1/plugins/web/external/OWTF-IG-001', '/api/v1/plugins/web/external/OWTF-IG-001/']) {
    assert.equal(router.match('GET', path).kind, 'found', path);
  }
  for (const path of ['/api/v1/plugins//', '/api/v1/plugins/web//', '/api/v1/plugins/web//x', '/api/v1/plugins//web', '/api/v1/plugins/a/b/c/d']) {
    assert.equal(router.match('GET', path).kind, 'not-found', path);
  }
  assert.deepEqual(router.match('GET', '/static/a//b'), { kind: 'found', handler: 'static', params: {}, rest: ['a', '', 'b'] });
});

test('a path is its most specific routes\': a literal before a parameter before a rest, so a method only another route has is 405', () => {
  const router = createRouter<string>();
  router.add('GET', '/api/v1/worklist/search', 'search');
  router.add('POST', '/api/v1/worklist/{action:word}', 'no action');
  router.add('GET', '/t/{id:int}/poutput/names', 'names');
  router.add('DELETE', '/t/{id:int}/poutput/*3', 'delete');
  // two patterns of one shape under different names are one path: their methods together
  router.add('GET', '/s/{session_id:int}', 'get');
  router.add('DELETE', '/s/{id:int}', 'delete one');
  assert.deepEqual(router.match('POST', '/api/v1/worklist/search/'), { kind: 'method-not-allowed', allow: ['GET', 'HEAD'] });
  assert.equal((router.match('POST', '/api/v1/worklist/pause') as { handler: string }).handler, 'no action');
  assert.deepEqual(router.match('DELETE', '/t/1/poutput/names'), { kind: 'method-not-allowed', allow: ['GET', 'HEAD'] });
  assert.equal((router.match('DELETE', '/t/1/poutput/web') as { handler: string }).handler, 'delete');
  assert.equal((router.match('DELETE', '/s/4') as { handler: string }).handler, 'delete one');
  assert.deepEqual(router.match('PUT', '/s/4'), { kind: 'method-not-allowed', allow: ['GET', 'DELETE', 'HEAD'] });
});
