/** /api/v1/targets: the subset of the upstream targets handler that sessions need. */
import type { Router } from '../http/router.js';
import { HttpError, success } from '../http/jsend.js';
import type { Store } from '../store/store.js';
import { getTarget, listTargets } from '../store/targets.js';
import type { Handler, RequestContext } from './context.js';
import { MESSAGES } from './messages.js';
import { boolArg, countArg, listArg, parseId } from './params.js';

const invalidTarget = () => new HttpError(400, MESSAGES.invalidTargetReference);

function targetIdOf(ctx: RequestContext): number | undefined {
  return parseId(ctx.params.target_id);
}

function idList(values: string[] | undefined, name: string): number[] | undefined {
  return values?.map((raw) => {
    const id = parseId(raw);
    if (id === undefined) throw new HttpError(400, MESSAGES.invalidParameterType, { [name]: 'expected an integer' });
    return id;
  });
}

export function registerTargets(router: Router<Handler>, store: Store): void {
  const list: Handler = (ctx) => {
    const [sessionId] = idList(listArg(ctx.args, 'session_id'), 'session_id') ?? [store.state.activeSessionId];
    return success(
      listTargets(store.state, {
        sessionId,
        target_url: listArg(ctx.args, 'target_url'),
        host_name: listArg(ctx.args, 'host_name'),
        host_ip: listArg(ctx.args, 'host_ip'),
        id: idList(listArg(ctx.args, 'id'), 'id'),
        scope: boolArg(ctx.args, 'scope'),
        limit: countArg(ctx.args, 'limit'),
        offset: countArg(ctx.args, 'offset'),
      }),
    );
  };

  const get: Handler = (ctx) => {
    const id = targetIdOf(ctx);
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
    const id = targetIdOf(ctx);
    const result = id === undefined ? undefined : await store.change({ op: 'deleteTarget', id });
    if (!result?.ok) throw invalidTarget();
    return success();
  };

  for (const pattern of ['/api/v1/targets', '/api/v1/targets/{target_id:int}']) {
    const withId = pattern.includes('{');
    router.add('GET', pattern, withId ? get : list);
    router.add(withId ? 'DELETE' : 'POST', pattern, withId ? remove : create);
  }
}
