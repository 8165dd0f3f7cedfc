/**
 * What the web application (src/web/client/dom.ts) and the report (src/api/report-page.ts) show of
 * text that may be hostile: a target's headers, bodies and URLs, a tool's output. Such text must
 * read as what it holds: no character that reorders the text or hides itself, no run of blanks
 * that pushes the rest of a line onto what looks like a line of its own, no value so long that
 * laying it out freezes the tab. Fields a user edits keep their text as it is.
 */

/** A value shown (a URL, a header, a name, a title, a list's cell) is cut after this many characters. */
export const SHOWN_MAX = 2000;

/** A block shown (a body, a tool's output, a finding's evidence) is cut after this many characters. */
export const BLOCK_MAX = 256 * 1024;

/** shown()'s patterns, made on its first call: a start that shows nothing does not parse their \p{...} classes (~1 ms). */
let patterns: { hidden: RegExp; any: RegExp } | undefined;

function hiddenPatterns(): { hidden: RegExp; any: RegExp } {
  if (patterns) return patterns;
  /**
   * One match per thing to show otherwise: controls other than tab and line ends (U+0085 and
   * U+2028/2029 end a line in some readers), a lone carriage return, format characters (\p{Cf}: the
   * bidirectional controls, zero-width characters, tag characters...) and the other default-ignorable
   * ones (U+034F, the Hangul fillers, variation selectors...), and a run of 8 or more blanks after
   * a line's first word: at the end of a wrapped line a run hangs unseen, and what follows it reads
   * as a line of its own. A line's indentation is left as it is (nested JSON, generated code): a
   * line's start is a line's start, and a wrapped line goes on indented (app.css). A run's first 8
   * are matched (captured) and the rest counted by isBlank(): `{8,}` threw "Maximum call stack
   * size exceeded" past ~5 million blanks, and the page showed nothing. Linear: a start that is not
   * a run fails within 8 characters.
   */
  const hidden = /[\x00-\x08\x0B\x0C\x0E-\x1F\x7F-\x9F\u2028\u2029\p{Cf}\p{Default_Ignorable_Code_Point}]|\r(?!\n)|(?<=[^\s])([ \t\u00A0\u1680\u2000-\u200A\u202F\u205F\u2800\u3000]{8})/gu;
  // whether a text has anything to mark: most have not, and are shown as they are
  return (patterns = { hidden, any: new RegExp(hidden.source, 'u') });
}

const number = (n: number) => n.toLocaleString('en');
const more = (n: number) => `… ${number(n)} character${n === 1 ? '' : 's'} more`;

/** A blank of hiddenPatterns()'s runs. */
function isBlank(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0xa0 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) || c === 0x202f || c === 0x205f || c === 0x2800 || c === 0x3000;
}

/** A run of blanks as its length and kind. */
function markRun(text: string, start: number, end: number): string {
  let spaces = true;
  let tabs = true;
  let spacesAndTabs = true;
  for (let i = start; i < end && spacesAndTabs; i++) {
    const c = text.charCodeAt(i);
    if (c !== 0x20) spaces = false;
    if (c !== 0x09) tabs = false;
    if (c !== 0x20 && c !== 0x09) spacesAndTabs = false;
  }
  const kind = spaces ? 'spaces' : tabs ? 'tabs' : spacesAndTabs ? 'spaces and tabs' : 'blank characters';
  return `⟨${number(end - start)} ${kind}⟩`;
}

/** A hidden character (one or two UTF-16 units) as its code point. */
const markCharacter = (found: string) => `⟨U+${found.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}⟩`;

/**
 * `text` as it can be read safely: each hidden character written as its code point (`⟨U+202E⟩`,
 * `⟨U+200B⟩`), each run of 8 or more blanks within a line as its length (`⟨3,000 spaces⟩`), and what lies past
 * `max` characters of that left out and counted (`… 15,728,640 characters more`). A mark counts
 * as the characters it shows, so a run of blanks costs a few and what follows it is still seen;
 * the work is bounded by `max`, however long the text, but for one scan to its next mark.
 */
export function shown(text: string, max = SHOWN_MAX): string {
  const { hidden, any } = hiddenPatterns();
  if (text.length <= max && !any.test(text)) return text;
  let out = '';
  let at = 0;
  hidden.lastIndex = 0;
  for (let found = hidden.exec(text); found; found = hidden.exec(text)) {
    if (out.length + found.index - at >= max) break;
    let end = found.index + found[0].length;
    if (found[1] === undefined) out += text.slice(at, found.index) + markCharacter(found[0]);
    else {
      while (end < text.length && isBlank(text.charCodeAt(end))) end++;
      out += text.slice(at, found.index) + markRun(text, found.index, end);
      hidden.lastIndex = end;
    }
    at = end;
  }
  const room = Math.max(0, max - out.length);
  if (text.length - at <= room) return out + text.slice(at);
  let end = at + room;
  // never half of a surrogate pair
  if (end > at && text.charCodeAt(end - 1) >= 0xd800 && text.charCodeAt(end - 1) < 0xdc00) end--;
  return out + text.slice(at, end) + more(text.length - end);
}

/**
 * A head's lines (a request line and its headers, a response's headers) shown each on its own,
 * every line cut after `lineMax` characters (a long policy or cookie is seen whole) and the whole
 * after `max`: a header of megabytes costs a line, and the headers after it are still seen. The
 * carriage return of a CRLF stays.
 */
export function shownLines(text: string, lineMax = 8192, max = BLOCK_MAX): string {
  let out = '';
  let start = 0;
  for (;;) {
    const newline = text.indexOf('\n', start);
    const end = newline === -1 ? text.length : newline;
    const crlf = newline !== -1 && end > start && text.charCodeAt(end - 1) === 13;
    out += shown(text.slice(start, crlf ? end - 1 : end), Math.min(lineMax, max - out.length)) + (crlf ? '\r' : '');
    start = end + 1;
    if (newline === -1) return out;
    out += '\n';
    if (out.length >= max) break;
  }
  return start < text.length ? out + more(text.length - start) : out;
}
