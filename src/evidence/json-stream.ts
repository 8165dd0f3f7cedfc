/**
 * A streaming JSON parser for one shape: `{"log": {..., "entries": [ENTRY, ...]}}`. Bytes go in
 * as they come; each `log.entries[i]` comes out once it is complete, built as a JS value; the rest
 * of the document is checked and dropped. Nothing is held but the entry being read, so a HAR of
 * any size parses in the memory of its largest entry. Limits: nesting, string length, values per
 * entry, and the bytes of an entry's strings together (bodies apart: keys and strings of 16 MiB
 * each in one entry would otherwise build a GiB); bodies (`content.text`, `postData.text`)
 * beyond a cap are cut (their bytes kept whole up to it) rather than refused. An object or array
 * under a key beginning with `_` inside an entry (a browser's own fields: Chrome's `_initiator`
 * stacks, `_webSocketMessages`) is checked and dropped, as nothing reads one; a key twice in one
 * object is refused (JSON.parse would take the last, this parser kept both); a leading UTF-8
 * byte order mark is passed over (RFC 8259 8.1 lets a parser ignore it; some exporters write it).
 */
import { isUtf8 } from 'node:buffer';
import { incompleteTail } from './utf8.js';

export interface JsonStreamOptions {
  /** Bytes of a body text kept; the rest is read and dropped (the entry says it was cut). */
  bodyCap: number;
  /** Longest other string, in bytes of UTF-8. */
  maxString: number;
  maxDepth: number;
  /** Most values (strings, numbers, containers...) in one entry. */
  maxValuesPerEntry: number;
  /** Most bytes (UTF-8) of an entry's keys and strings together, bodies apart. */
  maxEntryBytes: number;
}

export const DEFAULT_JSON_LIMITS: JsonStreamOptions = {
  bodyCap: 16 * 1024 * 1024,
  maxString: 16 * 1024 * 1024,
  maxDepth: 64,
  maxValuesPerEntry: 200_000,
  maxEntryBytes: 32 * 1024 * 1024,
};

/** A body text as the parser keeps it: its bytes (UTF-8 of the JSON string), and whether it was cut. */
export interface BodyText {
  readonly bodyText: true;
  bytes: Buffer;
  cut: boolean;
}

/** The parser's own body texts (a set, not a shape: a HAR's `{"bodyText": true, "bytes": "x"}` read as one was a 500). */
const BODY_TEXTS = new WeakSet<object>();

/** A body text the parser made. */
function bodyText(bytes: Buffer, cut: boolean): BodyText {
  const text: BodyText = { bodyText: true, bytes, cut };
  BODY_TEXTS.add(text);
  return text;
}

export const isBodyText = (v: unknown): v is BodyText => typeof v === 'object' && v !== null && BODY_TEXTS.has(v);

/** Why a document is refused: where (the entry, the field) and what. */
export class JsonStreamError extends Error {
  constructor(
    message: string,
    /** The entry being read, when inside one. */
    readonly entry: number | undefined,
    /** The field's path, e.g. `log.entries[3].response.content.text`. */
    readonly field: string,
  ) {
    super(message);
  }
}

export interface ParsedEntry {
  index: number;
  value: unknown;
}

const enum Mode {
  Value,
  AfterValue,
  Key,
  Colon,
  String,
  Number,
  Literal,
  Done,
}

const enum Role {
  Root,
  Log,
  Entries,
  /** Inside an entry: built. */
  Keep,
  /** Checked, then dropped. */
  Skip,
}

interface Frame {
  array: boolean;
  role: Role;
  /** The container being built (Keep), else null. */
  value: Record<string, unknown> | unknown[] | null;
  /** The key whose value comes next (objects), or the index of the next element (arrays). */
  key: string | null;
  index: number;
  /** The key or index this frame sits under, for paths. */
  name: string | number;
}

const QUOTE = 0x22;
const BOM = [0xef, 0xbb, 0xbf];
const BACKSLASH = 0x5c;
const WHITESPACE = new Uint8Array(256);
for (const c of [0x20, 0x09, 0x0a, 0x0d]) WHITESPACE[c] = 1;
/** Bytes that end the plain run of a string: a backslash, a control character. */
const SPECIAL = new Uint8Array(256);
SPECIAL[0x5c] = 1;
for (let c = 0; c < 0x20; c++) SPECIAL[c] = 1;
const NUMBER_BYTE = new Uint8Array(256);
for (const c of '0123456789+-.eE') NUMBER_BYTE[c.charCodeAt(0)] = 1;
const NUMBER = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$/;
/** Each byte's value as a hex digit; 255: none. */
const HEX = new Uint8Array(256).fill(255);
for (let c = 0; c < 16; c++) HEX[c.toString(16).charCodeAt(0)] = HEX[c.toString(16).toUpperCase().charCodeAt(0)] = c;
/** Bytes escapes decode to, gathered before they join the string's parts (createJsonStream's `decoded`). */
const DECODED_BYTES = 16 * 1024;
const ESCAPES: Record<number, number> = { 0x22: 0x22, 0x5c: 0x5c, 0x2f: 0x2f, 0x62: 8, 0x66: 12, 0x6e: 10, 0x72: 13, 0x74: 9 };

export interface JsonStream {
  /** Parses a chunk; complete entries wait in `take()`. Throws JsonStreamError. */
  write(chunk: Buffer): void;
  /** The end of the document: throws if it is incomplete. */
  end(): void;
  /** The entries completed since the last call. */
  take(): ParsedEntry[];
  /** Bytes read so far. */
  readonly offset: number;
}

export function createJsonStream(options: JsonStreamOptions = DEFAULT_JSON_LIMITS): JsonStream {
  const stack: Frame[] = [];
  let mode = Mode.Value;
  let offset = 0;
  let entryIndex = -1;
  let valuesInEntry = 0;
  let bytesInEntry = 0;
  /** Bytes of a leading byte order mark (EF BB BF) read, until the first byte that is not one. */
  let bomRead = 0;
  let bomDone = false;
  let sawLog = false;
  let sawEntries = false;
  let ready: ParsedEntry[] = [];

  // the string being read
  let parts: Buffer[] = [];
  /** A body text's bytes so far (intoBody); other strings gather in `parts`. */
  let body: Buffer | undefined;
  let stringBytes = 0;
  /** Bytes dropped past the cap (a body text). */
  let dropped = 0;
  let stringCap = 0;
  let stringIsBody = false;
  let stringIsKey = false;
  /** Where the string being read began (its opening quote). */
  let stringStart = 0;
  /** An escape cut by a chunk's end: its bytes so far, backslash included. */
  let pendingEscape: number[] | null = null;
  /**
   * What escapes decoded to, gathered before they join `parts`: a string of escapes (a body of
   * `\"` or `\\`) made a Buffer per character, tens of them per byte of the file in memory.
   */
  const decoded = Buffer.allocUnsafe(DECODED_BYTES);
  let decodedLength = 0;
  /** The chunk the first quote at or after a position was looked for in, and where it is (its length: none). */
  let quoteChunk: Buffer | undefined;
  let quoteAt = 0;
  /** A high surrogate waiting for its low half. */
  let highSurrogate = -1;

  let token = '';

  const path = (extra?: string | number): string => {
    let p = '';
    for (const f of stack.slice(1)) p += typeof f.name === 'number' ? `[${f.name}]` : `${p ? '.' : ''}${f.name}`;
    const top = stack[stack.length - 1];
    const next = extra ?? (top ? (top.array ? top.index : top.key) : null);
    if (next !== null && next !== undefined) p += typeof next === 'number' ? `[${next}]` : `${p ? '.' : ''}${next}`;
    return p || '(document)';
  };
  const fail = (message: string, extra?: string | number, at = offset): never => {
    throw new JsonStreamError(`${message} (at byte ${at})`, entryIndex >= 0 ? entryIndex : undefined, path(extra));
  };
  /** A comma was just read in an object: a key must follow, not `}`. */
  let afterComma = false;

  /** The role of a value about to start, from where it sits (`container`: an object or array). */
  function roleOfNext(container = false): Role {
    const top = stack[stack.length - 1];
    if (!top) return Role.Root;
    if (top.role === Role.Keep) return container && !top.array && top.key!.startsWith('_') ? Role.Skip : Role.Keep;
    if (top.role === Role.Root && top.key === 'log') return Role.Log;
    if (top.role === Role.Log && top.key === 'entries') return Role.Entries;
    if (top.role === Role.Entries) return Role.Keep;
    return Role.Skip;
  }

  function countValue(): void {
    if (stack.length >= 3 && stack[2].role === Role.Entries && ++valuesInEntry > options.maxValuesPerEntry) {
      fail(`more than ${options.maxValuesPerEntry} values in one entry`);
    }
  }

  /** A key or string of `bytes` kept in the entry being built. */
  function countBytes(bytes: number): void {
    bytesInEntry += bytes;
    if (bytesInEntry > options.maxEntryBytes) fail(`more than ${options.maxEntryBytes / (1024 * 1024)} MiB of strings in one entry (its bodies apart)`);
  }

  /** The key just read of the object on top: refused if it has it already, counted if kept. */
  function setKey(key: string, bytes: number): void {
    const top = stack[stack.length - 1];
    if (top.value) {
      if (Object.hasOwn(top.value, key)) fail(`the key ${JSON.stringify(key.slice(0, 100))} twice in one object`, key, stringStart);
      countBytes(bytes);
    }
    top.key = key;
    mode = Mode.Colon;
  }

  /** A complete value: into its container, or out as an entry. */
  function emit(value: unknown, role: Role): void {
    const top = stack[stack.length - 1];
    mode = Mode.AfterValue;
    if (!top) {
      if (role !== Role.Root) fail('not a HAR: the document must be a JSON object');
      mode = Mode.Done;
      return;
    }
    if (top.role === Role.Entries) {
      ready.push({ index: top.index, value });
      top.index++;
      valuesInEntry = 0;
      bytesInEntry = 0;
      entryIndex = -1;
      return;
    }
    // (a container dropped inside an entry: not set, not even as null)
    if (top.value && role !== Role.Skip) {
      if (top.array) (top.value as unknown[]).push(value);
      else (top.value as Record<string, unknown>)[top.key!] = value;
    }
    if (top.array) top.index++;
  }

  function open(array: boolean): void {
    const role = roleOfNext(true);
    if (stack.length >= options.maxDepth) fail(`nesting deeper than ${options.maxDepth} levels`);
    if (role === Role.Root && array) fail('not a HAR: the document must be a JSON object');
    if (role === Role.Log && array) fail('not a HAR: "log" must be an object', 'log');
    if (role === Role.Entries && !array) fail('not a HAR: "log.entries" must be an array', 'entries');
    // two of them: which one a reader takes is its own choice (JSON.parse's: the last)
    if (role === Role.Log && sawLog) fail('not a HAR: "log" twice', 'log');
    if (role === Role.Entries && sawEntries) fail('not a HAR: "log.entries" twice', 'entries');
    if (role === Role.Log) sawLog = true;
    if (role === Role.Entries) sawEntries = true;
    const parent = stack[stack.length - 1];
    countValue();
    const name = parent ? (parent.array ? parent.index : parent.key!) : '';
    // objects without a prototype: a "__proto__" key is a key like any other
    stack.push({ array, role, value: role === Role.Keep ? (array ? [] : Object.create(null)) : null, key: null, index: 0, name });
    mode = array ? Mode.Value : Mode.Key;
    afterComma = false;
  }

  function close(array: boolean): void {
    const frame = stack.pop()!;
    if (frame.array !== array) fail(`unexpected ${array ? ']' : '}'}`);
    emit(frame.value, frame.role);
  }

  function startString(key: boolean): void {
    parts = [];
    body = undefined;
    decodedLength = 0;
    stringBytes = 0;
    dropped = 0;
    stringIsKey = key;
    stringStart = offset;
    const top = stack[stack.length - 1];
    // entries[i].response.content.text or entries[i].request.postData.text: root, log, entries, entry, then these two
    stringIsBody =
      !key && stack.length === 6 && top.key === 'text' &&
      ((top.name === 'content' && stack[4].name === 'response') || (top.name === 'postData' && stack[4].name === 'request'));
    stringCap = stringIsBody ? options.bodyCap : options.maxString;
    mode = Mode.String;
  }

  /** Appends bytes the string holds as they came; any escape's character before them goes first. */
  function appendString(bytes: Buffer): void {
    if (highSurrogate >= 0) codeUnit(-1);
    if (decodedLength > 0) flushDecoded();
    keep(bytes);
  }

  /** Appends the bytes an escape decoded to (through `decoded`). */
  function appendDecoded(byte: number): void {
    if (decodedLength === decoded.length) flushDecoded();
    decoded[decodedLength++] = byte;
  }

  function flushDecoded(): void {
    const bytes = decoded.subarray(0, decodedLength);
    decodedLength = 0;
    // copied: `decoded` is written again
    keep(bytes, true);
  }

  function keep(bytes: Buffer, copy = false): void {
    if (stringBytes + bytes.length > stringCap) {
      if (!stringIsBody) fail(`a string longer than ${options.maxString} bytes`);
      const room = Math.max(0, stringCap - stringBytes);
      if (room > 0) intoBody(bytes.subarray(0, room));
      dropped += bytes.length - room;
      return;
    }
    if (stringIsBody) return intoBody(bytes);
    // copied: a chunk's memory is not kept alive by a small string of it
    parts.push(copy || bytes.length > 4096 ? Buffer.from(bytes) : bytes);
    stringBytes += bytes.length;
  }

  /**
   * A body's bytes, into one buffer that doubles as it fills (up to the cap): a 16 MiB body was
   * gathered in pieces and copied whole at its end, 16 MB of new memory in one go (~100 ms here).
   */
  function intoBody(bytes: Buffer): void {
    if (body === undefined || stringBytes + bytes.length > body.length) {
      // the first piece's size (a small body comes whole in one), then twice what it holds
      const grown = Buffer.allocUnsafeSlow(Math.min(stringCap, body === undefined ? bytes.length : Math.max(2 * body.length, stringBytes + bytes.length)));
      body?.copy(grown, 0, 0, stringBytes);
      body = grown;
    }
    bytes.copy(body, stringBytes);
    stringBytes += bytes.length;
  }

  /**
   * A `\u` escape's UTF-16 code unit, written as UTF-8; a surrogate without its other half as
   * U+FFFD. -1: what comes next is no code unit (a lone high surrogate ends there).
   */
  function codeUnit(unit: number): void {
    if (highSurrogate >= 0) {
      const high = highSurrogate;
      highSurrogate = -1;
      if (unit >= 0xdc00 && unit <= 0xdfff) return codePoint(0x10000 + ((high - 0xd800) << 10) + (unit - 0xdc00));
      codePoint(0xfffd);
    }
    if (unit >= 0xd800 && unit <= 0xdbff) highSurrogate = unit;
    else if (unit >= 0xdc00 && unit <= 0xdfff) codePoint(0xfffd);
    else if (unit >= 0) codePoint(unit);
  }

  /** A code point's UTF-8 bytes, through `decoded` (node's encoder past ASCII: four bytes at most). */
  function codePoint(cp: number): void {
    if (cp < 0x80) return appendDecoded(cp);
    if (decoded.length - decodedLength < 4) flushDecoded();
    decodedLength += decoded.write(String.fromCodePoint(cp), decodedLength);
  }

  /** A string read whole from one chunk: as endString does, its text already decoded. */
  function endStringWith(text: string, bytes: number): void {
    if (stringIsKey) return setKey(text, bytes);
    const role = roleOfNext();
    if (role === Role.Root || role === Role.Log || role === Role.Entries) fail(role === Role.Root ? 'not a HAR: the document must be a JSON object' : 'not a HAR: "log" must hold an "entries" array');
    countValue();
    if (role === Role.Keep) countBytes(bytes);
    emit(role === Role.Keep ? text : null, role);
  }

  function endString(): void {
    if (highSurrogate >= 0) codeUnit(-1);
    if (decodedLength > 0) flushDecoded();
    let bytes = stringIsBody ? (body?.subarray(0, stringBytes) ?? Buffer.alloc(0)) : parts.length === 1 ? parts[0] : Buffer.concat(parts, stringBytes);
    parts = [];
    body = undefined;
    const cut = dropped > 0;
    if (cut) bytes = bytes.subarray(0, bytes.length - incompleteTail(bytes));
    if (!isUtf8(bytes)) fail('not valid UTF-8');
    if (stringIsKey) return setKey(bytes.toString('utf8'), bytes.length);
    const role = roleOfNext();
    if (role === Role.Root || role === Role.Log || role === Role.Entries) fail(role === Role.Root ? 'not a HAR: the document must be a JSON object' : 'not a HAR: "log" must hold an "entries" array');
    countValue();
    if (role === Role.Keep && !stringIsBody) countBytes(bytes.length);
    const value = role !== Role.Keep ? null : stringIsBody ? bodyText(bytes, cut) : bytes.toString('utf8');
    emit(value, role);
  }

  /** Reads string bytes from `pos`; returns where it stopped (the chunk's end, or past the closing quote). */
  function readString(chunk: Buffer, pos: number): number {
    while (pos < chunk.length) {
      if (pendingEscape) {
        pendingEscape.push(chunk[pos++]);
        pos = finishEscape(chunk, pos);
        continue;
      }
      // the first quote at or after `pos`, found once per run of escapes (a body of `\\` looked for
      // it again after each, to the chunk's end)
      if (quoteChunk !== chunk || quoteAt < pos) {
        const found = chunk.indexOf(QUOTE, pos);
        quoteChunk = chunk;
        quoteAt = found === -1 ? chunk.length : found;
      }
      const quote = quoteAt === chunk.length ? -1 : quoteAt;
      const stop = quote === -1 ? chunk.length : quote;
      // the first backslash or control character before the quote; and whether all is ASCII
      let plainEnd = pos;
      let ascii = true;
      if (stringIsBody) {
        // a body's bytes are kept as bytes: only its escapes matter, found natively (bodies are most of a HAR)
        const slash = chunk.subarray(pos, stop).indexOf(BACKSLASH);
        plainEnd = slash === -1 ? stop : pos + slash;
        ascii = false;
      } else {
        for (; plainEnd < stop; plainEnd++) {
          const b = chunk[plainEnd];
          if (SPECIAL[b]) break;
          if (b >= 0x80) ascii = false;
        }
      }
      const escapeAt = plainEnd < stop && chunk[plainEnd] === BACKSLASH ? plainEnd : -1;
      if (plainEnd < stop && escapeAt === -1) fail('a control character in a string');
      // the common case: a short string whole in this chunk, no escape: no copy of its bytes
      if (escapeAt === -1 && quote !== -1 && stringBytes === 0 && decodedLength === 0 && highSurrogate < 0 && !stringIsBody && quote - pos <= options.maxString) {
        if (!ascii && !isUtf8(chunk.subarray(pos, quote))) fail('not valid UTF-8');
        endStringWith(chunk.toString(ascii ? 'latin1' : 'utf8', pos, quote), quote - pos);
        return quote + 1;
      }
      if (plainEnd > pos) appendString(chunk.subarray(pos, plainEnd));
      if (escapeAt !== -1) {
        pos = escapeAt + 1;
        // whole in this chunk: read at once (the common case), else byte by byte as they come
        const kind = chunk[pos];
        if (kind !== undefined && kind !== 0x75) {
          escaped(kind);
          pos++;
        } else if (kind === 0x75 && pos + 5 <= chunk.length) {
          codeUnit(hexUnit(chunk, pos + 1));
          pos += 5;
        } else pendingEscape = [BACKSLASH];
        continue;
      }
      if (quote === -1) return chunk.length;
      endString();
      return quote + 1;
    }
    return pos;
  }

  /** Completes a pending escape with the bytes after `pos` it needs; returns the position after it. */
  function finishEscape(chunk: Buffer, pos: number): number {
    const esc = pendingEscape!;
    if (esc.length < 2) return pos;
    const kind = esc[1];
    if (kind !== 0x75) {
      pendingEscape = null;
      escaped(kind);
      return pos;
    }
    while (esc.length < 6 && pos < chunk.length) esc.push(chunk[pos++]);
    if (esc.length < 6) return pos;
    pendingEscape = null;
    codeUnit(hexUnit(Buffer.from(esc), 2));
    return pos;
  }

  /** A one-character escape (`\n`, `\"`...): what `kind` stands for. */
  function escaped(kind: number): void {
    const byte = ESCAPES[kind];
    if (byte === undefined) fail('an invalid escape in a string');
    if (highSurrogate >= 0) codeUnit(-1);
    appendDecoded(byte);
  }

  /** The code unit of a `\u` escape's four hex digits at `at`. */
  function hexUnit(bytes: Buffer, at: number): number {
    let unit = 0;
    for (let i = at; i < at + 4; i++) {
      const digit = HEX[bytes[i]!]!;
      if (digit === 255) fail('an invalid \\u escape in a string');
      unit = unit * 16 + digit;
    }
    return unit;
  }

  function endToken(): void {
    // a word is read to its end: the place said is where it began
    const start = offset - Buffer.byteLength(token);
    if (mode === Mode.Number) {
      if (!NUMBER.test(token)) fail(`an invalid number ${JSON.stringify(token.slice(0, 40))}`, undefined, start);
      scalar(Number(token));
    } else {
      const value = token === 'true' ? true : token === 'false' ? false : token === 'null' ? null : undefined;
      if (value === undefined) fail(`unexpected ${JSON.stringify(token.slice(0, 40))}`, undefined, start);
      scalar(value);
    }
    token = '';
  }

  function scalar(value: unknown): void {
    const role = roleOfNext();
    if (role !== Role.Keep && role !== Role.Skip) fail(role === Role.Root ? 'not a HAR: the document must be a JSON object' : 'not a HAR: "log" must hold an "entries" array');
    countValue();
    emit(role === Role.Keep ? value : null, role);
  }

  /** Passes over what `chunk` holds of a leading byte order mark; returns where the document goes on. */
  function passBom(chunk: Buffer): number {
    let pos = 0;
    while (pos < chunk.length && bomRead < 3 && chunk[pos] === BOM[bomRead]) {
      pos++;
      bomRead++;
    }
    offset += pos;
    if (bomRead === 3 || pos < chunk.length) {
      // a mark begun and not finished is no JSON either
      if (bomRead > 0 && bomRead < 3) fail('a byte that is not JSON', undefined, offset - bomRead);
      bomDone = true;
    }
    return pos;
  }

  function write(chunk: Buffer): void {
    let pos = 0;
    const length = chunk.length;
    if (!bomDone) pos = passBom(chunk);
    while (pos < length) {
      if (mode === Mode.String) {
        const start = pos;
        pos = readString(chunk, pos);
        offset += pos - start;
        continue;
      }
      const c = chunk[pos];
      if (mode === Mode.Number || mode === Mode.Literal) {
        const isPart = mode === Mode.Number ? NUMBER_BYTE[c] === 1 : c >= 0x61 && c <= 0x7a;
        if (isPart) {
          if (token.length >= 64) fail('a number or word longer than 64 characters');
          token += String.fromCharCode(c);
          pos++;
          offset++;
          continue;
        }
        endToken();
        continue;
      }
      if (WHITESPACE[c]) {
        pos++;
        offset++;
        continue;
      }
      switch (mode) {
        case Mode.Done:
          fail('more after the end of the document');
          break;
        case Mode.Value:
          // a value under log.entries is an entry: errors from here name it
          if (stack[stack.length - 1]?.role === Role.Entries && c !== 0x5d) entryIndex = stack[stack.length - 1].index;
          if (c === 0x7b) open(false);
          else if (c === 0x5b) open(true);
          else if (c === QUOTE) startString(false);
          else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
            mode = Mode.Number;
            continue;
          } else if (c >= 0x61 && c <= 0x7a) {
            mode = Mode.Literal;
            continue;
          } else if (c === 0x5d && stack[stack.length - 1]?.array && stack[stack.length - 1].index === 0) close(true);
          else fail(c < 0x80 ? `unexpected ${JSON.stringify(String.fromCharCode(c))}` : 'a byte that is not JSON');
          break;
        case Mode.AfterValue: {
          const top = stack[stack.length - 1];
          if (c === 0x2c) {
            mode = top.array ? Mode.Value : Mode.Key;
            afterComma = !top.array;
          } else if (c === 0x5d && top.array) close(true);
          else if (c === 0x7d && !top.array) close(false);
          else fail(c < 0x80 ? `unexpected ${JSON.stringify(String.fromCharCode(c))}` : 'a byte that is not JSON');
          break;
        }
        case Mode.Key:
          if (c === QUOTE) {
            afterComma = false;
            startString(true);
          } else if (c === 0x7d && !afterComma) close(false);
          else fail('expected a key');
          break;
        case Mode.Colon:
          if (c !== 0x3a) fail('expected :');
          mode = Mode.Value;
          break;
      }
      pos++;
      offset++;
    }
  }

  return {
    write,
    end() {
      if (mode === Mode.Number || mode === Mode.Literal) endToken();
      if (mode !== Mode.Done) fail(offset === 0 ? 'not a HAR: the document is empty' : 'the document ends too soon (truncated?)');
      if (!sawLog || !sawEntries) throw new JsonStreamError('not a HAR: no "log.entries" array', undefined, sawLog ? 'log.entries' : 'log');
    },
    take() {
      const out = ready;
      ready = [];
      return out;
    },
    get offset() {
      return offset;
    },
  };
}
