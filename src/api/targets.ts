/** /api/v1/targets: the upstream targets handler, with the list's extensions (search, order, sessions, total, text and CSV). */
import { HttpError, success } from '../http/jsend.js';
import type { Store } from '../store/store.js';
import { normalizeQ, orderSessionTargets, queryTargets, searchTargets, TARGET_SORTS } from '../store/target-query.js';
import { deriveTarget, getTarget, notOneHost } from '../store/targets.js';
import { memoPerGeneration } from './cache.js';
import type { Handler } from './context.js';
import { MESSAGES } from './messages.js';
import { arrayOf, EMPTY, ref, type ApiRouter } from './openapi.js';
import { boolArg, countArg, enumArg, enumListArg, idListArg, listArg, parseUnsigned } from './params.js';
import { formatArg, targetListReply } from './target-formats.js';

const invalidTarget = () => new HttpError(400, MESSAGES.invalidTargetReference);

/** Extensions: `include=sessions` adds to each target the ids of the sessions that hold it. */
const INCLUDES = ['sessions'] as const;

/** What is wrong with the first refused URL of a create: not a URL, or not one host. */
function invalidUrlReason(urls: string[]): string {
  for (const url of urls) {
    const derived = deriveTarget(0, url, { asWritten: true });
    if (!derived) return 'must be an absolute http or https URL';
    const why = notOneHost(derived.host_name);
    if (why) return why;
  }
  return 'must be an absolute http or https URL';
}

/** How long adding targets waits for their host names to resolve (a run looks up those still missing). */
const LOOKUP_WAIT_MS = 1500;
/** Names looked up per request: a long list is added at once, its names resolved when runs need them. */
const MAX_LOOKUPS = 16;

/** The host names of the URLs that are valid and not IP literals, at most MAX_LOOKUPS. */
function hostNames(urls: string[]): string[] {
  const names = new Set<string>();
  for (const url of urls) {
    const derived = deriveTarget(0, url, { oneHost: true, asWritten: true });
    if (!derived) return [];
    if (derived.host_ip === '') names.add(derived.host_name);
  }
  return names.size > MAX_LOOKUPS ? [] : [...names];
}

export function registerTargets(router: ApiRouter, store: Store): void {
  // A page of a large session must not sort it again: its order, searched, kept until the next change.
  const searched = memoPerGeneration<number[]>(store, 16);

  const list: Handler = (ctx) => {
    const sessionId = idListArg(ctx.args, 'session_id')?.[0] ?? store.state.activeSessionId;
    const format = formatArg(ctx.args);
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
    const reply = targetListReply(format, data, state.sessions.get(sessionId)?.name, sessionId);
    return { ...reply, headers: { ...reply.headers, 'X-Total-Count': String(total) } };
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
    // host_ip as upstream has it: the names looked up now, briefly; the addresses go in the op (replays look nothing up)
    const names = hostNames(urls);
    // loaded with the first name to look up: a server adding no target by name never loads it
    const found = names.length === 0 ? new Map<string, string[]>() : await (await import('../engine/addresses.js')).lookupHosts(names, LOOKUP_WAIT_MS);
    const result = await store.change({ op: 'createTargets', urls, oneHost: true, asWritten: true, ...(found.size > 0 ? { addresses: [...found] } : {}) });
    if (!result.ok) {
      if (result.reason === 'duplicate') throw new HttpError(409, MESSAGES.dbError, { target_url: 'already in the active session' });
      throw new HttpError(400, MESSAGES.invalidTargetUrl, { target_url: invalidUrlReason(urls) });
    }
    return success({}, 201);
  };

  const remove: Handler = async (ctx) => {
    const id = parseUnsigned(ctx.params.target_id);
    const result = id === undefined ? undefined : await store.change({ op: 'deleteTarget', id });
    if (!result?.ok) throw invalidTarget();
    return success();
  };

  const M = MESSAGES;
  const filter = (what: string) => ({ type: 'string', repeatable: true, description: `Only targets with this ${what} (repeatable: any of them)` }) as const;
  router.add('GET', '/api/v1/targets', list, {
    summary: "A session's targets, newest first",
    args: {
      session_id: { type: 'integer', description: 'The session (default: the active one); one naming no session gives []' },
      target_url: filter('URL'),
      host_name: filter('host name'),
      host_ip: filter('IP'),
      id: { type: 'integer', repeatable: true, description: 'Only these target ids (repeatable)' },
      scope: { type: 'boolean', description: 'Only targets in (or out of) scope' },
      limit: { type: 'integer', description: 'At most this many' },
      offset: { type: 'integer', description: 'Skip this many first' },
      q: { type: 'string', description: 'Extension: only targets whose URL, host name or IP contains this (any case)' },
      sort: { type: 'string', enum: ['newest', 'host'], description: 'Extension: newest first (the default), or by host: IPv4 addresses first in numeric order, then host names and IPv6 addresses in code-unit order; ties newest first' },
      include: { type: 'string', enum: ['sessions'], repeatable: true, description: 'Extension: sessions adds to each target the ids of the sessions that hold it (session_ids)' },
      format: { type: 'string', enum: ['json', 'text', 'csv'], description: 'Extension: text answers one URL per line (text/plain), csv a header row and every field (text/csv)' },
    },
    ok: {
      status: 200,
      description: 'The targets: JSON, or with format one URL per line (text/plain) or CSV with a header row (text/csv)',
      data: arrayOf(ref('Target')),
      headers: { 'X-Total-Count': 'Extension: how many targets match, before limit and offset' },
      alternatives: { 'text/plain': { type: 'string' }, 'text/csv': { type: 'string' } },
    },
    fails: { 400: [M.invalidParameterType] },
  });
  router.add('POST', '/api/v1/targets', create, {
    summary: 'Create targets (each URL if new) and attach them to the active session, all or nothing',
    args: { target_url: { type: 'string', required: true, repeatable: true, description: 'An absolute http(s) URL (repeatable)' } },
    ok: { status: 201, description: 'Created and attached', data: EMPTY },
    fails: { 400: [M.incorrectQueryParameters, M.invalidTargetUrl], 409: [M.dbError] },
  });
  router.add('GET', '/api/v1/targets/{target_id:int}', get, {
    summary: 'One target',
    ok: { status: 200, description: 'The target', data: ref('Target') },
    fails: { 400: [M.invalidTargetReference] },
  });
  router.add('DELETE', '/api/v1/targets/{target_id:int}', remove, {
    summary: 'Delete a target from every session',
    ok: { status: 200, description: 'Deleted', data: EMPTY },
    fails: { 400: [M.invalidTargetReference] },
  });
}
