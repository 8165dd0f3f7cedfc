/**
 * Start tags of one name in a page, with their attributes, read as the HTML tokenizer reads them:
 * one pass from left to right (a tag that never closes ends the search; no regular expression
 * runs over a tag's inside), so a hostile page of a megabyte costs a megabyte of work.
 */

export interface StartTag {
  /** The tag as written, `<` to `>`. */
  raw: string;
  /** Attribute names in lower case; the first of a repeated name wins, as in HTML. */
  attributes: Map<string, string>;
}

const isSpace = (c: string | undefined) => c === ' ' || c === '\n' || c === '\t' || c === '\r' || c === '\f';

/** Attributes kept per tag: the rest are read past, not stored. */
const MAX_ATTRIBUTES = 64;
/** Characters read inside a tag between two ticks. */
const TICK_CHARS = 16 * 1024;

/** The tags, and a `null` tick now and then from inside a long one (for a caller that slices its work). */
export function* startTags(html: string, name: string): Generator<StartTag | null> {
  // the name, then what may follow a tag name: a fixed pattern, found by one forward search
  const open = new RegExp(`<${name}(?=[\\s/>])`, 'gi');
  let from = 0;
  for (;;) {
    open.lastIndex = from;
    const match = open.exec(html);
    if (!match) return;
    const attributes = new Map<string, string>();
    let i = match.index + match[0].length;
    let closed = false;
    let nextTick = i + TICK_CHARS;
    while (i < html.length) {
      if (i >= nextTick) {
        nextTick = i + TICK_CHARS;
        yield null;
      }
      const c = html[i];
      if (c === '>') {
        i++;
        closed = true;
        break;
      }
      if (isSpace(c) || c === '/') {
        i++;
        continue;
      }
      const nameStart = i;
      // an '=' before any name is the name's first character, as the tokenizer has it
      i++;
      while (i < html.length && !isSpace(html[i]) && html[i] !== '/' && html[i] !== '>' && html[i] !== '=') i++;
      const attribute = html.slice(nameStart, i).toLowerCase();
      while (isSpace(html[i])) i++;
      let value = '';
      if (html[i] === '=') {
        i++;
        while (isSpace(html[i])) i++;
        const quote = html[i];
        if (quote === '"' || quote === "'") {
          const close = html.indexOf(quote, i + 1);
          if (close < 0) return; // the page ends inside a value: no tag
          value = html.slice(i + 1, close);
          i = close + 1;
        } else {
          const start = i;
          while (i < html.length && !isSpace(html[i]) && html[i] !== '>') i++;
          value = html.slice(start, i);
        }
      }
      if (!attributes.has(attribute) && attributes.size < MAX_ATTRIBUTES) attributes.set(attribute, value);
    }
    if (!closed) return;
    yield { raw: html.slice(match.index, i), attributes };
    from = i;
  }
}
