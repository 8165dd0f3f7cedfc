/** /api/v1/targets/<id>/urls: every URL seen in a target's transactions (upstream's URL handlers), with its kind. */
import { jsonArray, searchJson, urlRows, URL_KINDS, withinBudget, type UrlRow } from '../evidence/read.js';
import type { Evidence } from '../evidence/store.js';
import { HttpError, successJson } from '../http/jsend.js';
import type { Store } from '../store/store.js';
import type { Handler, RequestContext } from './context.js';
import { MESSAGES as M } from './messages.js';
import { arrayOf, type ApiRouter, type ArgDoc } from './openapi.js';
import { boolArg, countArg, enumListArg, listArg, parseUnsigned } from './params.js';
import { pastBudgetOf, MAX_LIST, searchPage, TRUNCATED_HEADER, truncatedPage, URL_ROW } from './transaction-docs.js';

/** The URLs' extension arguments: a page asked with one is cut at the answer's budget. */
const URL_EXTENSION_ARGS = ['kind'];

export function registerUrls(router: ApiRouter, store: Store, evidence: Evidence): void {
  /** The target's URLs, filtered by `visited`, `scope` and `kind`, and by `keep` (the URL filter). */
  async function filtered(ctx: RequestContext, keep: (url: string) => boolean): Promise<{ total: number; rows: UrlRow[] }> {
    const target = parseUnsigned(ctx.params.target_id);
    if (target === undefined || !store.state.targets.has(target)) throw new HttpError(400, M.invalidTargetReference);
    const visited = boolArg(ctx.args, 'visited');
    const scope = boolArg(ctx.args, 'scope');
    const kinds = enumListArg(ctx.args, 'kind', URL_KINDS);
    const all = urlRows(await evidence.load(target), target);
    const rows = all.filter(
      (row) => (visited === undefined || row.visited === visited) && (scope === undefined || row.scope === scope) && (kinds.length === 0 || kinds.includes(row.kind)) && keep(row.url),
    );
    return { total: all.length, rows };
  }
  // at most MAX_LIST an answer, as the transactions' lists: 800,000 URLs made a 77 MB answer, the
  // server held 2.4 s; and at most ANSWER_BUDGET of JSON (10,000 URLs of 63 KB: 630 MB)
  const page = async (ctx: RequestContext, rows: UrlRow[]) => {
    const offset = countArg(ctx.args, 'offset') ?? 0;
    const limit = Math.min(countArg(ctx.args, 'limit') ?? MAX_LIST, MAX_LIST);
    return { offset, ...(await withinBudget(rows.slice(offset, offset + limit), pastBudgetOf(ctx.args, URL_EXTENSION_ARGS))) };
  };

  const list: Handler = async (ctx) => {
    const urls = listArg(ctx.args, 'url');
    const wanted = urls ? new Set(urls) : undefined;
    const { rows } = await filtered(ctx, (url) => !wanted || wanted.has(url));
    const shown = await page(ctx, rows);
    // how many match, as the transactions' list says it: a page cut at MAX_LIST is seen to be one
    return { ...successJson(jsonArray(shown)), headers: { 'X-Total-Count': String(rows.length), ...(shown.cut ? { 'X-Truncated': truncatedPage(shown.json.length, shown.offset) } : {}) } };
  };

  const search: Handler = async (ctx) => {
    const text = ctx.args.get('url')?.toLowerCase() ?? '';
    const { total, rows } = await filtered(ctx, (url) => url.toLowerCase().includes(text));
    const shown = await page(ctx, rows);
    return successJson(searchJson(total, rows.length, shown, shown.cut ? { truncated: true } : {}));
  };

  const args: Record<string, ArgDoc> = {
    visited: { type: 'boolean', description: 'Only URLs a transaction fetched (or not)' },
    scope: { type: 'boolean', description: "Only URLs in (or out of) the target's scope" },
    kind: { type: 'string', repeatable: true, enum: [...URL_KINDS], description: 'Extension: only URLs of these kinds (repeatable)' },
    offset: { type: 'integer', description: 'Skip this many first' },
    limit: { type: 'integer', description: 'At most this many (at most 10,000 an answer, the default)' },
  };
  const fails = { 400: [M.invalidTargetReference, M.invalidParameterType] };
  router.add('GET', '/api/v1/targets/{target_id:int}/urls', list, {
    summary: "The URLs of a target's transactions, in the order first seen",
    args: { url: { type: 'string', repeatable: true, description: 'Only these URLs (exact; repeatable)' }, ...args },
    ok: {
      status: 200,
      description: 'The URLs',
      data: arrayOf(URL_ROW),
      headers: { 'X-Total-Count': 'Extension: how many match, before limit and offset', 'X-Truncated': TRUNCATED_HEADER },
    },
    fails,
  });
  router.add('GET', '/api/v1/targets/{target_id:int}/urls/search', search, {
    summary: "Search the URLs of a target's transactions",
    args: { url: { type: 'string', description: 'Only URLs holding this (any case; % and _ are literal)' }, ...args },
    ok: {
      status: 200,
      description: 'The page and the counts',
      data: searchPage(URL_ROW),
    },
    fails,
  });
}
