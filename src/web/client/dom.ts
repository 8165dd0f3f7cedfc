/**
 * Building DOM nodes from data: text always goes in as text, never as markup, shown as ../bidi.ts
 * says (hidden characters and long runs of blanks written out, a value cut after SHOWN_MAX).
 */
import { BLOCK_MAX, shown } from '../bidi.js';

export type Child = Node | string | number | null | undefined | false;
type AttrValue = string | number | boolean | null | undefined | EventListener;
export type Attrs = Record<string, AttrValue>;

/** Attributes that are not read as text (an input's value is the user's to edit): set as they are. */
const VERBATIM = new Set(['value', 'href', 'src', 'download']);

/** The tab's title names a value (a target's URL) cut this short. */
const TITLE_VALUE_MAX = 80;

/**
 * `h('button', {class: 'primary', onclick: save}, 'Save')`: attributes by name (true sets an empty
 * attribute, false/null/undefined leave it out), `on…` functions become event listeners.
 */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (typeof value === 'function') el.addEventListener(name.slice(2), value);
    else if (value === true) el.setAttribute(name, '');
    else if (value !== false && value !== null && value !== undefined) el.setAttribute(name, VERBATIM.has(name) ? String(value) : shown(String(value)));
  }
  append(el, children);
  return el;
}

export function append(parent: Node, children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(child instanceof Node ? child : document.createTextNode(shown(String(child))));
  }
}

/** Text of a block (a body, a tool's output) shown whole up to `max` characters, its lines as they are. */
export function blockText(text: string, max = BLOCK_MAX): Text {
  return document.createTextNode(shown(text, max));
}

/** The tab's title: `words` of the page's own, then a `value` from the data cut short. */
export function setTitle(words: string, value: string): void {
  document.title = `${words}${shown(value, TITLE_VALUE_MAX)} · assessd`;
}

export function replace(parent: Element, ...children: Child[]): void {
  parent.replaceChildren();
  append(parent, children);
}

export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`#${id} is missing from the page`);
  return el as T;
}

/** `1 target`, `3 targets`. */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** A number as the page writes it: `65,536`. */
export function num(n: number): string {
  return n.toLocaleString('en');
}

/** `1 target`, `5,000 targets`. */
export function count(n: number, one: string, many = `${one}s`): string {
  return `${num(n)} ${n === 1 ? one : many}`;
}

/**
 * Appends `count` nodes made by `make`: the first `first` at once, then `per` each animation
 * frame, so that styling and laying out a long list never makes one long task. Returns a cancel.
 */
export function appendInFrames(parent: Element, count: number, make: (index: number) => Node, first = 30, per = 35): () => void {
  let next = 0;
  let frame = 0;
  const slice = (n: number) => {
    const end = Math.min(count, next + n);
    const nodes: Node[] = [];
    for (; next < end; next++) nodes.push(make(next));
    parent.append(...nodes);
    if (next < count) frame = requestAnimationFrame(() => slice(per));
  };
  slice(first);
  // the first slice gets a frame of its own: the rest starts in the frame after it
  if (next < count) {
    cancelAnimationFrame(frame);
    frame = requestAnimationFrame(() => (frame = requestAnimationFrame(() => slice(per))));
  }
  return () => cancelAnimationFrame(frame);
}

/** Runs `fn` once the frame being prepared has been drawn (a rAF callback schedules for the next one). */
export function afterNextFrame(fn: () => void): void {
  requestAnimationFrame(() => requestAnimationFrame(fn));
}

/**
 * Fills a select with many options a frame after the view first shows: until then it holds only
 * the chosen one, so the first frame has less to style and lay out.
 */
export function fillSelectSoon(select: HTMLSelectElement, options: () => HTMLOptionElement[]): void {
  const chosen = options().find((o) => o.selected);
  select.replaceChildren(...(chosen ? [chosen.cloneNode(true)] : []));
  afterNextFrame(() => {
    const value = select.value;
    const all = options();
    select.replaceChildren(...all);
    if (value !== '' && all.some((o) => o.value === value)) select.value = value;
  });
}
