/**
 * Changes to many targets at once, each one op (one durable write): adding a pasted list with a
 * verdict per line, and deleting, attaching or detaching a selection given by ids or by a search.
 */
import { refuse, type Result } from './result.js';
import { addTargetToSession } from './sessions.js';
import type { State } from './state.js';
import { searchTargets } from './target-query.js';
import { attachUrl, deleteTarget, deriveTarget, detachTarget, notOneHost, type URLRules } from './targets.js';

export type AddFailureReason = 'invalid-url' | 'not-one-host' | 'already-in-session' | 'repeated';

export interface AddFailure {
  /** Position of the URL in the request's list, from 0. */
  index: number;
  target_url: string;
  reason: AddFailureReason;
}

export interface AddSummary {
  /** URLs now in the session that were not before. */
  added: number;
  /** Of those, the ones that were not a target of any session yet. */
  created: number;
  failed: AddFailure[];
}

/**
 * Each URL is created if new and attached to the session; unlike `createTargets`, the others go
 * in even when some lines are refused (each refusal says why).
 */
export function addTargetsPartial(state: State, sessionId: number, urls: string[], { oneHost = false, asWritten = false }: URLRules = {}): Result<'unknown-session', AddSummary> {
  const session = state.sessions.get(sessionId);
  if (!session) return refuse('unknown-session');
  const summary: AddSummary = { added: 0, created: 0, failed: [] };
  const seen = new Set<string>();
  urls.forEach((raw, index) => {
    const derived = deriveTarget(0, raw, { asWritten });
    const fail = (reason: AddFailureReason) => void summary.failed.push({ index, target_url: raw, reason });
    if (!derived) return fail('invalid-url');
    if (oneHost && notOneHost(derived.host_name) !== undefined) return fail('not-one-host');
    const url = derived.target_url;
    if (seen.has(url)) return fail('repeated');
    seen.add(url);
    const existing = state.targetIdByUrl.get(url);
    if (existing !== undefined && session.targets?.has(existing)) return fail('already-in-session');
    if (attachUrl(state, sessionId, derived).created) summary.created++;
    summary.added++;
  });
  return { ok: true, ...summary };
}

export type BulkAction = 'delete' | 'attach' | 'detach';

export const BULK_ACTIONS: readonly BulkAction[] = ['delete', 'attach', 'detach'];

/** The targets a bulk change applies to: a list of ids, or every target of a session that matches a search. */
export type BulkSelection = { ids: number[] } | { filter: { session: number; q?: string } };

export interface BulkRequest {
  action: BulkAction;
  /** The session to attach to or detach from (not used by delete). */
  session?: number;
  select: BulkSelection;
}

export interface BulkSummary {
  /** Selected targets that exist. */
  matched: number;
  /** Of those, the ones the action changed (an attach of a target already there changes nothing). */
  changed: number;
  /** Targets deleted: all the changed ones for delete, those left in no session for detach. */
  deleted: number;
  /** Selected ids that name no target. */
  missing: number[];
}

/** The selected ids that exist, each once, and those that do not. Resolved before anything changes. */
function resolveSelection(state: State, select: BulkSelection): { ids: number[]; missing: number[] } {
  if ('filter' in select) {
    const { session, q } = select.filter;
    // copied first: detaching from this very session changes the set being read
    return { ids: searchTargets(state, [...(state.sessions.get(session)!.targets ?? [])], q), missing: [] };
  }
  const ids: number[] = [];
  const missing: number[] = [];
  for (const id of new Set(select.ids)) (state.targets.has(id) ? ids : missing).push(id);
  return { ids, missing };
}

/** Deletes, attaches or detaches the selection; a target that detach leaves in no session is deleted. */
export function bulkTargets(state: State, request: BulkRequest): Result<'unknown-session' | 'unknown-action', BulkSummary> {
  const { action, session, select } = request;
  if (!BULK_ACTIONS.includes(action)) return refuse('unknown-action');
  if ('filter' in select && !state.sessions.has(select.filter.session)) return refuse('unknown-session');
  if (action !== 'delete' && (session === undefined || !state.sessions.has(session))) return refuse('unknown-session');
  const { ids, missing } = resolveSelection(state, select);
  let changed = 0;
  let deleted = 0;
  for (const id of ids) {
    if (action === 'delete') {
      deleteTarget(state, id);
      changed++;
      deleted++;
    } else if (action === 'attach') {
      if (state.sessions.get(session!)!.targets?.has(id)) continue;
      addTargetToSession(state, session!, id);
      changed++;
    } else {
      const row = state.targets.get(id)!;
      if (!row.sessions.has(session!)) continue;
      detachTarget(state, session!, id);
      changed++;
      if (!state.targets.has(id)) deleted++;
    }
  }
  return { ok: true, matched: ids.length, changed, deleted, missing };
}
