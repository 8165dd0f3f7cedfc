/**
 * What the web application and the report show of a target's text (src/web/bidi.ts): hidden
 * characters written as marks, long runs of blanks as their length, long values cut and counted,
 * ordinary text as it is.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BLOCK_MAX, SHOWN_MAX, shown, shownLines } from '../../src/web/bidi.ts';

test('ordinary text is shown as it is: words, accents, scripts, emoji, tabs, short runs of spaces, line ends', () => {
  for (const text of [
    '',
    'http://example.com/a?b=c#d',
    'Server: nginx/1.25.3\r\nContent-Type: text/html; charset=utf-8\r\n',
    'café · 日本語 · עברית · العربية · 🔥',
    'PORT     STATE SERVICE\n80/tcp   open  http',
    'a\tb\t\tc',
    'x'.repeat(SHOWN_MAX),
  ]) {
    assert.equal(shown(text), text);
  }
});

test('bidirectional controls are marks, as before', () => {
  assert.equal(shown('evil\u202Egnp.exe'), 'evil⟨U+202E⟩gnp.exe');
  for (const c of ['\u061C', '\u200E', '\u200F', '\u202A', '\u202B', '\u202C', '\u202D', '\u202E', '\u2066', '\u2067', '\u2068', '\u2069']) {
    assert.equal(shown(`a${c}b`), `a⟨U+${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}⟩b`);
  }
});

test('invisible format characters are marks: zero-width, soft hyphen, fillers, BOM, word joiners, tag characters', () => {
  assert.equal(shown('http://exa\u200Bmple.com/'), 'http://exa⟨U+200B⟩mple.com/');
  assert.equal(shown('Disallow: /\u200B\u200B\u200Bsecret'), 'Disallow: /⟨U+200B⟩⟨U+200B⟩⟨U+200B⟩secret');
  const invisible = [0xad, 0x34f, 0x115f, 0x1160, 0x180e, 0x200b, 0x200c, 0x200d, 0x2060, 0x2061, 0x2062, 0x2063, 0x2064, 0x3164, 0xfeff, 0xffa0, 0xe0000, 0xe0001, 0xe0041, 0xe007f];
  for (const cp of invisible) {
    const hex = cp.toString(16).toUpperCase().padStart(4, '0');
    assert.equal(shown(`a${String.fromCodePoint(cp)}b`), `a⟨U+${hex}⟩b`, `U+${hex}`);
  }
  // a word hidden in tag characters reads as its marks, each one code point
  assert.equal(shown('ok\u{E0068}\u{E0069}'), 'ok⟨U+E0068⟩⟨U+E0069⟩');
});

test('controls that end or hide a line are marks: NUL, VT, FF, ESC, DEL, NEL, C1, line and paragraph separators, a lone CR', () => {
  for (const [c, hex] of [['\0', '0000'], ['\v', '000B'], ['\f', '000C'], ['\x1b', '001B'], ['\x7f', '007F'], ['\x85', '0085'], ['\x9b', '009B'], ['\u2028', '2028'], ['\u2029', '2029']]) {
    assert.equal(shown(`a${c}b`), `a⟨U+${hex}⟩b`, `U+${hex}`);
  }
  assert.equal(shown('a\rb'), 'a⟨U+000D⟩b');
  assert.equal(shown('a\r\nb'), 'a\r\nb', 'a CRLF is a line end');
});

test('a run of 8 or more blanks is written as its length, shorter runs stay', () => {
  const header = `Server: nginx${' '.repeat(3000)}Strict-Transport-Security: max-age=63072000`;
  assert.equal(shown(header), 'Server: nginx⟨3,000 spaces⟩Strict-Transport-Security: max-age=63072000');
  assert.equal(shown(`a${' '.repeat(7)}b`), `a${' '.repeat(7)}b`);
  assert.equal(shown(`a${' '.repeat(8)}b`), 'a⟨8 spaces⟩b');
  assert.equal(shown(`a${'\t'.repeat(9)}b`), 'a⟨9 tabs⟩b');
  assert.equal(shown(`a${' \t'.repeat(6)}b`), 'a⟨12 spaces and tabs⟩b');
  assert.equal(shown(`a${'\u00A0'.repeat(40)}b${'\u3000'.repeat(8)}c${'\u2800'.repeat(10)}d`), 'a⟨40 blank characters⟩b⟨8 blank characters⟩c⟨10 blank characters⟩d');
  assert.equal(shown(`[+] Target: x${' '.repeat(200)}\n[+] No vulnerabilities found.`), '[+] Target: x⟨200 spaces⟩\n[+] No vulnerabilities found.');
});

test('a run of millions of blanks is one mark, and what follows it is seen (past ~5 million, the pattern threw "Maximum call stack size exceeded" and the page showed nothing)', () => {
  assert.equal(shown(`a${' '.repeat(9_000_000)}END`, BLOCK_MAX), 'a⟨9,000,000 spaces⟩END');
  assert.equal(shown(`a${' \t'.repeat(4_500_000)}b${'\t'.repeat(9)}`, BLOCK_MAX), 'a⟨9,000,000 spaces and tabs⟩b⟨9 tabs⟩');
  // a body of many such runs: each costs its mark, and the cut still counts what is left out
  assert.equal(shown(`x${' '.repeat(1_000_000)}`.repeat(12), 100), `${'x⟨1,000,000 spaces⟩'.repeat(6)}… 6,000,006 characters more`);
});

test('a line\'s indentation stays as it is (nested JSON, generated code): only a run after a line\'s first word is marked', () => {
  const json = `{\n  "a": {\n    "b": {\n        "c": 1\n    }\n  }\n}`;
  assert.equal(shown(json, BLOCK_MAX), json);
  const php = `foreach ($h as $line) {\n        [$name, $value] = explode(':', $line, 2);\n}`;
  assert.equal(shown(php, BLOCK_MAX), php);
  assert.equal(shown(`\t\t\t\t\t\t\t\tx${' '.repeat(9)}y`), '\t\t\t\t\t\t\t\tx⟨9 spaces⟩y');
});

test('a value is cut after SHOWN_MAX characters and the cut says how many are left out', () => {
  const url = `http://example.com/${'a'.repeat(15 * 1024 * 1024 - 19)}`;
  const cut = shown(url);
  assert.equal(cut, `${url.slice(0, SHOWN_MAX)}… ${(url.length - SHOWN_MAX).toLocaleString('en')} characters more`);
  assert.ok(cut.endsWith('… 15,726,640 characters more'));
  assert.equal(shown('abcdef', 3), 'abc… 3 characters more');
  assert.equal(shown('ab\u200Bcdef', 3), 'ab⟨U+200B⟩… 4 characters more', 'marks in what is kept');
  assert.equal(shown('ab😀cd', 3), 'ab… 4 characters more', 'never half of a surrogate pair');
  assert.equal(shown('x'.repeat(BLOCK_MAX + 1), BLOCK_MAX), `${'x'.repeat(BLOCK_MAX)}… 1 character more`);
});

test('a head is shown line by line: each line cut on its own, the headers after a huge one still seen, CRLF kept', () => {
  const head = `HTTP/1.1 200 OK\r\nX-Big: ${'b'.repeat(10 * 1024 * 1024)}\r\nSet-Cookie: sid=abc; Path=/${' '.repeat(500)}Set-Cookie: csrf=1\r\nServer: nginx\r\n\r\n`;
  const lines = shownLines(head, 100).split('\n');
  assert.equal(lines[0], 'HTTP/1.1 200 OK\r');
  assert.equal(lines[1], `X-Big: ${'b'.repeat(93)}… ${(10 * 1024 * 1024 - 93).toLocaleString('en')} characters more\r`);
  assert.equal(lines[2], 'Set-Cookie: sid=abc; Path=/⟨500 spaces⟩Set-Cookie: csrf=1\r');
  assert.equal(lines[3], 'Server: nginx\r');
  assert.deepEqual(lines.slice(4), ['\r', '']);
  assert.equal(shownLines('a: 1\r\nb: 2'), 'a: 1\r\nb: 2');
  // the whole is bounded too: what follows the bound is counted
  const many = 'h: v\n'.repeat(100_000);
  const shownMany = shownLines(many, 100, 1000);
  assert.ok(shownMany.length < 1100, `${shownMany.length}`);
  assert.ok(shownMany.endsWith(`\n… ${(many.length - 1000).toLocaleString('en')} characters more`), shownMany.slice(-60));
});

test('shown is linear: megabytes of hidden characters, of runs just short of a mark, of ordinary text', () => {
  const started = performance.now();
  shown('\u200B'.repeat(1 << 20), BLOCK_MAX);
  shown('\u200B'.repeat(1 << 18), Infinity);
  shown(`a${' '.repeat(7)}`.repeat(1 << 17), Infinity);
  shown('Lorem ipsum dolor sit amet, café '.repeat(1 << 15), Infinity);
  shownLines('\n'.repeat(1 << 20), Infinity, BLOCK_MAX);
  shownLines('\n'.repeat(1 << 18), Infinity, Infinity);
  assert.ok(performance.now() - started < 5000);
});

test('the report shows values as the page does: marks, runs, the cut, then HTML escapes', async () => {
  const { escapeHtml } = await import('../../src/api/report-page.ts');
  assert.equal(escapeHtml(`<b>exa\u200Bmple</b>${' '.repeat(20)}&`), '&lt;b&gt;exa⟨U+200B⟩mple&lt;/b&gt;⟨20 spaces⟩&amp;');
  assert.equal(escapeHtml('x'.repeat(SHOWN_MAX + 5)), `${'x'.repeat(SHOWN_MAX)}… 5 characters more`);
});
