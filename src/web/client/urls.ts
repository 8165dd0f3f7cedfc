/**
 * A target's URLs (`/targets/<id>/urls`): every URL its transactions show, in the order first seen,
 * with its kind (page, fuzzable, file, image, error, external), whether a transaction fetched it and
 * whether it is in scope; filtered by a part of the URL and by kind, a page at a time.
 */
import { api, isGone, type UrlPage, type UrlRow } from './api.js';
import { append, appendInFrames, count, h, num, replace, setTitle } from './dom.js';
import { pageRequests, whenTypingPauses } from './list-page.js';
import { pager } from './pager.js';
import { replaceQuery, type ViewContext } from './router.js';
import { targetNav } from './target-nav.js';
import { emptyState, errorState, loadingState, targetGoneState, viewHeading } from './ui.js';

const PER_PAGE = 100;
const KINDS: [string, string][] = [
  ['', 'Every kind'],
  ['page', 'Pages'],
  ['fuzzable', 'Fuzzable (a query or a form)'],
  ['file', 'Files'],
  ['image', 'Images'],
  ['error', 'Errors (4xx, 5xx)'],
  ['external', 'External (out of scope)'],
];

function urlRow(row: UrlRow): HTMLTableRowElement {
  return h(
    'tr',
    { class: 'url-row' },
    h('th', { scope: 'row', class: 'tx-url' }, row.url),
    h('td', { 'data-label': 'Kind' }, h('span', { class: `tag kind-${row.kind}` }, row.kind)),
    h('td', { 'data-label': 'Visited' }, row.visited ? 'Yes' : 'No'),
    h('td', { 'data-label': 'Scope' }, row.scope ? 'In scope' : 'Out'),
  );
}

export function urlsView({ root, params, query, signal }: ViewContext): void {
  const target = Number(params.id);
  const state = { url: query.get('url')?.trim() ?? '', kind: query.get('kind') ?? '', page: Math.max(1, Math.trunc(Number(query.get('page'))) || 1) };
  const heading = viewHeading('URLs')[0];
  const text = h('input', { id: 'url-filter', type: 'search', autocomplete: 'off', spellcheck: 'false', value: state.url });
  const kind = h('select', { id: 'url-kind' }, ...KINDS.map(([value, label]) => h('option', { value, selected: value === state.kind }, label)));
  const shown = h('p', { class: 'hint', id: 'url-count', 'aria-live': 'polite' });
  const toolbar = h(
    'div',
    { class: 'panel toolbar', role: 'search', 'aria-label': 'URLs' },
    h('div', { class: 'field grow' }, h('label', { for: text.id }, 'Filter by a part of the URL'), text),
    h('div', { class: 'field' }, h('label', { for: kind.id }, 'Kind'), kind),
    shown,
  );
  const listHeading = h('h2', { id: 'url-heading' }, 'In the order first seen');
  const tbody = h('tbody');
  const table = h(
    'table',
    { class: 'target-table url-table', 'aria-labelledby': listHeading.id, 'aria-describedby': shown.id, hidden: true },
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'URL'), h('th', { scope: 'col', class: 'col-kind' }, 'Kind'), h('th', { scope: 'col', class: 'col-visited' }, 'Visited'), h('th', { scope: 'col', class: 'col-scope' }, 'Scope'))),
    tbody,
  );
  const empty = h('div', { hidden: true });
  const region = h('div', { class: 'list-region table-region' }, loadingState('Loading the URLs…'), table, empty);
  const pages = pager((next) => show({ page: next }));
  append(root, [heading, targetNav(target, 'urls'), toolbar, listHeading, region, pages.el]);
  const requests = pageRequests(region, signal);

  /** Another page, or other filters (from their first page): in the address too, and asked for. */
  function show(changes: Partial<typeof state>): void {
    Object.assign(state, { page: 1 }, changes);
    const next = new URLSearchParams();
    if (state.url) next.set('url', state.url);
    if (state.kind) next.set('kind', state.kind);
    if (state.page > 1) next.set('page', String(state.page));
    replaceQuery(next);
    void fetchPage();
  }

  let stopRows = () => {};
  function render(a: UrlPage): void {
    region.querySelector('.loading')?.remove();
    const filtering = state.url !== '' || state.kind !== '';
    replace(shown, filtering ? `${num(a.records_filtered)} of ${count(a.records_total, 'URL')} match` : count(a.records_total, 'URL'));
    stopRows();
    tbody.replaceChildren();
    table.hidden = a.data.length === 0;
    empty.hidden = a.data.length > 0;
    if (a.data.length === 0) {
      replace(empty, filtering ? emptyState('No URL matches.', 'Change or clear the filters.') : emptyState('No URLs yet.', 'They come from the target’s transactions: import a HAR, or browse it through the proxy.'));
    } else stopRows = appendInFrames(tbody, a.data.length, (i) => urlRow(a.data[i]), 40, 40);
    pages.render(state.page, PER_PAGE, a.records_filtered);
  }

  async function fetchPage(): Promise<void> {
    try {
      const a = await requests.run((s) => api.urlPage(target, { url: state.url || undefined, kind: state.kind || undefined, limit: PER_PAGE, offset: (state.page - 1) * PER_PAGE }, s));
      if (!a) return;
      // a page past the end (a stale link): the last one instead
      if (a.data.length === 0 && a.records_filtered > 0 && state.page > 1) return show({ page: Math.ceil(a.records_filtered / PER_PAGE) });
      render(a);
    } catch (err) {
      region.querySelector('.loading')?.remove();
      table.hidden = true;
      empty.hidden = false;
      if (isGone(err, 'target')) {
        replace(heading, 'Target not found');
        replace(empty, targetGoneState(target));
      } else replace(empty, errorState(err, () => void fetchPage()));
    }
  }

  whenTypingPauses(text, () => state.url, (url) => show({ url }));
  kind.addEventListener('change', () => show({ kind: kind.value }));

  void fetchPage();
  api.target(target, signal).then(
    (t) => {
      replace(heading, 'URLs of ', h('span', { class: 'target-name' }, t.target_url));
      setTitle('URLs of ', t.target_url);
    },
    () => {},
  );
}
