/** /api/v1/sessions: the upstream framework's session handler, its checks in the contract's order. */
import type { Router } from '../http/router.js';
import { HttpError, success } from '../http/jsend.js';
import { getSession, listSessions } from '../store/sessions.js';
import type { Store } from '../store/store.js';
import { replyPerGeneration } from './cache.js';
import type { Handler, RequestContext } from './context.js';
import { MESSAGES } from './messages.js';
import { boolArg, parseUnsigned } from './params.js';

const PATTERNS = [
  '/api/v1/sessions',
  '/api/v1/sessions/{session_id:int}',
  '/api/v1/sessions/{action:word}',
  '/api/v1/sessions/{session_id:int}/{action:word}',
];

const incorrect = (data?: Record<string, string>) => new HttpError(400, MESSAGES.incorrectQueryParameters, data);

/** The path's session id: `null` when the path has none, `undefined` when it names no possible session. */
function sessionIdOf(ctx: RequestContext): number | null | undefined {
  return ctx.params.session_id === undefined ? null : parseUnsigned(ctx.params.session_id);
}

export function registerSessions(router: Router<Handler>, store: Store): void {
  const allSessions = replyPerGeneration(store, () => listSessions(store.state));

  const get: Handler = (ctx) => {
    if (ctx.params.action !== undefined) throw new HttpError(400, MESSAGES.actionMustBeNone);
    const id = sessionIdOf(ctx);
    if (id !== null) {
      const session = id === undefined ? undefined : getSession(store.state, id);
      if (!session) throw new HttpError(400, MESSAGES.invalidSessionId);
      return success(session);
    }
    const active = boolArg(ctx.args, 'active');
    if (active === undefined) return allSessions();
    return success(listSessions(store.state, active));
  };

  const post: Handler = async (ctx) => {
    if (ctx.params.session_id !== undefined || ctx.params.action !== undefined) throw incorrect();
    const name = ctx.args.get('name');
    if (name === null) throw incorrect({ name: 'required' });
    const result = await store.change({ op: 'createSession', name, at: Date.now() });
    if (!result.ok) {
      if (result.reason === 'duplicate-name') throw new HttpError(409, MESSAGES.dbError, { name: 'already exists' });
      throw incorrect({ name: 'must be 1 to 255 characters' });
    }
    return success({}, 201);
  };

  const patch: Handler = async (ctx) => {
    const id = sessionIdOf(ctx);
    if (id === null) throw incorrect();
    const action = ctx.params.action;
    const rawTarget = ctx.args.get('target_id');
    const needsTarget = action === 'add' || action === 'remove';
    if (needsTarget && !rawTarget) throw incorrect({ target_id: 'required' });
    if (action !== 'activate' && !needsTarget) return success();
    if (id === undefined || !store.state.sessions.has(id)) throw new HttpError(400, MESSAGES.invalidParameterType);
    if (action === 'activate') {
      await store.change({ op: 'activateSession', id });
      return success();
    }
    const targetId = parseUnsigned(rawTarget);
    if (targetId === undefined) throw new HttpError(400, MESSAGES.invalidTargetReference);
    const result = await store.change({ op: action === 'add' ? 'addTarget' : 'removeTarget', session: id, target: targetId });
    if (!result.ok) {
      throw new HttpError(400, result.reason === 'unknown-session' ? MESSAGES.invalidParameterType : MESSAGES.invalidTargetReference);
    }
    return success();
  };

  const remove: Handler = async (ctx) => {
    const id = sessionIdOf(ctx);
    if (id === null || ctx.params.action !== undefined) throw incorrect();
    const result = id === undefined ? undefined : await store.change({ op: 'deleteSession', id, at: Date.now() });
    if (!result?.ok) throw new HttpError(400, MESSAGES.invalidSessionId);
    return success();
  };

  for (const pattern of PATTERNS) {
    router.add('GET', pattern, get);
    router.add('POST', pattern, post);
    router.add('PATCH', pattern, patch);
    router.add('DELETE', pattern, remove);
  }
}
