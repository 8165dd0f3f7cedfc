/** File names offered in Content-Disposition, built from a session name a user typed. */

const MAX_STEM = 100;

/**
 * ASCII letters, digits, `.`, `-`, `_` only: accents are dropped (`Café` -> `Cafe`), every other
 * run of characters becomes one `-`, a run of separators collapses to one, none at either end
 * (no hidden file, no trailing dot), at most 100 characters; `fallback` when nothing is left.
 */
export function safeFileStem(name: string, fallback: string): string {
  const stem = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/[-._]{2,}/g, '-')
    .slice(0, MAX_STEM)
    .replace(/^[-._]+|[-._]+$/g, '');
  return stem === '' ? fallback : stem;
}

/** `attachment; filename="<stem><suffix>"`: the stem holds no quote nor backslash to escape. */
export function attachment(name: string, fallback: string, suffix: string): string {
  return `attachment; filename="${safeFileStem(name, fallback)}${suffix}"`;
}

/**
 * A file's own name for `filename*`, without the characters that change how a name reads or shows
 * nothing (controls, bidi and other format characters: `file\u202Elmth.txt` would read
 * `filetxt.html`), which a tool's file may hold; `fallback` when nothing is left.
 */
export function readableFileName(name: string, fallback: string): string {
  const readable = name.replace(/[\p{Cc}\p{Cf}\u2028\u2029]/gu, '');
  return readable === '' ? fallback : readable;
}
