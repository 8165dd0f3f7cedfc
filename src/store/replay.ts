/**
 * The durable state read back from disk: snapshots, then the journal records they do not include
 * yet, applied with applyOp. The one way it is rebuilt: at start-up, after a failed write, and by
 * a compaction. Synchronous: a rollback must not let a change in halfway, and a compaction runs
 * in a worker thread of its own.
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { readDataFile, regularFileSize } from './data-file.js';
import { scanJournal, segmentFile, type JournalRecord } from './journal.js';
import { applyOp, partOf } from './ops.js';
import { readSnapshotRows, SnapshotShapeError } from './snapshot-rows.js';
import { DataFileError, loadParsedPart, loadPart, PART_FILES, type Part, type State } from './state.js';

function ifExists<T>(read: () => T): T | undefined {
  try {
    return read();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

const CHUNK = 64 * 1024;

/**
 * A text file read 64 KiB at a time: a snapshot of a large store never sits whole in one native
 * buffer, whose freeing would raise malloc's mmap threshold and leave the memory of later ones
 * with the process.
 */
function readText(file: string): string {
  const fd = openSync(file, 'r');
  try {
    const chunk = Buffer.allocUnsafeSlow(CHUNK);
    const decoder = new StringDecoder('utf8');
    const parts: string[] = [];
    for (let n; (n = readSync(fd, chunk, 0, CHUNK, null)) > 0; ) parts.push(decoder.write(chunk.subarray(0, n)));
    parts.push(decoder.end());
    return parts.join('');
  } finally {
    closeSync(fd);
  }
}

/**
 * Snapshots up to this many bytes are read as one string and parsed at once (the quickest);
 * larger ones row by row (snapshot-rows.ts): V8's longest string is about 512 Mi characters, and
 * a store can write a larger snapshot than that (imported outputs keep their text in it).
 * ASSESSD_SNAPSHOT_TEXT_BYTES sets it, for the tests of the other way.
 */
const WHOLE_TEXT_BYTES = Number(process.env.ASSESSD_SNAPSHOT_TEXT_BYTES ?? 256 * 1024 * 1024);

/** Reads a part's snapshot into `state`; returns the last record it includes, or undefined if it is missing. */
export function readSnapshot(dir: string, part: Part, state: State): number | undefined {
  const file = join(dir, PART_FILES[part]);
  const size = regularFileSize(file);
  if (size === undefined) return undefined;
  if (size <= WHOLE_TEXT_BYTES) {
    const text = ifExists(() => readText(file));
    return text === undefined ? undefined : loadPart(state, part, file, text);
  }
  let doc: unknown;
  try {
    doc = readSnapshotRows(file);
  } catch (err) {
    if (err instanceof SnapshotShapeError || err instanceof SyntaxError) throw new DataFileError(file, `not valid JSON (${err.message})`);
    throw err;
  }
  return loadParsedPart(state, part, file, doc);
}

export interface SegmentsRead {
  lastSeq: number;
  /** The last segment's bytes of whole records, and its length: a torn last write is the difference. */
  validLength: number;
  fileLength: number;
  /** Torn writes left at the end of segments before the last one (never acknowledged), by file. */
  tornBefore: { file: string; bytes: number }[];
}

/**
 * Feeds the records of `segments`, oldest first, to `onRecord`, the last segment read up to
 * `lastLength` bytes. A segment deleted meanwhile (by a compaction that covered it) is skipped.
 */
export function readSegments(
  dir: string,
  segments: readonly number[],
  onRecord: (record: JournalRecord, file: string) => void,
  lastLength = Infinity,
): SegmentsRead {
  let lastSeq = 0;
  let validLength = 0;
  let fileLength = 0;
  const tornBefore: SegmentsRead['tornBefore'] = [];
  segments.forEach((n, i) => {
    const file = join(dir, segmentFile(n));
    const isLast = i === segments.length - 1;
    const bytes = readDataFile(file) ?? Buffer.alloc(0);
    const read = isLast ? bytes.subarray(0, Math.min(bytes.length, lastLength)) : bytes;
    validLength = scanJournal(read, file, lastSeq, (record) => {
      onRecord(record, file);
      lastSeq = record.seq;
    });
    fileLength = bytes.length;
    if (!isLast && validLength < fileLength) tornBefore.push({ file, bytes: fileLength - validLength });
  });
  return { lastSeq, validLength, fileLength, tornBefore };
}

/**
 * Applies the ops of `record` that the snapshot of their part does not include yet (`seqOf`);
 * adds the parts it changed to `changed`. Throws DataFileError for an op that does not apply.
 */
export function replayRecord(state: State, seqOf: (part: Part) => number, record: JournalRecord, file: string, changed?: Set<Part>): void {
  for (const op of record.ops) {
    const part = partOf(op);
    if (record.seq <= seqOf(part)) continue;
    let applied: boolean;
    try {
      applied = applyOp(state, op).ok;
    } catch {
      throw new DataFileError(file, `record ${record.seq}: a malformed ${op.op}`);
    }
    if (!applied) throw new DataFileError(file, `record ${record.seq}: ${op.op} does not apply to the snapshots`);
    changed?.add(part);
  }
}
