/** Pages of a list: first, previous, a page number to type, next, last, and which items are shown. */
import { h, num, replace } from './dom.js';

export interface Pager {
  el: HTMLElement;
  /** `page` from 1; `per` items a page; `total` items in all (`exact` false: at least that many). */
  render(page: number, per: number, total: number, exact?: boolean): void;
}

export function pager(goTo: (page: number) => void): Pager {
  let current = 1;
  let pages = 1;
  const first = h('button', { type: 'button', 'aria-label': 'First page' }, '«');
  const previous = h('button', { type: 'button' }, '‹ Previous');
  const input = h('input', { id: 'target-page', type: 'number', min: '1', inputmode: 'numeric', class: 'page-input' });
  const of = h('span', { class: 'page-of' });
  const next = h('button', { type: 'button' }, 'Next ›');
  const last = h('button', { type: 'button', 'aria-label': 'Last page' }, '»');
  const range = h('p', { class: 'hint page-range' });
  const el = h(
    'nav',
    { class: 'pager', 'aria-label': 'Pages' },
    first,
    previous,
    h('span', { class: 'page-field' }, h('label', { for: input.id }, 'Page'), input, of),
    next,
    last,
    range,
  );
  const go = (page: number) => {
    const target = Math.min(Math.max(1, Math.trunc(page) || 1), pages);
    if (target === current) input.value = String(current);
    else goTo(target);
  };
  first.addEventListener('click', () => go(1));
  previous.addEventListener('click', () => go(current - 1));
  next.addEventListener('click', () => go(current + 1));
  last.addEventListener('click', () => go(pages));
  input.addEventListener('change', () => go(Number(input.value)));
  return {
    el,
    render(page, per, total, exact = true) {
      current = page;
      pages = Math.max(1, Math.ceil(total / per));
      el.hidden = total <= per;
      const from = total === 0 ? 0 : (page - 1) * per + 1;
      replace(range, `${num(from)}–${num(Math.min(total, page * per))} of ${exact ? '' : 'at least '}${num(total)}`);
      replace(of, `of ${exact ? '' : 'at least '}${num(pages)}`);
      input.value = String(page);
      input.max = String(pages);
      const focused = document.activeElement;
      first.disabled = previous.disabled = page <= 1;
      next.disabled = last.disabled = page >= pages;
      // a button disabled under the keyboard (the last page, reached by Next) leaves it on the page's number, not on the body
      if (focused instanceof HTMLButtonElement && focused.disabled && el.contains(focused) && !el.hidden) input.focus();
    },
  };
}
