/** Shared pieces of the views: announcements, the confirmation dialog, loading / empty / error states. */
import { ApiError } from './api.js';
import { byId, h, replace } from './dom.js';

let clearTimer: number | undefined;

/** Shows a short message in the page's live region (read out by screen readers). */
export function announce(text: string, kind: 'info' | 'error' = 'info'): void {
  const region = byId('flash');
  window.clearTimeout(clearTimer);
  region.dataset.kind = kind;
  // A fresh node, so the same message twice is announced twice. The region itself stays in the
  // page (empty when idle): screen readers only follow live regions that exist before they change.
  const dismiss = h('button', { type: 'button', class: 'link-button', onclick: () => region.replaceChildren() }, 'Dismiss');
  replace(region, h('span', {}, text), kind === 'error' && dismiss);
  if (kind === 'info') clearTimer = window.setTimeout(() => region.replaceChildren(), 6000);
}

export function describeError(err: unknown): string {
  if (err instanceof ApiError) return err.status === 0 ? 'The server did not answer. Is it running?' : `${err.message} (HTTP ${err.status})`;
  return String(err);
}

export interface ConfirmOptions {
  title: string;
  message: string;
  confirm: string;
}

/** A modal dialog; resolves true only when the user presses the confirm button. Escape cancels. */
export function confirmDialog(options: ConfirmOptions): Promise<boolean> {
  const titleId = 'dialog-title';
  const dialog = h(
    'dialog',
    { class: 'confirm', 'aria-labelledby': titleId, 'aria-describedby': 'dialog-message' },
    h(
      'form',
      { method: 'dialog' },
      h('h2', { id: titleId }, options.title),
      h('p', { id: 'dialog-message' }, options.message),
      h(
        'div',
        { class: 'actions' },
        h('button', { value: 'cancel', autofocus: true }, 'Cancel'),
        h('button', { value: 'confirm', class: 'danger' }, options.confirm),
      ),
    ),
  );
  const opener = document.activeElement as HTMLElement | null;
  document.body.append(dialog);
  return new Promise((resolve) => {
    dialog.addEventListener('close', () => {
      dialog.remove();
      if (opener?.isConnected) opener.focus();
      resolve(dialog.returnValue === 'confirm');
    });
    dialog.showModal();
  });
}

export function loadingState(text = 'Loading…'): HTMLElement {
  return h('p', { class: 'state loading', role: 'status' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), text);
}

export function emptyState(title: string, hint: string): HTMLElement {
  return h('div', { class: 'state empty' }, h('p', { class: 'state-title' }, title), h('p', {}, hint));
}

/** A view of a target that is not there (deleted, or a stale link). */
export function targetGoneState(id: number): HTMLElement {
  return h('div', { class: 'state error', role: 'alert' }, h('p', { class: 'state-title' }, `There is no target with id ${id}.`), h('p', {}, 'It may have been deleted. ', h('a', { href: '/targets' }, 'Show the targets'), '.'));
}

export function errorState(err: unknown, retry: () => void): HTMLElement {
  return h(
    'div',
    { class: 'state error', role: 'alert' },
    h('p', { class: 'state-title' }, 'Could not load this.'),
    h('p', {}, describeError(err)),
    h('button', { type: 'button', onclick: retry }, 'Try again'),
  );
}

/** Disables a button while its action runs, so a double click cannot send twice. */
export async function busy<T>(button: HTMLButtonElement, action: () => Promise<T>): Promise<T> {
  button.disabled = true;
  button.setAttribute('aria-busy', 'true');
  try {
    return await action();
  } finally {
    button.disabled = false;
    button.removeAttribute('aria-busy');
  }
}

/** Copies text; outside a secure context (plain http on the network) through a selected textarea. */
export async function copyText(text: string): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const area = h('textarea', { class: 'offscreen', readonly: true, 'aria-hidden': 'true' });
    area.value = text;
    document.body.append(area);
    area.select();
    const copied = document.execCommand('copy');
    area.remove();
    return copied;
  }
}

export function viewHeading(title: string, intro?: string): HTMLElement[] {
  const heading = h('h1', { tabindex: '-1' }, title);
  return intro ? [heading, h('p', { class: 'intro' }, intro)] : [heading];
}
