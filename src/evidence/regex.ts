/**
 * Regular expressions a user types, matched in time linear in the text: JavaScript's syntax
 * without what needs backtracking (backreferences, lookarounds), compiled to an NFA over UTF-8
 * bytes, run as a DFA built lazily (RE2's way). Case-insensitive for ASCII letters. A search
 * never backtracks, so no pattern can blow up; a deadline bounds the time a search may take.
 */

/** A pattern refused, with the place (0-based) in it that is wrong. */
export class RegexError extends Error {
  constructor(
    message: string,
    readonly position: number,
  ) {
    super(message);
  }
}

/** The search ran past its deadline. */
export class SearchTimeout extends Error {}

/** An ASCII letter in lower case; any other byte as it is. */
const fold = (b: number) => (b >= 65 && b <= 90 ? b + 32 : b);

/** Most NFA states a pattern may compile to (a counted repetition copies its body). */
const MAX_STATES = 10_000;
const MAX_REPEAT = 1000;
/** Groups nested deeper are refused: the parser and the compiler recurse once per level. */
const MAX_NESTING = 100;
/** Most DFA states kept; past it the cache starts again (the cost per byte stays bounded by the NFA). */
const MAX_DFA_STATES = 2000;

/** A character class over bytes: ASCII members, and whether any non-ASCII character (one UTF-8 sequence) belongs. */
interface ByteClass {
  ascii: Uint8Array;
  nonAscii: boolean;
}

type Node =
  | { k: 'alt'; items: Node[] }
  | { k: 'cat'; items: Node[] }
  | { k: 'rep'; node: Node; min: number; max: number }
  | { k: 'class'; cls: ByteClass; extra: number[][] }
  | { k: 'bytes'; bytes: number[] }
  | { k: 'assert'; kind: Assertion };

type Assertion = 'start' | 'end' | 'word' | 'not-word';

const isWordByte = (b: number) => (b >= 48 && b <= 57) || (b >= 65 && b <= 90) || (b >= 97 && b <= 122) || b === 95;
const WORD = (b: number) => isWordByte(b);
const DIGIT = (b: number) => b >= 48 && b <= 57;
const SPACE = (b: number) => b === 32 || (b >= 9 && b <= 13);

function classOf(test: (b: number) => boolean, negate: boolean): ByteClass {
  const ascii = new Uint8Array(128);
  for (let b = 0; b < 128; b++) ascii[b] = Number(test(b) !== negate);
  return { ascii, nonAscii: negate };
}

/** Adds the other case of every ASCII letter in the class. */
function foldCase(cls: ByteClass): ByteClass {
  const ascii = cls.ascii.slice();
  for (let b = 65; b <= 90; b++) if (cls.ascii[b] || cls.ascii[b + 32]) ascii[b] = ascii[b + 32] = 1;
  return { ascii, nonAscii: cls.nonAscii };
}

const SYNTAX = new Set('^$\\.*+?()[]{}|/-');

/** Parses a pattern (JavaScript syntax, the subset that needs no backtracking), and its trailing (?!...). */
function parse(pattern: string): { tree: Node; lookahead?: Node; lazy: boolean } {
  let pos = 0;
  /** Groups open around the place being read. */
  let depth = 0;
  let lookahead: { node: Node; at: number } | undefined;
  let inLookahead = false;
  /** A lazy quantifier (`*?`) was read: a value is then the shortest match, else the longest (matches()). */
  let lazy = false;
  const fail = (message: string, at = pos): never => {
    throw new RegexError(message, at);
  };
  const peek = () => pattern[pos];

  function alternation(): Node {
    const items = [sequence()];
    while (peek() === '|') {
      pos++;
      items.push(sequence());
    }
    return items.length === 1 ? items[0] : { k: 'alt', items };
  }

  function sequence(): Node {
    const items: Node[] = [];
    while (pos < pattern.length && peek() !== '|' && peek() !== ')') items.push(quantified());
    return { k: 'cat', items };
  }

  function quantified(): Node {
    const at = pos;
    const node = atom();
    for (;;) {
      const c = peek();
      let min: number;
      let max: number;
      if (c === '*') [min, max] = [0, Infinity];
      else if (c === '+') [min, max] = [1, Infinity];
      else if (c === '?') [min, max] = [0, 1];
      else if (c === '{') {
        const m = /^\{(\d+)(,(\d*))?\}/.exec(pattern.slice(pos));
        if (!m) return node;
        min = Number(m[1]);
        max = m[2] === undefined ? min : m[3] === '' ? Infinity : Number(m[3]);
        if (min > MAX_REPEAT || (max !== Infinity && max > MAX_REPEAT)) fail(`a repetition count over ${MAX_REPEAT}`);
        if (max < min) fail('numbers out of order in {} quantifier');
        pos += m[0].length - 1;
      } else return node;
      if (node.k === 'assert') fail('nothing to repeat', at);
      pos++;
      // lazy or greedy matches the same texts: a search only asks whether one does
      if (peek() === '?') {
        pos++;
        lazy = true;
      }
      if (peek() === '*' || peek() === '+' || peek() === '?' || peek() === '{') {
        if (peek() !== '{' || /^\{\d+(,\d*)?\}/.test(pattern.slice(pos))) fail('nothing to repeat');
      }
      return { k: 'rep', node, min, max };
    }
  }

  function atom(): Node {
    const at = pos;
    const c = pattern[pos++];
    switch (c) {
      case '(': {
        if (pattern.startsWith('?:', pos)) pos += 2;
        else if (/^\?<[A-Za-z_$][\w$]*>/.test(pattern.slice(pos))) pos = pattern.indexOf('>', pos) + 1;
        else if (pattern.startsWith('?!', pos) && depth === 0 && !inLookahead) {
          pos += 2;
          // one lookahead, not nested in another (each would recurse, unbounded by MAX_NESTING)
          inLookahead = true;
          const inner = alternation();
          inLookahead = false;
          if (peek() !== ')') fail('unterminated group', at);
          pos++;
          if (pos !== pattern.length) fail('a lookahead (?!...) is supported only at the end of the pattern', at);
          lookahead = { node: inner, at };
          return { k: 'cat', items: [] };
        } else if (peek() === '?') fail('lookarounds are not supported, but for one (?!...) at the end of the pattern', at);
        if (depth >= MAX_NESTING) fail(`groups nested more than ${MAX_NESTING} deep`, at);
        depth++;
        const inner = alternation();
        if (peek() !== ')') fail('unterminated group', at);
        pos++;
        depth--;
        return inner;
      }
      case ')':
        return fail('unmatched )', at);
      case '[':
        return bracket(at);
      case '.':
        return { k: 'class', cls: classOf((b) => b === 10 || b === 13, true), extra: [] };
      case '^':
        return { k: 'assert', kind: 'start' };
      case '$':
        return { k: 'assert', kind: 'end' };
      case '\\':
        return escape(at, false);
      case '*':
      case '+':
      case '?':
        return fail('nothing to repeat', at);
      default:
        return literal(pattern.codePointAt(at)!, at);
    }
  }

  function literal(code: number, at: number): Node {
    if (code > 0xffff) pos = at + 2;
    if (code < 128) {
      const ascii = new Uint8Array(128);
      ascii[code] = 1;
      return { k: 'class', cls: foldCase({ ascii, nonAscii: false }), extra: [] };
    }
    return { k: 'bytes', bytes: [...Buffer.from(String.fromCodePoint(code))] };
  }

  /** An escape after its backslash; in a class, `\b` is a backspace and assertions are not allowed. */
  function escape(at: number, inClass: boolean): Node {
    const c = pattern[pos++];
    if (c === undefined) fail('\\ at end of pattern', at);
    const cls = (test: (b: number) => boolean, negate: boolean): Node => ({ k: 'class', cls: classOf(test, negate), extra: [] });
    switch (c) {
      case 'd': return cls(DIGIT, false);
      case 'D': return cls(DIGIT, true);
      case 'w': return cls(WORD, false);
      case 'W': return cls(WORD, true);
      case 's': return cls(SPACE, false);
      case 'S': return cls(SPACE, true);
      case 'b': return inClass ? literal(8, at) : { k: 'assert', kind: 'word' };
      case 'B': return inClass ? fail('\\B in a class', at) : { k: 'assert', kind: 'not-word' };
      case 't': return literal(9, at);
      case 'n': return literal(10, at);
      case 'v': return literal(11, at);
      case 'f': return literal(12, at);
      case 'r': return literal(13, at);
      case '0':
        if (/[0-9]/.test(peek() ?? '')) fail('octal escapes are not supported', at);
        return literal(0, at);
      case 'x': {
        const m = /^[0-9A-Fa-f]{2}/.exec(pattern.slice(pos));
        if (!m) fail('\\x needs two hex digits', at);
        pos += 2;
        return literal(parseInt(m![0], 16), at);
      }
      case 'u': {
        const m = /^(?:([0-9A-Fa-f]{4})|\{([0-9A-Fa-f]{1,6})\})/.exec(pattern.slice(pos));
        if (!m) fail('\\u needs four hex digits, or {hex}', at);
        const code = parseInt(m![1] ?? m![2], 16);
        if (code > 0x10ffff) fail('\\u{} beyond U+10FFFF', at);
        pos += m![0].length;
        return code > 0xffff ? { k: 'bytes', bytes: [...Buffer.from(String.fromCodePoint(code))] } : literal(code, at);
      }
      case 'c': {
        const letter = peek();
        if (!letter || !/[A-Za-z]/.test(letter)) fail('\\c needs a letter', at);
        pos++;
        return literal(letter!.charCodeAt(0) % 32, at);
      }
      case 'k':
        return fail('backreferences are not supported (they need backtracking)', at);
      case 'p':
      case 'P':
        return fail('Unicode property escapes are not supported', at);
      default:
        if (/[1-9]/.test(c)) fail('backreferences are not supported (they need backtracking)', at);
        if (SYNTAX.has(c) || !/[A-Za-z0-9]/.test(c)) return literal(c.codePointAt(0)!, at);
        return fail(`unknown escape \\${c}`, at);
    }
  }

  function bracket(at: number): Node {
    const negate = peek() === '^';
    if (negate) pos++;
    const ascii = new Uint8Array(128);
    let nonAscii = false;
    const extra: number[][] = [];
    for (;;) {
      if (pos >= pattern.length) fail('unterminated character class', at);
      // as JavaScript reads it: `[]` is a class of nothing, `[^]` of any character
      if (peek() === ']') break;
      const itemAt = pos;
      const from = classItem();
      if (peek() === '-' && pattern[pos + 1] !== ']' && pos + 1 < pattern.length) {
        pos++;
        const to = classItem();
        if (typeof from !== 'number' || typeof to !== 'number') fail('a range needs a character at each end', itemAt);
        const [lo, hi] = [from as number, to as number];
        if (lo > hi) fail('range out of order in character class', itemAt);
        if (hi >= 128) fail('ranges of non-ASCII characters are not supported', itemAt);
        for (let b = lo; b <= hi; b++) ascii[b] = 1;
      } else if (typeof from === 'number') {
        if (from < 128) ascii[from] = 1;
        else if (negate) fail('a negated class cannot hold non-ASCII characters', itemAt);
        else extra.push([...Buffer.from(String.fromCodePoint(from))]);
      } else {
        for (let b = 0; b < 128; b++) if (from.ascii[b]) ascii[b] = 1;
        if (from.nonAscii) {
          if (negate) fail('a negated class cannot hold \\D, \\W or \\S', itemAt);
          nonAscii = true;
        }
      }
    }
    pos++;
    const folded = foldCase({ ascii, nonAscii });
    if (!negate) return { k: 'class', cls: folded, extra };
    const inverse = new Uint8Array(128);
    for (let b = 0; b < 128; b++) inverse[b] = folded.ascii[b] ? 0 : 1;
    return { k: 'class', cls: { ascii: inverse, nonAscii: true }, extra: [] };
  }

  /** One member of a class: a character's code, or an escape's class. */
  function classItem(): number | ByteClass {
    const at = pos;
    if (peek() === '\\') {
      pos++;
      const node = escape(at, true);
      if (node.k === 'class') {
        const members = [...node.cls.ascii.keys()].filter((b) => node.cls.ascii[b]);
        // a single character escape (\n, \x41): its code, so that it can end a range
        if (!node.cls.nonAscii && members.length === 1) return members[0];
        if (!node.cls.nonAscii && members.length === 2 && members[0] + 32 === members[1]) return members[1];
        return node.cls;
      }
      if (node.k === 'bytes') return Buffer.from(node.bytes).toString('utf8').codePointAt(0)!;
      return fail('an assertion in a class', at);
    }
    const code = pattern.codePointAt(pos)!;
    pos += code > 0xffff ? 2 : 1;
    return code;
  }

  const tree = alternation();
  if (pos < pattern.length) fail('unmatched )');
  if (lookahead && tree.k === 'alt') fail('a lookahead (?!...) at the end of one alternative: put the alternatives in a group before it', lookahead.at);
  return { tree, lookahead: lookahead?.node, lazy };
}

// NFA states
const CHAR = 0;
const SPLIT = 1;
const ASSERT = 2;
const MATCH = 3;

interface Nfa {
  kind: number[];
  out: number[];
  out2: number[];
  /** CHAR: the byte table; ASSERT: the assertion. */
  table: (Uint8Array | Assertion | null)[];
  start: number;
}

/** The tree read backwards: it matches the reversed bytes of what `node` matches (a match's start is found from its end). */
function reverseTree(node: Node): Node {
  switch (node.k) {
    case 'cat':
      return { k: 'cat', items: node.items.map(reverseTree).reverse() };
    case 'alt':
      return { k: 'alt', items: node.items.map(reverseTree) };
    case 'rep':
      return { ...node, node: reverseTree(node.node) };
    case 'bytes':
      return { k: 'bytes', bytes: [...node.bytes].reverse() };
    case 'class':
      return { ...node, extra: node.extra.map((bytes) => [...bytes].reverse()) };
    case 'assert':
      return { k: 'assert', kind: node.kind === 'start' ? 'end' : node.kind === 'end' ? 'start' : node.kind };
  }
}

/** The ASCII text every match begins with (any case), lower-cased: `''` when none. */
function literalPrefix(node: Node): string {
  let text = '';
  const walk = (n: Node): boolean => {
    if (n.k === 'cat') return n.items.every(walk);
    if (n.k === 'rep') {
      // the first repetition begins every match; what follows it may vary
      if (n.min >= 1) walk(n.node);
      return false;
    }
    if (n.k !== 'class' || n.cls.nonAscii || n.extra.length > 0) return false;
    const members: number[] = [];
    for (let b = 0; b < 128; b++) if (n.cls.ascii[b]) members.push(b);
    if (members.length === 0 || members.length > 2 || !members.every((b) => fold(b) === fold(members[0]))) return false;
    text += String.fromCharCode(fold(members[0]));
    return true;
  };
  walk(node);
  return text;
}

function compile(tree: Node, position: number, backwards = false): Nfa {
  const nfa: Nfa = { kind: [], out: [], out2: [], table: [], start: 0 };
  const add = (kind: number, out: number, out2: number, table: Uint8Array | Assertion | null) => {
    if (nfa.kind.length >= MAX_STATES) throw new RegexError('pattern too complex (its repetitions make it too large)', position);
    nfa.kind.push(kind);
    nfa.out.push(out);
    nfa.out2.push(out2);
    nfa.table.push(table);
    return nfa.kind.length - 1;
  };
  const byteTable = (test: (b: number) => boolean) => {
    const t = new Uint8Array(256);
    for (let b = 0; b < 256; b++) t[b] = Number(test(b));
    return t;
  };
  const CONT = byteTable((b) => b >= 0x80 && b <= 0xbf);
  const LEAD2 = byteTable((b) => b >= 0xc2 && b <= 0xdf);
  const LEAD3 = byteTable((b) => b >= 0xe0 && b <= 0xef);
  const LEAD4 = byteTable((b) => b >= 0xf0 && b <= 0xf4);
  const byteSeq = (bytes: number[], next: number) => {
    let s = next;
    for (let i = bytes.length - 1; i >= 0; i--) s = add(CHAR, s, -1, byteTable((b) => b === bytes[i]));
    return s;
  };
  /** Any one non-ASCII character, as its UTF-8 bytes (read from its last byte, `backwards`). */
  const nonAscii = (next: number) => {
    if (backwards) {
      const sequence = (lead: Uint8Array, continuations: number) => {
        let s = add(CHAR, next, -1, lead);
        for (let i = 0; i < continuations; i++) s = add(CHAR, s, -1, CONT);
        return s;
      };
      return add(SPLIT, sequence(LEAD2, 1), add(SPLIT, sequence(LEAD3, 2), sequence(LEAD4, 3), null), null);
    }
    const c1 = add(CHAR, next, -1, CONT);
    const c2 = add(CHAR, add(CHAR, next, -1, CONT), -1, CONT);
    const c3 = add(CHAR, add(CHAR, add(CHAR, next, -1, CONT), -1, CONT), -1, CONT);
    return add(SPLIT, add(CHAR, c1, -1, LEAD2), add(SPLIT, add(CHAR, c2, -1, LEAD3), add(CHAR, c3, -1, LEAD4), null), null);
  };
  const alternatives = (starts: number[]) => starts.reduceRight((rest, s) => add(SPLIT, s, rest, null));

  function build(node: Node, next: number): number {
    switch (node.k) {
      case 'cat':
        return node.items.reduceRight((rest, item) => build(item, rest), next);
      case 'alt':
        return alternatives(node.items.map((item) => build(item, next)));
      case 'bytes':
        return byteSeq(node.bytes, next);
      case 'assert':
        return add(ASSERT, next, -1, node.kind);
      case 'class': {
        const { ascii } = node.cls;
        const starts = [add(CHAR, next, -1, byteTable((b) => b < 128 && ascii[b] === 1))];
        if (node.cls.nonAscii) starts.push(nonAscii(next));
        for (const bytes of node.extra) starts.push(byteSeq(bytes, next));
        return alternatives(starts);
      }
      case 'rep': {
        let s = next;
        if (node.max === Infinity) {
          const loop = add(SPLIT, -1, next, null);
          nfa.out[loop] = build(node.node, loop);
          s = loop;
        } else {
          for (let i = node.min; i < node.max; i++) s = add(SPLIT, build(node.node, s), next, null);
        }
        for (let i = 0; i < node.min; i++) s = build(node.node, s);
        return s;
      }
    }
  }
  nfa.start = build(tree, add(MATCH, -1, -1, null));
  return nfa;
}

/** A compiled pattern: `test` says whether it matches anywhere in some bytes. */
export interface Matcher {
  readonly source: string;
  /** Whether the pattern matches somewhere in `bytes[start..end)`; throws SearchTimeout past `deadline` (performance.now()). */
  test(bytes: Uint8Array, start?: number, end?: number, deadline?: number): boolean;
  testString(text: string, deadline?: number): boolean;
  /**
   * A literal's own: every place in `[start, end)` it starts, until `found` returns true (then
   * true). `found` may instead return a position: the places before it are passed over (a record
   * already known to match, the bytes up to the field searched).
   */
  each?(bytes: Uint8Array, start: number, end: number, found: (i: number) => boolean | number, deadline?: number): boolean;
  /** A literal's length in bytes. */
  length?: number;
  /**
   * Each match in `bytes[start..end)` from left to right, none overlapping: from the leftmost start
   * of the match that ends first, the longest match (POSIX's leftmost-longest), or the shortest when
   * the pattern has a lazy quantifier (`<!--.*?-->` is one comment). Calls `found(from, to)` until it
   * returns true (then true). A match is at most MAX_MATCH bytes. Empty matches are passed over.
   */
  matches(bytes: Uint8Array, start: number, end: number, found: (from: number, to: number) => boolean, deadline?: number): boolean;
}

/** The longest match `matches` reports, in bytes: its start is looked for this far back from its end. */
export const MAX_MATCH = 64 * 1024;

const UNKNOWN = -1;
const FOUND = -2;

interface Dfa {
  /** Whether the pattern matches in `bytes[start..end)` (anchored: at `start` only). */
  test(bytes: Uint8Array, start: number, end: number, deadline?: number): boolean;
  /**
   * Calls `at` with each place in `[start, end]` where a match ends, until it returns true.
   * `context`: what the assertions see before `start` (default: the text's start).
   */
  ends(bytes: Uint8Array, start: number, end: number, at: (i: number) => boolean, deadline?: number, context?: number): boolean;
}

/** What the assertions see before a search's first byte: the text's start, and whether the byte before is a word byte. */
export const AT_START = 1;
export const AFTER_WORD = 2;

const timeUp = (deadline: number | undefined) => deadline !== undefined && performance.now() > deadline;

/** An NFA run as a DFA built as it goes; `anchored`: a match must start at the text's start. */
function lazyDfa(nfa: Nfa, anchored: boolean): Dfa {
  const n = nfa.kind.length;
  // DFA states: sets of NFA states (CHAR, ASSERT, MATCH) after following SPLITs, with the context
  // the assertions need (at the start, previous byte a word byte)
  let keys = new Map<string, number>();
  let sets: Int32Array[] = [];
  let context: number[] = [];
  /** The next state, or FOUND when a match ends before the byte: what the hot loop reads. */
  let trans = new Int32Array(0);
  /** The next state, whether a match ends there or not (for `ends`). */
  let nextOf = new Int32Array(0);
  let atEnd: number[] = [];
  const mark = new Int32Array(n);
  let stamp = 0;
  let resets = 0;

  /** Follows SPLITs (and the ASSERTs `pass` lets through) from `from`, adding CHAR/ASSERT/MATCH states to `into`. */
  function close(from: number[], into: number[], pass: (a: Assertion) => boolean): void {
    stamp++;
    const stack = from.slice();
    while (stack.length > 0) {
      const s = stack.pop()!;
      if (mark[s] === stamp) continue;
      mark[s] = stamp;
      const kind = nfa.kind[s];
      if (kind === SPLIT) {
        stack.push(nfa.out2[s], nfa.out[s]);
      } else if (kind === ASSERT && pass(nfa.table[s] as Assertion)) {
        stack.push(nfa.out[s]);
      } else {
        into.push(s);
      }
    }
  }

  const START = AT_START;
  const PREV_WORD = AFTER_WORD;
  function stateOf(list: number[], ctx: number): number {
    list.sort((a, b) => a - b);
    const key = `${ctx}:${list.join(',')}`;
    let id = keys.get(key);
    if (id !== undefined) return id;
    if (sets.length >= MAX_DFA_STATES) resetCache();
    id = sets.length;
    keys.set(key, id);
    sets.push(Int32Array.from(list));
    context.push(ctx);
    atEnd.push(UNKNOWN);
    if (trans.length < sets.length * 256) {
      const size = Math.max(sets.length * 256, trans.length * 2);
      const grown = new Int32Array(size).fill(UNKNOWN);
      grown.set(trans);
      trans = grown;
      const grownNext = new Int32Array(size).fill(UNKNOWN);
      grownNext.set(nextOf);
      nextOf = grownNext;
    }
    return id;
  }

  function resetCache(): void {
    resets++;
    keys = new Map();
    sets = [];
    context = [];
    atEnd = [];
    trans = new Int32Array(0);
    nextOf = new Int32Array(0);
  }

  /** What the assertions see between the previous byte and the next (`next` -1: the end). */
  const passes = (ctx: number, next: number) => (a: Assertion) => {
    const prevWord = (ctx & PREV_WORD) !== 0;
    const nextWord = next >= 0 && isWordByte(next);
    if (a === 'start') return (ctx & START) !== 0;
    if (a === 'end') return next === -1;
    return a === 'word' ? prevWord !== nextWord : prevWord === nextWord;
  };

  /** Works out the transition of `state` on byte `b` (both tables); returns it as the hot loop reads it. */
  function step(state: number, b: number): number {
    const ctx = context[state];
    const expanded: number[] = [];
    close(Array.from(sets[state]), expanded, passes(ctx, b));
    let found = false;
    const next: number[] = [];
    for (const s of expanded) {
      const kind = nfa.kind[s];
      if (kind === MATCH) found = true;
      else if (kind === CHAR && (nfa.table[s] as Uint8Array)[b]) next.push(nfa.out[s]);
    }
    // unanchored: a match may start at every byte
    if (!anchored) next.push(nfa.start);
    const list: number[] = [];
    close(next, list, () => false);
    const before = resets;
    const to = stateOf(list, isWordByte(b) ? PREV_WORD : 0);
    // a reset of the cache forgot `state`: the new state stands alone
    if (resets === before) {
      // anchored, into the state with no thread left: not cached for test(), whose hot loop then
      // leaves at it and stops (a lookahead tried at every end read to the text's end each time)
      trans[(state << 8) | b] = found ? FOUND : anchored && list.length === 0 ? UNKNOWN : to;
      nextOf[(state << 8) | b] = to;
    }
    lastFound = found;
    return to;
  }
  let lastFound = false;

  function matchesAtEnd(state: number): boolean {
    if (atEnd[state] === UNKNOWN) {
      const expanded: number[] = [];
      close(Array.from(sets[state]), expanded, passes(context[state], -1));
      atEnd[state] = Number(expanded.some((s) => nfa.kind[s] === MATCH));
    }
    return atEnd[state] === 1;
  }

  /** The start state, worked out once per cache (a search tests many short texts: URLs, lines). */
  let startState = -1;
  let startResets = -1;
  const initial = () => {
    if (startResets !== resets || startState === -1) {
      const list: number[] = [];
      close([nfa.start], list, () => false);
      startState = stateOf(list, START);
      // making it may have reset the cache: it is the one state left
      startResets = resets;
    }
    return startState;
  };
  /** The start state for a search that begins after other bytes (`ctx`: what they leave the assertions). */
  const initialIn = (ctx: number) => {
    if (ctx === START) return initial();
    const list: number[] = [];
    close([nfa.start], list, () => false);
    return stateOf(list, ctx);
  };

  return {
    test(bytes, start, end, deadline) {
      let state = initial();
      let i = start;
      while (i < end) {
        // the hot loop: one table read per byte, until a transition not worked out yet
        const stop = Math.min(end, i + 0x10000);
        const table = trans;
        let next = 0;
        for (; i < stop; i++) {
          next = table[(state << 8) | bytes[i]];
          if (next < 0) break;
          state = next;
        }
        if (i === stop) {
          // the clock is read once a block, not once a text: most texts are short
          if (stop - start >= 0x10000 && timeUp(deadline)) throw new SearchTimeout('search took too long');
          continue;
        }
        if (next === FOUND) return true;
        if (timeUp(deadline)) throw new SearchTimeout('search took too long');
        state = step(state, bytes[i]);
        if (lastFound) return true;
        // anchored, no thread left: no match further on
        if (anchored && sets[state].length === 0) return false;
        i++;
      }
      return matchesAtEnd(state);
    },

    ends(bytes, start, end, at, deadline, ctx = START) {
      let state = initialIn(ctx);
      for (let i = start; i < end; i++) {
        const b = bytes[i];
        let next = nextOf[(state << 8) | b];
        let found: boolean;
        if (next < 0) {
          next = step(state, b);
          found = lastFound;
        } else found = trans[(state << 8) | b] === FOUND;
        if (found && at(i)) return true;
        state = next;
        // anchored, no thread left: no match ends further on
        if (anchored && sets[state].length === 0) return false;
        if ((i & 0xfff) === 0xfff && timeUp(deadline)) throw new SearchTimeout('search took too long');
      }
      return matchesAtEnd(state) && at(end);
    },
  };
}

/**
 * Compiles `pattern`; `offset` is where it starts in the text the user typed (errors name their
 * place in that text). A pattern may end in one negative lookahead, `(?!...)`: a match of the rest
 * after which that does not match (tried at each place such a match ends). Throws RegexError.
 */
export function compileRegex(pattern: string, offset = 0): Matcher {
  let parsed: { tree: Node; lookahead?: Node; lazy: boolean };
  try {
    parsed = parse(pattern);
  } catch (err) {
    if (err instanceof RegexError) throw new RegexError(err.message, err.position + offset);
    throw err;
  }
  const main = lazyDfa(compile(parsed.tree, offset), false);
  const look = parsed.lookahead && lazyDfa(compile(parsed.lookahead, offset), true);
  const test = (bytes: Uint8Array, start = 0, end = bytes.length, deadline?: number) =>
    look ? main.ends(bytes, start, end, (i) => !look.test(bytes, i, end, deadline), deadline) : main.test(bytes, start, end, deadline);
  let back: Dfa | undefined;
  let anchored: Dfa | undefined;

  /** The end of the longest match from `s` (at least `e`, at most MAX_MATCH bytes long). */
  function longestFrom(bytes: Uint8Array, start: number, end: number, s: number, e: number, deadline?: number): number {
    anchored ??= lazyDfa(compile(parsed.tree, offset), true);
    const context = (s === start ? AT_START : 0) | (s > start && isWordByte(bytes[s - 1]) ? AFTER_WORD : 0);
    let best = e;
    anchored.ends(bytes, s, Math.min(end, s + MAX_MATCH), (i) => {
      if (i > best && !look?.test(bytes, i, end, deadline)) best = i;
      return false;
    }, deadline, context);
    return best;
  }
  const prefix = literalPrefix(parsed.tree);
  /** Made on first use: a literal's own matcher compiles a pattern too. */
  let prefixSearch: Matcher | null | undefined;

  /** The leftmost start in `[lo, e)` of a match ending at `e` (`e` itself when there is none). */
  function startOf(bytes: Uint8Array, start: number, end: number, lo: number, e: number, deadline?: number): number {
    back ??= lazyDfa(compile(reverseTree(parsed.tree), offset, true), true);
    // the bytes before `lo` and after `e` are the assertions' context: one of each is kept
    const from = lo > start ? lo - 1 : lo;
    const reversed = Buffer.allocUnsafe(e - from);
    for (let i = 0; i < reversed.length; i++) reversed[i] = bytes[e - 1 - i];
    const context = (e === end ? AT_START : 0) | (e < end && isWordByte(bytes[e]) ? AFTER_WORD : 0);
    const limit = e - lo;
    let best = e;
    back.ends(reversed, 0, reversed.length, (i) => {
      if (i <= limit) best = e - i;
      return i >= limit;
    }, deadline, context);
    return best;
  }

  return {
    source: pattern,
    test,
    testString: (text, deadline) => {
      const bytes = Buffer.from(text);
      return test(bytes, 0, bytes.length, deadline);
    },
    matches(bytes, start, end, found, deadline) {
      let pos = start;
      /** The next match from `pos` reported, and `pos` moved past it; 'stop' when `found` said so, 'none' when no match is left. */
      const next = (): 'stop' | 'none' | 'on' => {
        const context = (pos === start ? AT_START : 0) | (pos > start && isWordByte(bytes[pos - 1]) ? AFTER_WORD : 0);
        let e = -1;
        main.ends(bytes, pos, end, (i) => {
          if (look?.test(bytes, i, end, deadline)) return false;
          e = i;
          return true;
        }, deadline, context);
        if (e === -1) return 'none';
        const lo = Math.max(pos, e - MAX_MATCH);
        let s = startOf(bytes, start, end, lo, e, deadline);
        // longer than MAX_MATCH: its last MAX_MATCH bytes
        if (s === e && lo > pos) s = lo;
        if (s === e) {
          pos = e + 1;
          return 'on';
        }
        if (!parsed.lazy) e = longestFrom(bytes, start, end, s, e, deadline);
        if (found(s, e)) return 'stop';
        pos = e;
        return 'on';
      };
      if (prefixSearch === undefined) prefixSearch = prefix === '' ? null : (literalMatcher(prefix) ?? null);
      if (prefixSearch) {
        // no match begins before the next place its prefix is: one walk of those places over the
        // whole text (a search of them from each match's end read the text to its end again for
        // every case of the prefix that is not in it: quadratic)
        let outcome = 'none' as 'stop' | 'none' | 'on';
        prefixSearch.each!(bytes, start, end, (i) => {
          if (i < pos) return pos;
          pos = i;
          outcome = next();
          return outcome !== 'on' || pos;
        }, deadline);
        return outcome === 'stop';
      }
      while (pos < end) {
        const outcome = next();
        if (outcome !== 'on') return outcome === 'stop';
      }
      return false;
    },
  };
}

/** How common each ASCII byte is in web traffic, roughly (lower: rarer): the literal search looks for its rarest byte first. */
const COMMON = ' etaoinsrhldcumfpgwybvkxjqz';
/** Higher: rarer. */
function rarity(b: number): number {
  const lower = String.fromCharCode(fold(b));
  const at = COMMON.indexOf(lower);
  if (at !== -1) return at;
  // digits and punctuation are rarer than letters, but for the very common ones
  return '/=".<>:,-_'.includes(lower) ? 10 : 30;
}

/**
 * The Knuth-Morris-Pratt automaton of a needle of folded bytes (ASCII letters in lower case),
 * reading bytes in any case: from state q (that many bytes of the needle read), byte b leads to
 * `table[q * 256 + b]`; state m is a match, and goes on as the longest border of the needle would.
 */
function kmpAutomaton(lower: Uint8Array): Int32Array {
  const m = lower.length;
  const table = new Int32Array((m + 1) * 256);
  // the state a mismatch falls back to, as it is built
  let back = 0;
  for (let q = 0; q <= m; q++) {
    for (let b = 0; b < 256; b++) table[q * 256 + b] = q < m && fold(b) === lower[q] ? q + 1 : q === 0 ? 0 : table[back * 256 + b];
    if (q > 0 && q < m) back = table[back * 256 + lower[q]];
  }
  return table;
}

/** A step of the automaton: from state q (that many bytes of the needle read), with the next byte. */
const automatonStep = (table: Int32Array) => (q: number, byte: number) => table[q * 256 + byte];

/** The same step through the failure function: a match (q = m) goes on from the needle's longest border. */
function failureStep(lower: Uint8Array, failure: Int32Array): (q: number, byte: number) => number {
  const m = lower.length;
  return (q, byte) => {
    const b = fold(byte);
    while (q > 0 && (q === m || lower[q] !== b)) q = failure[q - 1];
    return lower[q] === b ? q + 1 : q;
  };
}

/** The longest needle stepped through its KMP automaton (1 MiB of table); a longer one uses its failure function. */
const KMP_TABLE_BYTES = 1024;

/** For a needle of folded bytes: the length of the longest proper border of each of its prefixes. */
function kmpFailure(lower: Uint8Array): Int32Array {
  const failure = new Int32Array(lower.length);
  for (let i = 1, q = 0; i < lower.length; i++) {
    while (q > 0 && lower[i] !== lower[q]) q = failure[q - 1];
    if (lower[i] === lower[q]) q++;
    failure[i] = q;
  }
  return failure;
}

/**
 * A literal search turns to reading byte by byte once its anchor was found this many times where
 * the needle was not, and at least once every WALK_RATIO bytes: native search then costs more.
 */
const WALK_AFTER_MISSES = 4096;
const WALK_RATIO = 64;

/**
 * A case-insensitive ASCII substring, found natively: the needle's rarest pair of bytes (in each
 * of its cases) by indexOf, each hit checked in place. Far faster than a DFA walked byte by byte in
 * JavaScript; `each` reports every place it starts (a search maps them to rows). With
 * `pastAscii`, a text past ASCII too, its UTF-8 bytes as written (ASCII letters in any case).
 */
function literalMatcher(text: string, pastAscii = false): Matcher | undefined {
  const needle = Buffer.from(text);
  if (needle.length === 0 || (!pastAscii && needle.some((b) => b >= 0x80))) return undefined;
  const lower = needle.map(fold);
  // the anchor: the pair (or the one byte) whose bytes are rarest
  const width = Math.min(2, lower.length);
  let k = 0;
  const score = (i: number) => rarity(lower[i]) + (width === 2 ? rarity(lower[i + 1]) : 0);
  for (let i = 1; i + width <= lower.length; i++) if (score(i) > score(k)) k = i;
  const cases = (b: number) => (b >= 97 && b <= 122 ? [b, b - 32] : [b]);
  const variants: Buffer[] = width === 1 ? cases(lower[k]).map((b) => Buffer.of(b)) : cases(lower[k]).flatMap((a) => cases(lower[k + 1]).map((b) => Buffer.of(a, b)));
  const at = (bytes: Uint8Array, p: number) => {
    for (let j = 0; j < lower.length; j++) {
      const b = bytes[p + j];
      if (fold(b) !== lower[j]) return false;
    }
    return true;
  };
  let step: ((q: number, byte: number) => number) | undefined;
  /**
   * The needle's places from `from` on, reading each byte once (Knuth-Morris-Pratt over the folded
   * needle, a state per byte of it read so far): where its anchor is everywhere and the needle
   * nowhere (a body of `zzzz...` searched for `zzq`), a check at each anchor costs up to the
   * needle's length a byte. A short needle steps through its automaton, a table lookup a byte (a
   * KiB of table a byte of needle); a long one (a search's argument may be a MiB, in a form body)
   * through its failure function, O(m) memory, each byte read once (amortized).
   */
  const walk = (view: Buffer, base: number, from: number, found: (i: number) => boolean | number, deadline?: number): boolean => {
    const m = lower.length;
    step ??= m > KMP_TABLE_BYTES ? failureStep(lower, kmpFailure(lower)) : automatonStep(kmpAutomaton(lower));
    const next = step;
    for (let i = from, q = 0; i < view.length; i++) {
      q = next(q, view[i]);
      if (q === m) {
        const place = i - m + 1;
        const answer = found(base + place);
        if (answer === true) return true;
        if (typeof answer === 'number' && answer - base > place + 1) {
          i = answer - base - 1;
          q = 0;
        }
      }
      if ((i & 0xfffff) === 0 && timeUp(deadline)) throw new SearchTimeout('search took too long');
    }
    return false;
  };
  /** Calls `found` with each place in `[start, end)` the needle starts (or from where it says), until it returns true. */
  const each = (bytes: Uint8Array, start: number, end: number, found: (i: number) => boolean | number, deadline?: number): boolean => {
    if (end - start < lower.length) return false;
    // a walk's own (a match's `found` may walk again: a pattern's prefix is walked over a whole text)
    const next = variants.map(() => -1);
    const view = Buffer.from(bytes.buffer, bytes.byteOffset + start, end - start);
    const last = view.length - lower.length;
    for (let v = 0; v < variants.length; v++) next[v] = view.indexOf(variants[v], k);
    let misses = 0;
    for (let checks = 0; ; checks++) {
      let which = -1;
      for (let v = 0; v < next.length; v++) if (next[v] !== -1 && (which === -1 || next[v] < next[which])) which = v;
      if (which === -1) return false;
      const hit = next[which] - k;
      if (hit > last) return false;
      let from = hit + 1;
      if (at(view, hit)) {
        const answer = found(start + hit);
        if (answer === true) return true;
        if (typeof answer === 'number') from = Math.max(from, answer - start);
      } else if (++misses > WALK_AFTER_MISSES && misses * WALK_RATIO > hit) {
        // the anchor is in most places, the needle not: the rest read once, byte by byte
        return walk(view, start, from, found, deadline);
      }
      if (from > last) return false;
      // the anchors before the place searched from are passed over (the others are after it)
      for (let v = 0; v < next.length; v++) if (next[v] !== -1 && next[v] < from + k) next[v] = view.indexOf(variants[v], from + k);
      if ((checks & 0xfff) === 0xfff && timeUp(deadline)) throw new SearchTimeout('search took too long');
    }
  };
  // short texts (URLs, header lines) are faster walked by the DFA than searched with indexOf; a
  // needle as long is never in one (and a 10,000-character one would pass the automaton's bound)
  const SHORT = 512;
  const dfa = lower.length < SHORT ? compileRegex(literalPattern(text)) : undefined;
  const test = (bytes: Uint8Array, start = 0, end = bytes.length, deadline?: number) =>
    dfa && end - start < SHORT ? dfa.test(bytes, start, end, deadline) : each(bytes, start, end, () => true, deadline);
  return {
    source: text,
    test,
    each,
    length: lower.length,
    matches(bytes, start, end, found, deadline) {
      let after = start;
      return each(bytes, start, end, (i) => {
        if (i < after) return after;
        after = i + lower.length;
        return found(i, after) || after;
      }, deadline);
    },
    testString: (t, deadline) => {
      const bytes = Buffer.from(t);
      return test(bytes, 0, bytes.length, deadline);
    },
  };
}

/**
 * A case-insensitive substring test (every character literal): native search for ASCII, the DFA
 * otherwise, each letter past ASCII any of its cases (`ärger` finds `Ärger`; `ß` finds `SS`). A
 * text too long for the automaton so (thousands of such letters) has their case count; one too
 * long even then is found natively, its bytes as written.
 */
export function compileSubstring(text: string): Matcher {
  const ascii = literalMatcher(text);
  if (ascii) return ascii;
  // a state per byte at least: past MAX_STATES bytes no pattern of it fits, and making one to see
  // that took seconds (300,000 letters: 1.8 s, the server held meanwhile)
  if (Buffer.byteLength(text) >= MAX_STATES) return literalMatcher(text, true)!;
  try {
    return compileRegex(foldedPattern(text));
  } catch (err) {
    // thousands of letters, each an alternation, may pass the automaton's bound: then their case counts
    if (!(err instanceof RegexError)) throw err;
  }
  try {
    return compileRegex(literalPattern(text));
  } catch (err) {
    // ten thousand bytes pass it even so: the bytes as written, found natively
    if (!(err instanceof RegexError)) throw err;
    return literalMatcher(text, true)!;
  }
}

/** `text` as a pattern in which a letter past ASCII is any of its cases (ASCII ones the automaton folds itself). */
function foldedPattern(text: string): string {
  let pattern = '';
  for (const c of text) {
    const cases = c.codePointAt(0)! < 128 ? [c] : [...new Set([c, c.toLowerCase(), c.toUpperCase()])];
    pattern += cases.length === 1 ? literalPattern(c) : `(?:${cases.map(literalPattern).join('|')})`;
  }
  return pattern;
}

/** A case-insensitive substring as a pattern (every character literal). */
export function literalPattern(text: string): string {
  return text.replace(/[\\^$.*+?()[\]{}|/-]/g, '\\$&');
}
