/**
 * Text a program wrote for a terminal, made fit to show: ANSI escape sequences (colours, cursor
 * moves, titles) and other control characters removed, line ends made `\n`. One linear pass of
 * regular expressions that cannot backtrack (their parts exclude each other's characters).
 */

/**
 * CSI (`ESC [` params intermediates final, or the 8-bit `\x9b`), OSC (`ESC ]` ... BEL or `ESC \`,
 * within its line and 4 KiB), the other string commands (DCS, SOS, PM, APC: `ESC P`, `X`, `^`, `_`
 * ... `ESC \`, within a line and 64 KiB), and the other escapes (`ESC`, intermediates, a final
 * character: `ESC ( B`, `ESC 7`). A string command left unfinished loses its introducer only: it
 * was removed to the next ESC or the text's end, and a product name ending in `ESC ]` hid every
 * line after it (nmap's later ports, "TRACE is enabled"). Linear: a body stops at the next ESC, so
 * each character is read for one introducer at most.
 */
const ESCAPES = /(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?|\x1b\](?:[^\x07\x1b\n\x18\x1a]{0,4096}(?:\x07|\x1b\\))?|\x1b[PX^_](?:[^\x1b\n\x18\x1a]{0,65536}\x1b\\)?|\x1b[ -/]*[0-~]?/g;
/** C0 and C1 controls but tab and newline (a lone carriage return ends a line: progress bars). */
const CONTROLS = /\r\n?|[\x00-\x08\x0b-\x1f\x7f-\x9f]/g;

/** `text` without terminal escapes and control characters (tab and newline kept). */
export function stripTerminalEscapes(text: string): string {
  // most tools print none: the text is kept as it is, without a copy
  if (!/[\x00-\x08\x0b-\x1f\x7f-\x9f]/.test(text)) return text;
  return text.replace(ESCAPES, '').replace(CONTROLS, (c) => (c[0] === '\r' ? '\n' : ''));
}
