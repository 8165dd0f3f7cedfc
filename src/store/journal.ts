/**
 * The journal: one line of JSON per committed batch, `{"seq":N,"ops":[...]}`, appended and
 * fsynced before the batch is acknowledged, so a write costs the same whatever the store's size.
 */
import type { AppendableFile } from './atomic-file.js';
import { isOpName, type Op } from './ops.js';
import { DataFileError } from './state.js';

export const JOURNAL_FILE = 'journal.jsonl';

export interface JournalRecord {
  seq: number;
  ops: Op[];
}

const NEWLINE = 0x0a;

/**
 * Parses a journal. A last line without its newline, or that does not parse, is the torn tail
 * of a write that was never acknowledged: it is left out, and `validLength` ends before it.
 * Anything wrong before the last line is corruption.
 */
export function parseJournal(bytes: Buffer, file: string): { records: JournalRecord[]; validLength: number } {
  const records: JournalRecord[] = [];
  let start = 0;
  let lastSeq = 0;
  while (start < bytes.length) {
    const end = bytes.indexOf(NEWLINE, start);
    const isLast = end === -1 || end === bytes.length - 1;
    let record: JournalRecord | undefined;
    try {
      record = end === -1 ? undefined : toRecord(JSON.parse(bytes.toString('utf8', start, end)));
    } catch {
      record = undefined;
    }
    if (!record) {
      if (isLast) break;
      throw new DataFileError(file, `line ${records.length + 1} is not a journal record`);
    }
    if (record.seq <= lastSeq) throw new DataFileError(file, `line ${records.length + 1}: sequence ${record.seq} does not follow ${lastSeq}`);
    lastSeq = record.seq;
    records.push(record);
    start = end + 1;
  }
  return { records, validLength: start };
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
  append(record: JournalRecord): Promise<void>;
  /** Empties the journal (its records are in the snapshots now). */
  clear(): Promise<void>;
  close(): Promise<void>;
}

export function openJournal(file: AppendableFile, validLength: number, fileLength: number): Journal {
  let length = validLength;
  // bytes past the durable records (a torn or failed write) are cut before the next append
  let cutBeforeWrite = fileLength > validLength;
  return {
    get length() {
      return length;
    },
    async append(record) {
      const data = Buffer.from(`${JSON.stringify(record)}\n`);
      if (cutBeforeWrite) {
        await file.truncate(length);
        cutBeforeWrite = false;
      }
      try {
        await file.writeAt(data, length);
      } catch (err) {
        cutBeforeWrite = true;
        throw err;
      }
      length += data.length;
    },
    async clear() {
      cutBeforeWrite = true;
      await file.truncate(0);
      cutBeforeWrite = false;
      length = 0;
    },
    close: () => file.close(),
  };
}
