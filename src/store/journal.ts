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
 * Parses a journal. A last line without its newline, or that is not JSON, is the torn tail of a
 * write that was never acknowledged: it is left out, and `validLength` ends before it. Anything
 * else wrong (a bad line before the last, a last line that is JSON but not a record this build
 * knows) is corruption.
 */
export function parseJournal(bytes: Buffer, file: string): { records: JournalRecord[]; validLength: number } {
  const records: JournalRecord[] = [];
  let start = 0;
  let lastSeq = 0;
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
    if (!record) throw new DataFileError(file, `line ${records.length + 1} is not a journal record`);
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
  /** fsyncs done, for the store's counters. */
  readonly fsyncs: number;
  /** Appends a record; resolves once it is durable. */
  append(record: JournalRecord): Promise<void>;
  /** Cuts bytes a failed write may have left past the durable records, so no restart sees them. */
  cut(): Promise<void>;
  /** Empties the journal (its records are durable in the snapshots now). */
  clear(): Promise<void>;
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
    async clear() {
      // from here on every byte is stale: should the truncate fail, the next append retries it
      length = 0;
      stale = true;
      await cut();
    },
    close: () => file.close(),
  };
}
