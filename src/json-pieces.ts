/**
 * JSON written a piece at a time: JSON.stringify's text, with each long string written in slices
 * between the rest. A transaction's body of 16 MiB of control characters is 100 MB of JSON (six
 * characters a byte): stringified at once, it held the server 1.3 s; sent as pieces, the event
 * loop turns while the client reads them.
 */

/** Characters of a long string written at once. */
export const PIECE = 1024 * 1024;

/** The pieces of `JSON.stringify(value)`, joined the very same text. */
export function* jsonPieces(value: unknown): Generator<string> {
  const long: string[] = [];
  // a long string is written as a mark (a NUL, a random tag, its number), each found once, in order
  const tag = `\u0000${Math.random().toString(36).slice(2)}:`;
  const text = JSON.stringify(value, (_key, v: unknown) => (typeof v === 'string' && v.length > PIECE ? `${tag}${long.push(v) - 1}` : v));
  if (long.length === 0) return yield text;
  const mark = JSON.stringify(tag).slice(1, -1);
  const parts = text.split(new RegExp(`"${mark.replace(/\\/g, '\\\\')}(\\d+)"`));
  // a string of the value's own that reads as a mark: written whole, as JSON.stringify writes it
  if (parts.length !== 2 * long.length + 1 || parts.some((part, i) => i % 2 === 1 && Number(part) !== (i - 1) / 2)) return yield JSON.stringify(value);
  for (let i = 0; i < parts.length; i++) {
    if (i % 2 === 0) {
      if (parts[i] !== '') yield parts[i]!;
      continue;
    }
    const string = long[Number(parts[i])]!;
    yield '"';
    for (let at = 0; at < string.length; ) {
      let end = Math.min(string.length, at + PIECE);
      // a surrogate pair is not split: each half would be written escaped, not as the text is
      const last = string.charCodeAt(end - 1);
      if (end < string.length && last >= 0xd800 && last <= 0xdbff) end--;
      yield JSON.stringify(string.slice(at, end)).slice(1, -1);
      at = end;
    }
    yield '"';
  }
}

type Pieces = Iterable<string> | AsyncIterable<string>;

/**
 * The first of `pieces` while they come to at most `limit` characters (the first always), and,
 * past it, `rest`: the pieces still to come, the one that went past first, read only as `rest` is.
 */
export async function upTo(pieces: Pieces, limit: number): Promise<{ taken: string[]; rest?: AsyncIterable<string> }> {
  const source = Symbol.asyncIterator in pieces ? pieces[Symbol.asyncIterator]() : pieces[Symbol.iterator]();
  const taken: string[] = [];
  let used = 0;
  for (let next = await source.next(); !next.done; next = await source.next()) {
    used += next.value.length;
    if (used <= limit || taken.length === 0) {
      taken.push(next.value);
      continue;
    }
    const past = next.value;
    const rest = async function* () {
      yield past;
      for (let more = await source.next(); !more.done; more = await source.next()) yield more.value;
    };
    return { taken, rest: rest() };
  }
  return { taken };
}

/** `[row,...]` from its rows' JSON, a piece a row (`first`: rows already joined, written at once). */
export async function* arrayPieces(rows: Pieces, first: readonly string[] = []): AsyncGenerator<string> {
  yield `[${first.join(',')}`;
  let comma = first.length > 0;
  for await (const row of rows) {
    yield comma ? `,${row}` : row;
    comma = true;
  }
  yield ']';
}
