/** Which targets are selected: some by id (kept across pages and searches), or every one matching the search. */
import type { BulkSelection, ListedTarget } from './api.js';

export interface Selection {
  /** Every target of the session matching `q`, however many: sent as a filter, never as ids. */
  all?: { session: number; q: string; total: number };
  /** Selected by hand, with what the page showed of each. */
  ids: Map<number, ListedTarget>;
  /** Index on the page of the last checkbox clicked, where a shift-click range starts. */
  anchor?: number;
  /** The session the targets were picked in: a selection belongs to it (a view of another clears it). */
  session?: number;
}

export function emptySelection(): Selection {
  return { ids: new Map() };
}

const STORAGE_KEY = 'assessd.target-selection';

/** The selection as this tab last left it (the Plugins view runs plugins on it), or none. */
function restoreSelection(): Selection {
  try {
    const saved = JSON.parse(sessionStorage.getItem(STORAGE_KEY) ?? 'null') as { all?: Selection['all']; ids?: [number, string][]; session?: number } | null;
    if (!saved) return emptySelection();
    const ids = new Map((saved.ids ?? []).map(([id, target_url]) => [id, { id, target_url } as ListedTarget]));
    return { ids, all: saved.all, ...(typeof saved.session === 'number' ? { session: saved.session } : {}) };
  } catch {
    return emptySelection();
  }
}

/** The targets view's selection: one per tab, kept across views and reloads. */
export const targetSelection: Selection = restoreSelection();

export function saveSelection(selection: Selection): void {
  try {
    sessionStorage.setItem(STORAGE_KEY, JSON.stringify({ all: selection.all, ids: [...selection.ids.values()].map((t) => [t.id, t.target_url]), session: selection.session }));
  } catch {
    // storage full or refused: the selection still lives until the page is left
  }
}

export function selectedCount(selection: Selection): number {
  return selection.all ? selection.all.total : selection.ids.size;
}

export function isSelected(selection: Selection, id: number): boolean {
  return selection.all !== undefined || selection.ids.has(id);
}

/** Ticks or unticks one target; leaving "all matching" keeps the rest of this page ticked. */
export function toggle(selection: Selection, page: ListedTarget[], index: number, on: boolean, range: boolean): void {
  if (selection.all) {
    selection.all = undefined;
    for (const t of page) selection.ids.set(t.id, t);
  }
  const from = range && selection.anchor !== undefined ? Math.min(selection.anchor, index) : index;
  const to = range && selection.anchor !== undefined ? Math.max(selection.anchor, index) : index;
  for (let i = from; i <= to; i++) {
    const target = page[i];
    if (!target) continue;
    if (on) selection.ids.set(target.id, target);
    else selection.ids.delete(target.id);
  }
  selection.anchor = index;
}

/** Ticks or unticks the whole page. */
export function togglePage(selection: Selection, page: ListedTarget[], on: boolean): void {
  if (selection.all) {
    selection.all = undefined;
    if (on) for (const t of page) selection.ids.set(t.id, t);
    return;
  }
  for (const t of page) {
    if (on) selection.ids.set(t.id, t);
    else selection.ids.delete(t.id);
  }
}

export function selectAllMatching(selection: Selection, session: number, q: string, total: number): void {
  selection.ids.clear();
  selection.all = { session, q, total };
  selection.anchor = undefined;
}

export function clearSelection(selection: Selection): void {
  selection.ids.clear();
  selection.all = undefined;
  selection.anchor = undefined;
  selection.session = undefined;
}

/** The session a selection was made in (its "all matching" one, or where its targets were picked). */
export const selectionSession = (selection: Selection): number | undefined => selection.all?.session ?? (selection.ids.size > 0 ? selection.session : undefined);

/** The selection as the bulk endpoint takes it. */
export function toBulkSelection(selection: Selection): BulkSelection {
  return selection.all ? { session: selection.all.session, q: selection.all.q } : { ids: [...selection.ids.keys()] };
}
