/** The Sessions view: every session with its target count (one request), filter by name, create, activate, delete. */
import { api, ApiError, isAbort, type SessionSummary } from './api.js';
import { append, appendInFrames, count, h, num, plural, replace } from './dom.js';
import type { ViewContext } from './router.js';
import { sessionFileActions, importControl } from './session-files.js';
import { severityPanel } from './severity.js';
import { byActiveThenNewest, loadOverview } from './state.js';
import { announce, busy, confirmDialog, describeError, emptyState, errorState, loadingState, viewHeading } from './ui.js';

const MAX_NAME = 255;

/** The server says why in its own words (a 409 is "An unknown exception…"): say it in the user's. */
function createErrorText(err: unknown, name: string): string {
  const trimmed = name.trim();
  if (!(err instanceof ApiError) || err.status === 0) return describeError(err);
  if (err.status === 409) return `A session named “${trimmed}” already exists. Choose another name.`;
  if (err.status === 400 && trimmed === '') return 'Enter a name for the session.';
  const length = [...trimmed].length;
  if (err.status === 400 && length > MAX_NAME) return `The name is too long: ${length} characters, at most ${MAX_NAME}.`;
  return `The server refused this name: ${err.message} (HTTP ${err.status}).`;
}

function deleteMessage(session: SessionSummary, sessions: number): string {
  const parts = [
    session.target_count === 0
      ? 'It has no targets.'
      : `Its ${plural(session.target_count, 'target')} will be detached; targets in no other session are deleted with it.`,
  ];
  if (sessions === 1) parts.push('A new, empty “default session” will be created and made active.');
  else if (session.active) parts.push('The newest remaining session becomes the active one.');
  return parts.join(' ');
}

export function sessionsView({ root, signal }: ViewContext): void {
  const input = h('input', { id: 'new-session-name', name: 'name', autocomplete: 'off', 'aria-describedby': 'new-session-hint' });
  const hint = h('p', { id: 'new-session-hint', class: 'hint' }, 'The new session becomes the active one.');
  const error = h('p', { id: 'new-session-error', class: 'field-error', role: 'alert', hidden: true });
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Create session');
  const form = h(
    'form',
    { class: 'panel create-session', novalidate: true, 'aria-label': 'Create a session' },
    h('label', { for: input.id }, 'New session name'),
    h('div', { class: 'inline-field' }, input, submit),
    hint,
    error,
  );
  const filter = h('input', { id: 'session-filter', type: 'search', autocomplete: 'off', placeholder: 'e.g. acme' });
  const shown = h('p', { class: 'hint', id: 'session-count', 'aria-live': 'polite' });
  // Import: a bundle from another box becomes a new session (picked here, or dropped on the view)
  const importer = importControl(async (id) => {
    await load();
    return cards.find((card) => card.session.id === id)?.session.name;
  });
  importer.acceptDrops(root, signal);
  const tools = h('div', { class: 'session-tools' }, importer.element);
  const toolbar = h(
    'div',
    { class: 'panel toolbar', role: 'search', 'aria-label': 'Sessions' },
    h('div', { class: 'field grow' }, h('label', { for: filter.id }, 'Filter sessions by name'), filter),
    tools,
    shown,
  );
  const severity = severityPanel(signal);
  const listHeading = h('h2', { tabindex: '-1' }, 'All sessions');
  const list = h('div', { class: 'list-region', 'aria-live': 'polite' }, loadingState('Loading sessions…'));
  append(root, [
    ...viewHeading('Sessions', 'A session groups the targets of one assessment. Import a session exported on another box here, or drop its file on this page.'),
    severity.el,
    form,
    toolbar,
    listHeading,
    list,
  ]);

  let cards: { session: SessionSummary; el: HTMLElement; name: string }[] = [];

  function showError(text: string | undefined): void {
    error.hidden = text === undefined;
    replace(error, text ?? '');
    if (text === undefined) {
      input.removeAttribute('aria-invalid');
      input.setAttribute('aria-describedby', 'new-session-hint');
    } else {
      input.setAttribute('aria-invalid', 'true');
      input.setAttribute('aria-describedby', 'new-session-error new-session-hint');
    }
  }

  async function load(focus?: () => HTMLElement | null | undefined): Promise<void> {
    list.setAttribute('aria-busy', 'true');
    // the panel asks for the active session's counts at once; its name comes with the overview
    let named: (name: string | undefined) => void = () => {};
    const panel = severity.load(new Promise<string | undefined>((resolve) => (named = resolve)));
    try {
      const sessions = await loadOverview(signal);
      named(sessions.find((s) => s.active)?.name);
      replace(list, renderList(sessions));
      applyFilter();
      focus?.()?.focus();
    } catch (err) {
      named(undefined);
      if (!isAbort(err)) replace(list, errorState(err, () => void load()));
    } finally {
      list.removeAttribute('aria-busy');
    }
    await panel;
  }

  async function activate(session: SessionSummary, button: HTMLButtonElement): Promise<void> {
    try {
      await busy(button, () => api.activateSession(session.id));
      announce(`“${session.name}” is now the active session.`);
    } catch (err) {
      announce(`Could not activate “${session.name}”: ${describeError(err)}`, 'error');
    }
    await load(() => list.querySelector<HTMLElement>(`[data-session-id="${session.id}"] h3`));
  }

  async function remove(session: SessionSummary, sessions: number, button: HTMLButtonElement): Promise<void> {
    const confirmed = await confirmDialog({
      title: `Delete session “${session.name}”?`,
      message: deleteMessage(session, sessions),
      confirm: 'Delete session',
    });
    if (!confirmed) return;
    try {
      await busy(button, () => api.deleteSession(session.id));
      announce(`Session “${session.name}” deleted.`);
    } catch (err) {
      announce(`Could not delete “${session.name}”: ${describeError(err)}`, 'error');
    }
    await load(() => listHeading);
  }

  /** A session's actions: activate, its files (export, report, copy targets), delete. */
  function sessionActions(session: SessionSummary, sessions: number): HTMLElement[] {
    const activateButton = h('button', { type: 'button', 'aria-label': `Activate ${session.name}` }, 'Activate');
    activateButton.addEventListener('click', () => void activate(session, activateButton));
    const deleteButton = h('button', { type: 'button', class: 'danger', 'aria-label': `Delete ${session.name}` }, 'Delete');
    deleteButton.addEventListener('click', () => void remove(session, sessions, deleteButton));
    return [...(session.active ? [] : [activateButton]), ...sessionFileActions(session), deleteButton];
  }

  let stopCards = () => {};

  function renderList(sessions: SessionSummary[]): HTMLElement {
    cards = [];
    stopCards();
    if (sessions.length === 0) return emptyState('No sessions.', 'Create one above.');
    const items = [...sessions].sort(byActiveThenNewest).map((session) => {
      const targets = count(session.target_count, 'target');
      const el = h(
        'li',
        { class: session.active ? 'card session is-active' : 'card session', 'data-session-id': session.id },
        h(
          'div',
          { class: 'session-main' },
          h('h3', { tabindex: '-1' }, session.name),
          session.active && h('span', { class: 'badge badge-active' }, 'Active'),
          h('a', { href: `/targets?session=${session.id}`, class: 'count', 'aria-label': `${targets} in ${session.name}` }, targets),
        ),
        h('div', { class: 'actions' }, ...sessionActions(session, sessions.length)),
      );
      cards.push({ session, el, name: session.name.toLowerCase() });
      return el;
    });
    const ul = h('ul', { class: 'cards session-list' });
    stopCards = appendInFrames(ul, items.length, (i) => items[i], 40, 60);
    return h('div', {}, ul, emptyState('No session matches.', 'Change the filter to see the others.'));
  }

  function applyFilter(): void {
    const needle = filter.value.trim().toLowerCase();
    let visible = 0;
    for (const card of cards) {
      const matches = needle === '' || card.name.includes(needle);
      card.el.hidden = !matches;
      if (matches) visible++;
    }
    const none = list.querySelector<HTMLElement>('.state.empty');
    if (none && cards.length > 0) none.hidden = visible > 0;
    replace(shown, visible === cards.length ? count(cards.length, 'session') : `Showing ${num(visible)} of ${count(cards.length, 'session')}`);
  }

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const name = input.value;
    showError(undefined);
    try {
      await busy(submit, () => api.createSession(name));
    } catch (err) {
      showError(createErrorText(err, name));
      input.focus();
      return;
    }
    input.value = '';
    announce(`Session “${name.trim()}” created; it is now the active session.`);
    input.focus();
    await load();
  });
  input.addEventListener('input', () => {
    if (!error.hidden) showError(undefined);
  });
  filter.addEventListener('input', applyFilter);

  void load();
}
