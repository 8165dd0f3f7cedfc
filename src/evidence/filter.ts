/**
 * Filter expressions (`q`), a subset of mitmproxy's: `~u ~m ~c ~d ~t ~h ~hq ~hs ~b ~bq ~bs ~s`,
 * `!`, `&` (or nothing between), `|`, parentheses; a bare word means `~u`. Each regex is
 * case-insensitive and linear-time (regex.ts). An expression is a predicate over a transaction:
 * what the index knows is tested first, the record read only when the answer depends on it.
 */
import { compileRegex, compileSubstring, RegexError, type Matcher } from './regex.js';

/** A refused expression, with the place (0-based) in it that is wrong. */
export class FilterError extends Error {
  constructor(
    message: string,
    readonly position: number,
  ) {
    super(message);
  }
}

/** What an operator tests. */
export type Field =
  | 'url' | 'method' | 'domain' | 'type' | 'statusLine'
  | 'headers' | 'requestHeaders' | 'responseHeaders' | 'body' | 'requestBody' | 'responseBody' | 'rawRequest';

export type Expr =
  | { k: 'and' | 'or'; a: Expr; b: Expr }
  | { k: 'not'; a: Expr }
  /** `lines`: tested against each header line (`Name: value`) alone, as mitmproxy's ~h does. */
  | { k: 'regex'; field: Field; matcher: Matcher; lines?: boolean }
  | { k: 'code'; code: number }
  | { k: 'response' }
  | { k: 'equals'; field: 'url' | 'method' | 'requestBody'; values: ReadonlySet<string> }
  | { k: 'flag'; flag: 'scope' | 'binary'; value: boolean };

const REGEX_OPERATORS: Record<string, Field> = {
  '~u': 'url', '~m': 'method', '~d': 'domain', '~t': 'type', '~h': 'headers', '~hq': 'requestHeaders', '~hs': 'responseHeaders',
  '~b': 'body', '~bq': 'requestBody', '~bs': 'responseBody',
};

const HEADER_FIELDS = new Set<Field>(['headers', 'requestHeaders', 'responseHeaders']);

/** The fields read from the record, not the index. */
const RECORD_FIELDS = new Set<Field>(['headers', 'requestHeaders', 'responseHeaders', 'body', 'requestBody', 'responseBody', 'rawRequest']);

export const MAX_FILTER_LENGTH = 4096;

interface Token {
  text: string;
  at: number;
  /** A quoted string: never an operator. */
  quoted: boolean;
}

function tokenize(input: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < input.length) {
    const c = input[i];
    if (/\s/.test(c)) {
      i++;
    } else if ('!&|()'.includes(c)) {
      tokens.push({ text: c, at: i++, quoted: false });
    } else if (c === '"' || c === "'") {
      const at = i++;
      let text = '';
      while (i < input.length && input[i] !== c) {
        // a backslash keeps the quote (or itself) in the string; anything else it precedes is kept with it, for the regex
        if (input[i] === '\\' && (input[i + 1] === c || input[i + 1] === '\\') && i + 1 < input.length) {
          text += input[i + 1] === c ? c : '\\\\';
          i += 2;
        } else text += input[i++];
      }
      if (i >= input.length) throw new FilterError(`unterminated quoted string at position ${at}`, at);
      i++;
      tokens.push({ text, at, quoted: true });
    } else {
      const at = i;
      while (i < input.length && !/\s/.test(input[i]) && !'()'.includes(input[i])) i++;
      tokens.push({ text: input.slice(at, i), at, quoted: false });
    }
  }
  return tokens;
}

/** Parses an expression; throws FilterError naming the position of what is wrong. */
export function parseFilter(input: string): Expr {
  if (input.length > MAX_FILTER_LENGTH) throw new FilterError(`expression longer than ${MAX_FILTER_LENGTH} characters`, MAX_FILTER_LENGTH);
  const tokens = tokenize(input);
  let p = 0;
  const end = input.length;
  const at = () => tokens[p]?.at ?? end;
  const isOp = (text: string) => tokens[p] !== undefined && !tokens[p].quoted && tokens[p].text === text;

  function orExpr(): Expr {
    let a = andExpr();
    while (isOp('|')) {
      p++;
      a = { k: 'or', a, b: andExpr() };
    }
    return a;
  }

  function andExpr(): Expr {
    let a = unary();
    for (;;) {
      if (isOp('&')) p++;
      else if (p >= tokens.length || isOp('|') || isOp(')')) return a;
      a = { k: 'and', a, b: unary() };
    }
  }

  function unary(): Expr {
    if (isOp('!')) {
      p++;
      return { k: 'not', a: unary() };
    }
    return primary();
  }

  function regexOf(token: Token): Matcher {
    // a quoted value's offset: past its quote
    try {
      return compileRegex(token.text, token.at + (token.quoted ? 1 : 0));
    } catch (err) {
      if (err instanceof RegexError) throw new FilterError(`invalid regular expression at position ${err.position}: ${err.message}`, err.position);
      throw err;
    }
  }

  function primary(): Expr {
    const token = tokens[p];
    if (!token) throw new FilterError(`a filter is missing at position ${end}, where the expression ends`, end);
    if (!token.quoted && token.text === '(') {
      p++;
      const inner = orExpr();
      if (!isOp(')')) throw new FilterError(`missing ) at position ${at()} (for the ( at ${token.at})`, at());
      p++;
      return inner;
    }
    if (!token.quoted && ['&', '|', ')'].includes(token.text)) throw new FilterError(`unexpected ${token.text} at position ${token.at}`, token.at);
    p++;
    if (token.quoted || !token.text.startsWith('~')) return { k: 'regex', field: 'url', matcher: regexOf(token) };
    if (token.text === '~s') return { k: 'response' };
    const field = REGEX_OPERATORS[token.text];
    if (!field && token.text !== '~c') throw new FilterError(`unknown filter ${token.text} at position ${token.at}`, token.at);
    const value = tokens[p];
    if (!value || (!value.quoted && ['&', '|', '(', ')', '!'].includes(value.text))) {
      const hint = value?.text === '(' ? ' (quote a regex that holds parentheses)' : '';
      throw new FilterError(`${token.text} needs a value at position ${value?.at ?? end}${hint}`, value?.at ?? end);
    }
    p++;
    if (field) return { k: 'regex', field, matcher: regexOf(value), ...(HEADER_FIELDS.has(field) ? { lines: true } : {}) };
    if (!/^[0-9]{1,3}$/.test(value.text)) throw new FilterError(`~c needs a status code at position ${value.at}`, value.at);
    return { k: 'code', code: Number(value.text) };
  }

  if (tokens.length === 0) throw new FilterError('empty expression', 0);
  const expr = orExpr();
  if (p < tokens.length) throw new FilterError(`unexpected ${tokens[p].text} at position ${tokens[p].at}`, tokens[p].at);
  return expr;
}

/** The regex tests of an expression. */
export function regexTests(expr: Expr): Extract<Expr, { k: 'regex' }>[] {
  if (expr.k === 'and' || expr.k === 'or') return [...regexTests(expr.a), ...regexTests(expr.b)];
  if (expr.k === 'not') return regexTests(expr.a);
  return expr.k === 'regex' ? [expr] : [];
}

/** The parts of a record a field is: one, or both messages'. */
export function regionsOf(parts: RecordParts, field: Field): [number, number][] {
  switch (field) {
    case 'requestHeaders': return [parts.requestHeaders];
    case 'responseHeaders': return [parts.responseHeaders];
    case 'headers': return [parts.requestHeaders, parts.responseHeaders];
    case 'requestBody': return [parts.requestBody];
    case 'responseBody': return [parts.responseBody];
    case 'body': return [parts.requestBody, parts.responseBody];
    case 'rawRequest': return [parts.rawRequest];
    default: return [];
  }
}

export const isRecordField = (field: Field) => RECORD_FIELDS.has(field);

/** Whether an expression may need a record's bytes (header or body tests). */
export function needsRecord(expr: Expr): boolean {
  switch (expr.k) {
    case 'and':
    case 'or':
      return needsRecord(expr.a) || needsRecord(expr.b);
    case 'not':
      return needsRecord(expr.a);
    case 'regex':
    case 'equals':
      return RECORD_FIELDS.has(expr.field);
    default:
      return false;
  }
}

/** A record's bytes and where its parts are: [start, end) each. */
export interface RecordParts {
  bytes: Buffer;
  requestHeaders: [number, number];
  requestBody: [number, number];
  responseHeaders: [number, number];
  responseBody: [number, number];
  /** The request line, header lines, blank line and body. */
  rawRequest: [number, number];
}

/** What an expression tests, as the index and (once read) the record give it. */
export interface Subject {
  url(): Uint8Array;
  domain(): Uint8Array;
  method(): string;
  status(): number;
  /** `200 OK` */
  statusLine(): string;
  scope(): boolean;
  binary(): boolean;
  /** The request's and the response's media types. */
  types(): string[];
  hasResponse(): boolean;
  /** Undefined until the record is read: tests of its parts are then unknown. */
  parts: RecordParts | undefined;
  /** A test's answer worked out for many rows at once (a literal searched in a whole buffer), if it was. */
  known?(expr: Expr): boolean | undefined;
}

/** Matches of a regex on the few distinct strings (methods, types), each worked out once. */
const memo = new WeakMap<Matcher, Map<string, boolean>>();
let lastMatcher: Matcher | undefined;
let lastSeen: Map<string, boolean> | undefined;
function testShort(matcher: Matcher, text: string, deadline?: number): boolean {
  // a scan asks the same matcher row after row: its memo is kept at hand
  let seen = matcher === lastMatcher ? lastSeen : memo.get(matcher);
  if (!seen) memo.set(matcher, (seen = new Map()));
  lastMatcher = matcher;
  lastSeen = seen;
  let hit = seen.get(text);
  if (hit === undefined) {
    hit = matcher.testString(text, deadline);
    if (seen.size < 1024) seen.set(text, hit);
  }
  return hit;
}

/** Whether the regex matches one of the CRLF-separated lines of `bytes[start..end)`. */
function testLines(matcher: Matcher, bytes: Buffer, start: number, end: number, deadline?: number): boolean {
  for (let at = start; at < end; ) {
    const crlf = bytes.indexOf('\r\n', at);
    const lineEnd = crlf === -1 || crlf > end ? end : crlf;
    if (matcher.test(bytes, at, lineEnd, deadline)) return true;
    at = lineEnd + 2;
  }
  return false;
}

function testRegex(field: Field, matcher: Matcher, s: Subject, lines: boolean, deadline?: number): boolean | undefined {
  const inPart = (part: [number, number]) =>
    lines ? testLines(matcher, s.parts!.bytes, part[0], part[1], deadline) : matcher.test(s.parts!.bytes, part[0], part[1], deadline);
  switch (field) {
    case 'url': {
      const url = s.url();
      return matcher.test(url, 0, url.length, deadline);
    }
    case 'domain': {
      const domain = s.domain();
      return matcher.test(domain, 0, domain.length, deadline);
    }
    case 'method':
      return testShort(matcher, s.method(), deadline);
    case 'statusLine':
      return testShort(matcher, s.statusLine(), deadline);
    case 'type':
      return s.types().some((type) => type !== '' && testShort(matcher, type, deadline));
    default:
      if (!s.parts) return undefined;
      if (field === 'requestHeaders') return inPart(s.parts.requestHeaders);
      if (field === 'responseHeaders') return inPart(s.parts.responseHeaders);
      if (field === 'headers') return inPart(s.parts.requestHeaders) || inPart(s.parts.responseHeaders);
      if (field === 'requestBody') return inPart(s.parts.requestBody);
      if (field === 'responseBody') return inPart(s.parts.responseBody);
      if (field === 'rawRequest') return inPart(s.parts.rawRequest);
      return inPart(s.parts.requestBody) || inPart(s.parts.responseBody);
  }
}

/**
 * Whether the subject matches: true, false, or undefined when that depends on the record and it
 * is not read yet (three-valued: `false & unknown` is false). Throws SearchTimeout past `deadline`.
 */
export function evaluate(expr: Expr, s: Subject, deadline?: number): boolean | undefined {
  switch (expr.k) {
    case 'and': {
      const a = evaluate(expr.a, s, deadline);
      if (a === false) return false;
      const b = evaluate(expr.b, s, deadline);
      return b === false ? false : a && b;
    }
    case 'or': {
      const a = evaluate(expr.a, s, deadline);
      if (a === true) return true;
      const b = evaluate(expr.b, s, deadline);
      return b === true ? true : a === undefined || b === undefined ? undefined : false;
    }
    case 'not': {
      const a = evaluate(expr.a, s, deadline);
      return a === undefined ? undefined : !a;
    }
    case 'code':
      return s.status() === expr.code;
    case 'response':
      return s.hasResponse();
    case 'regex':
      return s.known?.(expr) ?? testRegex(expr.field, expr.matcher, s, expr.lines === true, deadline);
    case 'flag':
      return (expr.flag === 'scope' ? s.scope() : s.binary()) === expr.value;
    case 'equals': {
      if (expr.field === 'url') return expr.values.has(Buffer.from(s.url()).toString('utf8'));
      if (expr.field === 'method') return expr.values.has(s.method());
      if (!s.parts) return undefined;
      return expr.values.has(s.parts.bytes.toString('utf8', ...s.parts.requestBody));
    }
  }
}

/** A case-insensitive substring test on one field (the search route's arguments), `%` and `_` literal. */
export function substring(field: Field, text: string): Expr {
  return { k: 'regex', field, matcher: compileSubstring(text) };
}

export const and = (a: Expr | undefined, b: Expr): Expr => (a ? { k: 'and', a, b } : b);
