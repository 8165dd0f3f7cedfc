/** The Configuration view: items by section, filter, edit in place, save every change in one PATCH. */
import { api, ApiError, isAbort, type ConfigItem } from './api.js';
import { append, h, plural, replace } from './dom.js';
import { askBeforeLeaving, type ViewContext } from './router.js';
import { announce, busy, describeError, emptyState, errorState, loadingState, viewHeading } from './ui.js';

type Show = 'all' | 'changed' | 'unsaved';

interface Row {
  item: ConfigItem;
  el: HTMLElement;
  field: HTMLInputElement | HTMLTextAreaElement;
  unsavedBadge: HTMLElement;
  revert: HTMLButtonElement;
  error: HTMLElement;
}

const LONG_VALUE = 60;

function sectionId(section: string): string {
  return `section-${section.replace(/[^A-Za-z0-9_-]/g, '-')}`;
}

export function configurationView({ root, signal }: ViewContext): void {
  const filter = h('input', { id: 'config-filter', type: 'search', autocomplete: 'off', placeholder: 'e.g. nikto or /usr/share' });
  const show = h(
    'select',
    { id: 'config-show' },
    h('option', { value: 'all' }, 'All items'),
    h('option', { value: 'changed' }, 'Changed from default'),
    h('option', { value: 'unsaved' }, 'Unsaved edits'),
  );
  const count = h('p', { class: 'hint', id: 'config-count', 'aria-live': 'polite' });
  const toolbar = h(
    'div',
    { class: 'panel toolbar', role: 'search' },
    h('div', { class: 'field grow' }, h('label', { for: filter.id }, 'Filter by key or value'), filter),
    h('div', { class: 'field' }, h('label', { for: show.id }, 'Show'), show),
    count,
  );
  const jump = h('nav', { class: 'jump', 'aria-label': 'Sections', hidden: true });
  const content = h('div', { class: 'list-region' }, loadingState('Loading configuration…'));

  const pending = h('p', { class: 'pending' });
  const saveError = h('p', { class: 'field-error', role: 'alert', hidden: true });
  const discardButton = h('button', { type: 'button' }, 'Discard');
  const saveButton = h('button', { type: 'button', class: 'primary' }, 'Save changes');
  const saveBar = h(
    'div',
    { class: 'savebar', role: 'region', 'aria-label': 'Unsaved changes', hidden: true },
    h('div', { class: 'savebar-text' }, pending, saveError),
    h('div', { class: 'actions' }, discardButton, saveButton),
  );
  append(root, [
    ...viewHeading('Configuration', 'The framework’s settings and tool paths. Edit values in place, then save them all at once.'),
    toolbar,
    jump,
    content,
    saveBar,
  ]);

  let rows: Row[] = [];

  const edited = () => rows.filter((r) => r.field.value !== r.item.value);

  function itemRow(item: ConfigItem, index: number): Row {
    const id = `cfg-${index}`;
    const long = item.value.length > LONG_VALUE || item.value.includes('\n');
    const describedBy = [item.descrip && `${id}-desc`, `${id}-error`].filter(Boolean).join(' ');
    const field = long
      ? h('textarea', { id, rows: String(Math.min(6, Math.ceil(item.value.length / 70) + 1)), spellcheck: 'false', 'aria-describedby': describedBy })
      : h('input', { id, type: 'text', spellcheck: 'false', autocomplete: 'off', 'aria-describedby': describedBy });
    field.value = item.value;
    const unsavedBadge = h('span', { class: 'badge badge-unsaved', hidden: true }, 'unsaved');
    const revert = h('button', { type: 'button', class: 'link-button', hidden: true, 'aria-label': `Revert ${item.key}` }, 'Revert');
    const error = h('p', { id: `${id}-error`, class: 'field-error', hidden: true });
    const el = h(
      'div',
      { class: item.dirty ? 'config-item is-dirty' : 'config-item', 'data-key': item.key },
      h(
        'div',
        { class: 'config-head' },
        h('label', { for: id, class: 'key' }, item.key),
        item.dirty && h('span', { class: 'badge badge-changed', title: 'Differs from the default value' }, 'changed'),
        unsavedBadge,
        revert,
      ),
      item.descrip && h('p', { id: `${id}-desc`, class: 'descrip' }, item.descrip),
      field,
      error,
    );
    const row: Row = { item, el, field, unsavedBadge, revert, error };
    field.addEventListener('input', () => {
      markError(row, undefined);
      update(row);
    });
    revert.addEventListener('click', () => {
      field.value = item.value;
      update(row);
      field.focus();
    });
    return row;
  }

  function markError(row: Row, text: string | undefined): void {
    row.error.hidden = text === undefined;
    replace(row.error, text ?? '');
    row.el.classList.toggle('has-error', text !== undefined);
    if (text === undefined) row.field.removeAttribute('aria-invalid');
    else row.field.setAttribute('aria-invalid', 'true');
  }

  function update(row?: Row): void {
    for (const r of row ? [row] : rows) {
      const isEdited = r.field.value !== r.item.value;
      r.el.classList.toggle('is-edited', isEdited);
      r.unsavedBadge.hidden = r.revert.hidden = !isEdited;
    }
    const n = edited().length;
    const appearing = saveBar.hidden && n > 0;
    saveBar.hidden = n === 0;
    // The bar sticks to the bottom of the window: keep the field being edited above it.
    if (appearing && document.activeElement instanceof HTMLElement) document.activeElement.scrollIntoView({ block: 'nearest' });
    replace(pending, `${plural(n, 'unsaved change')}.`);
    if (n === 0) saveError.hidden = true;
    askBeforeLeaving(n === 0 ? undefined : `You have ${plural(n, 'unsaved change')} to the configuration.`);
    if (show.value === 'unsaved' && !row) applyFilter();
  }

  function applyFilter(): void {
    const needle = filter.value.trim().toLowerCase();
    const mode = show.value as Show;
    let visible = 0;
    for (const r of rows) {
      const matches =
        (needle === '' || r.item.key.toLowerCase().includes(needle) || r.field.value.toLowerCase().includes(needle)) &&
        (mode === 'all' || (mode === 'changed' ? r.item.dirty : r.field.value !== r.item.value));
      r.el.hidden = !matches;
      if (matches) visible++;
    }
    for (const section of content.querySelectorAll<HTMLElement>('section')) {
      section.hidden = !section.querySelector('.config-item:not([hidden])');
    }
    for (const link of jump.querySelectorAll<HTMLAnchorElement>('a')) {
      link.hidden = document.getElementById(link.hash.slice(1))?.hidden ?? true;
    }
    const none = content.querySelector<HTMLElement>('.no-match');
    if (none) none.hidden = visible > 0;
    replace(count, visible === rows.length ? `${plural(rows.length, 'item')}` : `Showing ${visible} of ${plural(rows.length, 'item')}`);
  }

  function render(items: ConfigItem[]): void {
    rows = items.map(itemRow);
    const sections = new Map<string, Row[]>();
    for (const row of rows) sections.set(row.item.section, [...(sections.get(row.item.section) ?? []), row]);
    const names = [...sections.keys()].sort();
    replace(jump, h('span', { class: 'label' }, 'Sections:'), ...names.map((name) => h('a', { href: `#${sectionId(name)}` }, name)));
    jump.hidden = names.length < 2;
    replace(
      content,
      ...names.map((name) => {
        const id = sectionId(name);
        const sectionRows = sections.get(name)!;
        return h(
          'section',
          { id, class: 'config-section', 'aria-labelledby': `${id}-title` },
          h('h2', { id: `${id}-title` }, name, h('span', { class: 'section-count' }, ` ${plural(sectionRows.length, 'item')}`)),
          ...sectionRows.map((r) => r.el),
        );
      }),
      items.length === 0 ? emptyState('No configuration items.', 'The server has none to show.') : emptyState('No item matches.', 'Change the filter, or show all items.'),
    );
    content.lastElementChild?.classList.add('no-match');
    applyFilter();
    update();
  }

  async function load(): Promise<void> {
    content.setAttribute('aria-busy', 'true');
    try {
      render(await api.configuration(signal));
    } catch (err) {
      if (!isAbort(err)) replace(content, errorState(err, () => void load()));
    } finally {
      content.removeAttribute('aria-busy');
    }
  }

  async function save(): Promise<void> {
    const changes = edited();
    if (changes.length === 0) return;
    saveError.hidden = true;
    for (const r of rows) markError(r, undefined);
    try {
      await busy(saveButton, () => api.patchConfiguration(new Map(changes.map((r) => [r.item.key, r.field.value]))));
    } catch (err) {
      showSaveError(err);
      return;
    }
    announce(`Saved ${plural(changes.length, 'change')}.`);
    const focusKey = changes[0].item.key;
    await load();
    rows.find((r) => r.item.key === focusKey && !r.el.hidden)?.field.focus();
  }

  function showSaveError(err: unknown): void {
    const refused = err instanceof ApiError ? Object.keys(err.data) : [];
    const shown = refused.map((key) => rows.find((r) => r.item.key === key)).filter((r): r is Row => r !== undefined);
    for (const r of shown) markError(r, `The server refused this key: ${err instanceof ApiError ? err.data[r.item.key] : ''}.`);
    saveError.hidden = false;
    replace(
      saveError,
      refused.length > 0
        ? `Nothing was saved: ${describeError(err)} — ${refused.join(', ')}.`
        : `Nothing was saved: ${describeError(err)}`,
    );
    if (shown.length > 0) {
      if (shown.some((r) => r.el.hidden)) {
        filter.value = '';
        show.value = 'all';
        applyFilter();
      }
      shown[0].field.focus();
    }
  }

  filter.addEventListener('input', applyFilter);
  show.addEventListener('change', applyFilter);
  saveButton.addEventListener('click', () => void save());
  discardButton.addEventListener('click', () => {
    for (const r of rows) {
      r.field.value = r.item.value;
      markError(r, undefined);
    }
    update();
    applyFilter();
    announce('Unsaved changes discarded.');
  });
  root.addEventListener('keydown', (event) => {
    if (event.key === 's' && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      void save();
    }
  });

  void load();
}
