/** The streaming JSON parser, the linear-time regexes and the filter language, on their own. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createJsonStream, DEFAULT_JSON_LIMITS, isBodyText, JsonStreamError } from '../../src/evidence/json-stream.ts';
import { evaluate, FilterError, parseFilter, type Subject } from '../../src/evidence/filter.ts';
import { entryToExchange, exchangeToEntry, harPieces } from '../../src/evidence/har.ts';
import { decodeRecord, encodeRecord, transactionView, type Exchange } from '../../src/evidence/record.ts';
import { compileRegex, compileSubstring, RegexError } from '../../src/evidence/regex.ts';
import { jsonPieces, PIECE } from '../../src/json-pieces.ts';

function parseInPieces(doc: Buffer, size: number, limits = DEFAULT_JSON_LIMITS): unknown[] {
  const parser = createJsonStream(limits);
  const out: unknown[] = [];
  for (let i = 0; i < doc.length; i += size) {
    parser.write(doc.subarray(i, i + size));
    out.push(...parser.take().map((e) => e.value));
  }
  parser.end();
  out.push(...parser.take().map((e) => e.value));
  return out;
}

const plain = (v: unknown): unknown => (isBodyText(v) ? v.bytes.toString('utf8') : Array.isArray(v) ? v.map(plain) : v && typeof v === 'object' ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)])) : v);

test('the streaming parser yields each entry whole, whatever the chunks, escapes and surrogates split across them', () => {
  const entries = [
    { request: { url: 'https://a/é\u0000"\\/\b\f\n\r\t😀', n: [1, -2.5e3, 0, true, false, null] }, response: { content: { text: 'body "quoted" \u2028 😀 \\u0041' } } },
    { empty: {}, list: [], nested: [[{ a: [{}] }]] },
    'a string entry',
    42,
  ];
  const doc = Buffer.from(JSON.stringify({ log: { version: '1.2', pages: [{ x: [1, { y: 'z' }] }], entries }, extra: { ignored: [1, 2] } }));
  for (const size of [1, 2, 3, 5, 7, 64, doc.length]) {
    assert.deepEqual(parseInPieces(doc, size).map(plain), entries, `pieces of ${size}`);
  }
});

test('strings written with escapes of every kind, runs of them past the parser\'s 16 KiB gathering, lone surrogates: what JSON.parse reads (a lone surrogate as U+FFFD), whatever the chunks (seeded)', () => {
  let seed = 0x5eed;
  const random = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
  const pick = <T,>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
  const hex = (unit: number) => `\\u${unit.toString(16).padStart(4, '0')}`;
  /** One character of a JSON string as written: plain, a short escape, or a \u escape. */
  const pieces = ['a', 'é', '😀', '\\"', '\\\\', '\\/', '\\b', '\\f', '\\n', '\\r', '\\t', hex(0x41), hex(0xe9), hex(0x20ac), hex(0xd83d) + hex(0xde00), hex(0xd800), hex(0xdc00), `${hex(0xd800)}x`, `${hex(0xd800)}\\n`, `${hex(0xd800)}${hex(0x41)}`];
  const written = (length: number) => Array.from({ length }, () => pick(pieces)).join('');
  for (let round = 0; round < 40; round++) {
    // a run of one escape past 16 KiB, now and then
    const run = round % 5 === 0 ? pick(['\\"', '\\\\', hex(0xe9)]).repeat(20_000) : '';
    const body = written(Math.floor(random() * 200)) + run;
    const other = written(Math.floor(random() * 200));
    const doc = Buffer.from(`{"log":{"entries":[{"response":{"content":{"text":"${body}"}},"comment":"${other}"}]}}`);
    const utf8 = (text: string) => Buffer.from(text, 'utf8').toString('utf8');
    const expected = JSON.parse(doc.toString()).log.entries[0];
    for (const size of [1 + Math.floor(random() * 7), 1 + Math.floor(random() * 5000), doc.length]) {
      const [entry] = parseInPieces(doc, size) as { response: { content: { text: { bytes: Buffer } } }; comment: string }[];
      assert.equal(entry!.response.content.text.bytes.toString('utf8'), utf8(expected.response.content.text), `round ${round}, pieces of ${size}: the body`);
      assert.equal(entry!.comment, utf8(expected.comment), `round ${round}, pieces of ${size}: a string`);
    }
  }
});

test('bodies (content.text, postData.text) are kept as bytes and cut at the cap, the rest read and dropped', () => {
  const doc = Buffer.from(JSON.stringify({ log: { entries: [{ request: { postData: { text: 'short' } }, response: { content: { text: 'é'.repeat(10) } }, other: { text: 'not a body' } }] } }));
  const [entry] = parseInPieces(doc, 3, { ...DEFAULT_JSON_LIMITS, bodyCap: 5 }) as { request: { postData: { text: unknown } }; response: { content: { text: unknown } }; other: { text: unknown } }[];
  assert.ok(isBodyText(entry.response.content.text));
  assert.equal(entry.response.content.text.bytes.toString(), 'éé', 'cut on a whole character');
  assert.equal(entry.response.content.text.cut, true);
  assert.ok(isBodyText(entry.request.postData.text));
  assert.equal(entry.request.postData.text.cut, false);
  assert.equal(entry.other.text, 'not a body');
});

test('the parser refuses what is not JSON, or past its limits, naming where', () => {
  const cases: [string, RegExp, string][] = [
    ['{"log":{"entries":[{"a":1,}]}}', /expected a key/, 'log.entries[0].a'],
    ['{"log":{"entries":[1,]}}', /unexpected/, 'log.entries[1]'],
    ['{"log":{"entries":[{"a":01}]}}', /invalid number "01" \(at byte 24\)/, 'log.entries[0].a'],
    // the place a bad word begins, not where it ends
    ['{"log":{"entries":[{"a":tru}]}}', /unexpected "tru" \(at byte 24\)/, 'log.entries[0].a'],
    ['not json', /unexpected "not" \(at byte 0\)/, '(document)'],
    ['{"log":{"entries":[{"a":"\\x"}]}}', /invalid escape/, 'log.entries[0].a'],
    ['{"log":{"entries":[{"a":"\u0001"}]}}', /control character/, 'log.entries[0].a'],
    ['{"log":{"entries":[]}}{', /after the end/, '(document)'],
    ['{"log":[]}', /"log" must be an object/, 'log'],
    ['{"log":{"entries":{}}}', /must be an array/, 'log.entries'],
    [`{"log":{"entries":[{"a":"${'x'.repeat(100)}"}]}}`, /longer than 50 bytes/, 'log.entries[0].a'],
    [`{"log":{"entries":[${'['.repeat(70)}${']'.repeat(70)}]}}`, /deeper than 64/, 'log.entries[0]'],
  ];
  for (const [doc, message, field] of cases) {
    assert.throws(() => parseInPieces(Buffer.from(doc), 4, { ...DEFAULT_JSON_LIMITS, maxString: 50 }), (err: JsonStreamError) => {
      assert.ok(err instanceof JsonStreamError, doc);
      assert.match(err.message, message, doc);
      assert.ok(err.field.startsWith(field), `${doc}: ${err.field}`);
      return true;
    });
  }
  assert.throws(() => parseInPieces(Buffer.from('{"log":{"entries":[[1,2,3,4,5]]}}'), 4, { ...DEFAULT_JSON_LIMITS, maxValuesPerEntry: 3 }), /more than 3 values/);
});

test("an entry's strings are bounded together (bodies apart), so concurrent imports of GiB entries cannot exhaust the heap; a browser's own containers (`_initiator`) are dropped unread", () => {
  const limits = { ...DEFAULT_JSON_LIMITS, maxString: 100, maxEntryBytes: 250 };
  // three strings of 100 bytes: each under the string limit, together over the entry's
  const many = Buffer.from(JSON.stringify({ log: { entries: [{ a: 'x'.repeat(100), b: 'y'.repeat(100), c: 'z'.repeat(100) }] } }));
  for (const size of [1, 7, many.length]) {
    assert.throws(() => parseInPieces(many, size, limits), (err: JsonStreamError) => err instanceof JsonStreamError && /more than 0\.0002\d* MiB of strings in one entry/.test(err.message) && err.entry === 0, `pieces of ${size}`);
  }
  // the same bytes in bodies are no strings of the entry's (bodies have their own cap), nor spread over two entries
  const bodies = Buffer.from(JSON.stringify({ log: { entries: [{ request: { postData: { text: 'x'.repeat(200) } }, response: { content: { text: 'y'.repeat(200) } } }, { a: 'x'.repeat(100), b: 'y'.repeat(100) }, { c: 'z'.repeat(100), d: 'w'.repeat(100) }] } }));
  assert.equal(parseInPieces(bodies, 5, { ...limits, maxString: 1000 }).length, 3);
  // underscore containers inside an entry go unread (a GiB under `_x` never built); its scalars are kept (`_error`, `_source`)
  const custom = Buffer.from(JSON.stringify({ log: { entries: [{ _initiator: { stack: ['x'.repeat(100), 'y'.repeat(100), 'z'.repeat(100)] }, _webSocketMessages: [{ data: 'w'.repeat(100) }], _error: 'refused', response: { _extra: [1] } }] } }));
  assert.deepEqual(parseInPieces(custom, 3, limits).map(plain), [{ _error: 'refused', response: {} }]);
  assert.equal(DEFAULT_JSON_LIMITS.maxEntryBytes, 32 * 1024 * 1024);
});

test('a key twice in one object of an entry, or a second "log" or "entries", is refused (JSON.parse takes the last, the import took both); a leading byte order mark is passed over', () => {
  const cases: [string, RegExp, string][] = [
    ['{"log":{"entries":[{"a":1,"a":2}]}}', /the key "a" twice in one object \(at byte 26\)/, 'log.entries[0].a'],
    ['{"log":{"entries":[{"r":{"h":[{"n":1,"n":1}]}}]}}', /the key "n" twice/, 'log.entries[0].r.h[0].n'],
    ['{"log":{"entries":[{"a":1}]},"log":{"entries":[{"b":2}]}}', /"log" twice/, 'log'],
    ['{"log":{"entries":[{"a":1}],"entries":[{"b":2}]}}', /"log.entries" twice/, 'log.entries'],
    ['\u00ef\u00bb{"log":{"entries":[]}}', /a byte that is not JSON \(at byte 0\)/, '(document)'],
  ];
  for (const [doc, message, field] of cases) {
    for (const size of [1, 4, 100]) {
      assert.throws(() => parseInPieces(Buffer.from(doc, 'latin1'), size), (err: JsonStreamError) => {
        assert.ok(err instanceof JsonStreamError, doc);
        assert.match(err.message, message, doc);
        assert.equal(err.field, field, doc);
        return true;
      });
    }
  }
  const marked = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"log":{"entries":[{"a":"é"}]}}')]);
  for (const size of [1, 2, 3, 4, marked.length]) assert.deepEqual(parseInPieces(marked, size).map(plain), [{ a: 'é' }], `pieces of ${size}`);
  // only at the start: one later is a byte that is not JSON
  assert.throws(() => parseInPieces(Buffer.concat([Buffer.from('{"log":{"entries":[]}}'), Buffer.from([0xef, 0xbb, 0xbf])]), 4), /after the end/);
});

test('regexes: JavaScript syntax, any case, no backtracking, errors with their place', () => {
  const table: [string, string, boolean][] = [
    ['hello', 'say HeLLo', true], ['^abc', 'xabc', false], ['abc$', 'xxabc', true], ['\\bfoo\\b', 'a foo b', true], ['\\bfoo\\b', 'afoob', false],
    ['a.c', 'aéc', true], ['a.c', 'a\nc', false], ['[^x]yz', 'éyz', true], ['colou?r', 'COLOR', true], ['(ab|cd){2}', 'xxabcdyy', true],
    ['\\d{3}-\\d{4}', 'call 555-1234', true], ['[a-c]+z', 'BBBZ', true], ['é', 'café', true], ['\\x41\\u0042', 'ab', true],
    ['(a+)+b', 'a'.repeat(50_000), false], ['(.*.*)*x', 'y'.repeat(50_000), false], ['foo(?!bar)', 'foobar foobaz', true], ['foo(?!bar)', 'foobar', false],
    // as JavaScript reads a `]` at once: `[]` matches nothing, `[^]` any character, a newline too
    ['a[]', 'a]', false], ['[]a]', 'a]', false], ['a[^]b', 'a\nb', true], ['a[^]b', 'aéb', true], ['a[^]b', 'ab', false],
  ];
  for (const [pattern, text, expected] of table) assert.equal(compileRegex(pattern).testString(text), expected, `/${pattern}/ on ${text.slice(0, 20)}`);
  const refused: [string, number, RegExp][] = [['(a)\\1', 3, /backreferences/], ['(?<=a)b', 0, /lookarounds/], ['a(?!b)c', 1, /only at the end/], ['[z-a]', 1, /out of order/], ['a{5,2}', 1, /out of order/], ['(ab', 0, /unterminated group/], ['a**', 2, /nothing to repeat/], ['\\p{L}', 0, /Unicode property/], [`${'('.repeat(2000)}a${')'.repeat(2000)}`, 100, /nested more than 100 deep/], [`${'(?!'.repeat(5000)}a${')'.repeat(5000)}`, 3, /lookarounds are not supported/]];
  for (const [pattern, position, message] of refused) {
    assert.throws(() => compileRegex(pattern, 10), (err: RegexError) => err instanceof RegexError && err.position === position + 10 && message.test(err.message), pattern);
  }
});

test('filter expressions: precedence (! then & then |), bare words, quoting, and errors naming the position', () => {
  const subject = (url: string, method: string, status: number): Subject => ({
    url: () => Buffer.from(url), domain: () => Buffer.from(new URL(url).hostname), method: () => method, status: () => status,
    statusLine: () => `${status} X`, scope: () => true, binary: () => false, types: () => ['', 'text/html'], hasResponse: () => status > 0, parts: undefined,
  });
  const a = subject('https://a.example/login', 'POST', 302);
  const b = subject('https://b.example/x', 'GET', 200);
  const matches = (expr: string, s: Subject) => evaluate(parseFilter(expr), s);
  assert.equal(matches('login', a), true);
  assert.equal(matches('~m get | ~c 302 & ~d ^a', a), true, '& before |');
  assert.equal(matches('!~m post ~c 302', a), false, '! before &');
  assert.equal(matches('!(~m post & ~c 200)', a), true);
  assert.equal(matches('"b.example/x"', b), true);
  assert.equal(matches('~t html', b), true);
  assert.equal(matches('~bs secret', b), undefined, 'a body test is unknown until the record is read');
  assert.equal(matches('~c 500 & ~bs secret', b), false, 'but false when the rest decides');
  for (const [expr, position] of [['', 0], ['~m', 2], ['(~u a', 5], ['~u a )', 5], ['~zz x', 0], ['~c 2x0', 3], ['& ~u a', 0]] as const) {
    assert.throws(() => parseFilter(expr), (err: FilterError) => err instanceof FilterError && err.position === position, `${JSON.stringify(expr)} at ${position}`);
  }
});

test('a HAR export that was cut says so in its log comment; a whole one has none', async () => {
  async function* two() {
    yield { request: { url: 'https://a.example/1' } };
    yield { request: { url: 'https://a.example/2' } };
  }
  const text = async (comment?: string) => {
    let out = '';
    for await (const piece of harPieces(two(), '1.2.3', comment)) out += piece;
    return JSON.parse(out) as { log: { comment?: string; creator: { version: string }; entries: unknown[] } };
  };
  const cut = await text('Cut: the search ran out of its 60 s; these are the matches found by then.');
  assert.equal(cut.log.comment, 'Cut: the search ran out of its 60 s; these are the matches found by then.');
  assert.equal(cut.log.entries.length, 2);
  const whole = await text();
  assert.equal('comment' in whole.log, false);
  assert.equal(whole.log.creator.version, '1.2.3');
});

test('a request body stored cut keeps the size sent: through the record, the transaction view, an export and its import back', () => {
  const x: Exchange = {
    url: 'http://shop.example/upload', method: 'POST', httpVersion: 'HTTP/1.1', requestHeaders: [['Content-Length', '10']], requestBody: Buffer.from('uuuu'), requestSize: 10,
    status: 200, statusText: 'OK', responseHttpVersion: 'HTTP/1.1', responseHeaders: [], responseBody: Buffer.alloc(0), responseSize: 0, truncated: false,
    mimeType: '', startedAt: 1_763_719_200_000, time: 1, source: 'proxy',
  };
  const record = decodeRecord(encodeRecord(x));
  assert.equal(record.exchange.requestSize, 10);
  const facts = { id: 1, target: 1, scope: true, binary: false };
  assert.equal(transactionView(facts, record, false).request_body_truncated, true);
  const entry = exchangeToEntry(record.exchange, { id: 1, binary: false });
  assert.equal((entry.request as { bodySize: number }).bodySize, 10);
  assert.equal(entry._request_truncated, true);
  assert.equal(entryToExchange(entry, 0, true)!.requestSize, 10, 'read back from assessd\'s own files');
  // a HAR says so too (an export imported again sent the cut body as if whole, its Content-Length a lie):
  // a claim that only makes a replay or the code ask for a body of one's own
  assert.equal(entryToExchange(entry, 0, false)!.requestSize, 10, 'read back from a HAR');
  assert.equal(entryToExchange({ ...entry, _truncated: true }, 0, false)!.truncated, true, 'a response body stored cut, from a HAR');
  // a body stored whole says nothing
  const whole = decodeRecord(encodeRecord({ ...x, requestSize: undefined, requestBody: Buffer.from('u'.repeat(10)) }));
  assert.equal(whole.exchange.requestSize, undefined);
  assert.equal(transactionView(facts, whole, false).request_body_truncated, undefined);
});

test('a HAR entry\'s URL keeps its path and query as the tool recorded them (a traversal payload stays one); scheme, host and port as a URL parser reads them', () => {
  const entry = (url: string) => ({
    startedDateTime: '2026-11-27T10:00:00.000Z', time: 1,
    request: { method: 'GET', url, httpVersion: 'HTTP/1.1', headers: [] },
    response: { status: 200, statusText: 'OK', httpVersion: 'HTTP/1.1', headers: [], content: { size: 0, mimeType: '' } },
  });
  assert.equal(entryToExchange(entry('http://Shop.Example:80/a/../../etc/passwd?q=<x>"'), 0)!.url, 'http://shop.example/a/../../etc/passwd?q=<x>"');
  assert.equal(entryToExchange(entry('https://shop.example:8443/%2e%2e/x#frag'), 0)!.url, 'https://shop.example:8443/%2e%2e/x');
  assert.equal(entryToExchange(entry(' http://shop.example '), 0)!.url, 'http://shop.example/');
});

test('a HAR entry\'s URL is at most 2 MiB, as written and percent-encoded (Chromium\'s bound: no browser sends a longer one); a URL of 16 MiB of spaces held the server 31 s and was stored as 50 MB that no export could bring back', () => {
  const entry = (url: string) => ({
    startedDateTime: '2026-11-27T10:00:00.000Z', time: 1,
    request: { method: 'GET', url, httpVersion: 'HTTP/1.1', headers: [] },
    response: { status: 200, statusText: 'OK', httpVersion: 'HTTP/1.1', headers: [], content: { size: 0, mimeType: '' } },
  });
  const refused = (url: string) => {
    try {
      entryToExchange(entry(url), 3);
    } catch (err) {
      return (err as Error).message;
    }
    return 'accepted';
  };
  const MiB = 1024 * 1024;
  assert.match(refused(`http://h/${' '.repeat(16 * MiB)}x`), /^Invalid HAR entry 3: log\.entries\[3\]\.request\.url: is longer than 2097152 characters/);
  // 1 MiB of é is 6 MiB once encoded
  assert.match(refused(`http://h/${'é'.repeat(MiB)}`), /^Invalid HAR entry 3: log\.entries\[3\]\.request\.url: is longer than 2097152 characters once percent-encoded/);
  // within the bound: kept, encoded
  const spaces = 2 * MiB / 3 - 100;
  assert.equal(entryToExchange(entry(`http://h/${' '.repeat(spaces)}x`), 0)!.url, `http://h/${'%20'.repeat(spaces)}x`);
});

test('a base64 body: padded only where its length needs it (YWJj= has a = too many), unpadded taken as well', () => {
  const entry = (text: string) => ({ startedDateTime: '2024-01-01T00:00:00Z', request: { method: 'GET', url: 'https://a.example/' }, response: { status: 200, content: { text, encoding: 'base64' } } });
  for (const [text, bytes] of [['YWJj', 'abc'], ['YWI=', 'ab'], ['YWI', 'ab'], ['YQ==', 'a'], ['YQ', 'a'], ['', '']] as const) {
    assert.equal(entryToExchange(entry(text), 0, false)!.responseBody.toString(), bytes, text);
  }
  for (const text of ['YWJj=', 'YWJj==', 'YWI==', 'Y', 'YQ=', 'YWJjZ===']) {
    assert.throws(() => entryToExchange(entry(text), 0, false), /is not valid base64/, text);
  }
});

test('a transaction the proxy sent again keeps its count through the record, the view, an export and a bundle\'s import; another tool\'s HAR cannot claim it', () => {
  const x: Exchange = {
    url: 'http://shop.example/again', method: 'GET', httpVersion: 'HTTP/1.1', requestHeaders: [], requestBody: Buffer.alloc(0),
    status: 200, statusText: 'OK', responseHttpVersion: 'HTTP/1.1', responseHeaders: [], responseBody: Buffer.from('ok'), responseSize: 2, truncated: false,
    mimeType: '', startedAt: 1_763_719_200_000, time: 1, source: 'proxy', resent: 2,
  };
  const record = decodeRecord(encodeRecord(x));
  assert.equal(record.exchange.resent, 2);
  assert.equal(transactionView({ id: 1, target: 1, scope: true, binary: false }, record, false).resent, 2);
  const entry = exchangeToEntry(record.exchange, { id: 1, binary: false });
  assert.equal(entry._resent, 2);
  assert.equal(entryToExchange(entry, 0, true)!.resent, 2);
  assert.equal(entryToExchange(entry, 0, false)!.resent, undefined);
  const once = decodeRecord(encodeRecord({ ...x, resent: undefined }));
  assert.equal('resent' in transactionView({ id: 1, target: 1, scope: true, binary: false }, once, false), false);
});

test('JSON written a piece at a time: the very text JSON.stringify writes, each long string in slices of at most a MiB of characters (a surrogate pair never split), everything else at once', () => {
  const pair = '\u{1F600}';
  // a pair across the first slice's end, control characters (six characters of JSON each), quotes
  const long = `${'x'.repeat(PIECE - 1)}${pair}${'\u0001"\\'.repeat(PIECE)}`;
  const value = { a: 1, body: long, list: ['short', long.slice(5)], nested: { text: 'y'.repeat(PIECE + 1), tag: '\u0000not:0' } };
  const pieces = [...jsonPieces(value)];
  assert.equal(pieces.join(''), JSON.stringify(value));
  assert.ok(pieces.length > 8, `${pieces.length} pieces`);
  for (const piece of pieces) assert.ok(piece.length <= 6 * PIECE, `a piece of ${piece.length} characters`);
  assert.deepEqual([...jsonPieces({ short: 'text' })], ['{"short":"text"}']);
  assert.deepEqual([...jsonPieces('z'.repeat(PIECE + 2))].join(''), JSON.stringify('z'.repeat(PIECE + 2)));
});

/** Where `needle` starts in `text`, ASCII letters in any case: the obvious way. */
function placesOf(text: string, needle: string): number[] {
  const haystack = text.toLowerCase();
  const lower = needle.toLowerCase();
  const places: number[] = [];
  for (let i = haystack.indexOf(lower); i !== -1; i = haystack.indexOf(lower, i + 1)) places.push(i);
  return places;
}

test('a literal search finds every place its needle starts, in any case, whatever its anchor and however often the anchor is where the needle is not (seeded texts of z, Z, q and x)', () => {
  let seed = 21;
  const random = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x80000000);
  const pick = (alphabet: string, n: number) => Array.from({ length: n }, () => alphabet[Math.floor(random() * alphabet.length)]).join('');
  for (let round = 0; round < 300; round++) {
    // mostly the anchor: past a few thousand misses the search reads byte by byte
    const text = round % 3 === 0 ? `${'z'.repeat(20_000 + round)}${pick('zZq', 50)}${'z'.repeat(300)}zzq` : pick(round % 2 ? 'zZqx' : 'zq', 200 + round * 40);
    const needle = pick('zZq', 1 + (round % 7));
    const matcher = compileSubstring(needle);
    const found: number[] = [];
    matcher.each!(Buffer.from(text), 0, text.length, (i) => (found.push(i), false));
    assert.deepEqual(found, placesOf(text, needle), `round ${round}: ${JSON.stringify(needle)}`);
  }
});

test('a literal search goes on from where its caller says: a place it returns passes over the hits before it (a record that matched already is not visited hit by hit)', () => {
  const text = Buffer.from('x'.repeat(1024 * 1024));
  const calls: number[] = [];
  compileSubstring('xx').each!(text, 0, text.length, (i) => (calls.push(i), i + 1000));
  assert.deepEqual(calls, Array.from({ length: Math.ceil((text.length - 1) / 1000) }, (_, k) => k * 1000));
  // the same while reading byte by byte (a needle whose anchor is everywhere and is nowhere itself, then is)
  const mixed = Buffer.from(`${'z'.repeat(300_000)}zzq${'z'.repeat(10)}zzq${'z'.repeat(5000)}zzqzzq`);
  const places: number[] = [];
  compileSubstring('zzq').each!(mixed, 0, mixed.length, (i) => (places.push(i), i + 5));
  assert.deepEqual(places, [300_000, 300_013, 305_016]);
});

test('a needle past a KiB is read byte by byte through its failure function: the places found, and memory by its length, not a KiB a byte (a MiB-long search argument made a GiB table)', () => {
  const needle = `${'z'.repeat(1100)}q`;
  const text = `${'z'.repeat(20_000)}${needle}${'Z'.repeat(2000)}${needle.toUpperCase()}zzq${'z'.repeat(1100)}`;
  const found: number[] = [];
  compileSubstring(needle).each!(Buffer.from(text), 0, text.length, (i) => (found.push(i), false));
  assert.deepEqual(found, placesOf(text, needle));
  assert.equal(found.length, 2);
  const long = compileSubstring(`x${'qz'.repeat(50_000)}`);
  const before = process.memoryUsage().arrayBuffers;
  assert.equal(long.test(Buffer.from('qz'.repeat(60_000))), false);
  // the matcher, and what its walk made, still held
  assert.ok(process.memoryUsage().arrayBuffers - before < 16 * 1024 * 1024, `${(process.memoryUsage().arrayBuffers - before) / 1024 / 1024} MiB`);
  assert.equal(long.source.length, 100_001);
});

// the deadline catches only a freeze: the search takes milliseconds, and a needle whose anchor is
// everywhere checked each place against the whole needle (20,000 bytes a place: hours)
test('a long needle over a text of its anchor alone is read in linear time', () => {
  const needle = `${'z'.repeat(20_000)}q`;
  const text = Buffer.from(`${'z'.repeat(8 * 1024 * 1024)}${needle}`);
  const found: number[] = [];
  // a deadline, so that a search that is not linear fails (SearchTimeout) rather than holds the run
  compileSubstring(needle).each!(text, 0, text.length, (i) => (found.push(i), false), performance.now() + 10_000);
  assert.deepEqual(found, [8 * 1024 * 1024]);
});
