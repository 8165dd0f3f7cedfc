/** A page of targets as table rows. Buttons carry data attributes: one listener on the table handles them all. */
import type { ListedTarget, SessionSummary } from './api.js';
import { h } from './dom.js';

/** Chips shown per target before "+N more": a target in 300 sessions must not make a row of 300 buttons. */
const MAX_CHIPS = 4;

export interface RowContext {
  viewed: SessionSummary;
  names: Map<number, string>;
}

function cell(label: string, value: string, muted = false): HTMLTableCellElement {
  return h('td', { 'data-label': label, class: muted ? 'muted' : undefined }, value);
}

/** The sessions holding the target, the viewed one first, each with its detach button. */
function chips(target: ListedTarget, ctx: RowContext): HTMLElement {
  const ids = [...target.session_ids].sort((a, b) => Number(b === ctx.viewed.id) - Number(a === ctx.viewed.id) || a - b);
  const shown = ids.slice(0, MAX_CHIPS);
  const hidden = ids.slice(MAX_CHIPS).map((id) => ctx.names.get(id) ?? `session ${id}`);
  return h(
    'ul',
    { class: 'chips', 'aria-label': `Sessions holding ${target.target_url}` },
    ...shown.map((id) => {
      const name = ctx.names.get(id) ?? `session ${id}`;
      return h(
        'li',
        { class: id === ctx.viewed.id ? 'chip current' : 'chip' },
        h('span', {}, name),
        h('button', { type: 'button', class: 'chip-remove', 'data-detach': id, 'aria-label': `Detach ${target.target_url} from ${name}`, title: `Detach from ${name}` }, '×'),
      );
    }),
    hidden.length > 0 && h('li', { class: 'chip-more', title: hidden.join(', ') }, `+${hidden.length} more`),
  );
}

export function targetRow(target: ListedTarget, index: number, selected: boolean, ctx: RowContext): HTMLTableRowElement {
  return h(
    'tr',
    { 'data-target-id': target.id, 'data-index': index, class: selected ? 'target is-selected' : 'target' },
    h('td', { class: 'col-select' }, h('input', { type: 'checkbox', class: 'row-select', checked: selected, 'aria-label': `Select ${target.target_url}` })),
    h('th', { scope: 'row', class: 'target-url' }, h('a', { href: `/targets/${target.id}`, title: 'Its results' }, target.target_url)),
    cell('Host', target.host_name),
    cell('Port', target.port_number),
    cell('Scheme', target.url_scheme),
    cell('IP', target.host_ip || 'not resolved', !target.host_ip),
    h('td', { 'data-label': 'Sessions', class: 'col-sessions' }, chips(target, ctx)),
    h(
      'td',
      { class: 'col-actions' },
      h('button', { type: 'button', class: 'danger small', 'data-delete': target.id, 'aria-label': `Delete target ${target.target_url}` }, 'Delete'),
    ),
  );
}
