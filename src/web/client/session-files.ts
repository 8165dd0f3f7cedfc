/**
 * A session as files, to move an engagement between boxes: Export (the bundle, downloaded), Report
 * (the HTML page, opened), Copy targets (the URL list, to the clipboard), and Import (a bundle
 * picked or dropped, made a new session).
 */
import { api, ApiError, type Session } from './api.js';
import { h, plural, replace } from './dom.js';
import { announce, busy, copyText, describeError } from './ui.js';

async function copyTargets(session: Session, button: HTMLButtonElement): Promise<void> {
  try {
    const text = await busy(button, () => api.targetsText(session.id));
    const count = text === '' ? 0 : text.split('\n').length - 1;
    if (count === 0) return announce(`“${session.name}” has no targets to copy.`);
    if (await copyText(text)) announce(`Copied ${plural(count, 'target URL')} of “${session.name}”, one a line.`);
    else announce('The browser refused to copy: use Export, or the targets list, instead.', 'error');
  } catch (err) {
    announce(`Could not copy the targets of “${session.name}”: ${describeError(err)}`, 'error');
  }
}

/** Export, Report and Copy targets for one session. */
export function sessionFileActions(session: Session): HTMLElement[] {
  const exportLink = h(
    'a',
    { class: 'button small', href: api.bundleUrl(session.id), download: '', 'aria-label': `Export ${session.name}`, title: 'Download the session as a bundle file, to import on another box' },
    'Export',
  );
  const reportLink = h(
    'a',
    { class: 'button small', href: api.reportUrl(session.id), target: '_blank', rel: 'noopener', 'aria-label': `Report of ${session.name}`, title: 'Open a printable report (in a new tab)' },
    'Report',
  );
  const copyButton = h('button', { type: 'button', class: 'small', 'aria-label': `Copy targets of ${session.name}`, title: 'Copy the target URLs, one a line' }, 'Copy targets');
  copyButton.addEventListener('click', () => void copyTargets(session, copyButton));
  return [exportLink, reportLink, copyButton];
}

export interface ImportControl {
  /** The control, for the view's toolbar. */
  element: HTMLElement;
  /** Makes a file dropped anywhere on `area` an import too, until `signal` aborts (the view is left). */
  acceptDrops(area: HTMLElement, signal: AbortSignal): void;
}

/**
 * Import: a file picker (and drops); the result, or the server's refusal, shown inline. A name
 * already in use asks for another, and imports under it.
 */
export function importControl(imported: (id: number) => Promise<string | undefined>): ImportControl {
  const input = h('input', { id: 'import-file', type: 'file', accept: '.json,application/json', class: 'visually-hidden' });
  const pick = h('label', { for: input.id, class: 'button' }, 'Import…');
  const result = h('div', { id: 'import-result', class: 'import-result', role: 'status', hidden: true });
  const element = h('div', { class: 'import' }, input, pick, result);
  let pending: File | undefined;

  function show(kind: 'ok' | 'error', ...content: (Node | string)[]): void {
    result.hidden = false;
    result.dataset.kind = kind;
    replace(result, ...content);
  }

  function askForName(file: File, message: string): void {
    const nameInput = h('input', { id: 'import-name', autocomplete: 'off', 'aria-describedby': 'import-name-why' });
    const retry = h('button', { type: 'submit', class: 'primary small' }, 'Import');
    const form = h(
      'form',
      { class: 'import-rename' },
      h('p', { id: 'import-name-why', class: 'field-error' }, message),
      h('label', { for: nameInput.id }, 'Import as'),
      h('div', { class: 'inline-field' }, nameInput, retry),
    );
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      void run(file, nameInput.value.trim() || undefined, retry);
    });
    show('error', form);
    nameInput.focus();
  }

  async function run(file: File, name: string | undefined, button?: HTMLButtonElement): Promise<void> {
    pending = file;
    const attempt = api.importBundle(file, name);
    try {
      const done = await (button ? busy(button, () => attempt) : attempt);
      if (pending !== file) return;
      // the answer names the new session by its id: the view, reloaded, knows its name
      const sessionName = (await imported(done.id)) ?? `session ${done.id}`;
      show('ok', `Imported “${file.name}” as the session “${sessionName}” with ${plural(done.targets, 'target')}. `, h('a', { href: `/targets?session=${done.id}` }, 'Show its targets'), '.');
      announce(`Imported “${sessionName}”.`);
    } catch (err) {
      if (pending !== file) return;
      if (err instanceof ApiError && err.status === 409) {
        askForName(file, `A session with that name already exists: nothing was imported. Choose another name for “${file.name}”.`);
        return;
      }
      const why = err instanceof ApiError && err.status >= 400 && err.status < 500 ? err.message : describeError(err);
      show('error', `Nothing was imported from “${file.name}”: ${why}`);
    }
  }

  input.addEventListener('change', () => {
    const file = input.files?.[0];
    input.value = '';
    if (file) void run(file, undefined);
  });

  return {
    element,
    acceptDrops(area, signal) {
      const listen = <K extends keyof HTMLElementEventMap>(type: K, handler: (event: HTMLElementEventMap[K]) => void) =>
        area.addEventListener(type, handler, { signal });
      listen('dragover', (event) => {
        if (!event.dataTransfer?.types.includes('Files')) return;
        event.preventDefault();
        area.classList.add('is-dropping');
      });
      listen('dragleave', (event) => {
        if (event.target === area) area.classList.remove('is-dropping');
      });
      listen('drop', (event) => {
        area.classList.remove('is-dropping');
        const file = event.dataTransfer?.files[0];
        if (!file) return;
        event.preventDefault();
        void run(file, undefined);
      });
      signal.addEventListener('abort', () => area.classList.remove('is-dropping'));
    },
  };
}
