import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { MESSAGES } from '../../src/api/messages.ts';
import { TARGET_FIELDS } from '../../src/api/target-formats.ts';
import { assertFail, assertSuccess } from '../helpers/jsend.ts';
import { request, startServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;

const URLS = [
  'http://a.example/',
  'https://10.1.2.3:8443/admin',
  'http://[2001:db8::7]/',
  'http://a,b"c.example/q?x=1,2',
  'http://=cmd.example/',
  'https://a.example/login',
];

before(async () => {
  server = await startServer();
  for (const target_url of URLS) {
    // hosts with a comma, a quote or an '=' are no longer one host to the API: they stand for
    // targets a store kept from before that rule, made with the op its journal then held
    const stored = /[,"=]/.test(new URL(target_url).hostname);
    if (stored) assert.ok((await server.store.change({ op: 'createTargets', urls: [target_url] })).ok);
    else assert.equal((await request(server.url, '/api/v1/targets/', { method: 'POST', form: { target_url } })).status, 201);
  }
  assert.equal((await request(server.url, '/api/v1/sessions/', { method: 'POST', form: { name: 'acme, "web" & co' } })).status, 201);
});
after(() => server.close());

const json = async (query: string) => assertSuccess(await request(server.url, `/api/v1/targets/${query}`));

/** RFC 4180, enough to read back what the server writes: quoted fields, doubled quotes, CRLF rows. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') (field += '"'), i++;
      else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') row.push(field), (field = '');
    else if (c === '\r' && text[i + 1] === '\n') row.push(field), rows.push(row), (row = []), (field = ''), i++;
    else field += c;
  }
  assert.equal(field, '', 'the last row ends with CRLF');
  return rows;
}

test('format=text is one target URL per line, newest first, as text/plain', async () => {
  const res = await request(server.url, '/api/v1/targets/?session_id=1&format=text');
  assert.equal(res.status, 200);
  assert.equal(res.headers['content-type'], 'text/plain; charset=utf-8');
  assert.equal(res.headers['content-disposition'], undefined);
  assert.equal(res.text, [...URLS].reverse().map((u) => `${u}\n`).join(''));
});

test('format=text takes the same filters and paging as JSON', async () => {
  for (const query of ['host_name=a.example', 'limit=2', 'limit=2&offset=3', 'host_ip=10.1.2.3', 'target_url=http://a.example/&target_url=https://a.example/login', 'offset=99']) {
    const res = await request(server.url, `/api/v1/targets/?session_id=1&format=text&${query}`);
    const expected = (await json(`?session_id=1&${query}`)).map((t: any) => `${t.target_url}\n`).join('');
    assert.equal(res.text, expected, query);
  }
});

test('format=csv has a header row of every field, then one row per target, each field as JSON has it', async () => {
  const res = await request(server.url, '/api/v1/targets/?session_id=1&format=csv');
  assert.equal(res.status, 200);
  assert.equal(res.headers['content-type'], 'text/csv; charset=utf-8');
  assert.equal(res.headers['content-disposition'], 'attachment; filename="default-session.targets.csv"');
  const rows = parseCsv(res.text);
  assert.deepEqual(rows[0], [...TARGET_FIELDS]);
  assert.deepEqual(rows[0], ['id', 'target_url', 'host_name', 'host_ip', 'port_number', 'url_scheme', 'host_path', 'ip_url', 'top_domain', 'top_url', 'alternative_ips', 'scope', 'max_user_rank', 'max_owtf_rank']);
  const targets = await json('?session_id=1');
  assert.equal(rows.length, targets.length + 1);
  targets.forEach((t: any, i: number) => {
    const expected = TARGET_FIELDS.map((f) => (Array.isArray(t[f]) ? t[f].join(' ') : String(t[f])));
    // a cell a spreadsheet would run as a formula is defused with a leading quote
    assert.deepEqual(rows[i + 1], expected.map((v) => (/^[=+@]/.test(v) ? `'${v}` : v)), t.target_url);
  });
});

test('CSV quotes a field holding a comma or a quote, doubling the quotes (RFC 4180)', async () => {
  const res = await request(server.url, `/api/v1/targets/?session_id=1&format=csv&host_name=${encodeURIComponent('a,b"c.example')}`);
  const line = res.text.split('\r\n')[1];
  assert.ok(line.includes(',"http://a,b""c.example/q?x=1,2","a,b""c.example",'), line);
});

test('CSV defuses formulas but leaves negative numbers alone', async () => {
  const res = await request(server.url, '/api/v1/targets/?session_id=1&format=csv&target_url=http://=cmd.example/');
  const [, row] = parseCsv(res.text);
  assert.equal(row[2], "'=cmd.example");
  assert.equal(row[1], 'http://=cmd.example/');
  assert.deepEqual(row.slice(-3), ['true', '-1', '-1']);
});

test('CSV writes alternative_ips space-separated, scope and ranks as JSON literals', async () => {
  const [, row] = parseCsv((await request(server.url, '/api/v1/targets/?session_id=1&format=csv&host_ip=10.1.2.3')).text);
  assert.deepEqual(row.slice(1), ['https://10.1.2.3:8443/admin', '10.1.2.3', '10.1.2.3', '8443', 'https', '10.1.2.3/admin', 'https://10.1.2.3:8443/admin', '10.1.2.3', 'https://10.1.2.3:8443', '10.1.2.3', 'true', '-1', '-1']);
});

test('CSV takes the same filters and paging as JSON', async () => {
  for (const query of ['limit=1&offset=1', 'host_name=a.example', 'scope=true&limit=3']) {
    const rows = parseCsv((await request(server.url, `/api/v1/targets/?session_id=1&format=csv&${query}`)).text);
    assert.deepEqual(rows.slice(1).map((r) => Number(r[0])), (await json(`?session_id=1&${query}`)).map((t: any) => t.id), query);
  }
});

test('an empty session: text is empty, CSV the header row alone; the file is named after the session', async () => {
  const text = await request(server.url, '/api/v1/targets/?session_id=2&format=text');
  assert.equal(text.status, 200);
  assert.equal(text.text, '');
  const csv = await request(server.url, '/api/v1/targets/?format=csv');
  assert.equal(csv.text, `${TARGET_FIELDS.join(',')}\r\n`);
  assert.equal(csv.headers['content-disposition'], 'attachment; filename="acme-web-co.targets.csv"');
  const unknown = await request(server.url, '/api/v1/targets/?session_id=77&format=csv');
  assert.equal(unknown.headers['content-disposition'], 'attachment; filename="session-77.targets.csv"');
});

test('format is case-insensitive, json is the default, and anything else is 400 Invalid parameter type provided', async () => {
  assert.equal((await request(server.url, '/api/v1/targets/?session_id=1&format=TEXT')).headers['content-type'], 'text/plain; charset=utf-8');
  assert.deepEqual(await json('?session_id=1&format=json'), await json('?session_id=1'));
  for (const bad of ['xml', '', 'csv2']) {
    const body = assertFail(await request(server.url, `/api/v1/targets/?format=${bad}`), 400, MESSAGES.invalidParameterType);
    assert.deepEqual(body.data, { format: 'expected json, text or csv' });
  }
  assertFail(await request(server.url, '/api/v1/targets/?format=csv&limit=x'), 400, MESSAGES.invalidParameterType);
});

test('HEAD of a text list has the headers of the GET and no body', async () => {
  const get = await request(server.url, '/api/v1/targets/?session_id=1&format=text');
  const head = await request(server.url, '/api/v1/targets/?session_id=1&format=text', { method: 'HEAD' });
  assert.equal(head.status, 200);
  assert.equal(head.text, '');
  assert.equal(head.headers['content-length'], get.headers['content-length']);
});
