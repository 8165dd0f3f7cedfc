/**
 * A target's Transactions (`/targets/<id>/transactions`): newest first, a page at a time from the
 * server, filtered by the filter language (a bad expression is shown with the place it goes wrong),
 * HAR import (with the upload's progress) and export of what the filter finds. While the view is
 * seen it asks, at most once a second, only for the transactions newer than the last one it knows:
 * the proxy's appear as they arrive. Two requests bring it on screen (the target, and the page).
 */
import { shown } from '../bidi.js';
import { api, ApiError, isAbort, isGone, type Target, type TransactionPage, type TransactionSummary } from './api.js';
import { append, appendInFrames, count, h, num, replace, setTitle } from './dom.js';
import { pageRequests } from './list-page.js';
import { pager } from './pager.js';
import { replaceQuery, type ViewContext } from './router.js';
import { duration, size, statusClass, targetNav } from './target-nav.js';
import { announce, describeError, emptyState, errorState, loadingState, targetGoneState, viewHeading } from './ui.js';

const PER_PAGE = 50;
const POLL_MS = 1000;
/** New arrivals are announced to screen readers at most this often. */
const ANNOUNCE_MS = 10_000;

/** The list's query, kept per target for the detail's way back. */
export const listQueryKey = (target: number) => `assessd.transactions.${target}`;

/** A status line for a list's cell: the code and about 40 characters of the target's reason phrase, marked (the whole in the detail). */
export const shortStatus = (status: string): string => (status === '' ? 'no answer' : shown(status, 44));

export function transactionRow(t: TransactionSummary): HTMLTableRowElement {
  return h(
    'tr',
    { class: 'tx', 'data-tx-id': t.id },
    h('td', { 'data-label': '#', class: 'num col-id' }, num(t.id)),
    h('td', { 'data-label': 'Method', class: 'col-method' }, h('span', { class: 'method' }, t.method)),
    h('td', { 'data-label': 'Status', class: 'col-status', title: t.response_status }, h('span', { class: statusClass(t.response_status) }, shortStatus(t.response_status))),
    h(
      'th',
      { scope: 'row', class: 'tx-url' },
      h('a', { href: `/targets/${t.target_id}/transactions/${t.id}` }, t.url),
      t.scope ? null : h('span', { class: 'tag' }, 'out of scope'),
      t.source === 'har' ? null : h('span', { class: 'tag' }, t.source),
      // an answer cut short, a target that never answered: not a clean 200 (the detail says what failed)
      t.error === undefined ? null : h('span', { class: 'tag', title: t.error }, 'incomplete'),
    ),
    h('td', { 'data-label': 'Size', class: 'num col-size' }, size(t.response_size)),
    h('td', { 'data-label': 'Time', class: 'num col-time' }, duration(t.time)),
  );
}

/** The expression with the place the server named marked. */
function markedExpression(q: string, position: number): HTMLElement {
  const at = Math.max(0, Math.min(position, q.length));
  const end = at >= q.length ? at : Math.max(at + 1, q.slice(at).search(/\s|$/) + at);
  return h(
    'code',
    { class: 'filter-echo' },
    q.slice(0, at),
    h('mark', {}, at >= q.length ? ' ' : q.slice(at, end)),
    q.slice(end),
  );
}

export function transactionsView({ root, params, query, signal }: ViewContext): void {
  const target = Number(params.id);
  const state = { q: query.get('q')?.trim() ?? '', page: Math.max(1, Math.trunc(Number(query.get('page'))) || 1) };
  let answer: TransactionPage | undefined;
  /** The newest id the view knows: the next look asks after it. */
  let lastId = 0;

  const heading = viewHeading('Transactions')[0];
  const filter = h('input', {
    id: 'tx-filter', type: 'search', autocomplete: 'off', spellcheck: 'false', value: state.q,
    placeholder: '~m POST & ~c 200', 'aria-describedby': 'tx-filter-help tx-filter-error',
  });
  const apply = h('button', { type: 'submit', class: 'primary' }, 'Filter');
  const clear = h('button', { type: 'button' }, 'Clear');
  const error = h('div', { id: 'tx-filter-error', class: 'filter-error', role: 'alert' });
  const shown = h('p', { class: 'hint', id: 'tx-count', 'aria-live': 'polite' });
  const form = h(
    'form',
    { class: 'panel toolbar tx-toolbar', role: 'search', 'aria-label': 'Transactions' },
    h(
      'div',
      { class: 'field grow' },
      h('label', { for: filter.id }, 'Filter expression'),
      h('div', { class: 'inline-field' }, filter, apply, clear),
      h(
        'p',
        { class: 'hint', id: 'tx-filter-help' },
        h('code', {}, '~u'), ' URL, ', h('code', {}, '~m'), ' method, ', h('code', {}, '~c'), ' status, ', h('code', {}, '~h'), '/', h('code', {}, '~hq'), '/', h('code', {}, '~hs'),
        ' headers, ', h('code', {}, '~b'), '/', h('code', {}, '~bq'), '/', h('code', {}, '~bs'), ' bodies, ', h('code', {}, '~t'), ' content type, ', h('code', {}, '~d'), ' domain; ',
        h('code', {}, '!'), ' ', h('code', {}, '&'), ' ', h('code', {}, '|'), ' and parentheses. A bare word searches URLs; regexes ignore case.',
      ),
      error,
    ),
    shown,
  );

  // HAR import and export
  const file = h('input', { id: 'har-file', type: 'file', accept: '.har,.json,application/json', class: 'visually-hidden' });
  const pick = h('label', { for: file.id, class: 'button' }, 'Import HAR…');
  const exportLink = h('a', { class: 'button', href: api.harUrl(target, state.q), download: '', id: 'har-export' }, 'Export as HAR');
  const progress = h('progress', { id: 'har-progress', max: 1, value: 0, hidden: true, 'aria-label': 'HAR upload' });
  const cancel = h('button', { type: 'button', class: 'small', hidden: true }, 'Cancel');
  const importStatus = h('p', { id: 'har-status', class: 'import-result', role: 'status' });
  const tools = h('div', { class: 'panel actions tx-actions', role: 'group', 'aria-label': 'HAR files' }, file, pick, exportLink, progress, cancel, importStatus);

  const listHeading = h('h2', { id: 'tx-heading', tabindex: '-1' }, 'Newest first');
  const news = h('div', { class: 'notice panel', hidden: true });
  const tbody = h('tbody');
  const table = h(
    'table',
    { class: 'target-table tx-table', 'aria-labelledby': listHeading.id, 'aria-describedby': shown.id, hidden: true },
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        h('th', { scope: 'col', class: 'col-id num' }, '#'),
        h('th', { scope: 'col', class: 'col-method' }, 'Method'),
        h('th', { scope: 'col', class: 'col-status' }, 'Status'),
        h('th', { scope: 'col' }, 'URL'),
        h('th', { scope: 'col', class: 'col-size num' }, 'Size'),
        h('th', { scope: 'col', class: 'col-time num' }, 'Time'),
      ),
    ),
    tbody,
  );
  const empty = h('div', { hidden: true });
  const region = h('div', { class: 'list-region table-region' }, loadingState('Loading the transactions…'), table, empty);
  const pages = pager((next) => show({ page: next }));
  append(root, [heading, targetNav(target, 'transactions'), form, tools, listHeading, news, region, pages.el]);
  const requests = pageRequests(region, signal);

  /** Another page, or another filter (from its first page): in the address too, and asked for. */
  function show(changes: Partial<typeof state>): Promise<void> {
    Object.assign(state, { page: 1 }, changes);
    const next = new URLSearchParams();
    if (state.q) next.set('q', state.q);
    if (state.page > 1) next.set('page', String(state.page));
    replaceQuery(next);
    sessionStorage.setItem(listQueryKey(target), next.toString());
    exportLink.href = api.harUrl(target, state.q);
    return fetchPage();
  }

  function describe(a: TransactionPage): string {
    const exact = a.records_filtered_exact !== false;
    if (!state.q) return count(a.records_total, 'transaction');
    const matched = exact ? num(a.records_filtered) : `At least ${num(a.records_filtered)}`;
    return `${matched} of ${count(a.records_total, 'transaction')} match${a.timed_out ? ' (the search ran out of time: refine the filter)' : ''}`;
  }

  let stopRows = () => {};
  function render(a: TransactionPage): void {
    region.querySelector('.loading')?.remove();
    replace(shown, describe(a));
    stopRows();
    tbody.replaceChildren();
    table.hidden = a.data.length === 0;
    empty.hidden = a.data.length > 0;
    if (a.data.length === 0) {
      replace(
        empty,
        state.q
          ? emptyState('No transaction matches the filter.', 'Change or clear the filter.')
          : emptyState('No transactions yet.', 'Import a HAR exported from a browser, ZAP, Burp or mitmproxy, or browse the target through the proxy: they appear here as they arrive.'),
      );
    } else stopRows = appendInFrames(tbody, a.data.length, (i) => transactionRow(a.data[i]), 25, 25);
    pages.render(state.page, PER_PAGE, a.records_filtered, a.records_filtered_exact !== false);
  }

  /** Bumped by every page asked: a look begun before it is stale. */
  let generation = 0;
  async function fetchPage(): Promise<void> {
    generation++;
    try {
      const a = await requests.run((s) => api.transactionPage(target, { q: state.q || undefined, limit: PER_PAGE, offset: (state.page - 1) * PER_PAGE }, s));
      if (!a) return;
      replace(error);
      filter.removeAttribute('aria-invalid');
      // a page past the end (a stale link): the last one instead
      if (a.data.length === 0 && a.records_filtered > 0 && state.page > 1) return show({ page: Math.ceil(a.records_filtered / PER_PAGE) });
      answer = a;
      lastId = a.last_id;
      news.hidden = true;
      render(a);
    } catch (err) {
      region.querySelector('.loading')?.remove();
      if (err instanceof ApiError && err.status === 400 && err.data.q !== undefined) {
        // no live look at an expression that cannot be read (it asked again, 400, every second)
        answer = undefined;
        filter.setAttribute('aria-invalid', 'true');
        replace(error, h('p', { class: 'field-error' }, err.message), markedExpression(state.q, Number(err.data.position ?? state.q.length)));
        table.hidden = true;
        empty.hidden = false;
        replace(empty, emptyState('The filter could not be read.', 'Correct the expression where it is marked.'));
        replace(shown, '');
        return;
      }
      if (isGone(err, 'target')) {
        replace(heading, 'Target not found');
        replace(region, targetGoneState(target));
        return;
      }
      table.hidden = true;
      empty.hidden = false;
      replace(empty, errorState(err, () => void fetchPage()));
    }
  }

  // Live: what arrived since the last look, once a second while the tab is seen and no page is loading
  let unseen = 0;
  let lastAnnounced = 0;
  async function poll(): Promise<void> {
    if (signal.aborted) return;
    if (answer && !requests.loading && document.visibilityState === 'visible') {
      try {
        const asked = generation;
        const fresh = await api.transactionPage(target, { q: state.q || undefined, limit: PER_PAGE, offset: 0, afterId: lastId }, signal);
        if (!requests.loading && answer && asked === generation) arrived(fresh);
      } catch (err) {
        if (isAbort(err)) return;
        // the next look tries again; a server that is down is said by the header
      }
    }
    if (!signal.aborted) window.setTimeout(() => void poll(), POLL_MS);
  }

  function arrived(fresh: TransactionPage): void {
    lastId = Math.max(lastId, fresh.last_id);
    const a = answer!;
    a.records_total = fresh.records_total;
    const added = fresh.records_filtered;
    if (added === 0) {
      replace(shown, describe(a));
      return;
    }
    a.records_filtered += added;
    if (fresh.records_filtered_exact === false) a.records_filtered_exact = false;
    if (state.page === 1) {
      // on top of the first page, which keeps its length
      const rows = fresh.data.map(transactionRow);
      tbody.prepend(...rows);
      while (tbody.rows.length > PER_PAGE) tbody.lastElementChild!.remove();
      a.data = [...fresh.data, ...a.data].slice(0, PER_PAGE);
      table.hidden = false;
      empty.hidden = true;
      pages.render(1, PER_PAGE, a.records_filtered, a.records_filtered_exact !== false);
    } else {
      unseen += added;
      news.hidden = false;
      replace(news, h('p', {}, `${count(unseen, 'new transaction')} arrived.`), h('button', { type: 'button', class: 'small', onclick: () => goFirst() }, 'Show the newest'));
    }
    replace(shown, describe(a));
    if (Date.now() - lastAnnounced > ANNOUNCE_MS) {
      lastAnnounced = Date.now();
      announce(`${count(added, 'new transaction')}.`);
    }
  }

  function goFirst(): void {
    unseen = 0;
    void show({ page: 1 }).then(() => listHeading.focus());
  }

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void show({ q: filter.value.trim() });
  });
  clear.addEventListener('click', () => {
    filter.value = '';
    if (state.q !== '') void show({ q: '' });
  });

  let importing: { abort: () => void } | undefined;
  file.addEventListener('change', () => {
    const picked = file.files?.[0];
    file.value = '';
    if (!picked || importing) return;
    progress.hidden = false;
    cancel.hidden = false;
    progress.max = Math.max(1, picked.size);
    progress.value = 0;
    delete importStatus.dataset.kind;
    replace(importStatus, `Sending “${picked.name}” (${size(picked.size)})…`);
    const started = api.importHar(target, picked, (sent, total) => {
      progress.value = sent;
      replace(importStatus, sent >= total ? `Sent “${picked.name}”: storing its transactions…` : `Sending “${picked.name}”: ${size(sent)} of ${size(total)} (${Math.floor((100 * sent) / Math.max(1, total))}%)…`);
    });
    importing = started;
    started.done.then(
      (counts) => {
        importStatus.dataset.kind = 'ok';
        const notes = [counts.out_of_scope ? `${num(counts.out_of_scope)} out of the target’s scope` : '', counts.skipped ? `${num(counts.skipped)} skipped (no response)` : ''].filter(Boolean);
        replace(importStatus, `Imported ${count(counts.imported, 'transaction')} from “${picked.name}”${notes.length ? ` (${notes.join(', ')})` : ''}.`);
        announce(`Imported ${count(counts.imported, 'transaction')}.`);
        goFirst();
      },
      (err) => {
        importStatus.dataset.kind = 'error';
        replace(importStatus, isAbort(err) ? `The import of “${picked.name}” was cancelled: nothing was imported.` : `Nothing was imported from “${picked.name}”: ${err instanceof ApiError && err.status >= 400 && err.status < 500 ? err.message : describeError(err)}`);
      },
    ).finally(() => {
      importing = undefined;
      progress.hidden = true;
      cancel.hidden = true;
    });
  });
  cancel.addEventListener('click', () => importing?.abort());
  signal.addEventListener('abort', () => importing?.abort());

  async function loadTarget(): Promise<void> {
    try {
      const t: Target = await api.target(target, signal);
      replace(heading, 'Transactions of ', h('span', { class: 'target-name' }, t.target_url));
      setTitle('Transactions of ', t.target_url);
    } catch {
      // the page's own answer says what is wrong
    }
  }

  sessionStorage.setItem(listQueryKey(target), new URLSearchParams(location.search).toString());
  void Promise.all([loadTarget(), fetchPage()]).then(() => window.setTimeout(() => void poll(), POLL_MS));
}
