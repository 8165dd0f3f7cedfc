/** The transactions and URLs routes against the contract, and the upstream bugs not copied (one test each). */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { get as httpGet, type IncomingMessage } from 'node:http';
import { MESSAGES, TRANSACTION_MESSAGES } from '../../src/api/messages.ts';
import { request, startServer, useToken, type TestServer } from '../helpers/server.ts';
import { entryOf, harOf, importHar, type EntrySpec } from '../evidence/helpers.ts';

let server: TestServer;
const T = TRANSACTION_MESSAGES;

const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');

/** Target 1's transactions, ids 1.. in this order. */
const ENTRIES: EntrySpec[] = [
  { url: 'https://shop.example/', responseBody: '<html><title>Shop</title><!-- secret comment --></html>', responseHeaders: [['Content-Type', 'text/html'], ['Set-Cookie', 'sid=abc; Path=/'], ['Server', 'nginx/1.18.0']] },
  { url: 'https://shop.example/login', method: 'POST', headers: [['Content-Type', 'application/x-www-form-urlencoded']], body: 'user=alice&pass=100%25_sure', status: 302, statusText: 'Found', responseHeaders: [['Location', '/'], ['Set-Cookie', 'auth=1; HttpOnly; Secure']] },
  { url: 'https://shop.example/logo.png', responseBody: PNG, mimeType: 'image/png', responseHeaders: [['Content-Type', 'image/png']] },
  { url: 'https://shop.example/search?q=shoes', responseBody: 'results for shoes: 100% cotton_socks', responseHeaders: [['Content-Type', 'text/plain']] },
  { url: 'https://shop.example/missing', status: 404, statusText: 'Not Found', responseBody: 'nope', responseHeaders: [['Content-Type', 'text/plain']] },
  { url: 'https://cdn.other.example/lib.js', responseBody: 'var x = 1;', mimeType: 'text/javascript', responseHeaders: [['Content-Type', 'text/javascript']] },
  { url: 'https://shop.example/big', responseBody: 'B'.repeat(70 * 1024) + 'TAIL-MARKER', responseHeaders: [['Content-Type', 'text/plain']] },
  { url: 'https://shop.example/report.pdf', responseBody: 'pdf', mimeType: 'application/pdf', responseHeaders: [['Content-Type', 'application/pdf']] },
];

before(async () => {
  server = await startServer({ token: 'test-token-transactions' });
  useToken(server.port, 'test-token-transactions');
  await request(server.url, '/api/v1/targets/', { method: 'POST', form: { target_url: 'https://shop.example/' } });
  await request(server.url, '/api/v1/targets/', { method: 'POST', form: { target_url: 'https://empty.example/' } });
  const res = await importHar(server.url, 1, harOf(ENTRIES));
  assert.equal(res.status, 201, res.text);
  assert.deepEqual(res.json, { status: 'success', data: { imported: 8, out_of_scope: 1, skipped: 0 } });
});
after(() => server.close());

const get = (path: string) => request(server.url, path);
const ids = (list: { id: number }[]) => list.map((t) => t.id);

test('upstream bug not copied: the list route answers (upstream answers 500), oldest first, without raw fields', async () => {
  const res = await get('/api/v1/targets/1/transactions/');
  assert.equal(res.status, 200);
  assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
  assert.deepEqual(ids(res.json.data), [1, 2, 3, 4, 5, 6, 7, 8]);
  const first = res.json.data[0];
  assert.deepEqual(Object.keys(first).sort(), [
    'binary_response', 'data', 'id', 'local_timestamp', 'login', 'logout', 'method', 'response_size', 'response_status', 'scope', 'session_tokens',
    'source', 'started_at', 'target_id', 'time', 'time_human', 'url',
  ]);
  assert.equal(first.response_status, '200 OK');
  assert.equal(first.time, 0.042);
  assert.equal(first.time_human, '0s, 42ms');
  assert.match(first.local_timestamp, /^\d\d-\d\d \d\d:\d\d:\d\d$/);
  assert.equal(first.started_at, '2024-05-06T07:08:09.123Z');
  assert.equal(first.source, 'har');
  assert.equal(first.login, false);
  assert.deepEqual(JSON.parse(first.session_tokens), [{ name: 'sid', value: 'abc', path: '/' }]);
  assert.equal((await get('/api/v1/targets/2/transactions/')).json.data.length, 0, 'a target with none: []');
});

test('list filters: url, method and data exact (repeatable, any of), scope, binary_response, offset and limit', async () => {
  const list = async (query: string) => ids((await get(`/api/v1/targets/1/transactions/?${query}`)).json.data);
  assert.deepEqual(await list('url=https://shop.example/login&url=https://shop.example/missing'), [2, 5]);
  assert.deepEqual(await list('url=https://shop.example/log'), [], 'exact, not a substring');
  assert.deepEqual(await list('method=POST'), [2]);
  assert.deepEqual(await list('data=user%3Dalice%26pass%3D100%2525_sure'), [2]);
  assert.deepEqual(await list('scope=false'), [6]);
  assert.deepEqual(await list('binary_response=true'), [3]);
  assert.deepEqual(await list('offset=2&limit=3'), [3, 4, 5]);
  const res = await get('/api/v1/targets/1/transactions/?limit=x');
  assert.equal(res.status, 400);
  assert.equal(res.json.message, MESSAGES.invalidParameterType);
  assert.equal((await get('/api/v1/targets/1/transactions/?scope=maybe')).json.message, MESSAGES.invalidParameterType);
});

test('one transaction carries its raw fields and its whole body; upstream bug not copied: a blank line before the body in raw_request', async () => {
  const res = await get('/api/v1/targets/1/transactions/2');
  assert.equal(res.status, 200);
  const t = res.json.data;
  assert.equal(t.raw_request, 'POST https://shop.example/login HTTP/1.1\r\nContent-Type: application/x-www-form-urlencoded\r\n\r\nuser=alice&pass=100%25_sure');
  assert.equal(t.response_headers, 'Location: /\r\nSet-Cookie: auth=1; HttpOnly; Secure');
  assert.equal(t.response_status, '302 Found');
  assert.equal(t.data, 'user=alice&pass=100%25_sure');
  const big = (await get('/api/v1/targets/1/transactions/7')).json.data;
  assert.equal(big.response_body.length, 70 * 1024 + 11, 'the whole body');
  assert.equal(big.response_body_truncated, undefined);
  const png = (await get('/api/v1/targets/1/transactions/3')).json.data;
  assert.equal(png.binary_response, true);
  assert.deepEqual(Buffer.from(png.response_body, 'base64'), PNG);
  assert.equal(png.response_size, PNG.length);
});

test('errors: unknown target, unknown transaction, DELETE without an id, POST/PUT/PATCH on one', async () => {
  for (const path of ['/api/v1/targets/9/transactions/', '/api/v1/targets/9/transactions/1', '/api/v1/targets/9/transactions/search/', '/api/v1/targets/9/urls/', '/api/v1/targets/9/urls/search/']) {
    const res = await get(path);
    assert.equal(res.status, 400, path);
    assert.equal(res.json.message, MESSAGES.invalidTargetReference, path);
  }
  const unknown = await get('/api/v1/targets/1/transactions/99');
  assert.equal(unknown.status, 400);
  assert.equal(unknown.json.message, T.invalidTransaction);
  assert.equal((await get('/api/v1/targets/2/transactions/1')).json.message, T.invalidTransaction, "another target's transaction");
  const noId = await request(server.url, '/api/v1/targets/1/transactions/', { method: 'DELETE' });
  assert.equal(noId.status, 400);
  assert.equal(noId.json.message, T.needsTransactionId);
  for (const method of ['POST', 'PUT', 'PATCH']) {
    const res = await request(server.url, '/api/v1/targets/1/transactions/1', { method });
    assert.equal(res.status, 405, method);
    assert.equal(res.json.message, 'Method not allowed');
    assert.match(res.headers.allow!, /GET/);
  }
  const hrtNoId = await request(server.url, '/api/v1/targets/1/transactions/hrt/', { method: 'POST' });
  assert.equal(hrtNoId.json.message, T.needsTransactionId);
  const hrtUnknown = await request(server.url, '/api/v1/targets/1/transactions/hrt/99', { method: 'POST' });
  assert.equal(hrtUnknown.json.message, T.invalidTransaction);
  const badProxy = await request(server.url, '/api/v1/targets/1/transactions/hrt/1', { method: 'POST', form: { language: 'python', proxy: 'not a url' } });
  assert.equal(badProxy.status, 400);
  assert.equal(badProxy.json.message, MESSAGES.invalidParameterType);
});

test('upstream bug not copied: search looks into response bodies, keeps its order and its limit (default 10)', async () => {
  const res = await get('/api/v1/targets/1/transactions/search/?response_body=SECRET%20COMMENT');
  assert.equal(res.status, 200);
  assert.equal(res.json.data.records_total, 8);
  assert.equal(res.json.data.records_filtered, 1);
  assert.deepEqual(ids(res.json.data.data), [1]);
  assert.ok('raw_request' in res.json.data.data[0], 'a search carries the raw fields');
  const limited = (await get('/api/v1/targets/1/transactions/search/?limit=3&offset=1')).json.data;
  assert.deepEqual(ids(limited.data), [2, 3, 4], 'oldest first, offset then limit');
  assert.equal(limited.records_filtered, 8);
  const all = (await get('/api/v1/targets/1/transactions/search/')).json.data;
  assert.equal(all.data.length, 8, 'limit defaults to 10: all eight');
  // an upstream request gets upstream's answer, no key more (the contract: no change to what an existing request answers)
  assert.deepEqual(Object.keys(all).sort(), ['data', 'records_filtered', 'records_total']);
});

test('upstream bug not copied: search escapes % and _ (they match themselves)', async () => {
  const search = async (query: string) => ids((await get(`/api/v1/targets/1/transactions/search/?${query}`)).json.data.data);
  assert.deepEqual(await search('response_body=100%25'), [4]);
  assert.deepEqual(await search('response_body=cotto__socks'), [], '_ is no wildcard');
  assert.deepEqual(await search('response_body=cotton_socks'), [4]);
  assert.deepEqual(await search('data=100%2525_sure'), [2]);
  assert.deepEqual(await search('url=SHOP.EXAMPLE%2FLOGIN'), [2], 'any case');
  assert.deepEqual(await search('method=pos'), [2]);
  assert.deepEqual(await search('response_status=not%20found'), [5]);
  assert.deepEqual(await search('response_headers=nginx'), [1]);
  assert.deepEqual(await search('raw_request=x-www-form'), [2]);
  assert.deepEqual(await search('scope=false'), [6]);
  assert.deepEqual(await search('response_body=cotton&url=search'), [4], 'every argument must match');
});

test('lists and searches cut bodies over 64 KiB (response_body_truncated), the transaction itself does not', async () => {
  const found = (await get('/api/v1/targets/1/transactions/search/?url=%2Fbig')).json.data.data[0];
  assert.equal(found.response_body.length, 64 * 1024);
  assert.equal(found.response_body_truncated, true);
  assert.equal((await get('/api/v1/targets/1/transactions/search/?response_body=TAIL-MARKER')).json.data.records_filtered, 1, 'the search reads the whole body');
});

test('the filter language (q): operators, negation, and, or, parentheses, bare words', async () => {
  const q = async (expr: string) => ids((await get(`/api/v1/targets/1/transactions/search/?limit=50&q=${encodeURIComponent(expr)}`)).json.data.data);
  assert.deepEqual(await q('~m post'), [2]);
  assert.deepEqual(await q('~c 404'), [5]);
  assert.deepEqual(await q('~d ^cdn\\.'), [6]);
  assert.deepEqual(await q('~t image/'), [3]);
  assert.deepEqual(await q('~hs "set-cookie: [^\\r]*"'), [1, 2]);
  assert.deepEqual(await q('~hs "^set-cookie:(?!.*httponly)"'), [1], 'a cookie set without HttpOnly: each header line alone, one lookahead at the end');
  assert.deepEqual(await q('~hs set-cookie & !~hs httponly'), [1]);
  assert.deepEqual(await q('~hq x-www-form'), [2]);
  assert.deepEqual(await q('~bs "secret comment"'), [1]);
  assert.deepEqual(await q('~bq alice'), [2]);
  assert.deepEqual(await q('~b alice'), [2]);
  assert.deepEqual(await q('~s'), [1, 2, 3, 4, 5, 6, 7, 8]);
  assert.deepEqual(await q('login | missing'), [2, 5], 'bare words are ~u');
  assert.deepEqual(await q('!(~u shop | ~c 200)'), []);
  assert.deepEqual(await q('~u shop ~c 302'), [2], 'juxtaposition is and');
  assert.deepEqual(await q('~u \\.(png|pdf)$'), [3, 8]);
});

test('an invalid filter expression is a 400 naming the position', async () => {
  for (const [expr, position] of [['~u', 2], ['~x foo', 0], ['(~m get', 7], ['~c abc', 3], ['~u (a', 3], ['~u "a(b"', 5], ['~b "(a)\\1"', 7], ['~b "(?=x)"', 4], ['a |', 3], ['"unterminated', 0]] as const) {
    const res = await get(`/api/v1/targets/1/transactions/search/?q=${encodeURIComponent(expr)}`);
    assert.equal(res.status, 400, expr);
    assert.match(res.json.message, /^Invalid filter expression: /, expr);
    assert.match(res.json.message, new RegExp(`position ${position}\\b`), `${expr}: ${res.json.message}`);
  }
});

test('a catastrophic regex answers, and finds what it should (no backtracking)', async () => {
  const res = await get(`/api/v1/targets/1/transactions/search/?q=${encodeURIComponent('~bs "(B+)+C"')}`);
  assert.equal(res.status, 200);
  assert.equal(res.json.data.records_filtered, 0);
  const nested = await get(`/api/v1/targets/1/transactions/search/?q=${encodeURIComponent('~bs "(.*.*)*MARKER$"')}`);
  assert.deepEqual(ids(nested.json.data.data), [7]);
});

test('records_filtered counts every match, a search that reads bodies included; exact=false stops once the page is full and says so', async () => {
  for (const query of ['q=~bs%20.&limit=2', 'q=~bs%20.&limit=2&exact=true']) {
    const page = (await get(`/api/v1/targets/1/transactions/search/?${query}`)).json.data;
    assert.equal(page.records_filtered, 7, query);
    assert.equal(page.records_filtered_exact, undefined, query);
  }
  // the contract's own filters too: a substring of the response headers, read from the records
  const headers = (await get('/api/v1/targets/1/transactions/search/?response_headers=content-type&limit=1')).json.data;
  assert.equal(headers.data.length, 1);
  assert.equal(headers.records_filtered, (await get('/api/v1/targets/1/transactions/search/?response_headers=content-type&limit=100')).json.data.data.length);
  assert.ok(headers.records_filtered > 2, String(headers.records_filtered));
  const early = (await get('/api/v1/targets/1/transactions/search/?q=~bs%20.&limit=2&exact=false')).json.data;
  assert.deepEqual(ids(early.data), [1, 3]);
  assert.equal(early.records_filtered_exact, false);
  assert.ok(early.records_filtered >= 3 && early.records_filtered < 7, String(early.records_filtered));
});

test('the body route serves bytes as a download that no browser renders in our origin', async () => {
  const res = await get('/api/v1/targets/1/transactions/1/body');
  assert.equal(res.status, 200);
  assert.equal(res.text, '<html><title>Shop</title><!-- secret comment --></html>');
  assert.equal(res.headers['content-type'], 'application/octet-stream');
  assert.match(res.headers['content-disposition']!, /^attachment; filename="/);
  assert.equal(res.headers['x-content-type-options'], 'nosniff');
  assert.match(String(res.headers['content-security-policy']), /^sandbox/);
  const png = await get('/api/v1/targets/1/transactions/3/body');
  assert.equal(png.headers['content-type'], 'image/png', 'an image may be shown as one (sandboxed)');
  assert.deepEqual(png.raw, PNG);
  assert.match(png.headers['content-disposition']!, /filename="logo\.png"/);
});

test('every route needs the token; upstream bug not copied: URLs are not served without authentication', async () => {
  for (const path of ['/api/v1/targets/1/transactions/', '/api/v1/targets/1/transactions/1', '/api/v1/targets/1/transactions/search/', '/api/v1/targets/1/urls/', '/api/v1/targets/1/urls/search/', '/api/v1/targets/1/transactions/1/body', '/api/v1/targets/1/transactions/har']) {
    const res = await request(server.url, path, { auth: false });
    assert.equal(res.status, 401, path);
    assert.equal(res.json.message, 'Authentication required');
  }
  const hrt = await request(server.url, '/api/v1/targets/1/transactions/hrt/1', { method: 'POST', auth: false });
  assert.equal(hrt.status, 401);
});

test('upstream bug not copied: hrt reads searchstring (the upstream web client sends that name)', async () => {
  const res = await request(server.url, '/api/v1/targets/1/transactions/hrt/1', { method: 'POST', form: { language: 'bash', searchstring: 'comment' } });
  assert.equal(res.status, 200);
  assert.match(res.text, /grep --ignore-case --fixed-strings -e 'comment'/);
});

test('URLs: each once, visited, scope and kind; filters; search with counts', async () => {
  const urls = (await get('/api/v1/targets/1/urls/')).json.data;
  const kinds = Object.fromEntries(urls.map((u: { url: string; kind: string }) => [u.url, u.kind]));
  assert.deepEqual(kinds, {
    'https://shop.example/': 'page',
    'https://shop.example/login': 'fuzzable',
    'https://shop.example/logo.png': 'image',
    'https://shop.example/search?q=shoes': 'fuzzable',
    'https://shop.example/missing': 'error',
    'https://cdn.other.example/lib.js': 'external',
    'https://shop.example/big': 'page',
    'https://shop.example/report.pdf': 'file',
  });
  assert.deepEqual(Object.keys(urls[0]).sort(), ['kind', 'scope', 'target_id', 'url', 'visited']);
  assert.ok(urls.every((u: { visited: boolean }) => u.visited));
  assert.equal((await get('/api/v1/targets/1/urls/?scope=false')).json.data.length, 1);
  assert.equal((await get('/api/v1/targets/1/urls/?kind=image&kind=file')).json.data.length, 2);
  assert.deepEqual((await get('/api/v1/targets/1/urls/?url=https://shop.example/big')).json.data.map((u: { url: string }) => u.url), ['https://shop.example/big']);
  const found = (await get('/api/v1/targets/1/urls/search/?url=SHOP&limit=2&offset=1')).json.data;
  assert.equal(found.records_total, 8);
  assert.equal(found.records_filtered, 7);
  assert.deepEqual(found.data.map((u: { url: string }) => u.url), ['https://shop.example/login', 'https://shop.example/logo.png']);
  assert.equal((await get('/api/v1/targets/1/urls/?kind=nope')).status, 400);
});

test('HAR export: the search\'s arguments, a download, and it imports back the same', async () => {
  const res = await get('/api/v1/targets/1/transactions/har?q=~u%20shop.example');
  assert.equal(res.status, 200);
  assert.match(res.headers['content-disposition']!, /^attachment; filename="shop\.example-transactions\.har"/);
  const har = res.json;
  assert.equal(har.log.version, '1.2');
  assert.equal(har.log.entries.length, 7);
  assert.equal(har.log.entries[2].response.content.encoding, 'base64');
  await request(server.url, '/api/v1/targets/', { method: 'POST', form: { target_url: 'https://copy.example/' } });
  const back = await importHar(server.url, 3, res.raw);
  assert.equal(back.status, 201, back.text);
  assert.equal(back.json.data.imported, 7);
  const original = (await get('/api/v1/targets/1/transactions/3')).json.data;
  const copy = (await get('/api/v1/targets/3/transactions/')).json.data.find((t: { url: string }) => t.url.endsWith('logo.png'));
  const copied = (await get(`/api/v1/targets/3/transactions/${copy.id}`)).json.data;
  for (const field of ['url', 'method', 'raw_request', 'response_headers', 'response_body', 'response_status', 'binary_response', 'started_at', 'time']) {
    assert.deepEqual(copied[field], original[field], field);
  }
});

test('DELETE removes one transaction: it is gone from the list, the search and the URLs', async () => {
  await request(server.url, '/api/v1/targets/', { method: 'POST', form: { target_url: 'https://del.example/' } });
  await importHar(server.url, 4, harOf([{ url: 'https://del.example/a' }, { url: 'https://del.example/b' }]));
  const before = ids((await get('/api/v1/targets/4/transactions/')).json.data);
  const res = await request(server.url, `/api/v1/targets/4/transactions/${before[0]}`, { method: 'DELETE' });
  assert.equal(res.status, 200);
  assert.deepEqual(res.json, { status: 'success', data: {} });
  assert.deepEqual(ids((await get('/api/v1/targets/4/transactions/')).json.data), [before[1]]);
  assert.equal((await get(`/api/v1/targets/4/transactions/${before[0]}`)).json.message, T.invalidTransaction);
  assert.deepEqual((await get('/api/v1/targets/4/urls/')).json.data.map((u: { url: string }) => u.url), ['https://del.example/b']);
  const again = await request(server.url, `/api/v1/targets/4/transactions/${before[0]}`, { method: 'DELETE' });
  assert.equal(again.json.message, T.invalidTransaction);
});

test('extensions after_id and order: what arrived since a view last looked, newest first, on the list and the search', async () => {
  assert.deepEqual(ids((await get('/api/v1/targets/1/transactions/?after_id=5')).json.data), [6, 7, 8]);
  const newest = await get('/api/v1/targets/1/transactions/?order=newest&limit=3');
  assert.deepEqual(ids(newest.json.data), [8, 7, 6]);
  assert.equal(newest.headers['x-total-count'], '8');
  assert.deepEqual(ids((await get('/api/v1/targets/1/transactions/?order=newest&after_id=6')).json.data), [8, 7]);
  const since = await get('/api/v1/targets/1/transactions/?after_id=8');
  assert.deepEqual(since.json.data, []);
  assert.equal(since.headers['x-total-count'], '0');
  // a search that reads bodies, newest first, and only what is new
  const search = await get(`/api/v1/targets/1/transactions/search/?order=newest&limit=2&q=${encodeURIComponent('~bs .')}`);
  assert.deepEqual(ids(search.json.data.data), [8, 7]);
  // a request using an extension gets last_id too, for its next after_id
  assert.equal(search.json.data.last_id, 8);
  assert.equal((await get('/api/v1/targets/1/transactions/search/?raw=false&after_id=20')).json.data.last_id, 20);
  assert.deepEqual(ids((await get(`/api/v1/targets/1/transactions/search/?after_id=3&limit=10&q=${encodeURIComponent('~bs .')}`)).json.data.data), [4, 5, 6, 7, 8]);
  assert.equal((await get('/api/v1/targets/1/transactions/?order=sideways')).status, 400);
  assert.equal((await get('/api/v1/targets/1/transactions/?after_id=-1')).status, 400);
});

test('extensions raw=false (a search answers a list’s fields), max_body (one transaction’s body cut), and the position of a bad filter', async () => {
  const lean = (await get(`/api/v1/targets/1/transactions/search/?raw=false&limit=2&q=${encodeURIComponent('~u shop')}`)).json.data;
  assert.deepEqual(ids(lean.data), [1, 2]);
  assert.equal(lean.data[0].response_body, undefined);
  assert.equal(lean.data[0].raw_request, undefined);
  assert.equal(lean.data[0].response_status, '200 OK');
  const cut = (await get('/api/v1/targets/1/transactions/7?max_body=10')).json.data;
  assert.equal(cut.response_body, 'BBBBBBBBBB');
  assert.equal(cut.response_body_truncated, true);
  const whole = (await get('/api/v1/targets/1/transactions/7')).json.data;
  assert.ok(whole.response_body.endsWith('TAIL-MARKER'));
  const bad = await get(`/api/v1/targets/1/transactions/search/?q=${encodeURIComponent('~m GET & ~c abc')}`);
  assert.equal(bad.status, 400);
  assert.equal(bad.json.message, 'Invalid filter expression: ~c needs a status code at position 12');
  assert.deepEqual(bad.json.data, { q: '~c needs a status code at position 12', position: '12' });
  const unfinished = await get(`/api/v1/targets/1/transactions/search/?q=${encodeURIComponent('a |')}`);
  assert.equal(unfinished.json.message, 'Invalid filter expression: a filter is missing at position 3, where the expression ends');
});

test('a list, a search and an export that run out of their time say so: X-Timed-Out, timed_out, the HAR log\'s comment (a budget of 0 ms)', async () => {
  const hurried = await startServer({ token: 'test-token-hurried', searchBudgetMs: 0 });
  try {
    useToken(hurried.port, 'test-token-hurried');
    await request(hurried.url, '/api/v1/targets/', { method: 'POST', form: { target_url: 'https://shop.example/' } });
    assert.equal((await importHar(hurried.url, 1, harOf(ENTRIES))).status, 201);
    // the budget has passed by the first batch's end
    const list = await request(hurried.url, '/api/v1/targets/1/transactions/?data=nothing-like-this');
    assert.equal(list.status, 200, list.text);
    assert.equal(list.headers['x-timed-out'], 'true');
    const search = await request(hurried.url, `/api/v1/targets/1/transactions/search/?q=${encodeURIComponent('~bs "nothing-like-this"')}`);
    assert.equal(search.json.data.timed_out, true);
    const har = await request(hurried.url, `/api/v1/targets/1/transactions/har?q=${encodeURIComponent('~bs "nothing-like-this"')}`);
    assert.equal(har.status, 200);
    assert.match(JSON.parse(har.text).log.comment, /^Cut: the search ran out of its 0 s/);
  } finally {
    await hurried.close();
  }
});

test('a pattern slow on one body (a lookahead at each of 4 MiB of positions) stops its search at once, timed_out, instead of holding the server for the search\'s 10 s', async () => {
  const slow = await startServer({ token: 'test-token-slow' });
  try {
    useToken(slow.port, 'test-token-slow');
    await request(slow.url, '/api/v1/targets/', { method: 'POST', form: { target_url: 'https://slow.example/' } });
    const body = `${'a'.repeat(4 * 1024 * 1024)}!`;
    const har = harOf([{ url: 'https://slow.example/big', responseBody: body, mimeType: 'text/plain' }, { url: 'https://slow.example/small', responseBody: 'a small one', mimeType: 'text/plain' }]);
    assert.equal((await importHar(slow.url, 1, har)).status, 201);
    const t0 = performance.now();
    const search = await request(slow.url, `/api/v1/targets/1/transactions/search/?q=${encodeURIComponent('~b "a(?!.*!)"')}`);
    const took = performance.now() - t0;
    assert.equal(search.status, 200, search.text);
    assert.equal(search.json.data.timed_out, true);
    // one test of one transaction may take 0.5 s: well inside the search's 10 s, even on a busy machine
    assert.ok(took < 5000, `the search answered after ${took.toFixed(0)} ms`);
    // and a pattern that is quick on the same body still finds it
    const quick = await request(slow.url, `/api/v1/targets/1/transactions/search/?q=${encodeURIComponent('~b "a+!"')}`);
    assert.deepEqual(ids(quick.json.data.data), [1]);
    assert.equal(quick.json.data.timed_out, undefined);
  } finally {
    await slow.close();
  }
});

test('a body cut inside a character (max_body, the 64 KiB of a list) ends before it, never with a U+FFFD the body does not hold', async () => {
  await request(server.url, '/api/v1/targets/', { method: 'POST', form: { target_url: 'https://utf8.example/' } });
  const target = (await get('/api/v1/targets/')).json.data.find((t: { target_url: string }) => t.target_url === 'https://utf8.example/').id;
  // 2, 3 and 4 bytes a character, then a list-sized one whose 64 KiB cut falls inside a 3-byte character
  const text = 'é☃😀'.repeat(4);
  const long = `x${'☃'.repeat(30_000)}`;
  const imported = await importHar(server.url, target, harOf([{ url: 'https://utf8.example/a', responseBody: text, mimeType: 'text/plain' }, { url: 'https://utf8.example/b', responseBody: long, mimeType: 'text/plain' }]));
  assert.equal(imported.status, 201, imported.text);
  const [a, b] = (await get(`/api/v1/targets/${target}/transactions/`)).json.data;
  const bytes = Buffer.from(text);
  for (let cap = 1; cap <= bytes.length; cap++) {
    const body: string = (await get(`/api/v1/targets/${target}/transactions/${a.id}?max_body=${cap}`)).json.data.response_body;
    assert.ok(!body.includes('\ufffd') && text.startsWith(body), `max_body=${cap}: ${JSON.stringify(body)}`);
    assert.ok(Buffer.byteLength(body) > cap - 4, `max_body=${cap}: no more than the cut character dropped`);
  }
  const listed = (await get(`/api/v1/targets/${target}/transactions/search/?q=${encodeURIComponent('~u /b')}`)).json.data.data[0];
  assert.equal(listed.id, b.id);
  assert.equal(listed.response_body_truncated, true);
  assert.ok(!listed.response_body.includes('\ufffd') && long.startsWith(listed.response_body));
});

test('the substring search ignores case past ASCII too: ärger finds Ärger, straße finds STRASSE', async () => {
  await request(server.url, '/api/v1/targets/', { method: 'POST', form: { target_url: 'https://cases.example/' } });
  const target = (await get('/api/v1/targets/')).json.data.find((t: { target_url: string }) => t.target_url === 'https://cases.example/').id;
  const imported = await importHar(server.url, target, harOf([{ url: 'https://cases.example/de', responseBody: 'Großer Ärger in der STRASSE', mimeType: 'text/plain' }, { url: 'https://cases.example/other', responseBody: 'nothing here', mimeType: 'text/plain' }]));
  assert.equal(imported.status, 201, imported.text);
  for (const needle of ['ärger', 'ÄRGER', 'straße']) {
    const found = (await get(`/api/v1/targets/${target}/transactions/search/?response_body=${encodeURIComponent(needle)}`)).json.data;
    assert.deepEqual(found.data.map((t: { url: string }) => t.url), ['https://cases.example/de'], needle);
  }
});

test('a form POST whose HAR entry says its type only in postData (no Content-Type header: some tools leave headers out) makes its URL fuzzable', async () => {
  await request(server.url, '/api/v1/targets/', { method: 'POST', form: { target_url: 'https://forms.example/' } });
  const target = (await get('/api/v1/targets/')).json.data.find((t: { target_url: string }) => t.target_url === 'https://forms.example/').id;
  const withType = entryOf({ url: 'https://forms.example/typed', method: 'POST', body: 'a=1' });
  (withType.request as { postData: { mimeType: string } }).postData.mimeType = 'application/x-www-form-urlencoded';
  const withParams = entryOf({ url: 'https://forms.example/params', method: 'POST' });
  (withParams.request as Record<string, unknown>).postData = { mimeType: '', params: [{ name: 'a', value: '1' }] };
  const plain = entryOf({ url: 'https://forms.example/plain', method: 'POST', body: '{}' });
  const har = JSON.stringify({ log: { version: '1.2', creator: { name: 'test', version: '1' }, entries: [withType, withParams, plain] } });
  assert.equal((await importHar(server.url, target, har)).status, 201);
  const kinds = Object.fromEntries((await get(`/api/v1/targets/${target}/urls/`)).json.data.map((u: { url: string; kind: string }) => [new URL(u.url).pathname, u.kind]));
  assert.deepEqual(kinds, { '/typed': 'fuzzable', '/params': 'fuzzable', '/plain': 'page' });
});

test('an HTTP/2 status without a reason phrase (a browser\'s HAR gives "") is shown with the standard one, and searched as shown; an HTTP/1.1 one as it came', async () => {
  const created = await request(server.url, '/api/v1/targets/', { method: 'POST', form: { target_url: 'https://h2.example/' } });
  assert.equal(created.status, 201);
  const target = (await get('/api/v1/targets/?target_url=https://h2.example/')).json.data[0].id;
  const h2 = (spec: EntrySpec) => {
    const entry = entryOf(spec) as { response: Record<string, unknown> };
    return { ...entry, response: { ...entry.response, httpVersion: 'h2' } };
  };
  const entries = [h2({ url: 'https://h2.example/none', status: 204, statusText: '' }), h2({ url: 'https://h2.example/odd', status: 299, statusText: '' }), entryOf({ url: 'https://h2.example/plain', status: 200, statusText: '' })];
  const har = JSON.stringify({ log: { version: '1.2', creator: { name: 'test', version: '1' }, entries } });
  assert.equal((await importHar(server.url, target, har)).status, 201);
  const list = (await get(`/api/v1/targets/${target}/transactions/`)).json.data;
  assert.deepEqual(list.map((t: { response_status: string }) => t.response_status), ['204 No Content', '299', '200']);
  const found = (await get(`/api/v1/targets/${target}/transactions/search/?response_status=no%20content`)).json.data;
  assert.deepEqual(found.data.map((t: { url: string }) => t.url), ['https://h2.example/none']);
});

test('a list and a search carry at most 64 KiB of a request body too (data, and the body in raw_request), cut at a character and said; one transaction has it whole', async () => {
  await request(server.url, '/api/v1/targets/', { method: 'POST', form: { target_url: 'https://upload.example/' } });
  const target = (await get('/api/v1/targets/?target_url=https://upload.example/')).json.data[0].id;
  // 65,535 ASCII bytes, then 2-byte characters: the 64 KiB line falls inside one
  const body = `${'a'.repeat(65_535)}${'é'.repeat(40_000)}`;
  const imported = await importHar(server.url, target, harOf([{ url: 'https://upload.example/up', method: 'POST', headers: [['Content-Type', 'text/plain']], body }, { url: 'https://upload.example/small', method: 'POST', headers: [['Content-Type', 'text/plain']], body: 'tiny' }]));
  assert.equal(imported.status, 201, imported.text);
  const [big, small] = (await get(`/api/v1/targets/${target}/transactions/`)).json.data;
  assert.equal(big.data, 'a'.repeat(65_535), 'cut before the character the 64 KiB line splits');
  assert.equal(big.request_body_truncated, true);
  assert.equal(small.data, 'tiny');
  assert.equal(small.request_body_truncated, undefined);
  const found = (await get(`/api/v1/targets/${target}/transactions/search/?url=upload.example/up`)).json.data.data[0];
  assert.equal(found.data, 'a'.repeat(65_535));
  assert.equal(found.request_body_truncated, true);
  assert.ok(found.raw_request.endsWith(`\r\n\r\n${'a'.repeat(65_535)}`), 'raw_request ends with the cut body');
  const one = (await get(`/api/v1/targets/${target}/transactions/${big.id}`)).json.data;
  assert.equal(one.data, body);
  assert.equal(one.request_body_truncated, undefined);
  assert.ok(one.raw_request.endsWith(body));
  // max_body cuts it too (the web application's view asks so: a 16 MiB upload was whole in it), the head whole
  const shown = (await get(`/api/v1/targets/${target}/transactions/${big.id}?max_body=1000`)).json.data;
  assert.equal(shown.data, 'a'.repeat(1000));
  assert.equal(shown.request_body_truncated, true);
  assert.equal(shown.request_size, Buffer.byteLength(body));
  // the size only in an answer to max_body (an extension): a list's row, cut too, has none
  assert.equal(big.request_size, undefined);
  assert.ok(shown.raw_request.startsWith('POST https://upload.example/up') || shown.raw_request.startsWith('POST /up'), shown.raw_request.slice(0, 40));
  assert.ok(shown.raw_request.endsWith(`\r\n\r\n${'a'.repeat(1000)}`));
  assert.equal(shown.headers_truncated, undefined);
  // whole, megabytes of it: written a piece at a time (chunked), the same JSON
  const huge = `${'\u0001'.repeat(1_500_000)}é`;
  assert.equal((await importHar(server.url, target, harOf([{ url: 'https://upload.example/huge', method: 'POST', headers: [['Content-Type', 'text/plain']], body: huge }]))).status, 201);
  const hugeId = (await get(`/api/v1/targets/${target}/transactions/?url=https://upload.example/huge`)).json.data[0].id;
  const all = await get(`/api/v1/targets/${target}/transactions/${hugeId}`);
  assert.equal(all.headers['transfer-encoding'], 'chunked');
  assert.equal(all.json.data.data, huge);
  assert.ok(all.json.data.raw_request.endsWith(huge));
  const little = await get(`/api/v1/targets/${target}/transactions/${small.id}`);
  assert.equal(little.headers['transfer-encoding'], undefined);
  assert.equal(little.headers['content-length'], String(little.raw.length));
  const whole = (await get(`/api/v1/targets/${target}/transactions/${small.id}?max_body=1000`)).json.data;
  assert.equal(whole.data, 'tiny');
  assert.equal(whole.request_body_truncated, undefined);
  assert.equal(whole.request_size, undefined);
});

test('a list and a search bound what headers a row carries: session_tokens at 8 KiB, raw_request\'s head and response_headers at 64 KiB, said (headers_truncated); one transaction has them whole (a hostile target\'s cookies made the list a 500)', async () => {
  await request(server.url, '/api/v1/targets/', { method: 'POST', form: { target_url: 'https://cookies.example/' } });
  const target = (await get('/api/v1/targets/?target_url=https://cookies.example/')).json.data[0].id;
  // backslashes: JSON inside JSON makes each four characters
  const cookies: [string, string][] = [1, 2, 3].map((n) => ['Set-Cookie', `c${n}=${'\\'.repeat(40_000)}; Path=/`]);
  const imported = await importHar(server.url, target, harOf([
    { url: 'https://cookies.example/many', headers: [['X-Big', 'q'.repeat(70_000)]], responseHeaders: [...cookies, ['X-Big', 'r'.repeat(70_000)]] },
    { url: 'https://cookies.example/few', responseHeaders: [['Set-Cookie', 'sid=1; HttpOnly']] },
    // one too big, then the session's own: passed over, not hiding it
    { url: 'https://cookies.example/mixed', responseHeaders: [['Set-Cookie', `big=${'b'.repeat(9000)}`], ['Set-Cookie', 'sid=2; HttpOnly']] },
  ]));
  assert.equal(imported.status, 201, imported.text);
  const list = await get(`/api/v1/targets/${target}/transactions/`);
  const [many, few, mixed] = list.json.data;
  assert.deepEqual(JSON.parse(mixed.session_tokens), [{ name: 'sid', value: '2', httponly: true }]);
  assert.equal(mixed.headers_truncated, true);
  assert.ok(many.session_tokens.length <= 8 * 1024, `${many.session_tokens.length} characters`);
  assert.deepEqual(JSON.parse(many.session_tokens), [], 'no cookie of those fits whole');
  assert.equal(many.headers_truncated, true);
  assert.deepEqual(JSON.parse(few.session_tokens), [{ name: 'sid', value: '1', httponly: true }]);
  assert.equal(few.headers_truncated, undefined);
  for (const raw of [true, false]) {
    const found = (await get(`/api/v1/targets/${target}/transactions/search/?url=cookies.example/many&raw=${raw}`)).json.data.data[0];
    assert.equal(found.headers_truncated, true, `raw=${raw}`);
    assert.ok(found.session_tokens.length <= 8 * 1024);
    if (!raw) continue;
    assert.ok(found.response_headers.length <= 64 * 1024 && found.response_headers.startsWith('Set-Cookie: c1='), `${found.response_headers.length} characters of response_headers`);
    assert.ok(found.raw_request.length <= 64 * 1024 && found.raw_request.startsWith('GET https://cookies.example/many HTTP/1.1\r\nX-Big: qqq'), `${found.raw_request.length} characters of raw_request`);
  }
  const one = (await get(`/api/v1/targets/${target}/transactions/${many.id}`)).json.data;
  assert.equal(one.headers_truncated, undefined);
  assert.deepEqual(JSON.parse(one.session_tokens).map((c: { name: string; value: string }) => [c.name, c.value.length]), [['c1', 40_000], ['c2', 40_000], ['c3', 40_000]]);
  assert.ok(one.response_headers.includes('r'.repeat(70_000)));
  assert.ok(one.raw_request.includes('q'.repeat(70_000)));
});

test('the URL list and its search answer at most 10,000 URLs at once, as the transactions\' list (800,000 URLs made a 77 MB answer); offset reaches the rest', async () => {
  await request(server.url, '/api/v1/targets/', { method: 'POST', form: { target_url: 'https://many.example/' } });
  const target = (await get('/api/v1/targets/?target_url=https://many.example/')).json.data[0].id;
  const imported = await importHar(server.url, target, harOf(Array.from({ length: 10_050 }, (_, i) => ({ url: `https://many.example/p${i}` }))));
  assert.equal(imported.status, 201, imported.text);
  const urls = await get(`/api/v1/targets/${target}/urls/`);
  assert.equal(urls.json.data.length, 10_000);
  assert.equal(urls.headers['x-total-count'], '10050', 'how many match: the page is seen to be cut');
  assert.equal((await get(`/api/v1/targets/${target}/urls/?limit=20000`)).json.data.length, 10_000);
  assert.deepEqual((await get(`/api/v1/targets/${target}/urls/?offset=10000`)).json.data.map((u: { url: string }) => u.url).slice(0, 2), ['https://many.example/p10000', 'https://many.example/p10001']);
  const found = (await get(`/api/v1/targets/${target}/urls/search/?url=many`)).json.data;
  assert.equal(found.records_filtered, 10_050);
  assert.equal(found.data.length, 10_000);
});

test('a list, a search and the URLs asked with an extension argument stop at 32 MiB of JSON and say so, however many rows were asked for (a target\'s 63 KB URLs made a 490 MB answer that held the server 9-12 s; raw rows of control characters, six characters of JSON each, a 500); an upstream request gets its page whole', async () => {
  const big = await request(server.url, '/api/v1/targets/', { method: 'POST', form: { target_url: 'https://big.example/' } });
  assert.equal(big.status, 201, big.text);
  const target = (await get('/api/v1/targets/?target_url=https://big.example/')).json.data[0].id as number;
  const N = 600;
  const body = Buffer.alloc(64 * 1024, 1);
  const imported = await server.evidence.importExchanges(target, (async function* () {
    for (let i = 0; i < N; i++) {
      yield {
        url: `https://big.example/${String(i).padStart(4, '0')}/${'u'.repeat(60_000)}`, method: 'POST', httpVersion: 'HTTP/1.1', requestHeaders: [['Host', 'big.example']], requestBody: body,
        status: 200, statusText: 'OK', responseHttpVersion: 'HTTP/1.1', responseHeaders: [['Content-Type', 'text/plain']], responseBody: body, responseSize: body.length, truncated: false,
        mimeType: 'text/plain', startedAt: 1_700_000_000_000 + i, time: 10, source: 'har' as const,
      };
    }
  })());
  assert.ok(imported.ok);
  const BUDGET = 32 * 1024 * 1024;
  const within = (text: string, rows: number) => assert.ok(text.length < BUDGET + 1024 * 1024, `${rows} rows, ${text.length} characters`);

  // an upstream client pages on by its limit: its page is never cut (80 rows: ~36 MB); past the
  // budget it is streamed, each row read as the client takes the ones before, never held whole
  // (10,000 such rows were a 490 MB string: 3 GB of RSS, and past 512 MB a 500)
  const upstream = await get(`/api/v1/targets/${target}/transactions/?limit=80`);
  assert.equal(upstream.json.data.length, 80);
  assert.equal(upstream.headers['x-truncated'], undefined);
  assert.equal(upstream.headers['content-length'], undefined);
  assert.equal(upstream.headers['transfer-encoding'], 'chunked');
  assert.deepEqual(upstream.json.data.map((row: { id: number }) => row.id), Array.from({ length: 80 }, (_, i) => upstream.json.data[0].id + i));
  // a client that has not read the page's start yet: the page's last row is not read yet either,
  // so deleting it meanwhile leaves it out (a page written whole before it is sent would hold it)
  const last = upstream.json.data[79].id as number;
  const paused = await new Promise<IncomingMessage>((resolve, reject) => {
    httpGet(`${server.url}/api/v1/targets/${target}/transactions/?limit=80`, { headers: { authorization: 'Bearer test-token-transactions' } }, (res) => {
      res.pause();
      resolve(res);
    }).on('error', reject);
  });
  assert.equal(paused.statusCode, 200);
  await new Promise((resolve) => setTimeout(resolve, 200));
  assert.equal((await request(server.url, `/api/v1/targets/${target}/transactions/${last}`, { method: 'DELETE' })).status, 200);
  const chunks: Buffer[] = [];
  for await (const chunk of paused) chunks.push(chunk as Buffer);
  const streamed = JSON.parse(Buffer.concat(chunks).toString()).data as { id: number }[];
  assert.equal(paused.headers['x-total-count'], String(N), 'counted before the page was sent');
  assert.deepEqual(streamed.map((row) => row.id), upstream.json.data.slice(0, 79).map((row: { id: number }) => row.id), 'the row deleted before it was read is left out');
  const list = await get(`/api/v1/targets/${target}/transactions/?order=oldest`);
  const rows = list.json.data as { id: number; url: string }[];
  assert.ok(rows.length > 1 && rows.length < N, `${rows.length} rows`);
  within(list.text, rows.length);
  assert.equal(list.headers['x-total-count'], String(N - 1), 'one deleted above');
  assert.equal(list.headers['x-truncated'], `${rows.length} rows: the answer stops at 32 MiB of JSON; the next page starts at offset=${rows.length}`);
  // the next page goes on where it stopped
  const next = await get(`/api/v1/targets/${target}/transactions/?order=oldest&offset=${rows.length}&limit=1`);
  assert.equal(next.json.data[0].id, rows.at(-1)!.id + 1);
  assert.equal(next.headers['x-truncated'], undefined);

  const search = await get(`/api/v1/targets/${target}/transactions/search/?raw=true&limit=${N}`);
  const found = search.json.data as { data: unknown[]; truncated?: boolean; records_filtered: number };
  assert.ok(found.data.length > 1 && found.data.length < rows.length, `${found.data.length} raw rows`);
  within(search.text, found.data.length);
  assert.equal(found.truncated, true);
  assert.equal(found.records_filtered, N - 1);
  assert.equal((await get(`/api/v1/targets/${target}/transactions/search/?raw=true&limit=2`)).json.data.truncated, undefined);
  const upstreamSearchAnswer = await get(`/api/v1/targets/${target}/transactions/search/?limit=40`);
  const upstreamSearch = upstreamSearchAnswer.json.data;
  assert.equal(upstreamSearch.data.length, 40);
  assert.equal(upstreamSearch.truncated, undefined);
  assert.equal(upstreamSearch.records_filtered, N - 1);
  assert.equal(upstreamSearchAnswer.headers['transfer-encoding'], 'chunked');

  const kinds = ['page', 'fuzzable', 'file', 'image', 'error', 'external'].map((k) => `kind=${k}`).join('&');
  const upstreamUrls = await get(`/api/v1/targets/${target}/urls/?limit=560`);
  assert.equal(upstreamUrls.json.data.length, 560, 'an upstream request: whole');
  assert.equal(upstreamUrls.headers['transfer-encoding'], 'chunked');
  const upstreamUrlSearch = await get(`/api/v1/targets/${target}/urls/search/?url=big.example&limit=560`);
  assert.equal(upstreamUrlSearch.json.data.data.length, 560);
  assert.equal(upstreamUrlSearch.headers['transfer-encoding'], 'chunked');
  // a small upstream page is one string, as before
  const small = await get(`/api/v1/targets/${target}/urls/?limit=2`);
  assert.equal(small.headers['content-length'], String(Buffer.byteLength(small.text)));
  const urls = await get(`/api/v1/targets/${target}/urls/?${kinds}`);
  const urlRows = urls.json.data as unknown[];
  assert.ok(urlRows.length > 1 && urlRows.length < N, `${urlRows.length} URLs`);
  within(urls.text, urlRows.length);
  assert.equal(urls.headers['x-truncated'], `${urlRows.length} rows: the answer stops at 32 MiB of JSON; the next page starts at offset=${urlRows.length}`);
  const urlSearch = (await get(`/api/v1/targets/${target}/urls/search/?url=big.example&${kinds}`)).json.data;
  assert.equal(urlSearch.truncated, true);
  assert.equal(urlSearch.data.length, urlRows.length);
});

test('a substring in every place of many bodies, or where the field searched is not: each transaction counted once, in the field searched alone', async () => {
  const created = await request(server.url, '/api/v1/targets/', { method: 'POST', form: { target_url: 'https://hits.example/' } });
  assert.equal(created.status, 201, created.text);
  const target = (await get('/api/v1/targets/')).json.data.find((t: { target_url: string }) => t.target_url === 'https://hits.example/').id;
  const entries: EntrySpec[] = [
    // bodies of the needle, headers without it
    ...Array.from({ length: 300 }, (_, i) => ({ url: `https://hits.example/body/${i}`, responseBody: 'x'.repeat(20_000), responseHeaders: [['Content-Type', 'text/plain']] as [string, string][] })),
    // the needle in a header only
    ...Array.from({ length: 7 }, (_, i) => ({ url: `https://hits.example/header/${i}`, responseBody: 'none', responseHeaders: [['X-Mark', 'xxxx']] as [string, string][] })),
    // long URLs of the needle's anchor, the needle in two of them
    ...Array.from({ length: 20 }, (_, i) => ({ url: `https://hits.example/${'z'.repeat(30_000)}${i === 3 || i === 11 ? 'q' : ''}/${i}`, responseBody: 'none' })),
  ];
  assert.equal((await importHar(server.url, target, harOf(entries))).status, 201);
  const count = async (query: string) => {
    const page = (await get(`/api/v1/targets/${target}/transactions/search/?${query}&limit=1`)).json.data;
    assert.equal(page.timed_out, undefined, query);
    return page.records_filtered;
  };
  assert.equal(await count('response_body=x'), 300);
  assert.equal(await count('response_body=xxxxxxxxxx'), 300);
  assert.equal(await count('response_headers=xx'), 7, 'the bodies\' x are not in the headers');
  assert.equal(await count('raw_request=xx'), 0);
  assert.equal(await count('url=zzq'), 2);
  assert.equal(await count('url=zzz'), 20);
  assert.equal(await count('url=zzq&response_body=none'), 2);
});

test('the body route takes an image\'s type from the response\'s Content-Type, as the view does, when the HAR\'s mimeType is empty or says otherwise; never a type that is no image', async () => {
  await request(server.url, '/api/v1/targets/', { method: 'POST', form: { target_url: 'https://images.example/' } });
  const target = (await get('/api/v1/targets/?target_url=https://images.example/')).json.data[0].id;
  const entries: EntrySpec[] = [
    { url: 'https://images.example/empty-type.png', responseBody: PNG, mimeType: '', responseHeaders: [['Content-Type', 'image/png']] },
    { url: 'https://images.example/said-otherwise', responseBody: PNG, mimeType: 'application/octet-stream', responseHeaders: [['content-type', 'IMAGE/GIF; x=1']] },
    { url: 'https://images.example/page', responseBody: PNG, mimeType: '', responseHeaders: [['Content-Type', 'text/html']] },
    { url: 'https://images.example/svg', responseBody: '<svg/>', mimeType: '', responseHeaders: [['Content-Type', 'image/svg+xml']] },
  ];
  assert.equal((await importHar(server.url, target, harOf(entries))).status, 201);
  const list = (await get(`/api/v1/targets/${target}/transactions/`)).json.data as { id: number; url: string }[];
  const typeOf = async (path: string) => (await get(`/api/v1/targets/${target}/transactions/${list.find((t) => t.url.endsWith(path))!.id}/body`)).headers['content-type'];
  assert.equal(await typeOf('/empty-type.png'), 'image/png');
  assert.equal(await typeOf('/said-otherwise'), 'image/gif');
  assert.equal(await typeOf('/page'), 'application/octet-stream');
  assert.equal(await typeOf('/svg'), 'application/octet-stream', 'an SVG is a page: it may run script');
});
