/**
 * A snapshot read without making it one string: V8's longest string is about 512 MiB, and a
 * store's snapshot can grow past that (imported outputs keep their text in it), which a start
 * then could not read back. The document is a JSON object whose members are scalars or arrays of
 * rows (state.ts's serializePartInPieces): it is scanned 64 KiB at a time, and each row of each
 * array, and each other member, is parsed on its own. Linear in the file's bytes; nothing is held
 * but the rows read and the one being read.
 */
import { closeSync, openSync, readSync } from 'node:fs';

const CHUNK = 64 * 1024;
const [QUOTE, BACKSLASH, COMMA, OPEN_BRACE, CLOSE_BRACE, OPEN_BRACKET, CLOSE_BRACKET] = [0x22, 0x5c, 0x2c, 0x7b, 0x7d, 0x5b, 0x5d];

/** Why a file could not be read as a snapshot (the caller names the file). */
export class SnapshotShapeError extends Error {}

const isSpace = (b: number) => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;

/** Parses `file`, a JSON object of scalars and arrays, row by row: for what state.ts writes, the value JSON.parse would give. */
export function readSnapshotRows(file: string): Record<string, unknown> {
  const doc: Record<string, unknown> = Object.create(null);
  // where in the document: 0 outside the object, 1 in it, 2 in a member's array or deeper
  let depth = 0;
  let inString = false;
  let escaped = false;
  // the member being read at depth 1 (`"key": value`), and the row being read in an array
  let member: Buffer[] = [];
  let row: Buffer[] = [];
  /** The array being filled (a member whose value is an array), while its rows are read. */
  let rows: unknown[] | undefined;
  let closed = false;

  const parse = (pieces: Buffer[]): unknown => JSON.parse(Buffer.concat(pieces).toString('utf8'));
  const blank = (pieces: Buffer[]) => pieces.every((p) => p.every(isSpace));
  /** Ends the row being read, at a comma or at the array's end (where an empty array has none). */
  const endRow = (atComma: boolean) => {
    if (!blank(row)) rows!.push(parse(row));
    else if (atComma || rows!.length > 0) throw new SnapshotShapeError('an empty row in an array');
    row = [];
  };
  /** Ends the member being read at depth 1, if there is one (after an array member only spaces are). */
  const endMember = () => {
    if (!blank(member)) Object.assign(doc, parse([Buffer.from('{'), ...member, Buffer.from('}')]));
    member = [];
  };

  const fd = openSync(file, 'r');
  try {
    const chunk = Buffer.allocUnsafeSlow(CHUNK);
    for (let n; (n = readSync(fd, chunk, 0, CHUNK, null)) > 0; ) {
      const bytes = Buffer.from(chunk.subarray(0, n));
      // where the bytes not yet handed to `member` or `row` start
      let from = 0;
      const take = (to: number) => {
        if (to > from) (rows !== undefined && depth >= 2 ? row : member).push(bytes.subarray(from, to));
        from = to;
      };
      for (let i = 0; i < n; i++) {
        const b = bytes[i]!;
        if (inString) {
          if (escaped) escaped = false;
          else if (b === BACKSLASH) escaped = true;
          else if (b === QUOTE) inString = false;
          continue;
        }
        if (b === QUOTE) {
          if (depth === 0) throw new SnapshotShapeError('not a JSON object');
          inString = true;
        } else if (b === OPEN_BRACE || b === OPEN_BRACKET) {
          if (depth === 0) {
            if (b !== OPEN_BRACE || closed) throw new SnapshotShapeError('not a JSON object');
            depth = 1;
            from = i + 1;
          } else if (depth === 1 && b === OPEN_BRACKET) {
            // a member's value that is an array: its rows are read one by one
            take(i);
            const text = Buffer.concat(member).toString('utf8').trim();
            if (!text.endsWith(':')) throw new SnapshotShapeError('an array where a member\'s name should be');
            const key = JSON.parse(text.slice(0, -1).trim()) as unknown;
            if (typeof key !== 'string') throw new SnapshotShapeError('a member whose name is not a string');
            rows = [];
            doc[key] = rows;
            member = [];
            depth = 2;
            from = i + 1;
          } else depth++;
        } else if (b === CLOSE_BRACE || b === CLOSE_BRACKET) {
          if (depth === 0) throw new SnapshotShapeError('a bracket that closes nothing');
          if (depth === 2 && rows !== undefined) {
            if (b !== CLOSE_BRACKET) throw new SnapshotShapeError('an array closed by }');
            take(i);
            endRow(false);
            rows = undefined;
            depth = 1;
            from = i + 1;
          } else if (depth === 1) {
            if (b !== CLOSE_BRACE) throw new SnapshotShapeError('the object closed by ]');
            take(i);
            endMember();
            depth = 0;
            closed = true;
            from = i + 1;
          } else depth--;
        } else if (b === COMMA && (depth <= 1 || (depth === 2 && rows !== undefined))) {
          if (depth === 0) throw new SnapshotShapeError('a comma outside the object');
          take(i);
          if (depth === 2) endRow(true);
          else endMember();
          from = i + 1;
        } else if (depth === 0 && !isSpace(b)) throw new SnapshotShapeError('not a JSON object');
      }
      if (depth > 0) take(n);
    }
  } finally {
    closeSync(fd);
  }
  if (!closed || inString || depth !== 0) throw new SnapshotShapeError('the document ends before its object does');
  return doc;
}
