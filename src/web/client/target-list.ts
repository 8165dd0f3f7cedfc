/**
 * A session's targets at any size: one page at a time from the server (search, order, total),
 * a selection that can span pages or take every match, and one toolbar to attach, detach or
 * delete it in one request with one summary.
 */
import { api, isAbort, type BulkSummary, type ListedTarget, type SessionSummary, type TargetPage, type TargetPageQuery, type TargetSort } from './api.js';
import { appendInFrames, count, h, num, replace } from './dom.js';
import { replaceQuery } from './router.js';
import { clearSelection, emptySelection, isSelected, selectAllMatching, selectedCount, toBulkSelection, toggle, togglePage } from './selection.js';
import { byActiveThenNewest } from './state.js';
import { targetRow, type RowContext } from './target-rows.js';
import { announce, busy, confirmDialog, describeError, emptyState, errorState } from './ui.js';

export const PAGE_SIZES = [25, 50, 100, 200];
const DEFAULT_PER_PAGE = 100;
const FILTER_DELAY_MS = 250;

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

function summaryText(action: 'attach' | 'detach' | 'delete', result: BulkSummary, session: string): string {
  const gone = result.missing.length > 0 ? ` ${count(result.missing.length, 'was', 'were')} already gone.` : '';
  if (action === 'delete') return `Deleted ${count(result.changed, 'target')}.${gone}`;
  const unchanged = result.matched - result.changed;
  if (action === 'attach') {
    return `Attached ${count(result.changed, 'target')} to “${session}”${unchanged > 0 ? `; ${num(unchanged)} ${unchanged === 1 ? 'was' : 'were'} already there` : ''}.${gone}`;
  }
  const deleted = result.deleted > 0 ? `; ${num(result.deleted)} in no other session ${result.deleted === 1 ? 'was' : 'were'} deleted` : '';
  return `Detached ${count(result.changed, 'target')} from “${session}”${deleted}.${gone}`;
}

export function targetList(signal: AbortSignal, initial: ListState, reload: Reload): TargetList {
  const state = { ...initial };
  const selection = emptySelection();
  let viewed: SessionSummary | undefined;
  let ctx: RowContext | undefined;
  let page: ListedTarget[] = [];
  let total = 0;
  /** Sessions a selection can be attached to. */
  let otherSessions = 0;
  let attachOptions: () => HTMLOptionElement[] = () => [];

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

  const selectionText = h('p', { class: 'selection-count', id: 'selection-count', 'aria-live': 'polite' });
  const selectAll = h('button', { type: 'button', class: 'link-button' }, 'Select all');
  const clear = h('button', { type: 'button', class: 'link-button' }, 'Clear selection');
  const attachTo = h('select', { id: 'attach-session' });
  const attachButton = h('button', { type: 'button' }, 'Attach');
  const detachButton = h('button', { type: 'button' }, 'Detach');
  const deleteButton = h('button', { type: 'button', class: 'danger' }, 'Delete selected');
  const result = h('p', { class: 'bulk-result', role: 'status' });
  const bar = h(
    'div',
    { class: 'panel selection-bar', role: 'region', 'aria-label': 'Selected targets' },
    h('div', { class: 'selection-status' }, selectionText, selectAll, clear),
    h(
      'div',
      { class: 'selection-actions' },
      h('div', { class: 'attach' }, h('label', { for: attachTo.id }, 'Attach selected to'), attachTo, attachButton),
      detachButton,
      deleteButton,
    ),
    result,
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

  const first = h('button', { type: 'button', 'aria-label': 'First page' }, '«');
  const previous = h('button', { type: 'button' }, '‹ Previous');
  const pageInput = h('input', { id: 'target-page', type: 'number', min: '1', inputmode: 'numeric', class: 'page-input' });
  const pageCount = h('span', { class: 'page-of' });
  const next = h('button', { type: 'button' }, 'Next ›');
  const last = h('button', { type: 'button', 'aria-label': 'Last page' }, '»');
  const range = h('p', { class: 'hint page-range' });
  const pager = h(
    'nav',
    { class: 'pager', 'aria-label': 'Pages' },
    first,
    previous,
    h('span', { class: 'page-field' }, h('label', { for: pageInput.id }, 'Page'), pageInput, pageCount),
    next,
    last,
    range,
  );

  const pages = () => Math.max(1, Math.ceil(total / state.per));

  function syncUrl(): void {
    const query = new URLSearchParams(location.search);
    const set = (name: string, value: string | undefined) => (value === undefined ? query.delete(name) : query.set(name, value));
    set('q', state.q || undefined);
    set('sort', state.sort === 'newest' ? undefined : state.sort);
    set('page', state.page > 1 ? String(state.page) : undefined);
    set('per', state.per === DEFAULT_PER_PAGE ? undefined : String(state.per));
    replaceQuery(query);
  }

  function renderSelection(): void {
    const n = selectedCount(selection);
    const none = n === 0;
    replace(
      selectionText,
      selection.all
        ? `All ${count(n, 'matching target')} selected${selection.all.q ? ` (filter “${selection.all.q}”)` : ''}.`
        : none
          ? 'No target selected.'
          : `${count(n, 'target')} selected.`,
    );
    selectAll.hidden = selection.all !== undefined || total === 0;
    replace(selectAll, `Select all ${num(total)} matching`);
    clear.hidden = none;
    for (const control of [attachButton, detachButton, deleteButton]) control.disabled = none;
    attachButton.disabled = none || otherSessions === 0;
    if (!none && attachTo.options.length === 0) replace(attachTo, ...attachOptions());
    bar.classList.toggle('has-selection', !none);
    const onPage = page.filter((t) => isSelected(selection, t.id)).length;
    pageToggle.checked = page.length > 0 && onPage === page.length;
    pageToggle.indeterminate = onPage > 0 && onPage < page.length;
    for (const row of tbody.rows) {
      const id = Number(row.dataset.targetId);
      const on = isSelected(selection, id);
      row.classList.toggle('is-selected', on);
      (row.querySelector('.row-select') as HTMLInputElement).checked = on;
    }
  }

  function renderPage(): void {
    if (!viewed || !ctx) return;
    const q = state.q;
    replace(shown, q ? `${num(total)} of ${count(viewed.target_count, 'target')} match “${q}”` : count(total, 'target'));
    if (total === 0) {
      table.hidden = true;
      empty.hidden = false;
      replace(
        empty,
        q
          ? emptyState(`No target matches “${q}”.`, 'Search is on the URL, the host name and the IP. Change or clear the filter.')
          : emptyState('No targets in this session yet.', 'Add URLs above, or attach targets to it from another session.'),
      );
    } else {
      table.hidden = false;
      empty.hidden = true;
      stopRows();
      tbody.replaceChildren();
      const rows = page;
      stopRows = appendInFrames(tbody, rows.length, (i) => targetRow(rows[i], i, isSelected(selection, rows[i].id), ctx!), 15, 20);
    }
    pager.hidden = total <= state.per;
    const from = total === 0 ? 0 : (state.page - 1) * state.per + 1;
    replace(range, `${num(from)}–${num(Math.min(total, state.page * state.per))} of ${num(total)}`);
    replace(pageCount, `of ${num(pages())}`);
    pageInput.value = String(state.page);
    pageInput.max = String(pages());
    first.disabled = previous.disabled = state.page <= 1;
    next.disabled = last.disabled = state.page >= pages();
    renderSelection();
  }

  let loading: AbortController | undefined;
  let stopRows = () => {};

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
      if (answer.targets.length === 0 && answer.total > 0 && state.page > 1) {
        // the page is gone (a delete): show the last one there is
        state.page = Math.ceil(answer.total / state.per);
        syncUrl();
        return void (await fetchPage());
      }
      page = answer.targets;
      total = answer.total;
      renderPage();
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

  function goTo(target: number): void {
    const next = Math.min(Math.max(1, Math.trunc(target) || 1), pages());
    if (next === state.page) return void (pageInput.value = String(state.page));
    state.page = next;
    syncUrl();
    void fetchPage().then(() => {
      if (table.getBoundingClientRect().top < 0) heading.scrollIntoView({ block: 'start' });
    });
  }

  let filterTimer: number | undefined;
  filter.addEventListener('input', () => {
    window.clearTimeout(filterTimer);
    filterTimer = window.setTimeout(() => {
      const q = filter.value.trim();
      if (q === state.q) return;
      state.q = q;
      state.page = 1;
      if (selection.all) clearSelection(selection);
      syncUrl();
      void fetchPage();
    }, FILTER_DELAY_MS);
  });
  filter.addEventListener('keydown', (event) => {
    if (event.key === 'Enter') {
      event.preventDefault();
      window.clearTimeout(filterTimer);
      filter.dispatchEvent(new Event('input'));
    }
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
  first.addEventListener('click', () => goTo(1));
  previous.addEventListener('click', () => goTo(state.page - 1));
  next.addEventListener('click', () => goTo(state.page + 1));
  last.addEventListener('click', () => goTo(pages()));
  pageInput.addEventListener('change', () => goTo(Number(pageInput.value)));

  pageToggle.addEventListener('change', () => {
    togglePage(selection, page, pageToggle.checked);
    renderSelection();
  });
  selectAll.addEventListener('click', () => {
    if (!viewed) return;
    selectAllMatching(selection, viewed.id, state.q, total);
    renderSelection();
    clear.focus();
  });
  clear.addEventListener('click', () => {
    clearSelection(selection);
    renderSelection();
    pageToggle.focus();
  });

  // One listener for every row: checkboxes (shift-click takes the range), detach chips, delete buttons.
  tbody.addEventListener('click', (event) => {
    const el = event.target as HTMLElement;
    const row = el.closest('tr');
    if (!row) return;
    const index = Number(row.dataset.index);
    const target = page[index];
    if (!target) return;
    if (el.matches('.row-select')) {
      toggle(selection, page, index, (el as HTMLInputElement).checked, event.shiftKey);
      renderSelection();
    } else if (el.closest('[data-detach]')) {
      void detachOne(target, Number(el.closest<HTMLElement>('[data-detach]')!.dataset.detach), el as HTMLButtonElement);
    } else if (el.closest('[data-delete]')) {
      void deleteOne(target, el as HTMLButtonElement);
    }
  });

  async function detachOne(target: ListedTarget, sessionId: number, button: HTMLButtonElement): Promise<void> {
    const name = ctx?.names.get(sessionId) ?? `session ${sessionId}`;
    if (target.session_ids.length === 1) {
      const confirmed = await confirmDialog({
        title: `Detach ${target.target_url}?`,
        message: `It is in no other session than “${name}”, so the server deletes it.`,
        confirm: 'Detach and delete',
      });
      if (!confirmed) return;
    }
    try {
      await busy(button, () => api.detachTarget(sessionId, target.id));
      announce(`Detached ${target.target_url} from “${name}”.`);
    } catch (err) {
      announce(`Could not detach ${target.target_url}: ${describeError(err)}`, 'error');
    }
    selection.ids.delete(target.id);
    await reload(() => tbody.querySelector<HTMLElement>(`tr[data-target-id="${target.id}"] .row-select`) ?? heading);
  }

  async function deleteOne(target: ListedTarget, button: HTMLButtonElement): Promise<void> {
    const holders = target.session_ids.length;
    const confirmed = await confirmDialog({
      title: `Delete target ${target.target_url}?`,
      message: holders > 1 ? `It is removed from all ${holders} sessions that hold it.` : 'It is removed from its session.',
      confirm: 'Delete target',
    });
    if (!confirmed) return;
    try {
      await busy(button, () => api.deleteTarget(target.id));
      announce(`Deleted ${target.target_url}.`);
    } catch (err) {
      announce(`Could not delete ${target.target_url}: ${describeError(err)}`, 'error');
    }
    selection.ids.delete(target.id);
    await reload(() => heading);
  }

  async function bulk(action: 'attach' | 'detach' | 'delete', button: HTMLButtonElement): Promise<void> {
    if (!viewed) return;
    const n = selectedCount(selection);
    if (n === 0) return;
    const to = action === 'attach' ? ctx?.names.get(Number(attachTo.value)) : viewed.name;
    if (action !== 'attach') {
      const what = count(n, 'target');
      const confirmed = await confirmDialog(
        action === 'delete'
          ? { title: `Delete ${what}?`, message: 'They are removed from every session that holds them.', confirm: `Delete ${what}` }
          : {
              title: `Detach ${what} from “${viewed.name}”?`,
              message: 'Those in no other session are deleted.',
              confirm: `Detach ${what}`,
            },
      );
      if (!confirmed) return;
    }
    const chosen = toBulkSelection(selection);
    let summary: BulkSummary;
    try {
      summary = await busy(button, () =>
        action === 'attach'
          ? api.attachTargets(Number(attachTo.value), chosen)
          : action === 'detach'
            ? api.detachTargets(viewed!.id, chosen)
            : api.deleteTargets(chosen),
      );
    } catch (err) {
      const text = `Nothing was changed: ${describeError(err)}`;
      replace(result, text);
      announce(text, 'error');
      return;
    }
    const text = summaryText(action, summary, to ?? '');
    replace(result, text);
    announce(text);
    clearSelection(selection);
    await reload(() => button);
  }

  attachButton.addEventListener('click', () => void bulk('attach', attachButton));
  detachButton.addEventListener('click', () => void bulk('detach', detachButton));
  deleteButton.addEventListener('click', () => void bulk('delete', deleteButton));

  const elements = [heading, toolbar, region, pager, bar];
  return {
    elements,
    state,
    heading,
    show(session, sessions, answer) {
      viewed = session;
      ctx = { viewed: session, names: new Map(sessions.map((s) => [s.id, s.name])) };
      if (selection.all && selection.all.session !== session.id) clearSelection(selection);
      for (const el of elements) el.hidden = false;
      replace(heading, `Targets in “${session.name}” (${num(session.target_count)})`);
      replace(detachButton, `Detach selected from “${session.name}”`);
      const previousChoice = attachTo.value;
      const others = [...sessions].filter((s) => s.id !== session.id).sort(byActiveThenNewest);
      otherSessions = others.length;
      // 300 options cost a frame's worth of styling: they are made once a selection needs them
      attachOptions = () => others.map((s) => h('option', { value: s.id, selected: String(s.id) === previousChoice }, s.name));
      if (selectedCount(selection) === 0) replace(attachTo);
      else replace(attachTo, ...attachOptions());
      page = answer.targets;
      total = answer.total;
      renderPage();
      if (page.length === 0 && total > 0 && state.page > 1) {
        // a page past the end (a stale link, or the last page emptied): show the last one
        state.page = pages();
        syncUrl();
        void fetchPage();
      }
    },
    hide() {
      for (const el of elements) el.hidden = el !== heading;
      replace(heading, 'Targets');
    },
  };
}
