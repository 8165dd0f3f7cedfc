/**
 * Requests node's server would answer by itself (an unknown `Expect`: a bare 417; `CONNECT`: the
 * connection closed without a word) go through the server's checks like any other: the Host check,
 * the token, a JSON answer. Against the compiled server, as `npm start` runs it.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { rawExchange } from '../helpers/raw-client.ts';
import { spawnServer, tempDir, type ChildServer } from '../helpers/server.ts';

let server: ChildServer;
let port: number;

before(async () => {
  server = await spawnServer(['--port', '0', '--proxy-port', '0', '--data-dir', await tempDir()]);
  port = Number(new URL(server.url).port);
});
after(async () => {
  server?.proc.kill('SIGTERM');
  await server?.exited;
});

/** Status line, Content-Type and JSON body of a raw answer. */
function parsed(text: string): { status: string; type: string | undefined; body: unknown } {
  const [head = '', body = ''] = text.split('\r\n\r\n');
  const type = /\r\ncontent-type: ([^\r]*)/i.exec(head)?.[1];
  return { status: head.split('\r\n')[0]!, type, body: body === '' ? undefined : JSON.parse(body) };
}

describe('an Expect other than 100-continue (node answers a bare 417 unless told)', () => {
  const post = (host: string, auth: string) =>
    `POST /api/v1/sessions/ HTTP/1.1\r\nHost: ${host}\r\n${auth}Expect: x-foo\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 11\r\nConnection: close\r\n\r\nname=expect`;

  test('a Host not allowed: the 403 every request gets, as JSON', async () => {
    const { text } = await rawExchange(port, post('evil.example', `Authorization: Bearer ${server.token}\r\n`));
    assert.deepEqual(parsed(text), { status: 'HTTP/1.1 403 Forbidden', type: 'application/json; charset=utf-8', body: { status: 'fail', message: 'Host not allowed', code: 403 } });
  });

  test('no token: 401; with it: the expectation ignored (RFC 9110 lets a server), the request carried out', async () => {
    assert.equal(parsed((await rawExchange(port, post(`127.0.0.1:${port}`, ''))).text).status, 'HTTP/1.1 401 Unauthorized');
    const made = parsed((await rawExchange(port, post(`127.0.0.1:${port}`, `Authorization: Bearer ${server.token}\r\n`))).text);
    assert.equal(made.status, 'HTTP/1.1 201 Created');
    const sessions = parsed((await rawExchange(port, `GET /api/v1/sessions/ HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${server.token}\r\nConnection: close\r\n\r\n`)).text);
    assert.ok((sessions.body as { data: Array<{ name: string }> }).data.some((s) => s.name === 'expect'), JSON.stringify(sessions.body));
  });
});

describe('CONNECT to the API port (node closes the connection without a word unless told)', () => {
  const connect = (host: string) => `CONNECT localhost:80 HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${server.token}\r\n\r\n`;

  test('a Host not allowed: 403 as JSON, then the connection closes', async () => {
    const { text, ended } = await rawExchange(port, connect('evil.example:80'));
    assert.ok(ended, 'closed');
    assert.deepEqual(parsed(text), { status: 'HTTP/1.1 403 Forbidden', type: 'application/json; charset=utf-8', body: { status: 'fail', message: 'Host not allowed', code: 403 } });
  });

  test('an allowed Host and the token: 405 with Allow (no route takes CONNECT), then the connection closes; the server goes on', async () => {
    const { text, ended } = await rawExchange(port, connect(`127.0.0.1:${port}`));
    assert.ok(ended, 'closed');
    const answer = parsed(text);
    assert.equal(answer.status, 'HTTP/1.1 405 Method Not Allowed');
    assert.match(text, /\r\nAllow: [A-Z, ]+\r\n/);
    assert.deepEqual(answer.body, { status: 'fail', message: 'Method not allowed', code: 405 });
    const health = parsed((await rawExchange(port, `GET /debug/health HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`)).text);
    assert.equal(health.status, 'HTTP/1.1 200 OK');
  });
});
