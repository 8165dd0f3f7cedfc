/** The bounds on what a run records, applied before anything is journaled. */
import { MAX_FINDINGS, MAX_SUMMARY } from '../store/engine.js';
import { stripTerminalEscapes } from './terminal-text.js';
import type { Finding } from './types.js';

export { MAX_FINDINGS, MAX_SUMMARY };

/**
 * The highest finding's rank; 0 (passing) with none. An unranked finding alone (an interrupted
 * scan, a target that did not answer) stays -1. A loop, not Math.max(...): a spread of a long
 * list overflows the stack.
 */
export function highestRank(findings: readonly Finding[]): number {
  if (findings.length === 0) return 0;
  let rank = -Infinity;
  for (const finding of findings) rank = Math.max(rank, finding.rank);
  return rank;
}

/** A finding's title and detail are cut here (evidence is quoted, not dumped). */
export const MAX_TITLE = 1000;
export const MAX_DETAIL = 16 * 1024;

/**
 * The first `end` characters of `text`, one fewer when the last would be the first half of a
 * surrogate pair: a lone half is no UTF-8, and strict JSON readers refuse it.
 */
export function headOf(text: string, end: number): string {
  const code = text.charCodeAt(end - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? end - 1 : end);
}

const LINE_ENDS: Record<string, string> = { '\r': '\\r', '\n': '\\n' };

/**
 * A value that is one line by nature (a certificate's names, a tool's XML attribute, the CLI's
 * message) as one line of a finding, an output or the log: CR and LF written as `\r` and `\n`. A target that put them there
 * would otherwise add lines that read as the check's own (`[rank 0] Certificate valid`). (The
 * checks' quote() flattens a quoted line of the target's into spaces instead: a page's text,
 * where a line break says nothing; here it is evidence of a crafted value. U+2028 and the other
 * separators are shown as marks by the web application and the report.)
 */
export function oneLine(value: string): string {
  return value.replace(/[\r\n]/g, (end) => LINE_ENDS[end]!);
}

function cut(text: string, max: number): string {
  return text.length > max ? `${headOf(text, max)}… (cut)` : text;
}

/**
 * At most MAX_FINDINGS, the most severe first kept (found order among equals), the last one
 * saying how many were left out; each title and detail without terminal escapes, cut to its bound.
 */
export function boundFindings(findings: readonly Finding[]): Finding[] {
  let kept = findings;
  if (findings.length > MAX_FINDINGS) {
    const sorted = findings.map((f, i) => [f, i] as const).sort(([a, i], [b, j]) => b.rank - a.rank || i - j);
    const top = sorted.slice(0, MAX_FINDINGS - 1).map(([f]) => f);
    const left = findings.length - top.length;
    // the note ranks no higher than what it stands for
    const rank = Math.min(top.at(-1)!.rank, 1);
    kept = [...top, { rank, title: `${left} more finding(s) not listed`, detail: `Only the ${MAX_FINDINGS - 1} most severe findings are kept (a program's own files, when it wrote some, have them all).` }];
  }
  return kept.map((f) => {
    const [title, detail] = [stripTerminalEscapes(f.title), stripTerminalEscapes(f.detail)];
    return title === f.title && detail === f.detail && title.length <= MAX_TITLE && detail.length <= MAX_DETAIL ? f : { ...f, title: cut(title, MAX_TITLE), detail: cut(detail, MAX_DETAIL) };
  });
}

/** A summary without terminal escapes, cut to MAX_SUMMARY characters, saying so. */
export function boundSummary(text: string): string {
  const summary = stripTerminalEscapes(text);
  return summary.length > MAX_SUMMARY ? `${headOf(summary, MAX_SUMMARY - 40)}\n… (the rest is cut)` : summary;
}

/** An error message or traceback: without terminal escapes, at most MAX_DETAIL characters. */
export function boundText(text: string): string {
  return cut(stripTerminalEscapes(text), MAX_DETAIL);
}
