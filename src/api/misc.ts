/**
 * The upstream misc handlers: progress, the severity panel, the errors of crashed runs.
 * Deviation: they answer in the JSend envelope like every other route.
 */
import { RANK_LABELS } from '../engine/types.js';
import { HttpError, success, successWritten } from '../http/jsend.js';
import { arrayPieces } from '../json-pieces.js';
import { effectiveRank, targetOutputs } from '../store/engine.js';
import type { Store } from '../store/store.js';
import type { Handler } from './context.js';
import { ENGINE_MESSAGES as E, MESSAGES as M } from './messages.js';
import { arrayOf, EMPTY, ref, type ApiRouter } from './openapi.js';
import { idListArg, parseUnsigned } from './params.js';

/** A session's outputs by effective rank, critical first (unranked ones are not counted). */
export function severityCounts(store: Store, sessionId: number): { id: number; label: string; value: number }[] {
  const counts = [0, 0, 0, 0, 0, 0];
  const targets = store.state.sessions.get(sessionId)?.targets ?? new Set<number>();
  for (const target of targets) {
    for (const row of targetOutputs(store.state, target)) {
      const rank = effectiveRank(row);
      if (rank >= 0 && rank <= 5) counts[rank]++;
    }
  }
  return counts.map((value, id) => ({ id, label: RANK_LABELS[id], value })).reverse();
}

export function registerMisc(router: ApiRouter, store: Store): void {
  const progress: Handler = () => {
    // a running output is a work still left, a queued one is not an output yet
    let running = 0;
    for (const row of store.state.outputs.values()) if (row.status === 'Running') running++;
    return success({ complete_count: store.state.outputs.size - running, left_count: store.state.works.size + running });
  };

  const severity: Handler = (ctx) => {
    const sessionId = idListArg(ctx.args, 'session_id')?.[0] ?? store.state.activeSessionId;
    return success({ data: severityCounts(store, sessionId) });
  };

  const errorOf = (raw: string | undefined) => {
    const row = store.state.errors.get(parseUnsigned(raw) ?? -1);
    if (!row) throw new HttpError(400, E.invalidError);
    return row;
  };
  // a row at a time: every crashed run's error (a tool's standard error each) made one string of 151 MB
  const errors: Handler = () =>
    successWritten(
      arrayPieces(
        (function* () {
          for (const row of store.state.errors.values()) yield JSON.stringify(row);
        })(),
      ),
    );
  const error: Handler = (ctx) => success(errorOf(ctx.params.id));
  const patchError: Handler = async (ctx) => {
    const row = errorOf(ctx.params.id);
    const message = ctx.args.get('user_message');
    if (message === null) throw new HttpError(400, M.incorrectQueryParameters, { user_message: 'required' });
    await store.change({ op: 'patchError', id: row.id, message });
    return success();
  };
  const deleteError: Handler = async (ctx) => {
    const row = errorOf(ctx.params.id);
    await store.change({ op: 'deleteError', id: row.id });
    return success();
  };

  router.add('GET', '/api/v1/plugins/progress', progress, {
    summary: 'How far the assessment is: outputs complete, works left (queued plus running)',
    ok: { status: 200, description: 'The counts', data: { type: 'object', required: ['complete_count', 'left_count'], properties: { complete_count: { type: 'integer' }, left_count: { type: 'integer' } } } },
  });
  router.add('GET', '/api/v1/dashboard/severitypanel', severity, {
    summary: "A session's outputs by effective rank (the tester's rank when set, else the engine's)",
    args: { session_id: { type: 'integer', description: 'The session (default: the active one)' } },
    ok: {
      status: 200,
      description: '{"data": [{"id": 5, "label": "Critical", "value": n}, ... {"id": 0, "label": "Passing", ...}]}',
      data: { type: 'object', properties: { data: arrayOf({ type: 'object', properties: { id: { type: 'integer' }, label: { type: 'string' }, value: { type: 'integer' } } }) } },
    },
    fails: { 400: [M.invalidParameterType] },
  });
  router.add('GET', '/api/v1/errors', errors, { summary: 'Runs that crashed or could not start', ok: { status: 200, description: 'The errors', data: arrayOf(ref('RunError')) } });
  router.add('GET', '/api/v1/errors/{id:int}', error, { summary: 'One error', ok: { status: 200, description: 'The error', data: ref('RunError') }, fails: { 400: [E.invalidError] } });
  router.add('PATCH', '/api/v1/errors/{id:int}', patchError, {
    summary: "The tester's message on an error",
    args: { user_message: { type: 'string', required: true, description: 'The message' } },
    ok: { status: 200, description: 'Saved', data: EMPTY },
    fails: { 400: [E.invalidError, M.incorrectQueryParameters] },
  });
  router.add('DELETE', '/api/v1/errors/{id:int}', deleteError, { summary: 'Delete an error', ok: { status: 200, description: 'Deleted', data: EMPTY }, fails: { 400: [E.invalidError] } });
}
