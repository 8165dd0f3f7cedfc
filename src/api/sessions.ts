/** /api/v1/sessions: the upstream framework's session handler, its checks in the contract's order. */
import { HttpError, success } from '../http/jsend.js';
import { getSession, listSessions } from '../store/sessions.js';
import type { Store } from '../store/store.js';
import { replyPerGeneration } from './cache.js';
import type { Handler, RequestContext } from './context.js';
import { MESSAGES } from './messages.js';
import { arrayOf, EMPTY, ref, type ApiRouter, type RouteDoc } from './openapi.js';
import { boolArg, parseUnsigned } from './params.js';

const [LIST, ONE, ACTION, ONE_ACTION] = [
  '/api/v1/sessions',
  '/api/v1/sessions/{session_id:int}',
  '/api/v1/sessions/{action:word}',
  '/api/v1/sessions/{session_id:int}/{action:word}',
];
const M = MESSAGES;
const refused = (summary: string, ...messages: string[]): RouteDoc => ({ summary, fails: { 400: messages } });

/** The upstream handler answers every pattern for every method; each (method, pattern) documents its own answers. */
const DOCS: Record<string, Record<string, RouteDoc>> = {
  GET: {
    [LIST]: {
      summary: 'List the sessions, ordered by id',
      args: { active: { type: 'boolean', description: 'Only the active session (true|1|yes) or the others (false|0|no)' } },
      ok: { status: 200, description: 'The sessions', data: arrayOf(ref('Session')) },
      fails: { 400: [M.invalidParameterType] },
    },
    [ONE]: { summary: 'One session', ok: { status: 200, description: 'The session', data: ref('Session') }, fails: { 400: [M.invalidSessionId] } },
    [ACTION]: refused('A GET with an action is refused', M.actionMustBeNone),
    [ONE_ACTION]: refused('A GET with an action is refused', M.actionMustBeNone),
  },
  POST: {
    [LIST]: {
      summary: 'Create a session; it becomes the active one',
      args: { name: { type: 'string', required: true, description: 'Unique, 1 to 255 characters after trimming' } },
      ok: { status: 201, description: 'Created', data: EMPTY },
      fails: { 400: [M.incorrectQueryParameters], 409: [M.dbError] },
    },
    [ONE]: refused('A POST with a session id is refused', M.incorrectQueryParameters),
    [ACTION]: refused('A POST with an action is refused', M.incorrectQueryParameters),
    [ONE_ACTION]: refused('A POST with a session id and an action is refused', M.incorrectQueryParameters),
  },
  PATCH: {
    [LIST]: refused('A PATCH without a session id is refused', M.incorrectQueryParameters),
    [ONE]: { summary: 'A PATCH without an action changes nothing', ok: { status: 200, description: 'Nothing changed', data: EMPTY } },
    [ACTION]: refused('A PATCH without a session id is refused', M.incorrectQueryParameters),
    [ONE_ACTION]: {
      summary: 'activate the session, or add / remove a target (another action changes nothing)',
      description: 'remove leaves a target in no session: it is deleted. add of a target already in the session changes nothing.',
      args: { target_id: { type: 'integer', description: 'Required by add and remove: the target' } },
      ok: { status: 200, description: 'Done (or an unknown action: nothing changed)', data: EMPTY },
      fails: { 400: [M.incorrectQueryParameters, M.invalidParameterType, M.invalidTargetReference] },
    },
  },
  DELETE: {
    [LIST]: refused('A DELETE without a session id is refused', M.incorrectQueryParameters),
    [ONE]: {
      summary: 'Delete a session',
      description: 'Its targets are detached; those left in no session are deleted. Deleting the active session activates the remaining one with the highest id; deleting the last re-creates "default session".',
      ok: { status: 200, description: 'Deleted', data: EMPTY },
      fails: { 400: [M.invalidSessionId] },
    },
    [ACTION]: refused('A DELETE with an action is refused', M.incorrectQueryParameters),
    [ONE_ACTION]: refused('A DELETE with an action is refused', M.incorrectQueryParameters),
  },
};

const incorrect = (data?: Record<string, string>) => new HttpError(400, MESSAGES.incorrectQueryParameters, data);

/** The path's session id: `null` when the path has none, `undefined` when it names no possible session. */
function sessionIdOf(ctx: RequestContext): number | null | undefined {
  return ctx.params.session_id === undefined ? null : parseUnsigned(ctx.params.session_id);
}

export function registerSessions(router: ApiRouter, store: Store): void {
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

  const handlers: Record<string, Handler> = { GET: get, POST: post, PATCH: patch, DELETE: remove };
  for (const pattern of [LIST, ONE, ACTION, ONE_ACTION]) {
    for (const method of Object.keys(handlers)) router.add(method, pattern, handlers[method], DOCS[method][pattern]);
  }
}
