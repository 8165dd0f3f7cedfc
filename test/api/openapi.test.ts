import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Validator } from '@seriousme/openapi-schema-validator';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PROJECT_ROOT, version } from '../../src/paths.ts';
import { exemptFromToken } from '../../src/server.ts';
import { request, startServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
let doc: any;
before(async () => {
  server = await startServer({ version: version() });
  const res = await request(server.url, '/api/v1/openapi.json');
  assert.equal(res.status, 200);
  assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
  doc = res.json;
});
after(() => server.close());

const SAMPLES: Record<string, string> = { transaction_id: '1', session_id: '1', session_id_or_action: '1', target_id: '1', action: 'activate', file_url: 'x.txt', file: 'app.js', id: '1', path: 'web', id_or_action: '1' };
/** A route pattern or a documented path, reduced to its literals: the two must meet. */
const shape = (path: string) => path.replace(/\{\w+(:\w+)?\}|\*\d?$/g, '{}');

test('GET /api/v1/openapi.json is a valid OpenAPI 3.1 document (checked by a real validator)', async () => {
  assert.equal(doc.openapi, '3.1.0');
  assert.equal(doc.info.version, version());
  const result = await new Validator().validate(doc);
  assert.equal(result.valid, true, JSON.stringify(result.errors, null, 2));
});

test('every registered route is in the document, with a summary and its answers', () => {
  const routes = server.server.routes();
  assert.ok(routes.length >= 25, `${routes.length} routes`);
  const byShape = new Map(Object.keys(doc.paths).map((path) => [shape(path), path]));
  assert.equal(byShape.size, Object.keys(doc.paths).length, 'no two documented paths differ only in parameter names (OpenAPI forbids it)');
  for (const { method, pattern } of routes) {
    const operation = doc.paths[byShape.get(shape(pattern)) ?? '']?.[method.toLowerCase()];
    assert.ok(operation, `${method} ${pattern} is missing from the document`);
    assert.ok(operation.summary, `${method} ${pattern} has no summary`);
    const own = Object.keys(operation.responses).filter((status) => !['401', '403', '413', '500'].includes(status));
    assert.ok(own.length > 0, `${method} ${pattern} documents none of its own answers`);
  }
});

test('every documented path and method is routed: a request to it is neither 404 "Not found" nor 405', async () => {
  const operations = new Set(server.server.routes().map((r) => `${r.method} ${shape(r.pattern)}`));
  let count = 0;
  for (const [path, operations] of Object.entries<Record<string, unknown>>(doc.paths)) {
    const url = path.replace(/\{(\w+)\}/g, (_, name: string) => SAMPLES[name] ?? 'x');
    for (const method of Object.keys(operations)) {
      const res = await request(server.url, url, { method: method.toUpperCase() });
      assert.notEqual(res.status, 405, `${method} ${path}`);
      if (res.status === 404) assert.notEqual(res.json.message, 'Not found', `${method} ${path} is documented but not routed`);
      count++;
    }
  }
  assert.equal(count, operations.size);
});

test("the refusals' messages come from the catalogue: the contract's literal texts", () => {
  const get = doc.paths['/api/v1/sessions/{session_id}/{action}'].get;
  assert.deepEqual(get.responses['400'].content['application/json'].schema.allOf[1].properties.message.enum, ['Action must be None']);
  const one = doc.paths['/api/v1/sessions/{session_id_or_action}'].get;
  assert.deepEqual(one.responses['400'].content['application/json'].schema.allOf[1].properties.message.enum, ['Invalid session id provided', 'Action must be None']);
  const post = doc.paths['/api/v1/sessions'].post;
  assert.deepEqual(post.responses['409'].content['application/json'].schema.allOf[1].properties.message.enum, ['An unknown exception occurred when performing a DB operation']);
  assert.ok(post.responses['403'].content['application/json'].schema.allOf[1].properties.message.enum.includes('Cross-origin request refused'));
  assert.deepEqual(doc.paths['/debug/health'].get.security, [], 'health needs no token');
});

test('docs/API.md, the API document in the repository, names every route (its path up to the first parameter)', async () => {
  const doc = await readFile(join(PROJECT_ROOT, 'docs', 'API.md'), 'utf8');
  for (const { method, pattern } of server.server.routes()) {
    const literal = pattern.split('/{')[0].replace(/\/\*\d?$/, '/');
    assert.ok(doc.includes(literal), `${method} ${pattern}: docs/API.md does not name ${literal}`);
  }
  assert.doesNotMatch(doc, /\]\(\.\.\//, 'no link outside the repository');
});

test("the routes the document marks open are exactly those the token check lets through", () => {
  for (const { method, pattern, doc: routeDoc } of server.server.routes()) {
    const path = pattern.replace(/\{(\w+):\w+\}/g, (_, name: string) => SAMPLES[name] ?? 'x').replace(/\*$/, 'app.js');
    assert.equal(exemptFromToken(method, path), routeDoc?.open === true, `${method} ${pattern}`);
  }
});
