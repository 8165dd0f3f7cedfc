/**
 * POST /api/v1/targets/bulk (extension): add a pasted list to a session, line by line, or delete,
 * attach or detach a selection (ids, or every target of a session matching a search) in one
 * durable write, answered with one summary.
 */
import { HttpError, success } from '../http/jsend.js';
import { BULK_ACTIONS, type BulkAction, type BulkSelection } from '../store/bulk.js';
import type { Store } from '../store/store.js';
import type { Args } from '../http/args.js';
import { ADD_FAILURE_REASONS, MESSAGES } from './messages.js';
import type { ApiRouter } from './openapi.js';
import { idArg, idListArg } from './params.js';

const ACTIONS = ['add', ...BULK_ACTIONS] as const;
type Action = (typeof ACTIONS)[number];

const incorrect = (data: Record<string, string>) => new HttpError(400, MESSAGES.incorrectQueryParameters, data);

function actionOf(args: Args): Action {
  const action = args.get('action');
  if (action === null || !(ACTIONS as readonly string[]).includes(action)) {
    throw incorrect({ action: `required: ${ACTIONS.join(', ')}` });
  }
  return action as Action;
}

/** `target_id` (repeatable) or `filter_session_id` with an optional `q`: exactly one of the two. */
function selectionOf(args: Args): BulkSelection {
  const byIds = args.has('target_id');
  const byFilter = args.has('filter_session_id');
  if (!byIds && !byFilter) throw incorrect({ target_id: 'required (repeatable), or filter_session_id' });
  if (byIds && byFilter) throw incorrect({ target_id: 'give target_id or filter_session_id, not both' });
  if (byIds) return { ids: idListArg(args, 'target_id')! };
  const q = args.get('q');
  return { filter: { session: idArg(args, 'filter_session_id')!, ...(q === null ? {} : { q }) } };
}

export function registerBulk(router: ApiRouter, store: Store): void {
  const unknownSession = () => new HttpError(400, MESSAGES.invalidSessionId);
  const known = (id: number | undefined) => id === undefined || store.state.sessions.has(id);

  async function add(args: Args) {
    const urls = args.getAll('target_url');
    if (urls.length === 0) throw incorrect({ target_url: 'required' });
    const session = idArg(args, 'session_id') ?? store.state.activeSessionId;
    if (!known(session)) throw unknownSession();
    const result = await store.change({ op: 'addTargetsPartial', session, urls, oneHost: true, asWritten: true });
    if (!result.ok) throw unknownSession();
    const failed = result.failed.map((f) => ({ index: f.index, target_url: f.target_url, reason: ADD_FAILURE_REASONS[f.reason] }));
    return success({ session_id: session, added: result.added, created: result.created, failed });
  }

  async function change(action: BulkAction, args: Args) {
    const select = selectionOf(args);
    const session = idArg(args, 'session_id');
    if (action !== 'delete' && session === undefined) throw incorrect({ session_id: `required to ${action}` });
    if (!known(session) || ('filter' in select && !known(select.filter.session))) throw unknownSession();
    const request = { action, select, ...(action === 'delete' ? {} : { session }) };
    const result = await store.change({ op: 'bulkTargets', ...request });
    if (!result.ok) throw unknownSession();
    return success({ matched: result.matched, changed: result.changed, deleted: result.deleted, missing: result.missing });
  }

  const integer = { type: 'integer' };
  router.add('POST', '/api/v1/targets/bulk', (ctx) => {
    const action = actionOf(ctx.args);
    return action === 'add' ? add(ctx.args) : change(action, ctx.args);
  }, {
    summary: 'Many targets in one durable change (extension): add a pasted list line by line, or delete, attach or detach a selection',
    description:
      'add: creates each new URL and attaches it to the session (default: the active one), partially: refused lines come back with their index and reason. ' +
      'delete, attach, detach: the selection is target_id (repeatable) or every target of filter_session_id matching q. A target detach leaves in no session is deleted.',
    args: {
      action: { type: 'string', required: true, enum: [...ACTIONS], description: 'What to do' },
      target_url: { type: 'string', repeatable: true, description: 'add: the URLs, one per value' },
      session_id: { type: 'integer', description: 'add: the session to add to (default: the active one); attach / detach: the session (required)' },
      target_id: { type: 'integer', repeatable: true, description: 'delete / attach / detach: the targets' },
      filter_session_id: { type: 'integer', description: 'delete / attach / detach: instead of target_id, every target of this session...' },
      q: { type: 'string', description: '...whose URL, host or IP contains this' },
    },
    ok: {
      status: 200,
      description: 'One summary: for add, session_id, added, created and the failed lines; otherwise matched, changed, deleted and the missing ids',
      data: {
        type: 'object',
        properties: {
          session_id: integer, added: integer, created: integer, matched: integer, changed: integer, deleted: integer,
          failed: { type: 'array', items: { type: 'object', properties: { index: integer, target_url: { type: 'string' }, reason: { enum: Object.values(ADD_FAILURE_REASONS) } } } },
          missing: { type: 'array', items: integer },
        },
      },
    },
    fails: { 400: [MESSAGES.incorrectQueryParameters, MESSAGES.invalidSessionId, MESSAGES.invalidParameterType] },
  });
}
