/**
 * /api/v1/workers: the workers and what they run (the upstream worker handler). Deviation: a GET
 * never changes anything; pause, resume and abort are PATCHes.
 */
import type { Engine, WorkerAction, WorkerView } from '../engine/scheduler.js';
import { HttpError, success } from '../http/jsend.js';
import type { Handler, RequestContext } from './context.js';
import { ENGINE_MESSAGES as E, MESSAGES as M } from './messages.js';
import { arrayOf, EMPTY, ref, type ApiRouter } from './openapi.js';
import { enumListArg, parseUnsigned } from './params.js';

const ACTIONS = new Set<string>(['pause', 'resume', 'abort']);
const INCLUDES = ['started_at'] as const;
const include = { type: 'string', enum: ['started_at'], repeatable: true, description: 'Extension: started_at adds when the current run began, ISO 8601 (null when idle)' } as const;

export function registerWorkers(router: ApiRouter, engine: Engine): void {
  const invalidWorker = () => new HttpError(400, E.invalidWorker);
  /** Extension: `include=started_at` adds when the current run began, ISO 8601 (`start_time` is the server's local time, without a zone). */
  const withIncludes = (ctx: RequestContext, worker: WorkerView) => {
    if (!enumListArg(ctx.args, 'include', INCLUDES).includes('started_at')) return worker;
    const at = engine.runStartedAt(worker.id);
    return { ...worker, started_at: at === undefined ? null : new Date(at).toISOString() };
  };
  const list: Handler = (ctx) => success(engine.workers().map((w) => withIncludes(ctx, w)));
  const get: Handler = (ctx) => {
    const worker = engine.workers().find((w) => w.id === parseUnsigned(ctx.params.id));
    if (!worker) throw invalidWorker();
    return success(withIncludes(ctx, worker));
  };
  const getWithAction: Handler = () => {
    throw new HttpError(400, M.actionMustBeNone);
  };
  const add: Handler = () => {
    engine.addWorker();
    return success({}, 201);
  };
  const refuseIdOrAction: Handler = () => {
    throw new HttpError(400, E.workerIdAndActionNone);
  };
  const remove: Handler = (ctx) => {
    if (!engine.removeWorker(parseUnsigned(ctx.params.id) ?? -1)) throw invalidWorker();
    return success();
  };
  const needsId: Handler = () => {
    throw invalidWorker();
  };
  const needsAction: Handler = () => {
    throw new HttpError(400, E.actionNone);
  };
  const act: Handler = (ctx) => {
    const id = parseUnsigned(ctx.params.id) ?? -1;
    // another action changes nothing, as on the worklist
    if (!ACTIONS.has(ctx.params.action)) {
      if (id !== 0 && !engine.workers().some((w) => w.id === id)) throw invalidWorker();
      return success();
    }
    if (!engine.act(id, ctx.params.action as WorkerAction)) throw invalidWorker();
    return success();
  };

  router.add('GET', '/api/v1/workers', list, { summary: 'The workers: what each runs, since when, and its program\'s pid', args: { include: { ...include, enum: [...include.enum] } }, ok: { status: 200, description: 'The workers', data: arrayOf(ref('Worker')) } });
  router.add('GET', '/api/v1/workers/{id:int}', get, { summary: 'One worker', args: { include: { ...include, enum: [...include.enum] } }, ok: { status: 200, description: 'The worker', data: ref('Worker') }, fails: { 400: [E.invalidWorker] } });
  router.add('GET', '/api/v1/workers/{id:int}/{action:word}', getWithAction, { summary: 'Refused (deviation): a GET changes nothing; use PATCH', fails: { 400: [M.actionMustBeNone] } });
  // upstream's route takes an optional id, then an optional action: an action alone is answered as its method's other refusals
  router.add('GET', '/api/v1/workers/{action:word}', getWithAction, { summary: 'Refused (deviation): a GET changes nothing', fails: { 400: [M.actionMustBeNone] } });
  router.add('POST', '/api/v1/workers', add, { summary: 'One more worker', ok: { status: 201, description: 'Added', data: EMPTY } });
  router.add('POST', '/api/v1/workers/{id:int}', refuseIdOrAction, { summary: 'Refused: POST takes no id', fails: { 400: [E.workerIdAndActionNone] } });
  router.add('POST', '/api/v1/workers/{action:word}', refuseIdOrAction, { summary: 'Refused: POST takes no action', fails: { 400: [E.workerIdAndActionNone] } });
  router.add('POST', '/api/v1/workers/{id:int}/{action:word}', refuseIdOrAction, { summary: 'Refused: POST takes no id or action', fails: { 400: [E.workerIdAndActionNone] } });
  router.add('DELETE', '/api/v1/workers', needsId, { summary: 'Refused: DELETE needs a worker id', fails: { 400: [E.invalidWorker] } });
  router.add('DELETE', '/api/v1/workers/{id:int}', remove, {
    summary: 'Remove a worker (a busy one: its run is aborted first)',
    ok: { status: 200, description: 'Removed', data: EMPTY },
    fails: { 400: [E.invalidWorker] },
  });
  router.add('DELETE', '/api/v1/workers/{action:word}', needsId, { summary: 'Refused: DELETE needs a worker id', fails: { 400: [E.invalidWorker] } });
  // upstream removes the worker whatever follows its id; here a removal says what it removes, as on the worklist
  router.add('DELETE', '/api/v1/workers/{id:int}/{action:word}', needsAction, { summary: 'Refused: DELETE takes no action', fails: { 400: [E.actionNone] } });
  router.add('PATCH', '/api/v1/workers', needsId, { summary: 'Refused: PATCH needs a worker id', fails: { 400: [E.invalidWorker] } });
  router.add('PATCH', '/api/v1/workers/{action:word}', needsId, { summary: 'Refused: PATCH needs a worker id before its action', fails: { 400: [E.invalidWorker] } });
  router.add('PATCH', '/api/v1/workers/{id:int}', needsAction, { summary: 'Refused: PATCH needs an action', fails: { 400: [E.actionNone] } });
  router.add('PATCH', '/api/v1/workers/{id:int}/{action:word}', act, {
    summary: 'pause (SIGSTOP to the program\'s process group; no new work), resume (SIGCONT), abort (SIGTERM, SIGKILL after 5 s; saved as Aborted); id 0: every worker',
    ok: { status: 200, description: 'Done', data: EMPTY },
    fails: { 400: [E.invalidWorker] },
  });
}
