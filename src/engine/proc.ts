/** What Linux's /proc says of a process: its state, its group, and when it started. */
import { readFileSync } from 'node:fs';

export interface ProcStat {
  /** `R` running, `S` sleeping, `T` stopped, `Z` zombie... */
  state: string;
  pgrp: number;
  /** Field 22: clock ticks since boot, as written (a pid and this name one process for ever). */
  startTime: string;
}

/**
 * Parses the text of `/proc/<pid>/stat`. The command name (field 2) is in parentheses and may
 * itself hold spaces and `)`, so the fields are split after the last `)`.
 */
export function parseProcStat(text: string): ProcStat | undefined {
  const close = text.lastIndexOf(')');
  if (close < 0) return undefined;
  // after the name: field 3 (state) is index 0, field 5 (pgrp) index 2, field 22 (starttime) index 19
  const fields = text.slice(close + 1).trim().split(/\s+/);
  if (fields.length < 20 || !/^\d+$/.test(fields[19]!)) return undefined;
  return { state: fields[0]!, pgrp: Number(fields[2]), startTime: fields[19]! };
}

/** The stat of a live (or zombie) process; `undefined` when it is gone or there is no /proc. */
export function readProcStat(pid: number): ProcStat | undefined {
  if (!Number.isSafeInteger(pid) || pid <= 0) return undefined;
  try {
    return parseProcStat(readFileSync(`/proc/${pid}/stat`, 'latin1'));
  } catch {
    return undefined;
  }
}

/** The process's start time (`/proc/<pid>/stat` field 22); `undefined` when it is gone or not on Linux. */
export function processStartTime(pid: number): string | undefined {
  return readProcStat(pid)?.startTime;
}
