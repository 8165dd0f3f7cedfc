/** The bar under the list: what is selected, "select all N matching", and the one place to attach, detach or delete it. */
import type { BulkSummary, SessionSummary } from './api.js';
import { count, h, num, replace } from './dom.js';
import { clearSelection, selectAllMatching, selectedCount, toBulkSelection, type Selection } from './selection.js';
import { confirmBulk, sendBulk, summaryText, type BulkAction } from './target-actions.js';
import { announce, busy, describeError } from './ui.js';

export interface SelectionHost {
  selection: Selection;
  /** The session on screen. */
  viewed(): SessionSummary | undefined;
  /** Targets matching the search, and the search. */
  matching(): { total: number; q: string };
  /** The selection changed here: the rows and the page checkbox follow it. */
  changed(): void;
  /** The sessions and the page again, after a change; focus goes where `focus` says. */
  reload(focus?: () => HTMLElement | null | undefined): Promise<void>;
}

export interface SelectionBar {
  el: HTMLElement;
  render(): void;
  /** The sessions a selection can be attached to (all but the one on screen). */
  setSessions(viewed: SessionSummary, others: SessionSummary[]): void;
}

export function selectionBar(host: SelectionHost): SelectionBar {
  const { selection } = host;
  const status = h('p', { class: 'selection-count', id: 'selection-count', 'aria-live': 'polite', tabindex: '-1' });
  const selectAll = h('button', { type: 'button', class: 'link-button' }, 'Select all');
  const clear = h('button', { type: 'button', class: 'link-button' }, 'Clear selection');
  const attachTo = h('select', { id: 'attach-session' });
  const attachButton = h('button', { type: 'button' }, 'Attach');
  const detachButton = h('button', { type: 'button' }, 'Detach');
  const deleteButton = h('button', { type: 'button', class: 'danger' }, 'Delete selected');
  const runLink = h('a', { href: '/plugins', class: 'button', id: 'run-plugins' });
  const result = h('p', { class: 'bulk-result', role: 'status' });
  const actions = h(
    'div',
    { class: 'selection-actions', hidden: true },
    h('div', { class: 'attach' }, h('label', { for: attachTo.id }, 'Attach selected to'), attachTo, attachButton),
    runLink,
    detachButton,
    deleteButton,
  );
  const el = h(
    'div',
    { class: 'panel selection-bar', role: 'region', 'aria-label': 'Selected targets' },
    h('div', { class: 'selection-status' }, status, selectAll, clear),
    actions,
    result,
  );
  let others: SessionSummary[] = [];
  let choice = '';

  function render(): void {
    const n = selectedCount(selection);
    const { total } = host.matching();
    replace(
      status,
      selection.all
        ? `All ${count(n, 'matching target')} selected${selection.all.q ? ` (filter “${selection.all.q}”)` : ''}.`
        : n === 0
          ? 'No target selected.'
          : `${count(n, 'target')} selected.`,
    );
    replace(selectAll, `Select all ${num(total)} matching`);
    replace(runLink, `Run plugins on ${count(n, 'selected target')}`);
    selectAll.hidden = selection.all !== undefined || total === 0;
    clear.hidden = n === 0;
    // the actions show once there is something to act on; 300 options cost a frame's worth of
    // styling, so they are made then too
    actions.hidden = n === 0;
    el.classList.toggle('has-selection', n > 0);
    attachButton.disabled = others.length === 0;
    if (n > 0 && attachTo.options.length === 0) {
      replace(attachTo, ...others.map((s) => h('option', { value: s.id, selected: String(s.id) === choice }, s.name)));
    }
  }

  async function run(action: BulkAction, button: HTMLButtonElement): Promise<void> {
    const viewed = host.viewed();
    const n = selectedCount(selection);
    if (!viewed || n === 0) return;
    const session = action === 'attach' ? others.find((s) => String(s.id) === attachTo.value) : viewed;
    if (!session || !(await confirmBulk(action, n, viewed.name))) return;
    let summary: BulkSummary;
    try {
      summary = await busy(button, () => sendBulk(action, session.id, toBulkSelection(selection)));
    } catch (err) {
      const text = `Nothing was changed: ${describeError(err)}`;
      replace(result, text);
      announce(text, 'error');
      return;
    }
    const text = summaryText(action, summary, session.name);
    replace(result, text);
    announce(text);
    clearSelection(selection);
    host.changed();
    await host.reload(() => (button.isConnected && !button.closest('[hidden]') ? button : status));
  }

  selectAll.addEventListener('click', () => {
    const viewed = host.viewed();
    if (!viewed) return;
    const { total, q } = host.matching();
    selectAllMatching(selection, viewed.id, q, total);
    host.changed();
    clear.focus();
  });
  clear.addEventListener('click', () => {
    clearSelection(selection);
    host.changed();
    (selectAll.hidden ? status : selectAll).focus();
  });
  attachTo.addEventListener('change', () => (choice = attachTo.value));
  attachButton.addEventListener('click', () => void run('attach', attachButton));
  detachButton.addEventListener('click', () => void run('detach', detachButton));
  deleteButton.addEventListener('click', () => void run('delete', deleteButton));

  return {
    el,
    render,
    setSessions(viewed, next) {
      others = next;
      replace(detachButton, `Detach from “${viewed.name}”`);
      replace(attachTo);
      render();
    },
  };
}
