/**
 * The journal: one line of JSON per committed batch, `{"seq":N,"ops":[...]}`, appended and
 * fsynced before the batch is acknowledged, so a write costs the same whatever the store's size.
 * It is a series of segment files: appends go to the last one; the ones before it are sealed,
 * waiting to be folded into the snapshots (or being folded) and then deleted.
 */
import { readdirSync } from 'node:fs';
import type { AppendableFile } from './atomic-file.js';
import { isOpName, type Op } from './ops.js';
import { DataFileError } from './state.js';

/** Segment 0, the only one of a store that has never been compacted (and of earlier builds). */
export const JOURNAL_FILE = 'journal.jsonl';

/** A segment's file name: `journal.jsonl`, then `journal.1.jsonl`, `journal.2.jsonl`... */
export function segmentFile(n: number): string {
  return n === 0 ? JOURNAL_FILE : `journal.${n}.jsonl`;
}

const SEGMENT_NAME = /^journal(?:\.([1-9][0-9]{0,14}))?\.jsonl$/;

/** The segments in `dir`, oldest first. */
export function listSegments(dir: string): number[] {
  const numbers: number[] = [];
  for (const name of readdirSync(dir)) {
    const m = SEGMENT_NAME.exec(name);
    if (m) numbers.push(m[1] === undefined ? 0 : Number(m[1]));
  }
  return numbers.sort((a, b) => a - b);
}

export interface JournalRecord {
  seq: number;
  ops: Op[];
}

const NEWLINE = 0x0a;

/**
 * Reads a journal segment one record at a time, none kept: `onRecord` sees each in order; every
 * seq must follow `afterSeq` (the previous segment's last). Returns the bytes of whole records.
 * A last line without its newline, or that is not JSON, is the torn tail of a write that was
 * never acknowledged: it is left out, and the bytes returned end before it. Anything else wrong
 * (a bad line before the last, a last line that is JSON but not a record this build knows) is
 * corruption.
 */
export function scanJournal(bytes: Buffer, file: string, afterSeq: number, onRecord: (record: JournalRecord) => void): number {
  let start = 0;
  let lastSeq = afterSeq;
  let line = 0;
  while (start < bytes.length) {
    const end = bytes.indexOf(NEWLINE, start);
    const isLast = end === -1 || end === bytes.length - 1;
    let json: unknown;
    let torn = end === -1;
    if (!torn) {
      try {
        json = JSON.parse(bytes.toString('utf8', start, end));
      } catch {
        torn = true;
      }
    }
    if (torn && isLast) break;
    const record = torn ? undefined : toRecord(json);
    line++;
    if (!record) throw new DataFileError(file, `line ${line} is not a journal record`);
    if (record.seq <= lastSeq) throw new DataFileError(file, `line ${line}: sequence ${record.seq} does not follow ${lastSeq}`);
    lastSeq = record.seq;
    onRecord(record);
    start = end + 1;
  }
  return start;
}

function toRecord(value: unknown): JournalRecord | undefined {
  const r = value as JournalRecord;
  const ok =
    typeof r === 'object' && r !== null && Number.isSafeInteger(r.seq) && r.seq > 0 && Array.isArray(r.ops) &&
    r.ops.every((op) => typeof op === 'object' && op !== null && isOpName(op.op));
  return ok ? r : undefined;
}

export interface Journal {
  /** Bytes of durable records. */
  readonly length: number;
  /** fsyncs done, for the store's counters. */
  readonly fsyncs: number;
  /** Appends a record; resolves once it is durable. */
  append(record: JournalRecord): Promise<void>;
  /** Cuts bytes a failed write may have left past the durable records, so no restart sees them. */
  cut(): Promise<void>;
  close(): Promise<void>;
}

export function openJournal(file: AppendableFile, validLength: number, fileLength: number): Journal {
  let length = validLength;
  let fsyncs = 0;
  // bytes past `length` (a torn or failed write) are cut before anything is appended after them
  let stale = fileLength > validLength;
  const cut = async () => {
    if (!stale) return;
    await file.truncate(length);
    fsyncs++;
    stale = false;
  };
  return {
    get length() {
      return length;
    },
    get fsyncs() {
      return fsyncs;
    },
    async append(record) {
      const data = Buffer.from(`${JSON.stringify(record)}\n`);
      await cut();
      stale = true;
      await file.writeAt(data, length);
      fsyncs++;
      stale = false;
      length += data.length;
    },
    cut,
    close: () => file.close(),
  };
}
