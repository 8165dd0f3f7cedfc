/**
 * The Worklist view: the queue at any size, a page at a time from the server (its total, filters
 * by target URL and plugin code), pause, resume and delete one work or every one. Two requests
 * bring it on screen (the page, and the catalogue for the plugin filter).
 */
import { api, isAbort, type Plugin, type Target, type Work, type WorkPage } from './api.js';
import { append, appendInFrames, count, h, num, replace } from './dom.js';
import { pager } from './pager.js';
import { replaceQuery, type ViewContext } from './router.js';
import { loadPlugins } from './state.js';
import { announce, busy, confirmDialog, describeError, emptyState, errorState, loadingState, viewHeading } from './ui.js';

const PER_PAGE = 100;

function workRow(work: Work): HTMLTableRowElement {
  const what = `${work.plugin.code} (${work.plugin.type}) on ${work.target.target_url}`;
  return h(
    'tr',
    { 'data-work-id': work.id, class: work.active ? 'work' : 'work is-paused' },
    h('td', { 'data-label': 'Work', class: 'num' }, `#${work.id}`),
    h('th', { scope: 'row', class: 'target-url' }, h('a', { href: `/targets/${work.target.id}` }, work.target.target_url)),
    h('td', { 'data-label': 'Plugin' }, h('span', { class: 'code' }, work.plugin.code), ' ', work.plugin.title, h('span', { class: 'hint' }, ` · ${work.plugin.group}/${work.plugin.type}`)),
    h('td', { 'data-label': 'State' }, h('span', { class: work.active ? 'state-badge queued' : 'state-badge paused' }, work.active ? 'Queued' : 'Paused')),
    h(
      'td',
      { class: 'col-actions' },
      h('button', { type: 'button', class: 'small', 'data-toggle': work.id, 'aria-label': `${work.active ? 'Pause' : 'Resume'} ${what}` }, work.active ? 'Pause' : 'Resume'),
      h('button', { type: 'button', class: 'small danger', 'data-delete': work.id, 'aria-label': `Delete ${what}` }, 'Delete'),
    ),
  );
}

export function worklistView({ root, query, signal }: ViewContext): void {
  const state = {
    target: query.get('target')?.trim() ?? '',
    code: query.get('code')?.trim() ?? '',
    page: Math.max(1, Math.trunc(Number(query.get('page'))) || 1),
  };
  let answer: WorkPage | undefined;

  const targetInput = h('input', { id: 'work-target', type: 'search', list: 'work-targets', autocomplete: 'off', spellcheck: 'false', placeholder: 'https://…', value: state.target });
  const targetOptions = h('datalist', { id: 'work-targets' });
  const pluginSelect = h('select', { id: 'work-plugin' }, h('option', { value: '' }, 'Every plugin'));
  const shown = h('p', { class: 'hint', id: 'work-count', 'aria-live': 'polite' });
  const toolbar = h(
    'div',
    { class: 'panel toolbar', role: 'search', 'aria-label': 'Worklist' },
    h('div', { class: 'field grow' }, h('label', { for: targetInput.id }, 'Filter by target URL (any part)'), targetInput, targetOptions),
    h('div', { class: 'field' }, h('label', { for: pluginSelect.id }, 'Plugin'), pluginSelect),
    shown,
  );
  const pauseAll = h('button', { type: 'button' }, 'Pause all');
  const resumeAll = h('button', { type: 'button' }, 'Resume all');
  const deleteAll = h('button', { type: 'button', class: 'danger' }, 'Delete all');
  const refresh = h('button', { type: 'button' }, 'Refresh');
  const allActions = h('div', { class: 'panel actions work-actions', role: 'group', 'aria-label': 'Every queued work' }, pauseAll, resumeAll, deleteAll, refresh);

  const heading = h('h2', { id: 'worklist-heading', tabindex: '-1' }, 'Queued works');
  const tbody = h('tbody');
  const table = h(
    'table',
    { class: 'target-table work-table', 'aria-labelledby': heading.id, 'aria-describedby': shown.id },
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        h('th', { scope: 'col', class: 'col-work' }, 'Work'),
        h('th', { scope: 'col', class: 'col-url' }, 'Target'),
        h('th', { scope: 'col' }, 'Plugin'),
        h('th', { scope: 'col', class: 'col-state' }, 'State'),
        h('th', { scope: 'col', class: 'col-actions wide' }, h('span', { class: 'visually-hidden' }, 'Actions')),
      ),
    ),
    tbody,
  );
  const empty = h('div', { hidden: true });
  const region = h('div', { class: 'list-region table-region' }, loadingState('Loading the worklist…'), table, empty);
  table.hidden = true;
  const pages = pager((next) => {
    state.page = next;
    syncUrl();
    void fetchPage();
  });
  append(root, [
    ...viewHeading('Worklist', 'The runs waiting for a worker, oldest first. A paused work is passed over until it is resumed.'),
    toolbar,
    allActions,
    heading,
    region,
    pages.el,
  ]);

  function syncUrl(): void {
    const next = new URLSearchParams();
    if (state.target) next.set('target', state.target);
    if (state.code) next.set('code', state.code);
    if (state.page > 1) next.set('page', String(state.page));
    replaceQuery(next);
  }

  let stopRows = () => {};
  function render(): void {
    if (!answer) return;
    const { records_total: total, records_filtered: filtered, data } = answer;
    region.querySelector('.loading')?.remove();
    const filtering = state.target !== '' || state.code !== '';
    replace(shown, filtering ? `${num(filtered)} of ${count(total, 'queued work')} match` : count(total, 'queued work'));
    replace(heading, `Queued works (${num(total)})`);
    for (const b of [pauseAll, resumeAll, deleteAll]) b.disabled = total === 0;
    replace(pauseAll, `Pause all ${num(total)}`);
    replace(resumeAll, `Resume all ${num(total)}`);
    replace(deleteAll, `Delete all ${num(total)}`);
    stopRows();
    tbody.replaceChildren();
    table.hidden = data.length === 0;
    empty.hidden = data.length > 0;
    if (data.length === 0) {
      replace(
        empty,
        filtering
          ? emptyState('No queued work matches.', 'The target filter matches any part of the URL, in any case. Change or clear the filters.')
          : emptyState('The worklist is empty.', 'Queue plugins on targets in the Plugins view; the workers take them from here.'),
      );
    } else stopRows = appendInFrames(tbody, data.length, (i) => workRow(data[i]), 25, 25);
    pages.render(state.page, PER_PAGE, filtered);
  }

  let loading: AbortController | undefined;
  async function fetchPage(): Promise<void> {
    loading?.abort();
    const controller = new AbortController();
    loading = controller;
    const abort = () => controller.abort();
    signal.addEventListener('abort', abort, { once: true });
    region.setAttribute('aria-busy', 'true');
    try {
      answer = await api.worklistPage({ limit: PER_PAGE, offset: (state.page - 1) * PER_PAGE, target_url: state.target || undefined, plugin_code: state.code || undefined }, controller.signal);
      // a page past the end (a stale link, or the last page emptied): the last one instead
      if (answer.data.length === 0 && answer.records_filtered > 0 && state.page > 1) {
        state.page = Math.ceil(answer.records_filtered / PER_PAGE);
        syncUrl();
        return void fetchPage();
      }
      render();
    } catch (err) {
      if (!isAbort(err)) {
        region.querySelector('.loading')?.remove();
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

  function fillPlugins(plugins: Plugin[]): void {
    const codes = [...new Map(plugins.map((p) => [p.code, p.title])).entries()];
    pluginSelect.replaceChildren(
      h('option', { value: '' }, 'Every plugin'),
      ...codes.map(([code, title]) => h('option', { value: code, selected: code === state.code }, `${code} ${title}`)),
    );
    if (state.code && !codes.some(([code]) => code === state.code)) pluginSelect.append(h('option', { value: state.code, selected: true }, state.code));
  }

  /** The target URLs to pick from: asked the first time the field is used. */
  let targetsAsked = false;
  targetInput.addEventListener('focus', () => {
    if (targetsAsked) return;
    targetsAsked = true;
    api.targetsOf(undefined, undefined, signal).then(
      (targets: Target[]) => targetOptions.replaceChildren(...targets.map((t) => h('option', { value: t.target_url }))),
      () => (targetsAsked = false),
    );
  });
  let timer: number | undefined;
  const applyTarget = () => {
    const value = targetInput.value.trim();
    if (value === state.target) return;
    state.target = value;
    state.page = 1;
    syncUrl();
    void fetchPage();
  };
  targetInput.addEventListener('input', () => {
    window.clearTimeout(timer);
    timer = window.setTimeout(applyTarget, 300);
  });
  targetInput.addEventListener('change', applyTarget);
  pluginSelect.addEventListener('change', () => {
    state.code = pluginSelect.value;
    state.page = 1;
    syncUrl();
    void fetchPage();
  });
  refresh.addEventListener('click', () => void busy(refresh, fetchPage));

  async function act(button: HTMLButtonElement, action: () => Promise<unknown>, done: string): Promise<void> {
    try {
      await busy(button, action);
      announce(done);
    } catch (err) {
      announce(`${describeError(err)}`, 'error');
    }
    await fetchPage();
  }

  pauseAll.addEventListener('click', () => void act(pauseAll, () => api.setWorkActive(0, false), 'Every queued work is paused.'));
  resumeAll.addEventListener('click', () => void act(resumeAll, () => api.setWorkActive(0, true), 'Every queued work is resumed.'));
  deleteAll.addEventListener('click', async () => {
    const total = answer?.records_total ?? 0;
    const ok = await confirmDialog({
      title: `Delete all ${count(total, 'queued work')}?`,
      message: 'They leave the worklist, whatever the filters show. Runs in progress go on; outputs already made stay.',
      confirm: 'Delete all',
    });
    if (ok) await act(deleteAll, () => api.deleteWork(0), `Deleted ${count(total, 'queued work')}.`);
  });

  tbody.addEventListener('click', (event) => {
    const button = (event.target as HTMLElement).closest<HTMLButtonElement>('button');
    const work = answer?.data.find((w) => String(w.id) === (button?.dataset.toggle ?? button?.dataset.delete));
    if (!button || !work) return;
    const what = `work #${work.id} (${work.plugin.code} on ${work.target.target_url})`;
    const focusRow = () => tbody.querySelector<HTMLElement>(`tr[data-work-id="${work.id}"] button`)?.focus() ?? heading.focus();
    if (button.dataset.toggle) void act(button, () => api.setWorkActive(work.id, !work.active), `${work.active ? 'Paused' : 'Resumed'} ${what}.`).then(focusRow);
    else void act(button, () => api.deleteWork(work.id), `Deleted ${what}.`).then(focusRow);
  });

  void Promise.all([
    fetchPage(),
    loadPlugins(signal).then(fillPlugins, () => {}),
  ]);
}
