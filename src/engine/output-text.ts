/**
 * An output as the API shows it, and its text: a checklist or links rendered for the target, a
 * check's or an import's stored summary, a program's files (read up to 1 MiB, never whole, their
 * terminal escapes removed).
 */
import { basename, join } from 'node:path';
import type { OutputRow, State } from '../store/state.js';
import type { Catalogue } from './catalogue.js';
import { readRegularFile } from './regular-file.js';
import { fillCommands, fillText } from './template.js';
import { stripTerminalEscapes } from './terminal-text.js';

/** At most this many bytes of text per output in an answer. */
export const MAX_OUTPUT_TEXT = 1024 * 1024;

const pad = (n: number) => String(n).padStart(2, '0');

/** `24/11/2026-17:05`, local time, as the upstream output list shows it. */
export function outputTime(ms: number): string {
  const d = new Date(ms);
  return `${pad(d.getDate())}/${pad(d.getMonth() + 1)}/${d.getFullYear()}-${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** `1m, 2s, 345ms` as upstream words a run time. */
export function runTime(ms: number): string {
  const total = Math.max(0, Math.round(ms));
  const h = Math.floor(total / 3_600_000);
  const m = Math.floor((total % 3_600_000) / 60_000);
  const s = Math.floor((total % 60_000) / 1000);
  return `${h > 0 ? `${h}h, ` : ''}${m > 0 ? `${m}m, ` : ''}${s}s, ${total % 1000}ms`;
}

export type OutputView = Omit<OutputRow, 'summary' | 'run' | 'started_at' | 'ended_at'> & {
  start_time: string;
  end_time: string | null;
  run_time: string | null;
  started_at: string;
  ended_at: string | null;
  output?: string;
};

/** The upstream fields, plus `findings`, `exit_code`, `started_at` and `ended_at` (ISO 8601). */
export function outputView(row: OutputRow): OutputView {
  const { summary: _summary, run: _run, started_at, ended_at, ...fields } = row;
  return {
    ...fields,
    start_time: outputTime(started_at),
    end_time: ended_at === null ? null : outputTime(ended_at),
    run_time: ended_at === null ? null : runTime(ended_at - started_at),
    started_at: new Date(started_at).toISOString(),
    ended_at: ended_at === null ? null : new Date(ended_at).toISOString(),
  };
}

/** Room kept for standard error (and the notes) when standard output is read: at most this much. */
const STDERR_ROOM = 64 * 1024;

async function readHead(outputsDir: string, file: string, max: number): Promise<string | undefined> {
  // through no symlink from the outputs' directory (a run's directory swapped for one showed /etc/passwd)
  const read = await readRegularFile(file, Math.max(0, max), { under: outputsDir });
  // the file keeps what the program wrote; what is shown has no terminal escapes, and says what it leaves out
  if (read.ok) {
    const text = stripTerminalEscapes(read.bytes.toString('utf8'));
    const more = read.size - read.bytes.length;
    return more > 0 ? `${text}\n[${more} bytes more in ${basename(file)}]` : text;
  }
  // a FIFO, socket or device where the run's file should be: said, never opened for reading
  return read.code === 'ENOTREG' || read.code === 'ELOOP' || read.code === 'EXDEV' ? `[${basename(file)} is ${read.reason}]` : undefined;
}

/** The text of an output, at most MAX_OUTPUT_TEXT bytes. */
export async function outputText(state: State, catalogue: Catalogue, outputsDir: string, row: OutputRow): Promise<string> {
  const entry = catalogue.get(row.plugin_key);
  const target = state.targets.get(row.target_id)?.target;
  const parts: string[] = [];
  if (row.summary !== undefined) parts.push(row.summary);
  else if (entry && target && entry.action.kind === 'checklist') parts.push(fillCommands(entry.action.text, { target }));
  else if (entry && target && entry.action.kind === 'links') parts.push(entry.action.links.map((l) => `${l.title}: ${fillText(l.url, { target }, encodeURIComponent)}`).join('\n'));
  if (row.output_path) {
    let left = MAX_OUTPUT_TEXT - Buffer.byteLength(parts.join('\n\n'));
    for (const stream of ['stdout', 'stderr']) {
      // standard output leaves room for standard error: a megabyte of it (of escape sequences, all
      // removed) left standard error out, unsaid
      const room = stream === 'stdout' ? left - Math.min(STDERR_ROOM, left >> 2) : left - 256;
      const text = await readHead(outputsDir, join(outputsDir, row.output_path, `${stream}.txt`), room);
      if (!text) continue;
      parts.push(stream === 'stderr' ? `--- standard error ---\n${text}` : text);
      left -= Buffer.byteLength(text);
    }
  }
  const text = parts.join('\n\n');
  return Buffer.byteLength(text) <= MAX_OUTPUT_TEXT ? text : Buffer.from(text).subarray(0, MAX_OUTPUT_TEXT).toString('utf8');
}
