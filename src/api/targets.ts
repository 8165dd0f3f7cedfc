/** /api/v1/targets: the subset of the upstream targets handler that sessions need. */
import type { Router } from '../http/router.js';
import { HttpError, success } from '../http/jsend.js';
import type { Store } from '../store/store.js';
import { normalizeQ, orderSessionTargets, queryTargets, searchTargets, TARGET_SORTS } from '../store/target-query.js';
import { getTarget } from '../store/targets.js';
import { memoPerGeneration } from './cache.js';
import type { Handler } from './context.js';
import { MESSAGES } from './messages.js';
import { boolArg, countArg, enumArg, enumListArg, idListArg, listArg, parseUnsigned } from './params.js';

const invalidTarget = () => new HttpError(400, MESSAGES.invalidTargetReference);

/** Extensions: `include=sessions` adds to each target the ids of the sessions that hold it. */
const INCLUDES = ['sessions'] as const;

export function registerTargets(router: Router<Handler>, store: Store): void {
  // A page of a large session must not sort it again: its order, searched, kept until the next change.
  const searched = memoPerGeneration<number[]>(store, 16);

  const list: Handler = (ctx) => {
    const sessionId = idListArg(ctx.args, 'session_id')?.[0] ?? store.state.activeSessionId;
    const sort = enumArg(ctx.args, 'sort', TARGET_SORTS) ?? 'newest';
    const q = normalizeQ(ctx.args.get('q') ?? undefined);
    const include = new Set(enumListArg(ctx.args, 'include', INCLUDES));
    const query = {
      sessionId,
      target_url: listArg(ctx.args, 'target_url'),
      host_name: listArg(ctx.args, 'host_name'),
      host_ip: listArg(ctx.args, 'host_ip'),
      id: idListArg(ctx.args, 'id'),
      scope: boolArg(ctx.args, 'scope'),
      limit: countArg(ctx.args, 'limit'),
      offset: countArg(ctx.args, 'offset'),
    };
    const state = store.state;
    const ids = state.sessions.has(sessionId)
      ? searched(JSON.stringify([sessionId, sort, q]), () => searchTargets(state, orderSessionTargets(state, sessionId, sort), q))
      : [];
    const { total, page } = queryTargets(state, query, ids);
    const data = include.has('sessions')
      ? page.map((target) => ({ ...target, session_ids: [...state.targets.get(target.id)!.sessions].sort((a, b) => a - b) }))
      : page;
    return { ...success(data), headers: { 'X-Total-Count': String(total) } };
  };

  const get: Handler = (ctx) => {
    const id = parseUnsigned(ctx.params.target_id);
    const target = id === undefined ? undefined : getTarget(store.state, id);
    if (!target) throw invalidTarget();
    return success(target);
  };

  const create: Handler = async (ctx) => {
    const urls = ctx.args.getAll('target_url');
    if (urls.length === 0) throw new HttpError(400, MESSAGES.incorrectQueryParameters, { target_url: 'required' });
    const result = await store.change({ op: 'createTargets', urls });
    if (!result.ok) {
      if (result.reason === 'duplicate') throw new HttpError(409, MESSAGES.dbError, { target_url: 'already in the active session' });
      throw new HttpError(400, MESSAGES.invalidTargetUrl, { target_url: 'must be an absolute http or https URL' });
    }
    return success({}, 201);
  };

  const remove: Handler = async (ctx) => {
    const id = parseUnsigned(ctx.params.target_id);
    const result = id === undefined ? undefined : await store.change({ op: 'deleteTarget', id });
    if (!result?.ok) throw invalidTarget();
    return success();
  };

  router.add('GET', '/api/v1/targets', list);
  router.add('POST', '/api/v1/targets', create);
  router.add('GET', '/api/v1/targets/{target_id:int}', get);
  router.add('DELETE', '/api/v1/targets/{target_id:int}', remove);
}
