/**
 * Answers' heads read as Chromium reads them (src/http/browser-head.ts): the line node's parser
 * refuses is mended or skipped, the rest acted on. What Chromium does with each line was seen in
 * Chromium itself; test/engine/verdicts.test.ts holds the framing check to it on real nginx.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { browserHead } from '../../src/http/browser-head.ts';
import { fetchPage } from '../../src/engine/checks/client.ts';

describe('browserHead', () => {
  const head = (...lines: string[]) => `HTTP/1.1 200 OK\r\n${lines.map((l) => `${l}\r\n`).join('')}\r\n`;

  test('a space or a tab before the colon is dropped: the header is read (X-Frame-Options : DENY)', () => {
    assert.equal(browserHead(head('X-Frame-Options : DENY', 'A\t \t: b')), head('X-Frame-Options: DENY', 'A: b'));
  });

  test('a line without a colon, with an empty name, or whose name is not a token is left out; the lines around it stay', () => {
    assert.equal(browserHead(head('A: 1', 'no colon here', ': empty', 'Bad Name: x', 'X-é: x', 'B: 2')), head('A: 1', 'B: 2'));
  });

  test('a line that continues the one before (obs-fold) is left as it is; so are values of any bytes', () => {
    const same = head('A: one', ' two', 'B: a\x01b:c', 'C:');
    assert.equal(browserHead(same), same);
  });

  test('LF line ends stay LF', () => {
    assert.equal(browserHead('HTTP/1.1 200 OK\nA : 1\nno colon\n\n'), 'HTTP/1.1 200 OK\nA: 1\n\n');
  });
});

describe('a check reads the answers node refuses as Chromium does', () => {
  /** What the target answers next: the chunks it writes, in order, each flushed on its own. */
  let answer: Array<string | Buffer> = [];
  let server: Server;
  let url: string;
  const sockets = new Set<Socket>();
  before(async () => {
    server = createServer((socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      let asked = '';
      socket.on('data', async (data) => {
        asked += data.toString('latin1');
        if (!asked.includes('\r\n\r\n')) return;
        asked = '';
        for (const chunk of answer) {
          socket.write(chunk);
          await new Promise((resolve) => setImmediate(resolve));
        }
        socket.end();
      });
    }).listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  });
  after(() => {
    for (const socket of sockets) socket.destroy();
    server.close();
  });

  test('X-Frame-Options with a space before its colon, after a line node cannot read: both as Chromium reads them, the body whole', async () => {
    answer = ['HTTP/1.1 200 OK\r\nBad Name: x\r\nX-Frame-Options : DENY\r\nContent-Length: 21\r\n\r\nBad Name: in the body'];
    const page = await fetchPage(url, { timeoutMs: 2000 });
    assert.equal(page.status, 200);
    assert.deepEqual(page.headerLines, ['X-Frame-Options: DENY', 'Content-Length: 21']);
    assert.equal(page.body, 'Bad Name: in the body');
  });

  test('a head sent a byte at a time, its end split between chunks (CR LF | CR LF), is read the same', async () => {
    const text = 'HTTP/1.1 200 OK\r\nNo colon\r\nA : 1\r\nContent-Length: 2\r\n\r\nok';
    answer = [...text].map((c) => Buffer.from(c, 'latin1'));
    const page = await fetchPage(url, { timeoutMs: 5000 });
    assert.deepEqual(page.headerLines, ['A: 1', 'Content-Length: 2']);
    assert.equal(page.body, 'ok');
  });

  test('an interim answer (103 Early Hints) and then the answer: each head read as Chromium reads it', async () => {
    answer = ['HTTP/1.1 103 Early Hints\r\nLink : </a.css>; rel=preload\r\n\r\n', 'HTTP/1.1 200 OK\r\nX Y: z\r\nX-Frame-Options : SAMEORIGIN\r\nContent-Length: 2\r\n\r\nok'];
    const page = await fetchPage(url, { timeoutMs: 2000 });
    assert.equal(page.status, 200);
    assert.deepEqual(page.headerLines, ['X-Frame-Options: SAMEORIGIN', 'Content-Length: 2']);
  });

  test('a chunked body holding what looks like a head is left as it came', async () => {
    const body = 'HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n';
    answer = [`HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`];
    const page = await fetchPage(url, { timeoutMs: 2000 });
    assert.equal(page.body, body);
  });

  test('an answer that is not HTTP is still said to be that, at once, not held until a head ends', async () => {
    answer = ['SSH-2.0-OpenSSH_9.2p1\r\n'];
    await assert.rejects(fetchPage(url, { timeoutMs: 2000 }), (error: Error & { title: string }) => {
      assert.equal(error.title, 'Target answered, but not valid HTTP');
      return true;
    });
    // the first bytes alone decide: "HTT" then "X" is not HTTP either
    answer = ['HTT', 'X/1.1 200 OK\r\n\r\n'];
    await assert.rejects(fetchPage(url, { timeoutMs: 2000 }), /not valid HTTP/);
  });

  test('a head past what a check reads goes to the parser as it came, which says it is too large', async () => {
    answer = [`HTTP/1.1 200 OK\r\nBad Name: x\r\n${'X-Pad: 0123456789012345678901234567890123456789\r\n'.repeat(8000)}\r\nok`];
    await assert.rejects(fetchPage(url, { timeoutMs: 5000 }), /headers larger than the 256 KiB a check reads/);
  });
});
