/** The Sessions view: the list with the active one marked, create, activate, delete. */
import { api, ApiError, isAbort, type Session } from './api.js';
import { append, h, plural, replace } from './dom.js';
import type { ViewContext } from './router.js';
import { loadOverview, type Overview } from './state.js';
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

function deleteMessage(session: Session, targets: number, sessions: number): string {
  const parts = [`Its ${plural(targets, 'target')} will be detached; targets in no other session are deleted with it.`];
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
  const listHeading = h('h2', { tabindex: '-1' }, 'All sessions');
  const list = h('div', { class: 'list-region', 'aria-live': 'polite' }, loadingState('Loading sessions…'));
  append(root, [...viewHeading('Sessions', 'A session groups the targets of one assessment.'), form, listHeading, list]);

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
    try {
      const overview = await loadOverview(signal);
      replace(list, renderList(overview));
      focus?.()?.focus();
    } catch (err) {
      if (!isAbort(err)) replace(list, errorState(err, () => void load()));
    } finally {
      list.removeAttribute('aria-busy');
    }
  }

  async function activate(session: Session, button: HTMLButtonElement): Promise<void> {
    try {
      await busy(button, () => api.activateSession(session.id));
      announce(`“${session.name}” is now the active session.`);
    } catch (err) {
      announce(`Could not activate “${session.name}”: ${describeError(err)}`, 'error');
    }
    await load(() => list.querySelector<HTMLElement>(`[data-session-id="${session.id}"] h3`));
  }

  async function remove(session: Session, overview: Overview, button: HTMLButtonElement): Promise<void> {
    const targets = overview.targets.get(session.id)?.length ?? 0;
    const confirmed = await confirmDialog({
      title: `Delete session “${session.name}”?`,
      message: deleteMessage(session, targets, overview.sessions.length),
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

  function renderList(overview: Overview): HTMLElement {
    if (overview.sessions.length === 0) return emptyState('No sessions.', 'Create one above.');
    return h(
      'ul',
      { class: 'cards session-list' },
      ...overview.sessions.map((session) => {
        const count = overview.targets.get(session.id)?.length ?? 0;
        const activateButton = h('button', { type: 'button', 'aria-label': `Activate ${session.name}` }, 'Activate');
        activateButton.addEventListener('click', () => void activate(session, activateButton));
        const deleteButton = h('button', { type: 'button', class: 'danger', 'aria-label': `Delete ${session.name}` }, 'Delete');
        deleteButton.addEventListener('click', () => void remove(session, overview, deleteButton));
        return h(
          'li',
          { class: session.active ? 'card session is-active' : 'card session', 'data-session-id': session.id },
          h(
            'div',
            { class: 'session-main' },
            h('h3', { tabindex: '-1' }, session.name),
            session.active && h('span', { class: 'badge badge-active' }, 'Active'),
            h('a', { href: `/targets?session=${session.id}`, class: 'count', 'aria-label': `${plural(count, 'target')} in ${session.name}` }, plural(count, 'target')),
          ),
          h('div', { class: 'actions' }, !session.active && activateButton, deleteButton),
        );
      }),
    );
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

  void load();
}
