/** /api/v1/worklist: queued runs (the upstream worklist handler), queued as one durable change. */
import { pluginOrStandIn } from '../engine/catalogue.js';
import type { Engine } from '../engine/scheduler.js';
import type { Plugin } from '../engine/types.js';
import type { Args } from '../http/args.js';
import { HttpError, success } from '../http/jsend.js';
import type { Store } from '../store/store.js';
import { targetFilter } from '../store/target-query.js';
import type { Target, WorkRow } from '../store/state.js';
import type { Handler } from './context.js';
import { ENGINE_MESSAGES as E, MESSAGES as M } from './messages.js';
import { arrayOf, EMPTY, ref, type ApiRouter } from './openapi.js';
import { boolArg, countArg, listArg, parseUnsigned } from './params.js';
import { pluginFilter } from './plugins.js';

export interface WorkView {
  id: number;
  active: boolean;
  target: Target;
  plugin: Plugin;
}

interface WorkFilter {
  target_url?: string[];
  group?: string[];
  type?: string[];
  code?: string[];
  active?: boolean;
}

/** The search's filters: substrings, without regard to case (upstream's SQL `LIKE '%v%'`), each any-of. */
interface WorkSearch {
  target_url?: string[];
  group?: string[];
  type?: string[];
  code?: string[];
  name?: string[];
  /** Target ids, exact. */
  id?: number[];
}

/** Whether `value` holds one of `needles` (lowercase), without regard to case; no needles: yes. */
const holdsOne = (value: string, needles: string[] | undefined) => needles === undefined || needles.some((n) => value.toLowerCase().includes(n));
const lowered = (values: string[] | undefined) => values?.map((v) => v.toLowerCase());

/** What a queue answer says of the pairs it skipped, and how to run them again. */
function skippedMessage(skipped: number, ran: number): string | undefined {
  if (skipped === 0) return undefined;
  const waiting = skipped - ran;
  const parts = [
    waiting > 0 ? `${waiting} already queued or running` : '',
    ran > 0 ? `${ran} already ran: send force_overwrite=true to run ${ran === 1 ? 'it' : 'them'} again (the new output replaces the old)` : '',
  ];
  return `Skipped ${parts.filter(Boolean).join('; ')}.`;
}

export function registerWorklist(router: ApiRouter, store: Store, engine: Engine): void {
  const { catalogue } = engine;
  const pluginOf = (key: string): Plugin => pluginOrStandIn(catalogue, key);
  const view = (w: WorkRow): WorkView => ({ id: w.id, active: w.active, target: store.state.targets.get(w.target)!.target, plugin: pluginOf(w.plugin) });

  function matching(filter: WorkFilter): WorkRow[] {
    const urls = filter.target_url && new Set(filter.target_url);
    const rows: WorkRow[] = [];
    for (const w of store.state.works.values()) {
      if (filter.active !== undefined && w.active !== filter.active) continue;
      if (urls && !urls.has(store.state.targets.get(w.target)!.target.target_url)) continue;
      if (filter.group || filter.type || filter.code) {
        const p = pluginOf(w.plugin);
        if (filter.group && !filter.group.includes(p.group)) continue;
        if (filter.type && !filter.type.includes(p.type)) continue;
        if (filter.code && !filter.code.includes(p.code)) continue;
      }
      rows.push(w);
    }
    return rows;
  }

  const list: Handler = (ctx) =>
    success(
      matching({ target_url: listArg(ctx.args, 'target_url'), ...pluginFilter(ctx.args), active: boolArg(ctx.args, 'active') }).map(view),
    );

  const get: Handler = (ctx) => {
    const work = store.state.works.get(parseUnsigned(ctx.params.id) ?? -1);
    if (!work) throw new HttpError(400, E.invalidWorker);
    return success(view(work));
  };

  function searching(filter: WorkSearch): WorkRow[] {
    const [urls, groups, types, codes, names] = [filter.target_url, filter.group, filter.type, filter.code, filter.name].map(lowered);
    const ids = filter.id && new Set(filter.id);
    const rows: WorkRow[] = [];
    for (const w of store.state.works.values()) {
      if (ids && !ids.has(w.target)) continue;
      if (!holdsOne(store.state.targets.get(w.target)!.target.target_url, urls)) continue;
      if (groups || types || codes || names) {
        const p = pluginOf(w.plugin);
        if (!holdsOne(p.group, groups) || !holdsOne(p.type, types) || !holdsOne(p.code, codes) || !holdsOne(p.name, names)) continue;
      }
      rows.push(w);
    }
    return rows;
  }

  /** A filter's values under its name or upstream's (both any-of); none: undefined. */
  const either = (args: Args, ...names: string[]) => {
    const values = names.flatMap((n) => listArg(args, n) ?? []);
    return values.length > 0 ? values : undefined;
  };

  const search: Handler = (ctx) => {
    const limit = countArg(ctx.args, 'limit');
    const offset = countArg(ctx.args, 'offset') ?? 0;
    const ids = listArg(ctx.args, 'id')?.flatMap((v) => v.split(',')).map((raw) => {
      const id = parseUnsigned(raw.trim());
      if (id === undefined) throw new HttpError(400, M.invalidParameterType, { id: `${JSON.stringify(raw)} is not a target id` });
      return id;
    });
    const rows = searching({
      target_url: either(ctx.args, 'target_url'),
      group: either(ctx.args, 'plugin_group', 'group'),
      type: either(ctx.args, 'plugin_type', 'type'),
      code: either(ctx.args, 'plugin_code', 'code'),
      name: either(ctx.args, 'plugin_name', 'name'),
      ...(ids ? { id: ids } : {}),
    });
    const page = rows.slice(offset, limit === undefined ? undefined : offset + limit);
    return success({ records_total: store.state.works.size, records_filtered: rows.length, data: page.map(view) });
  };

  /** A plugin's code given as its name (upstream's name_to_code: a value no plugin has as its code) -> that code. */
  function codeOrName(value: string): string {
    const lower = value.toLowerCase();
    if (catalogue.plugins.some((p) => p.code.toLowerCase() === lower)) return value;
    return catalogue.plugins.find((p) => p.name.toLowerCase() === lower)?.code ?? value;
  }

  /** The arguments, or those packed in `plugin_data` (a form-encoded string, as the upstream client sends them). */
  function queueArgs(args: Args): Args {
    const packed = args.get('plugin_data');
    return packed === null ? args : new URLSearchParams(packed);
  }

  const queue: Handler = async (ctx) => {
    const args = queueArgs(ctx.args);
    // in the query only: the answer's extension, which an upstream client never asks for
    const details = boolArg(ctx.query, 'details') ?? false;
    if ([...args.keys()].filter((key) => key !== 'details').length === 0) throw new HttpError(400, E.argumentsNull);
    const targets: number[] = [];
    for (const raw of args.getAll('id').flatMap((v) => v.split(','))) {
      const id = parseUnsigned(raw);
      if (id === undefined || !store.state.targets.has(id)) throw new HttpError(400, M.invalidTargetReference, { id: `${JSON.stringify(raw)} is not a target id` });
      targets.push(id);
    }
    const force = boolArg(args, 'force_overwrite') ?? false;
    // read with force_overwrite, before the lists are checked: a bad value is a bad value first
    const matches = targetFilter({ target_url: listArg(args, 'target_url'), host_name: listArg(args, 'host_name'), host_ip: listArg(args, 'host_ip'), scope: boolArg(args, 'scope') });
    // upstream's four filters, or the search's names for them: a filter a POST names is never dropped (which would queue every plugin)
    const plugins = catalogue.filter({
      group: either(args, 'group', 'plugin_group'),
      type: either(args, 'type', 'plugin_type'),
      code: either(args, 'code', 'plugin_code')?.map(codeOrName),
      name: either(args, 'name', 'plugin_name'),
    });
    if (plugins.length === 0) throw new HttpError(400, E.pluginListEmpty);
    // upstream's target filters narrow the targets named (never widen them: no id, no target)
    const chosen = matches ? targets.filter((id) => matches(store.state.targets.get(id)!.target)) : targets;
    if (chosen.length === 0) throw new HttpError(400, E.targetListEmpty);
    const result = await store.change({ op: 'queueWorks', targets: chosen, plugins: plugins.map((p) => p.key), force });
    // a target deleted between the check and now
    if (!result.ok) throw new HttpError(400, M.invalidTargetReference);
    engine.kick();
    // upstream's answer is exactly {"queued": n} (an extension never changes it): the rest on request
    if (!details) return success({ queued: result.queued }, 201);
    const message = skippedMessage(result.skipped, result.ran);
    return success({ queued: result.queued, skipped: result.skipped, ...(message ? { message } : {}) }, 201);
  };

  const idAndActionMustBeNone: Handler = () => {
    throw new HttpError(400, E.workerIdAndActionNone);
  };
  const workIdRequired: Handler = () => {
    throw new HttpError(400, E.workIdNone);
  };
  const actionMustBeNone: Handler = () => {
    throw new HttpError(400, E.actionNone);
  };

  const patch: Handler = async (ctx) => {
    const id = parseUnsigned(ctx.params.id)!;
    const action = ctx.params.action;
    // another action changes nothing (upstream answers it so)
    if (action !== 'pause' && action !== 'resume') return success();
    const result = await store.change({ op: 'setWorkActive', id, active: action === 'resume' });
    if (!result.ok) throw new HttpError(400, E.invalidWorker);
    if (action === 'resume') engine.kick();
    return success();
  };

  const remove: Handler = async (ctx) => {
    const result = await store.change({ op: 'deleteWork', id: parseUnsigned(ctx.params.id)! });
    if (!result.ok) throw new HttpError(400, E.invalidWorker);
    return success();
  };

  const filters = {
    target_url: { type: 'string', repeatable: true, description: 'Only works on this target URL (repeatable)' },
    group: { type: 'string', repeatable: true, description: 'Only works of plugins of this group (repeatable)' },
    type: { type: 'string', repeatable: true, description: 'Only works of plugins of this type (repeatable)' },
    code: { type: 'string', repeatable: true, description: 'Only works of plugins of this code (repeatable)' },
  } as const;
  const theList = {
    args: { ...filters, active: { type: 'boolean', description: 'Only active (or only paused) works' } },
    ok: { status: 200, description: 'The queued works', data: arrayOf(ref('Work')) },
    fails: { 400: [M.invalidParameterType] },
  } as const;
  const oneWork = { ok: { status: 200, description: 'The work', data: ref('Work') }, fails: { 400: [E.invalidWorker] } } as const;
  router.add('GET', '/api/v1/worklist', list, { summary: 'The worklist, in queue order (oldest first; a paused work is passed over)', ...theList });
  const part = (what: string) => ({ type: 'string', repeatable: true, description: `Only works whose ${what} holds this text, in any case (repeatable: any of)` }) as const;
  router.add('GET', '/api/v1/worklist/search', search, {
    summary: 'A page of the worklist, with its totals; filters match substrings without regard to case, as upstream\'s SQL LIKE',
    args: {
      limit: { type: 'integer', description: 'At most this many' },
      offset: { type: 'integer', description: 'Skip this many first' },
      target_url: part('target URL'),
      plugin_group: part('plugin group'),
      plugin_type: part('plugin type'),
      plugin_code: part('plugin code'),
      plugin_name: part('plugin name'),
      group: part('plugin group (upstream\'s name of plugin_group)'),
      type: part('plugin type (upstream\'s name of plugin_type)'),
      code: part('plugin code'),
      name: part('plugin name (upstream\'s name)'),
      id: { type: 'string', repeatable: true, description: 'Only works on these target ids: repeated, or comma-separated' },
    },
    ok: {
      status: 200,
      description: 'records_total: every queued work; records_filtered: those matching; data: the page',
      data: { type: 'object', required: ['records_total', 'records_filtered', 'data'], properties: { records_total: { type: 'integer' }, records_filtered: { type: 'integer' }, data: arrayOf(ref('Work')) } },
    },
    fails: { 400: [M.invalidParameterType] },
  });
  router.add('GET', '/api/v1/worklist/{id:int}', get, { summary: 'One queued work', ...oneWork });
  // upstream's GET reads the id and ignores an action after it: with one, the work; with an action alone, the list
  router.add('GET', '/api/v1/worklist/{id:int}/{action:word}', get, { summary: 'One queued work, as without the action (upstream\'s route; a GET changes nothing)', ...oneWork });
  router.add('GET', '/api/v1/worklist/{action:word}', list, { summary: 'The worklist, as without the action (upstream\'s route; a GET changes nothing)', ...theList });
  router.add('POST', '/api/v1/worklist', queue, {
    summary: 'Queue every matching plugin for every named target, as one durable change',
    description: 'A pair already queued, or (without force_overwrite=true) already run, is skipped. The arguments may also come packed in one argument, plugin_data, a form-encoded string (as the upstream client sends them).',
    args: {
      id: { type: 'string', required: true, repeatable: true, description: 'Target ids: repeated, or comma-separated' },
      group: { type: 'string', repeatable: true, description: 'Only plugins of this group (repeatable; also plugin_group)' },
      type: { type: 'string', repeatable: true, description: 'Only plugins of this type (repeatable; also plugin_type)' },
      code: { type: 'string', repeatable: true, description: "Only plugins of this code, or of the code of a plugin of this name, as upstream (repeatable, any case; also plugin_code)" },
      name: { type: 'string', repeatable: true, description: 'Only plugins of this name (repeatable, any case; also plugin_name)' },
      target_url: { type: 'string', repeatable: true, description: 'Only the targets named by id that have this URL (repeatable)' },
      host_name: { type: 'string', repeatable: true, description: 'Only the targets named by id on this host name (repeatable)' },
      host_ip: { type: 'string', repeatable: true, description: 'Only the targets named by id at this address (repeatable)' },
      scope: { type: 'boolean', description: 'Only the targets named by id in scope (true) or out of it (false)' },
      force_overwrite: { type: 'boolean', description: 'Queue again plugins that already ran on the target (their output is replaced)' },
      plugin_data: { type: 'string', description: 'All of the above, form-encoded in one argument' },
      details: { type: 'boolean', description: 'In the query string (extension): the answer also says how many pairs were skipped, and why' },
    },
    ok: {
      status: 201,
      description: 'How many works were queued; with details=true, also how many pairs asked for were skipped (already queued or running, or already run: `message` says which, and that force_overwrite=true runs those again)',
      data: {
        type: 'object',
        required: ['queued'],
        additionalProperties: false,
        properties: { queued: { type: 'integer' }, skipped: { type: 'integer' }, message: { type: 'string', description: 'Present when pairs were skipped' } },
      },
    },
    fails: { 400: [E.argumentsNull, M.invalidTargetReference, M.invalidParameterType, E.pluginListEmpty, E.targetListEmpty] },
  });
  router.add('POST', '/api/v1/worklist/{id:int}', idAndActionMustBeNone, { summary: 'Refused: POST takes no id', fails: { 400: [E.workerIdAndActionNone] } });
  router.add('POST', '/api/v1/worklist/{action:word}', idAndActionMustBeNone, { summary: 'Refused: POST takes no action', fails: { 400: [E.workerIdAndActionNone] } });
  router.add('POST', '/api/v1/worklist/{id:int}/{action:word}', idAndActionMustBeNone, { summary: 'Refused: POST takes no id or action', fails: { 400: [E.workerIdAndActionNone] } });
  router.add('PATCH', '/api/v1/worklist', workIdRequired, { summary: 'Refused: PATCH needs a work id', fails: { 400: [E.workIdNone] } });
  // upstream's route takes the id as optional before the action: an action alone names no work
  router.add('PATCH', '/api/v1/worklist/{action:word}', workIdRequired, { summary: 'Refused: PATCH needs a work id before its action', fails: { 400: [E.workIdNone] } });
  router.add('PATCH', '/api/v1/worklist/{id:int}', actionMustBeNone, { summary: 'Refused: PATCH needs an action (pause or resume)', fails: { 400: [E.actionNone] } });
  router.add('PATCH', '/api/v1/worklist/{id:int}/{action:word}', patch, {
    summary: 'Pause or resume a work (id 0: every work); another action changes nothing',
    ok: { status: 200, description: 'Done', data: EMPTY },
    fails: { 400: [E.invalidWorker] },
  });
  router.add('DELETE', '/api/v1/worklist', workIdRequired, { summary: 'Refused: DELETE needs a work id', fails: { 400: [E.workIdNone] } });
  router.add('DELETE', '/api/v1/worklist/{id:int}', remove, {
    summary: 'Delete a queued work (id 0: every queued work)',
    ok: { status: 200, description: 'Deleted', data: EMPTY },
    fails: { 400: [E.invalidWorker] },
  });
  router.add('DELETE', '/api/v1/worklist/{action:word}', workIdRequired, { summary: 'Refused: DELETE needs a work id', fails: { 400: [E.workIdNone] } });
  router.add('DELETE', '/api/v1/worklist/{id:int}/{action:word}', actionMustBeNone, { summary: 'Refused: DELETE takes no action', fails: { 400: [E.actionNone] } });
}
