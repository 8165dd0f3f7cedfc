/** A target's views side by side (results, transactions, URLs), and what their lists show of a transaction. */
import { h, num } from './dom.js';

export type TargetView = 'results' | 'transactions' | 'urls';

const VIEWS: [TargetView, string, string][] = [
  ['results', 'Results', ''],
  ['transactions', 'Transactions', '/transactions'],
  ['urls', 'URLs', '/urls'],
];

/** Links to the target's three views, the current one marked. */
export function targetNav(id: number, current: TargetView): HTMLElement {
  return h(
    'nav',
    { class: 'target-nav', 'aria-label': 'This target' },
    h('a', { href: '/targets' }, '← Targets'),
    h('ul', {}, ...VIEWS.map(([view, label, path]) => h('li', {}, h('a', { href: `/targets/${id}${path}`, ...(view === current ? { 'aria-current': 'page' } : {}) }, label)))),
  );
}

/** `512 B`, `1.4 KB`, `3.2 MB` (powers of 1000, as browsers' tools show them). */
export function size(bytes: number): string {
  if (bytes < 1000) return `${num(bytes)} B`;
  const units = ['KB', 'MB', 'GB'];
  let value = bytes;
  let unit = -1;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit++;
  }
  return `${value < 10 ? value.toFixed(1) : Math.round(value)} ${units[unit]}`;
}

/** A duration in seconds as `42 ms` or `1.25 s`. */
export function duration(seconds: number): string {
  return seconds < 1 ? `${Math.round(seconds * 1000)} ms` : `${seconds.toFixed(2)} s`;
}

/** A status line's class: its hundreds (`status-2xx`), or none for no answer. */
export function statusClass(status: string): string {
  const code = /^(\d)\d\d/.exec(status);
  return code ? `status status-${code[1]}xx` : 'status status-none';
}
