/** Grep rules on their own: what a regex's value is, what a rule file may say, and a run over 100,000 transactions. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { GrepRuleError, readGrepRules } from '../../src/evidence/grep-rules.ts';
import { runGrep, MAX_FINDING_TRANSACTIONS } from '../../src/evidence/grep.ts';
import type { Exchange } from '../../src/evidence/record.ts';
import { compileRegex, compileSubstring, MAX_MATCH } from '../../src/evidence/regex.ts';
import { request, startServer } from '../helpers/server.ts';

function values(pattern: string, text: string | Buffer): string[] {
  const bytes = Buffer.from(text);
  const out: string[] = [];
  compileRegex(pattern).matches(bytes, 0, bytes.length, (s, e) => (out.push(bytes.toString('utf8', s, e)), false));
  return out;
}

test('a regex value: from the leftmost start of the match that ends first, the longest, or the shortest with a lazy quantifier; none overlap', () => {
  const table: [string, string, string[]][] = [
    ['<!--[\\s\\S]*?-->', 'a <!-- one --> b <!-- two <!-- x --> c -->', ['<!-- one -->', '<!-- two <!-- x -->']],
    ['<!--[\\s\\S]*-->', 'a <!-- one --> b -->', ['<!-- one --> b -->']],
    ['<input[^>]*type=[^>]*hidden[^>]*>', '<INPUT type="hidden" name=a><input type=text><input name=b type=hidden>', ['<INPUT type="hidden" name=a>', '<input name=b type=hidden>']],
    ['\\bfoo\\w*', 'xfoo foobar foo_1 afoo', ['foobar', 'foo_1']],
    ['^abc', 'abcabc', ['abc']],
    ['abc$', 'abcabc', ['abc']],
    ['é+x', 'aééx éx', ['ééx', 'éx']],
    ['a|bc*', 'xbccc a', ['bccc', 'a']],
    ['/\\*[\\s\\S]*?\\*/', 'x /* a */ y /* b */', ['/* a */', '/* b */']],
    ['<\\?(?:[^x]|x[^m])[\\s\\S]*?\\?>', '<?xml version?> <?php echo 1 ?>', ['<?php echo 1 ?>']],
    ['version \\d+(?!\\.)', 'version 12. version 3 ', ['version 1', 'version 3']],
    ['x*', 'yyy', []],
  ];
  for (const [pattern, text, expected] of table) assert.deepEqual(values(pattern, text), expected, `${pattern} in ${text}`);
  // a literal's matches, without overlap
  const bytes = Buffer.from('xxababab');
  const starts: number[] = [];
  compileSubstring('abab').matches(bytes, 0, bytes.length, (s) => (starts.push(s), false));
  assert.deepEqual(starts, [2]);
  // a value longer than MAX_MATCH: its last MAX_MATCH bytes
  const long = `<!--${'x'.repeat(MAX_MATCH * 2)}-->`;
  const [value] = values('<!--[\\s\\S]*?-->', long);
  assert.equal(value.length, MAX_MATCH);
  assert.ok(value.endsWith('x-->'));
});

test('a substring of any length compiles and is found: 20,000 ASCII characters (any case), 6,000 letters past ASCII (their bytes as written past the automaton\'s bound)', () => {
  const ascii = 'a'.repeat(20_000);
  const inAscii = Buffer.from(`x${'A'.repeat(20_000)}y`);
  assert.equal(compileSubstring(ascii).test(inAscii), true);
  assert.equal(compileSubstring(ascii).test(Buffer.from('a'.repeat(19_999))), false);
  assert.equal(compileSubstring(`${ascii}b`).testString(`${'a'.repeat(20_000)}B`), true);
  const umlauts = 'ä'.repeat(6_000);
  assert.equal(compileSubstring(umlauts).testString(`<p>${umlauts}</p>`), true);
  assert.equal(compileSubstring(umlauts).testString('ä'.repeat(5_999)), false);
  // a short one still folds the case of letters past ASCII
  assert.equal(compileSubstring('ärger').testString('ÄRGER'), true);
});

test('rule files: each mistake named with its rule and field', () => {
  const refused: [unknown, RegExp][] = [
    [[], /"grep" must be an array of 1 to 100 rules/],
    [[{ title: 'x', rank: 1 }], /grep\[0\]: a rule has exactly one of "header", "headers", "body" or "slowest"/],
    [[{ title: 'x', rank: 1, header: 'A', body: 'b' }], /exactly one of/],
    [[{ title: 'x', rank: 9, header: 'Server' }], /grep\[0\]: "rank" must be an integer from -1 to 5/],
    [[{ title: 'x', rank: 1, header: 'Bad Name' }], /"header" must be a header name or an array of them/],
    [[{ title: 'x', rank: 1, body: '(unclosed' }], /grep\[0\]: "body" is not a regex this server runs \(position 0: unterminated group\)/],
    [[{ title: 'x', rank: 1, body: 'a*' }], /"body" matches an empty text/],
    [[{ title: 'x', rank: 1, body: '(a)\\1' }], /backreferences are not supported/],
    [[{ title: 'x', rank: 1, header: 'A', colour: 'red' }], /unknown field "colour"/],
    [[{ title: 'x', rank: 1, body: 'a', value: 'cookie' }], /"value" goes with "header"/],
    [[{ title: 'x', rank: 1, slowest: 0 }], /"slowest" must be an integer from 1 to 100/],
    [[{ title: 'x', rank: 1, slowest: 3, rank_when_absent: 2 }], /"rank_when_absent" does not go with "slowest"/],
    [[{ title: 'x', rank: 1, header: 'A', absent_title: 'none' }], /"absent_title" needs "rank_when_absent"/],
    [[{ title: 'x', rank: 1, header: 'A', scheme: 'ftp' }], /"scheme" must be "http" or "https"/],
    [[{ title: 'x', rank: 1, header: 'A' }, 'no'], /grep\[1\] must be an object/],
  ];
  for (const [raw, message] of refused) assert.throws(() => readGrepRules(raw), (err: Error) => err instanceof GrepRuleError && message.test(err.message), JSON.stringify(raw));
  assert.deepEqual(readGrepRules([{ title: ' Server ', rank: 1, header: 'Server', rank_when_absent: 0 }]), [{ title: 'Server', rank: 1, header: ['Server'], rank_when_absent: 0 }]);
});

/** Transactions of the big run: 5,000 in npm test, 100,000 in npm run test:long (GREP_TRANSACTIONS). */
const N = Number(process.env.GREP_TRANSACTIONS ?? 5_000);
/** The one slow transaction of the big run. */
const SLOW = Math.min(77_777, N - 1);

function exchange(i: number): Exchange {
  const body = Buffer.from(`<html><!-- page ${i % 3} --><input type="hidden" name="t" value="${i}"></html>`);
  return {
    url: `https://big.example/page/${i}`, method: 'GET', httpVersion: 'HTTP/1.1', requestHeaders: [['Host', 'big.example']], requestBody: Buffer.alloc(0),
    status: 200, statusText: 'OK', responseHttpVersion: 'HTTP/1.1',
    responseHeaders: [['Content-Type', 'text/html'], ['Server', 'nginx/1.25.3'], ...(i % 1000 === 0 ? [['Set-Cookie', `s=${i}; Path=/`] as [string, string]] : [])],
    responseBody: body, responseSize: body.length, truncated: false, mimeType: 'text/html', startedAt: 1_700_000_000_000 + i, time: i === SLOW ? 5000 : 10, source: 'har',
  };
}

test(`a run over ${N.toLocaleString('en')} transactions: every one read, in slices (the event loop turns meanwhile), the evidence capped per finding`, async () => {
  const server = await startServer();
  try {
    await request(server.url, '/api/v1/targets/', { method: 'POST', form: { target_url: 'https://big.example/' } });
    async function* source() {
      for (let i = 0; i < N; i++) yield exchange(i);
    }
    const imported = await server.evidence.importExchanges(1, source());
    assert.ok(imported.ok);
    // one transaction more, out of scope: not read
    await server.evidence.importExchanges(1, (async function* () {
      yield { ...exchange(0), url: 'https://elsewhere.example/' };
    })());
    const rules = readGrepRules([
      { title: 'Server', header: 'Server', rank: 1 },
      { title: 'Comment', body: '<!--[\\s\\S]*?-->', rank: 1 },
      { title: 'Hidden', body: '<input[^>]*hidden[^>]*>', mask: 'value="[^"]*"', rank: 1 },
      { title: 'Cookie', header: 'Set-Cookie', value: 'cookie', rank: 2 },
      { title: 'Slow', slowest: 3, min_seconds: 1, rank: 1 },
      { title: 'Debug', header: 'X-Debug', rank: 3, rank_when_absent: 0 },
    ]);
    let turns = 0;
    const ticker = setInterval(() => turns++, 0);
    const loaded = await server.evidence.load(1);
    const result = await runGrep({ loaded, read: (s, p, l) => server.evidence.read(s, p, l), rules }).finally(() => clearInterval(ticker));
    assert.equal(result.read, N);
    assert.ok(turns > 10, `the event loop turned ${turns} times during the run`);
    const byTitle = new Map(result.findings.map((f) => [f.title, f]));
    const server1 = byTitle.get('Server: Server: nginx/1.25.3')!;
    assert.equal(server1.transactions!.length, MAX_FINDING_TRANSACTIONS);
    assert.deepEqual(server1.transactions!.slice(0, 3), [1, 2, 3]);
    assert.equal(server1.transactions_total, N);
    assert.equal(byTitle.get('Comment: <!-- page 1 -->')!.transactions_total, Math.floor((N + 1) / 3));
    assert.equal(byTitle.get('Hidden: <input type="hidden" name="t" …>')!.transactions_total, N);
    assert.equal(byTitle.get('Cookie: Set-Cookie: s=…; Path=/')!.transactions!.length, N / 1000);
    assert.deepEqual(byTitle.get(`Slow: GET https://big.example/page/${SLOW} took 5.00 s`)!.transactions, [SLOW + 1]);
    const debug = byTitle.get('No Debug')!;
    assert.equal(debug.rank, 0);
    assert.equal(debug.transactions_total, N);
    assert.equal(result.findings.length, 8);
    assert.match(result.summary, new RegExp(`^Read ${N.toLocaleString('en')} transactions \\(in scope, with a response\\) of ${(N + 1).toLocaleString('en')} stored transactions in \\d+ ms\\.`));
  } finally {
    await server.close();
  }
});

test('an aborted run stops at its next slice with the signal’s reason', async () => {
  const server = await startServer();
  try {
    await request(server.url, '/api/v1/targets/', { method: 'POST', form: { target_url: 'https://big.example/' } });
    await server.evidence.importExchanges(1, (async function* () {
      for (let i = 0; i < 2_000; i++) yield exchange(i);
    })());
    const controller = new AbortController();
    const loaded = await server.evidence.load(1);
    const run = runGrep({ loaded, read: (s, p, l) => server.evidence.read(s, p, l), rules: readGrepRules([{ title: 'Comment', body: '<!--[\\s\\S]*?-->', rank: 1 }]), signal: controller.signal });
    controller.abort(new Error('aborted by a user'));
    await assert.rejects(run, /aborted by a user/);
  } finally {
    await server.close();
  }
});

test('a body a target crafted (16 MiB of /*: a match every five bytes) is read by each rule for 0.5 s at most: the rest is said unread, nothing is said absent, and the event loop turns between the rules', async () => {
  const server = await startServer();
  try {
    await request(server.url, '/api/v1/targets/', { method: 'POST', form: { target_url: 'https://big.example/' } });
    const body = Buffer.alloc(16 * 1024 * 1024, '/*');
    await server.evidence.importExchanges(1, (async function* () {
      yield { ...exchange(0), responseBody: body, responseSize: body.length };
      yield { ...exchange(1), url: 'https://big.example/plain' };
    })());
    const rules = readGrepRules([
      { title: 'Comment', body: '/\\*[\\s\\S]*?\\*/', rank: 1 },
      // no value kept: without the cut, the run would say none of the transactions shows one
      { title: 'Secret comment', body: '/\\*[\\s\\S]*?\\*/', matching: 'secret', rank: 2, rank_when_absent: 0 },
    ]);
    let turns = 0;
    const ticker = setInterval(() => turns++, 0);
    const loaded = await server.evidence.load(1);
    const result = await runGrep({ loaded, read: (s, p, l) => server.evidence.read(s, p, l), rules }).finally(() => clearInterval(ticker));
    assert.equal(result.read, 2);
    assert.match(result.summary, /Comment: 1 distinct value in 2 transactions read; 1 transaction not read whole \(the rule stops reading one after 0\.5 s\)\./);
    assert.match(result.summary, /Secret comment: 0 distinct values in 2 transactions read; 1 transaction not read whole/);
    assert.ok(!result.findings.some((f) => f.title === 'No Secret comment'), 'not said absent: the unread rest may hold it');
    assert.ok(turns >= 2, `the event loop turned between the rules (${turns} times)`);
  } finally {
    await server.close();
  }
});

// in a child with a time limit: a freeze holds this process's own timers too
test('a body a target crafted is read in linear time: a pattern\'s fixed start found by one walk over the text (200,000 <input type=hidden> were ~200 s: each match searched the rest of the text again for every case of its prefix that was not in it), a trailing lookahead stopped where no match can go on (300,000 "a" by a(?!b): ~1 min)', () => {
  const program = `import { compileRegex } from './src/evidence/regex.ts';
    const count = (pattern, text) => { const bytes = Buffer.from(text); let n = 0; compileRegex(pattern).matches(bytes, 0, bytes.length, () => (n++, false)); return n; };
    process.stdout.write(JSON.stringify([count('<input[^>]*hidden[^>]*>', '<input type=hidden>'.repeat(200_000)), count('a(?!b)', 'a'.repeat(300_000))]));`;
  const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', program], { cwd: join(import.meta.dirname, '..', '..'), timeout: 30_000 });
  assert.deepEqual(JSON.parse(out.toString()), [200_000, 300_000]);
});

test('a rule\'s mask is applied within the rule\'s time for the transaction: a mask that reads to the end of the value from each match (a value of 60,000 "a") leaves it not read whole', async () => {
  const server = await startServer();
  try {
    await request(server.url, '/api/v1/targets/', { method: 'POST', form: { target_url: 'https://big.example/' } });
    const body = Buffer.from(`tok=${'a'.repeat(60_000)}`);
    await server.evidence.importExchanges(1, (async function* () {
      yield { ...exchange(0), responseBody: body, responseSize: body.length };
    })());
    const loaded = await server.evidence.load(1);
    const rules = readGrepRules([{ title: 'Token', body: 'tok=a+', mask: 'a(?![^z]*z)', rank: 1 }]);
    const result = await runGrep({ loaded, read: (s, p, l) => server.evidence.read(s, p, l), rules });
    assert.match(result.summary, /Token: 0 distinct values in 1 transaction read; 1 transaction not read whole \(the rule stops reading one after 0\.5 s\)\./);
  } finally {
    await server.close();
  }
});
