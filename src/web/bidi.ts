/**
 * Unicode's bidirectional controls, shown rather than obeyed. In a name, a URL or a tool's output
 * they reorder the text after them, the page's own words included: a target's path ending in
 * `\u202Egnp.exe` reads `exe.png`, a session's name turns the heading around it. Shared by the web
 * application (src/web/client/dom.ts) and the report (src/api/report-page.ts); fields a user
 * edits keep them as they are.
 */
const BIDI_CONTROLS = /[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/g;

/** `text` with each bidirectional control written as a visible mark, `⟨U+202E⟩`. */
export function bidiShown(text: string): string {
  return text.replace(BIDI_CONTROLS, (c) => `⟨U+${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}⟩`);
}
