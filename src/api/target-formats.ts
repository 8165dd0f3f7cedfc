/** The targets list as a list to paste (one URL a line) or as CSV, beside its JSON form (extension). */
import { success, type Reply } from '../http/jsend.js';
import type { Args } from '../http/args.js';
import type { Target } from '../store/state.js';
import { attachment } from './filename.js';
import { enumArg } from './params.js';

export type ListFormat = 'json' | 'text' | 'csv';

const FORMATS = ['json', 'text', 'csv'] as const;

/** The fields of a target, in the contract's order: the CSV header row. */
export const TARGET_FIELDS = [
  'id', 'target_url', 'host_name', 'host_ip', 'port_number', 'url_scheme', 'host_path', 'ip_url',
  'top_domain', 'top_url', 'alternative_ips', 'scope', 'max_user_rank', 'max_owtf_rank',
] as const satisfies readonly (keyof Target)[];

/** `format=json|text|csv` (default json); anything else is a 400. */
export function formatArg(args: Args): ListFormat {
  return enumArg(args, 'format', FORMATS) ?? 'json';
}

/** What a spreadsheet would run as a formula: such a cell is prefixed with `'` (OWASP's CSV injection advice). */
const FORMULA_START = /^[=+\-@\t\r]/;
const NUMBER = /^-?[0-9]+$/;

/** RFC 4180: quoted when it holds a quote, a comma or a line break, quotes doubled. */
function csvCell(value: Target[keyof Target]): string {
  let text = Array.isArray(value) ? value.join(' ') : String(value);
  if (FORMULA_START.test(text) && !NUMBER.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

export function targetsCsv(targets: Target[]): string {
  let csv = `${TARGET_FIELDS.join(',')}\r\n`;
  for (const target of targets) csv += `${TARGET_FIELDS.map((field) => csvCell(target[field])).join(',')}\r\n`;
  return csv;
}

/** The answer to a targets list in the format asked for; `sessionName` names the CSV file. */
export function targetListReply(format: ListFormat, targets: Target[], sessionName: string | undefined, sessionId: number): Reply {
  if (format === 'json') return success(targets);
  const common = { 'Cache-Control': 'no-store' };
  if (format === 'text') {
    return { status: 200, body: targets.map((t) => `${t.target_url}\n`).join(''), headers: { 'Content-Type': 'text/plain; charset=utf-8', ...common } };
  }
  return {
    status: 200,
    body: targetsCsv(targets),
    headers: {
      'Content-Type': 'text/csv; charset=utf-8',
      'Content-Disposition': attachment(sessionName ?? '', `session-${sessionId}`, '.targets.csv'),
      ...common,
    },
  };
}
