/** Changing targets from the list: one (a chip's detach, a row's delete) or a selection (one request, one summary). */
import { api, type BulkSelection, type BulkSummary, type ListedTarget } from './api.js';
import { count, num } from './dom.js';
import { announce, busy, confirmDialog, describeError } from './ui.js';

export type BulkAction = 'attach' | 'detach' | 'delete';

/** What a bulk change did, in one sentence. */
export function summaryText(action: BulkAction, result: BulkSummary, session: string): string {
  const gone = result.missing.length > 0 ? ` ${count(result.missing.length, 'was', 'were')} already gone.` : '';
  if (action === 'delete') return `Deleted ${count(result.changed, 'target')}.${gone}`;
  const unchanged = result.matched - result.changed;
  if (action === 'attach') {
    return `Attached ${count(result.changed, 'target')} to “${session}”${unchanged > 0 ? `; ${num(unchanged)} ${unchanged === 1 ? 'was' : 'were'} already there` : ''}.${gone}`;
  }
  const deleted = result.deleted > 0 ? `; ${num(result.deleted)} in no other session ${result.deleted === 1 ? 'was' : 'were'} deleted` : '';
  return `Detached ${count(result.changed, 'target')} from “${session}”${deleted}.${gone}`;
}

/** Asks before a change that deletes: resolves false when the user cancels. */
export function confirmBulk(action: BulkAction, n: number, session: string): Promise<boolean> {
  if (action === 'attach') return Promise.resolve(true);
  const what = count(n, 'target');
  return confirmDialog(
    action === 'delete'
      ? { title: `Delete ${what}?`, message: 'They are removed from every session that holds them.', confirm: `Delete ${what}` }
      : { title: `Detach ${what} from “${session}”?`, message: 'Those in no other session are deleted.', confirm: `Detach ${what}` },
  );
}

/** One request for the whole selection, however large. */
export function sendBulk(action: BulkAction, session: number, selection: BulkSelection): Promise<BulkSummary> {
  if (action === 'attach') return api.attachTargets(session, selection);
  if (action === 'detach') return api.detachTargets(session, selection);
  return api.deleteTargets(selection);
}

/** Detaches one target from one session (asking first when that deletes it); false if the user cancelled. */
export async function detachOne(target: ListedTarget, sessionId: number, name: string, button: HTMLButtonElement): Promise<boolean> {
  if (target.session_ids.length === 1) {
    const confirmed = await confirmDialog({
      title: `Detach ${target.target_url}?`,
      message: `It is in no other session than “${name}”, so the server deletes it.`,
      confirm: 'Detach and delete',
    });
    if (!confirmed) return false;
  }
  try {
    await busy(button, () => api.detachTarget(sessionId, target.id));
    announce(`Detached ${target.target_url} from “${name}”.`);
  } catch (err) {
    announce(`Could not detach ${target.target_url}: ${describeError(err)}`, 'error');
  }
  return true;
}

/** Deletes one target from every session, after a confirmation; false if the user cancelled. */
export async function deleteOne(target: ListedTarget, button: HTMLButtonElement): Promise<boolean> {
  const holders = target.session_ids.length;
  const confirmed = await confirmDialog({
    title: `Delete target ${target.target_url}?`,
    message: holders > 1 ? `It is removed from all ${holders} sessions that hold it.` : 'It is removed from its session.',
    confirm: 'Delete target',
  });
  if (!confirmed) return false;
  try {
    await busy(button, () => api.deleteTarget(target.id));
    announce(`Deleted ${target.target_url}.`);
  } catch (err) {
    announce(`Could not delete ${target.target_url}: ${describeError(err)}`, 'error');
  }
  return true;
}
