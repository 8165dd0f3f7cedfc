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

  test('a line without a colon, with an empty name, starting with a space, or whose name is not a token is left out; the lines around it stay', () => {
    assert.equal(browserHead(head('A: 1', 'no colon here', ': empty', 'Bad Name: x', 'X-é: x', 'B: 2')), head('A: 1', 'B: 2'));
  });

  test('values of any bytes stay as they are; an unchanged head is the same', () => {
    const same = head('B: a\x01b:c', 'C:');
    assert.equal(browserHead(same), same);
  });

  test('a bare CR ends a line, as a LF does (Bad Name: x<CR>Set-Cookie: ... is two lines: the cookie is set); every line end is written CRLF', () => {
    assert.equal(browserHead(head('X-Frame-Options: DENY', 'Bad Name: x\rContent-Security-Policy: frame-ancestors *')), head('X-Frame-Options: DENY', 'Content-Security-Policy: frame-ancestors *'));
    assert.equal(browserHead('HTTP/1.1 200 OK\nA : 1\nno colon\n\n'), 'HTTP/1.1 200 OK\r\nA: 1\r\n\r\n');
    assert.equal(browserHead('HTTP/1.1 200 OK\rA: 1\r\n\r\n'), 'HTTP/1.1 200 OK\r\nA: 1\r\n\r\n');
  });

  test('a line starting with a space or tab continues a line that has a colon and a name, joined with one space, and goes with it when that one is left out; after another line it is a line of its own, left out', () => {
    assert.equal(browserHead(head('A: one', ' \t two', 'B: 2')), head('A: one two', 'B: 2'));
    // Chromium frames both pages: the fold goes with the line left out, not onto the CSP before it
    assert.equal(browserHead(head("Content-Security-Policy: script-src 'self'", 'Bad Name: x', " ; frame-ancestors 'none'")), head("Content-Security-Policy: script-src 'self'"));
    assert.equal(browserHead(head('X-Frame-Options: SAMEORIGIN', 'NoColon', ' DENY')), head('X-Frame-Options: SAMEORIGIN'));
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
      // a client that has what it needs closes (a flood cut short, an answer read): a reset here
      socket.on('error', () => {});
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

  test('a NUL in the head (Chromium refuses such an answer whole) is said to be not valid HTTP', async () => {
    answer = ['HTTP/1.1 200 OK\r\nBad\0Name: x\r\nX-Frame-Options: DENY\r\nContent-Length: 2\r\n\r\nok'];
    await assert.rejects(fetchPage(url, { timeoutMs: 2000 }), /not valid HTTP: a NUL byte in its head, which browsers refuse|a NUL byte in its head/);
  });

  test('a flood of interim heads (100 Continue) stops past 1 MiB of them, at once', async () => {
    answer = [`HTTP/1.1 100 Continue\r\nBad Name: x\r\nX-Pad: ${'p'.repeat(2000)}\r\n\r\n`.repeat(600), 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok'];
    await assert.rejects(fetchPage(url, { timeoutMs: 5000 }), /over 1 MiB of interim \(1xx\) answers/);
  });

  test('a flood of small interim heads stops past 1,000 of them (40,000 in a MiB held the event loop ~200 ms); 1,000 and then the answer is read', async () => {
    answer = ['HTTP/1.1 100 Continue\r\n\r\n'.repeat(1001), 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok'];
    await assert.rejects(fetchPage(url, { timeoutMs: 5000 }), /over 1000 interim \(1xx\) answers/);
    answer = ['HTTP/1.1 102 Processing\r\n\r\n'.repeat(1000), 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok'];
    assert.equal((await fetchPage(url, { timeoutMs: 5000 })).status, 200);
  });

  test('Content-Length twice with one value is read as Chromium reads it (once); values that differ are refused', async () => {
    answer = ['HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Frame-Options: DENY\r\ncontent-length: 2\r\n\r\nok'];
    const page = await fetchPage(url, { timeoutMs: 2000 });
    assert.equal(page.body, 'ok');
    assert.deepEqual(page.headerLines, ['Content-Length: 2', 'X-Frame-Options: DENY']);
    answer = ['HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\nok'];
    assert.equal((await fetchPage(url, { timeoutMs: 2000 })).body, 'ok');
    answer = ['HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok!'];
    await assert.rejects(fetchPage(url, { timeoutMs: 2000 }));
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

  test('a head past what a check reads is said to be too large', async () => {
    answer = [`HTTP/1.1 200 OK\r\nBad Name: x\r\n${'X-Pad: 0123456789012345678901234567890123456789\r\n'.repeat(8000)}\r\nok`];
    await assert.rejects(fetchPage(url, { timeoutMs: 5000 }), /headers larger than the 256 KiB a check reads/);
  });

  test('the connection is closed once the answer has ended, though the target keeps its side open (it was left half-closed, a descriptor held, until the target closed)', async () => {
    // a target that keeps its side open when the client ends its own (as a hostile one may)
    const held = createServer({ allowHalfOpen: true }, (socket) => {
      socket.once('data', () => socket.write('HTTP/1.1 200 OK\r\nBad Name: x\r\nContent-Length: 2\r\n\r\nok'));
    }).listen(0, '127.0.0.1');
    await new Promise((resolve) => held.once('listening', resolve));
    const closed = new Promise<void>((resolve) => held.once('connection', (socket: Socket) => {
      socket.on('error', () => {});
      socket.once('close', () => resolve());
      // more bytes after the answer: a client gone answers them with a reset
      const poke = setInterval(() => socket.writable && socket.write('x'), 50);
      socket.once('close', () => clearInterval(poke));
    }));
    try {
      const page = await fetchPage(`http://127.0.0.1:${(held.address() as AddressInfo).port}/`, { timeoutMs: 2000 });
      assert.equal(page.body, 'ok');
      const outcome = await Promise.race([closed.then(() => 'closed'), new Promise((resolve) => setTimeout(() => resolve('still open'), 3000))]);
      assert.equal(outcome, 'closed');
    } finally {
      held.close();
    }
  });
});
