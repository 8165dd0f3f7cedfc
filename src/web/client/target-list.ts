/**
 * A session's targets at any size: one page at a time from the server (search, order, total),
 * rows added over a few frames, a selection that can span pages or take every match.
 */
import { api, isAbort, type ListedTarget, type SessionSummary, type TargetPage, type TargetPageQuery, type TargetSort } from './api.js';
import { appendInFrames, count, h, num, replace } from './dom.js';
import { pager } from './pager.js';
import { replaceQuery } from './router.js';
import { selectionBar } from './selection-bar.js';
import { clearSelection, isSelected, saveSelection, selectedCount, selectionSession, targetSelection, toggle, togglePage } from './selection.js';
import { byActiveThenNewest } from './state.js';
import { deleteOne, detachOne } from './target-actions.js';
import { targetRow, type RowContext } from './target-rows.js';
import { announce, emptyState, errorState } from './ui.js';

export const PAGE_SIZES = [25, 50, 100, 200];
const DEFAULT_PER_PAGE = 100;
const FILTER_DELAY_MS = 200;

export interface ListState {
  q: string;
  sort: TargetSort;
  /** From 1. */
  page: number;
  per: number;
}

export function readListState(query: URLSearchParams): ListState {
  const per = Number(query.get('per'));
  const page = Number(query.get('page'));
  return {
    q: query.get('q')?.trim() ?? '',
    sort: query.get('sort') === 'host' ? 'host' : 'newest',
    page: Number.isSafeInteger(page) && page > 1 ? page : 1,
    per: PAGE_SIZES.includes(per) ? per : DEFAULT_PER_PAGE,
  };
}

export function pageQuery(state: ListState, session: number | undefined): TargetPageQuery {
  return { session, q: state.q, sort: state.sort, limit: state.per, offset: (state.page - 1) * state.per };
}

export interface TargetList {
  elements: HTMLElement[];
  state: ListState;
  heading: HTMLElement;
  show(viewed: SessionSummary, sessions: SessionSummary[], page: TargetPage): void;
  /** The view's data could not be shown: no list. */
  hide(): void;
}

type Reload = (focus?: () => HTMLElement | null | undefined) => Promise<void>;

export function targetList(signal: AbortSignal, initial: ListState, reload: Reload): TargetList {
  const state = { ...initial };
  const selection = targetSelection;
  let viewed: SessionSummary | undefined;
  let ctx: RowContext | undefined;
  let page: ListedTarget[] = [];
  let total = 0;

  const heading = h('h2', { tabindex: '-1', id: 'targets-heading' }, 'Targets');

  const filter = h('input', { id: 'target-filter', type: 'search', autocomplete: 'off', spellcheck: 'false', placeholder: 'e.g. 10.0.3. or admin', value: state.q });
  const sort = h(
    'select',
    { id: 'target-sort' },
    h('option', { value: 'newest', selected: state.sort === 'newest' }, 'Newest first'),
    h('option', { value: 'host', selected: state.sort === 'host' }, 'By host'),
  );
  const perPage = h('select', { id: 'target-per-page' }, ...PAGE_SIZES.map((n) => h('option', { value: n, selected: n === state.per }, String(n))));
  const shown = h('p', { class: 'hint', id: 'target-count', 'aria-live': 'polite' });
  const toolbar = h(
    'div',
    { class: 'panel toolbar', role: 'search', 'aria-label': 'Targets' },
    h('div', { class: 'field grow' }, h('label', { for: filter.id }, 'Filter by URL, host or IP'), filter),
    h('div', { class: 'field' }, h('label', { for: sort.id }, 'Sort'), sort),
    h('div', { class: 'field narrow' }, h('label', { for: perPage.id }, 'Per page'), perPage),
    shown,
  );

  const pageToggle = h('input', { type: 'checkbox', id: 'select-page', 'aria-label': 'Select all on this page' });
  const tbody = h('tbody');
  const table = h(
    'table',
    { class: 'target-table', 'aria-labelledby': heading.id, 'aria-describedby': shown.id },
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        h('th', { scope: 'col', class: 'col-select' }, pageToggle),
        h('th', { scope: 'col', class: 'col-url' }, 'URL'),
        h('th', { scope: 'col', class: 'col-host' }, 'Host'),
        h('th', { scope: 'col', class: 'col-port' }, 'Port'),
        h('th', { scope: 'col', class: 'col-scheme' }, 'Scheme'),
        h('th', { scope: 'col', class: 'col-ip' }, 'IP'),
        h('th', { scope: 'col', class: 'col-sessions' }, 'Sessions'),
        h('th', { scope: 'col', class: 'col-actions' }, h('span', { class: 'visually-hidden' }, 'Actions')),
      ),
    ),
    tbody,
  );
  const empty = h('div', { hidden: true });
  const region = h('div', { class: 'list-region table-region' }, table, empty);

  const pages = pager((next) => {
    state.page = next;
    syncUrl();
    void fetchPage().then(() => {
      if (table.getBoundingClientRect().top < 0) heading.scrollIntoView({ block: 'start' });
    });
  });
  const bar = selectionBar({
    selection,
    viewed: () => viewed,
    matching: () => ({ total, q: state.q }),
    changed: renderSelection,
    reload,
  });

  function syncUrl(): void {
    const query = new URLSearchParams(location.search);
    const set = (name: string, value: string | undefined) => (value === undefined ? query.delete(name) : query.set(name, value));
    set('q', state.q || undefined);
    set('sort', state.sort === 'newest' ? undefined : state.sort);
    set('page', state.page > 1 ? String(state.page) : undefined);
    set('per', state.per === DEFAULT_PER_PAGE ? undefined : String(state.per));
    replaceQuery(query);
  }

  /** The rows' checkboxes, the page's, and the bar follow the selection. */
  function renderSelection(): void {
    saveSelection(selection);
    bar.render();
    const onPage = page.filter((t) => isSelected(selection, t.id)).length;
    pageToggle.checked = page.length > 0 && onPage === page.length;
    pageToggle.indeterminate = onPage > 0 && onPage < page.length;
    for (const row of tbody.rows) {
      const on = isSelected(selection, Number(row.dataset.targetId));
      row.classList.toggle('is-selected', on);
      (row.querySelector('.row-select') as HTMLInputElement).checked = on;
    }
  }

  let stopRows = () => {};

  function renderPage(): void {
    if (!viewed || !ctx) return;
    const q = state.q;
    replace(shown, q ? `${num(total)} of ${count(viewed.target_count, 'target')} match “${q}”` : count(total, 'target'));
    stopRows();
    tbody.replaceChildren();
    table.hidden = total === 0;
    empty.hidden = total > 0;
    if (total === 0) {
      replace(
        empty,
        q
          ? emptyState(`No target matches “${q}”.`, 'Search is on the URL, the host name and the IP. Change or clear the filter.')
          : emptyState('No targets in this session yet.', 'Add URLs above, or attach targets to it from another session.'),
      );
    } else {
      const rows = page;
      const rowCtx = ctx;
      // the rows a screen shows first, the rest over the next frames: no long task at any size
      stopRows = appendInFrames(tbody, rows.length, (i) => targetRow(rows[i], i, isSelected(selection, rows[i].id), rowCtx), 15, 20);
    }
    pages.render(state.page, state.per, total);
    renderSelection();
  }

  let loading: AbortController | undefined;

  /** Fetches the page for the current state (one request); a newer request cancels an older one. */
  async function fetchPage(): Promise<void> {
    if (!viewed) return;
    loading?.abort();
    const controller = new AbortController();
    loading = controller;
    const abort = () => controller.abort();
    signal.addEventListener('abort', abort, { once: true });
    region.setAttribute('aria-busy', 'true');
    try {
      const answer = await api.targetPage(pageQuery(state, viewed.id), controller.signal);
      page = answer.targets;
      total = answer.total;
      if (!pastTheEnd()) renderPage();
    } catch (err) {
      if (!isAbort(err)) {
        table.hidden = true;
        empty.hidden = false;
        replace(empty, errorState(err, () => void fetchPage()));
      }
    } finally {
      signal.removeEventListener('abort', abort);
      if (loading === controller) {
        loading = undefined;
        region.removeAttribute('aria-busy');
      }
    }
  }

  /** A page past the end (a stale link, or the last page emptied by a change): the last one instead. */
  function pastTheEnd(): boolean {
    if (page.length > 0 || total === 0 || state.page === 1) return false;
    state.page = Math.ceil(total / state.per);
    syncUrl();
    void fetchPage();
    return true;
  }

  let filterTimer: number | undefined;
  function applyFilter(): void {
    const q = filter.value.trim();
    if (q === state.q) return;
    state.q = q;
    state.page = 1;
    if (selection.all) {
      // "all matching" is the old filter's: said, not dropped without a word
      const { total: was, q: old } = selection.all;
      clearSelection(selection);
      announce(`The selection of all ${num(was)} targets matching “${old}” was cleared: the filter changed. Select again under the new one.`);
    }
    syncUrl();
    void fetchPage();
  }
  filter.addEventListener('input', () => {
    window.clearTimeout(filterTimer);
    filterTimer = window.setTimeout(applyFilter, FILTER_DELAY_MS);
  });
  filter.addEventListener('keydown', (event) => {
    if (event.key !== 'Enter') return;
    event.preventDefault();
    window.clearTimeout(filterTimer);
    applyFilter();
  });
  sort.addEventListener('change', () => {
    state.sort = sort.value === 'host' ? 'host' : 'newest';
    state.page = 1;
    syncUrl();
    void fetchPage();
  });
  perPage.addEventListener('change', () => {
    const firstShown = (state.page - 1) * state.per;
    state.per = Number(perPage.value);
    state.page = Math.floor(firstShown / state.per) + 1;
    syncUrl();
    void fetchPage();
  });
  pageToggle.addEventListener('change', () => {
    selection.session = viewed?.id;
    togglePage(selection, page, pageToggle.checked);
    renderSelection();
  });

  // One listener for every row: checkboxes (shift-click takes the range), detach chips, delete buttons.
  tbody.addEventListener('click', (event) => {
    const el = event.target as HTMLElement;
    const index = Number(el.closest('tr')?.dataset.index);
    const target = page[index];
    if (!target) return;
    const chip = el.closest<HTMLButtonElement>('[data-detach]');
    const remove = el.closest<HTMLButtonElement>('[data-delete]');
    if (el.matches('.row-select')) {
      selection.session = viewed?.id;
      toggle(selection, page, index, (el as HTMLInputElement).checked, event.shiftKey);
      renderSelection();
    } else if (chip) {
      const sessionId = Number(chip.dataset.detach);
      void changeOne(target, detachOne(target, sessionId, ctx?.names.get(sessionId) ?? `session ${sessionId}`, chip));
    } else if (remove) {
      void changeOne(target, deleteOne(target, remove));
    }
  });

  async function changeOne(target: ListedTarget, done: Promise<boolean>): Promise<void> {
    if (!(await done)) return;
    selection.ids.delete(target.id);
    await reload(() => tbody.querySelector<HTMLElement>(`tr[data-target-id="${target.id}"] .row-select`) ?? heading);
  }

  const elements = [heading, toolbar, region, pages.el, bar.el];
  return {
    elements,
    state,
    heading,
    show(session, sessions, answer) {
      viewed = session;
      ctx = { viewed: session, names: new Map(sessions.map((s) => [s.id, s.name])) };
      // a selection belongs to the session it was made in: Detach would act on none of another's
      const madeIn = selectionSession(selection);
      if (madeIn !== undefined && madeIn !== session.id) {
        const n = selectedCount(selection);
        clearSelection(selection);
        saveSelection(selection);
        announce(`The selection of ${count(n, 'target')} made in another session was cleared.`);
      }
      for (const el of elements) el.hidden = false;
      replace(heading, `Targets in “${session.name}” (${num(session.target_count)})`);
      bar.setSessions(session, sessions.filter((s) => s.id !== session.id).sort(byActiveThenNewest));
      page = answer.targets;
      total = answer.total;
      if (!pastTheEnd()) renderPage();
    },
    hide() {
      for (const el of elements) el.hidden = el !== heading;
      replace(heading, 'Targets');
    },
  };
}
