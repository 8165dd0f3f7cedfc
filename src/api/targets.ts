/** /api/v1/targets: the subset of the upstream targets handler that sessions need. */
import type { Router } from '../http/router.js';
import { HttpError, success } from '../http/jsend.js';
import type { Store } from '../store/store.js';
import { getTarget, listTargets } from '../store/targets.js';
import type { Handler } from './context.js';
import { MESSAGES } from './messages.js';
import { boolArg, countArg, listArg, parseUnsigned } from './params.js';
import { formatArg, targetListReply } from './target-formats.js';

const invalidTarget = () => new HttpError(400, MESSAGES.invalidTargetReference);

function idList(values: string[] | undefined, name: string): number[] | undefined {
  return values?.map((raw) => {
    const id = parseUnsigned(raw);
    if (id === undefined) throw new HttpError(400, MESSAGES.invalidParameterType, { [name]: 'expected an integer' });
    return id;
  });
}

export function registerTargets(router: Router<Handler>, store: Store): void {
  const list: Handler = (ctx) => {
    const [sessionId] = idList(listArg(ctx.args, 'session_id'), 'session_id') ?? [store.state.activeSessionId];
    const format = formatArg(ctx.args);
    return targetListReply(
      format,
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
      store.state.sessions.get(sessionId)?.name,
      sessionId,
    );
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
