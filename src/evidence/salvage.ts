/**
 * Reading a damaged segment file back: its footer lost (the file cut short by a copy of a live
 * data directory, a bad disk, an edit), its records are still each whole where they are, one
 * after another from the file's start, each saying its own length (record.ts). What is read back
 * goes to a new file; the rest is lost, and said (store.ts). Knows nothing of HTTP.
 */
import { fsPromises } from '../lazy-builtins.js';
import type { SegmentRow } from '../store/state.js';
import { decodeRecord, RECORD_HEADER, type Exchange } from './record.js';

/** The suffix a damaged segment file is kept under, beside the new one (never swept at start). */
export const DAMAGED = '.damaged';
const DAMAGED_FILE = /^([1-9][0-9]{0,14})\.seg\.damaged$/;

/** The segment number a kept damaged file's name says, or undefined for another file. */
export function damagedNumberOf(name: string): number | undefined {
  const m = DAMAGED_FILE.exec(name);
  return m ? Number(m[1]) : undefined;
}

/**
 * The places (local numbers) of a segment's records in its file, in file order: every place
 * while nothing was purged from it, every place but the deleted ones when it was rewritten
 * without all of them. Undefined when it was rewritten and then had more deleted: which of the
 * deleted ones the file still holds is not known, so no record can be matched to its id.
 */
export function filePlaces(row: SegmentRow): number[] | undefined {
  if (row.purged !== 0 && row.purged !== row.gone.length) return undefined;
  const gone = row.purged === 0 ? new Set<number>() : new Set(row.gone);
  const places: number[] = [];
  for (let local = 0; local < row.span; local++) if (!gone.has(local)) places.push(local);
  return places;
}

/** A record's whole length, from its fixed header: the header, its meta and its three parts. */
function recordLength(header: Buffer): number {
  return RECORD_HEADER + header.readUInt32LE(0) + header.readUInt32LE(4) + header.readUInt32LE(12) + header.readUInt32LE(16);
}

/**
 * The whole records at the start of a file, at most `most`, in order: each as its bytes and its
 * exchange. Stops at the first one cut short or that does not decode as a record.
 */
export async function* wholeRecords(path: string, most: number): AsyncGenerator<{ bytes: Buffer; exchange: Exchange }> {
  const file = await fsPromises().open(path, 'r');
  try {
    const { size } = await file.stat();
    const header = Buffer.alloc(RECORD_HEADER);
    for (let n = 0, off = 0; n < most && off + RECORD_HEADER <= size; n++) {
      await file.read(header, 0, RECORD_HEADER, off);
      const length = recordLength(header);
      if (length > size - off) return;
      const bytes = Buffer.allocUnsafe(length);
      for (let read = 0; read < length; ) {
        const { bytesRead } = await file.read(bytes, read, length - read, off + read);
        if (bytesRead === 0) return;
        read += bytesRead;
      }
      let exchange: Exchange;
      try {
        const record = decodeRecord(bytes);
        // its own lengths agree with its header's: a record, not bytes that happen to parse
        if (record.parts.end !== length) return;
        exchange = record.exchange;
      } catch {
        return;
      }
      if (typeof exchange.url !== 'string' || typeof exchange.method !== 'string' || !Number.isFinite(exchange.status)) return;
      yield { bytes, exchange };
      off += length;
    }
  } finally {
    await file.close();
  }
}
