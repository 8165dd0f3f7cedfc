/**
 * /api/v1/targets/<id>/transactions: the upstream transactions handler (list, one, delete,
 * search, hrt) without its bugs, and the extensions: HAR import and export, a body as a download.
 */
import { CodeError, proxyCredentials, requestAsCode, LANGUAGES, type Language } from '../evidence/code.js';
import { and, FilterError, parseFilter, substring, type Expr, type Field } from '../evidence/filter.js';
import { exchangeToEntry, harPieces, HarError, readHar } from '../evidence/har.js';
import { findRows, type RowMatches } from '../evidence/query.js';
import { jsonArray, readStored, searchJson, viewsOf } from '../evidence/read.js';
import { cutRequestBody, LIST_BODY_CAP, transactionView } from '../evidence/record.js';
import type { Evidence } from '../evidence/store.js';
import { HttpError, HTTP_MESSAGES, success, successJson, successPieces } from '../http/jsend.js';
import { jsonPieces, PIECE } from '../json-pieces.js';
import type { Store } from '../store/store.js';
import type { Handler, RequestContext } from './context.js';
import { attachment } from './filename.js';
import { invalidFilter, MESSAGES as M, noCode, TRANSACTION_MESSAGES as T } from './messages.js';
import { arrayOf, EMPTY, type ApiRouter, type ArgDoc } from './openapi.js';
import { boolArg, countArg, enumArg, enumListArg, listArg, parseUnsigned } from './params.js';
import { pastBudgetOf, MAX_LIST, searchPage, TRANSACTION, TRANSACTION_SUMMARY, TRUNCATED_HEADER, truncatedPage, usesExtension } from './transaction-docs.js';
import { registerReplay } from './replay.js';
import { registerUrls } from './urls.js';

const ORDERS = ['oldest', 'newest'] as const;

/** A list or search stops after this long, with what it found (`timed_out`, `X-Timed-Out`); an export after six times it. */
const SEARCH_BUDGET_MS = 10_000;

/** The search's substring arguments and the field each one searches. */
const SEARCH_FIELDS: Record<string, Field> = {
  url: 'url', method: 'method', data: 'requestBody', raw_request: 'rawRequest', response_status: 'statusLine', response_headers: 'responseHeaders', response_body: 'responseBody',
};

/** Media types a body is served as, for an <img>: anything else is a download of bytes. */
const IMAGE_TYPES = new Set(['image/png', 'image/gif', 'image/jpeg', 'image/webp', 'image/bmp', 'image/x-icon', 'image/avif']);

/**
 * A proxy the generated code can connect to, as an http URL with a host: `http://host:port`, or
 * `host:port` as upstream's http-request-translator takes it (then http); undefined when it is neither.
 */
function proxyUrl(text: string): string | undefined {
  const written = text.includes('://') ? text : `http://${text}`;
  try {
    const url = new URL(written);
    // http only: the code speaks plain HTTP to the proxy (CONNECT for an https target)
    return url.protocol === 'http:' && url.hostname !== '' ? written : undefined;
  } catch {
    return undefined;
  }
}

const isJson = (contentType: string | undefined) => /^application\/(?:[\w.+-]*\+)?json$/i.test(contentType?.split(';', 1)[0].trim() ?? '');

export interface TransactionRouteOptions {
  maxHarBody: number;
  /** The version a HAR export names as its creator's. */
  version: string;
  /** A replay's time limit (connect to last byte), in milliseconds. */
  replayTimeoutMs?: number;
  /** How long a list or a search may read records, in milliseconds (default 10 s); a HAR export has six times it. */
  searchBudgetMs?: number;
}

/** The search's own arguments (extensions): a request that gives one gets `last_id`. */
const SEARCH_EXTENSION_ARGS = ['q', 'after_id', 'order', 'raw', 'exact'];
const LIST_EXTENSION_ARGS = ['after_id', 'order'];

export function registerTransactions(router: ApiRouter, store: Store, evidence: Evidence, options: TransactionRouteOptions): void {
  const searchBudgetMs = options.searchBudgetMs ?? SEARCH_BUDGET_MS;
  const exportBudgetMs = 6 * searchBudgetMs;
  const targetOf = (ctx: RequestContext): number => {
    const id = parseUnsigned(ctx.params.target_id);
    if (id === undefined || !store.state.targets.has(id)) throw new HttpError(400, M.invalidTargetReference);
    return id;
  };
  const transactionOf = (ctx: RequestContext, target: number): number => {
    const id = parseUnsigned(ctx.params.transaction_id);
    if (id === undefined || !evidence.has(target, id)) throw new HttpError(400, T.invalidTransaction);
    return id;
  };

  /** The list's and the search's flags, and the list's exact filters. */
  function flagFilters(ctx: RequestContext): Expr | undefined {
    let filter: Expr | undefined;
    const scope = boolArg(ctx.args, 'scope');
    const binary = boolArg(ctx.args, 'binary_response');
    if (scope !== undefined) filter = and(filter, { k: 'flag', flag: 'scope', value: scope });
    if (binary !== undefined) filter = and(filter, { k: 'flag', flag: 'binary', value: binary });
    return filter;
  }

  /** The search's arguments as one filter: each substring, the flags, and `q`. */
  function searchFilter(ctx: RequestContext): Expr | undefined {
    let filter = flagFilters(ctx);
    for (const [name, field] of Object.entries(SEARCH_FIELDS)) {
      const value = ctx.args.get(name);
      if (value) filter = and(filter, substring(field, value));
    }
    const q = ctx.args.get('q');
    if (q !== null && q.trim() !== '') {
      try {
        filter = and(filter, parseFilter(q));
      } catch (err) {
        if (err instanceof FilterError) throw new HttpError(400, invalidFilter(err.message), { q: err.message, position: String(err.position) });
        throw err;
      }
    }
    return filter;
  }

  /** `after_id` and `order` (extensions): what arrived since a view last looked, newest first. */
  const since = (ctx: RequestContext) => {
    const afterId = countArg(ctx.args, 'after_id');
    const newest = enumArg(ctx.args, 'order', ORDERS) === 'newest';
    return { ...(afterId === undefined ? {} : { afterId }), ...(newest ? { newest } : {}) };
  };
  const matches = async (target: number, filter: Expr | undefined, offset: number, limit: number | undefined, stopWhenFull: boolean, budget: number, ctx: RequestContext): Promise<RowMatches> =>
    findRows(await evidence.load(target), { filter, offset, limit, stopWhenFull, deadline: performance.now() + budget, ...since(ctx) }, (s, p, l) => evidence.read(s, p, l));

  const list: Handler = async (ctx) => {
    const target = targetOf(ctx);
    let filter = flagFilters(ctx);
    const exact = { url: listArg(ctx.args, 'url'), method: listArg(ctx.args, 'method'), requestBody: listArg(ctx.args, 'data') };
    for (const [field, values] of Object.entries(exact)) {
      if (values) filter = and(filter, { k: 'equals', field: field as 'url' | 'method' | 'requestBody', values: new Set(values) });
    }
    const offset = countArg(ctx.args, 'offset') ?? 0;
    const limit = Math.min(countArg(ctx.args, 'limit') ?? MAX_LIST, MAX_LIST);
    const found = await matches(target, filter, offset, limit, false, searchBudgetMs, ctx);
    const page = await viewsOf(evidence, await evidence.load(target), target, found.ids, false, 0, pastBudgetOf(ctx.args, LIST_EXTENSION_ARGS));
    // a list that ran out of time (a data= filter reads records) says so: its page and count are partial
    return {
      ...successJson(jsonArray(page)),
      headers: { 'X-Total-Count': String(found.filtered), ...(found.timedOut ? { 'X-Timed-Out': 'true' } : {}), ...(page.cut ? { 'X-Truncated': truncatedPage(page.json.length, offset) } : {}) },
    };
  };

  const search: Handler = async (ctx) => {
    const target = targetOf(ctx);
    const filter = searchFilter(ctx);
    const offset = countArg(ctx.args, 'offset') ?? 0;
    const limit = countArg(ctx.args, 'limit') ?? 10;
    // records_filtered is the number of matches, as upstream's; exact=false lets a view stop early
    const exact = boolArg(ctx.args, 'exact') ?? true;
    const raw = boolArg(ctx.args, 'raw') ?? true;
    const found = await matches(target, filter, offset, Math.min(limit, MAX_LIST), !exact, searchBudgetMs, ctx);
    const extended = usesExtension(ctx.args, SEARCH_EXTENSION_ARGS);
    const page = await viewsOf(evidence, await evidence.load(target), target, found.ids, raw, raw ? LIST_BODY_CAP : 0, extended ? 'cut' : 'stream');
    return successJson(searchJson(found.total, found.filtered, page, {
      // extension: the target's highest id when the search began, for a view's next after_id; only
      // to a request that uses an extension (an upstream one gets upstream's answer, no more)
      ...(extended ? { last_id: Math.max(found.lastId, countArg(ctx.args, 'after_id') ?? 0) } : {}),
      ...(found.exact ? {} : { records_filtered_exact: false }),
      ...(found.timedOut ? { timed_out: true } : {}),
      // extension: the page stopped at the answer's budget (32 MiB of JSON) before `limit`
      ...(page.cut ? { truncated: true } : {}),
    }));
  };

  const get: Handler = async (ctx) => {
    const target = targetOf(ctx);
    const id = transactionOf(ctx, target);
    // both bodies: a hostile page's 16 MiB upload of control characters, six characters of JSON
    // each, made the web application's view of it a 201 MB answer that held the server 1.4 s
    const cap = countArg(ctx.args, 'max_body') ?? Infinity;
    const stored = await readStored(evidence, await evidence.load(target), target, id, cap, cap);
    if (!stored) throw new HttpError(400, T.invalidTransaction);
    const view = transactionView(stored.facts, stored.record, true, { bodyCap: cap, requestCap: cap });
    // whole bodies of megabytes (six characters of JSON a byte of control characters): a piece at a time
    const shown = Math.min(cap, stored.record.bodyLength) + Math.min(cap, stored.record.requestBodyLength);
    return shown > PIECE ? successPieces(jsonPieces(view)) : success(view);
  };

  const remove: Handler = async (ctx) => {
    const target = targetOf(ctx);
    const id = parseUnsigned(ctx.params.transaction_id);
    if (id === undefined || !(await evidence.deleteTransaction(target, id))) throw new HttpError(400, T.invalidTransaction);
    return success();
  };

  const needsId: Handler = (ctx) => {
    targetOf(ctx);
    throw new HttpError(400, T.needsTransactionId);
  };

  const body: Handler = async (ctx) => {
    const target = targetOf(ctx);
    const id = transactionOf(ctx, target);
    const stored = await readStored(evidence, await evidence.load(target), target, id);
    if (!stored) throw new HttpError(400, T.invalidTransaction);
    const x = stored.record.exchange;
    // an image as the view shows one: by the response's Content-Type (its first), else the HAR's mimeType (a tool may leave it empty)
    const header = x.responseHeaders.find(([name]) => name.toLowerCase() === 'content-type')?.[1];
    const type = [header ?? '', x.mimeType].map((t) => t.split(';', 1)[0].trim().toLowerCase()).find((t) => IMAGE_TYPES.has(t));
    const last = new URL(x.url).pathname.split('/').pop() ?? '';
    let name = last;
    try {
      name = decodeURIComponent(last);
    } catch {
      // not valid percent-encoding: the name as it is (made safe by attachment())
    }
    return {
      status: 200,
      body: x.responseBody,
      headers: {
        // never a page of ours: a download, sandboxed should anything render it, an image only as an image
        'Content-Type': type ?? 'application/octet-stream',
        'Content-Disposition': attachment(name, `transaction-${id}`, ''),
        'Content-Security-Policy': "sandbox; default-src 'none'",
        'Cache-Control': 'no-store',
      },
    };
  };

  const hrt: Handler = async (ctx) => {
    const target = targetOf(ctx);
    const id = transactionOf(ctx, target);
    // each once: repeated, a 16 MiB body's code was written again for each (22-35 s held)
    const languages = [...new Set(enumListArg(ctx.args, 'language', LANGUAGES))];
    const stored = await readStored(evidence, await evidence.load(target), target, id);
    if (!stored) throw new HttpError(400, T.invalidTransaction);
    const x = stored.record.exchange;
    const data = ctx.args.get('data');
    const proxyArg = ctx.args.get('proxy') || undefined;
    const proxy = proxyArg === undefined ? undefined : proxyUrl(proxyArg);
    if (proxyArg !== undefined && proxy === undefined) throw new HttpError(400, M.invalidParameterType, { proxy: 'expected http://host:port or host:port' });
    // curl does not use a proxy whose credentials hold one (it connects to the target itself)
    const credentials = proxy === undefined ? undefined : proxyCredentials(proxy);
    if (credentials && [credentials.user, credentials.password].some((bytes) => bytes.some((b) => b < 0x20 || b === 0x7f))) {
      throw new HttpError(400, M.invalidParameterType, { proxy: 'credentials with a control character (%00-%1F, %7F)' });
    }
    // the code would send another request than the one recorded (and a Content-Length that lies)
    if (data === null && x.requestSize !== undefined) throw new HttpError(400, noCode(cutRequestBody(x.requestSize, x.requestBody.length)));
    let code: Buffer;
    try {
      code = requestAsCode(
        { method: x.method, url: x.url, headers: x.requestHeaders, body: data === null ? x.requestBody : Buffer.from(data) },
        languages.length > 0 ? languages : (['bash'] as Language[]),
        { proxy, searchString: ctx.args.get('search_string') || ctx.args.get('searchstring') || undefined, untrustedCertificate: x.tlsProblem !== undefined },
      );
    } catch (err) {
      if (err instanceof CodeError) throw new HttpError(400, noCode(err.message), { id: err.message });
      throw err;
    }
    // bare text, as a client pastes it (upstream writes it bare too)
    return { status: 200, body: code, headers: { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store' } };
  };

  const hrtWithoutId: Handler = (ctx) => {
    targetOf(ctx);
    throw new HttpError(400, T.needsTransactionId);
  };

  const importHar: Handler = async (ctx) => {
    const target = targetOf(ctx);
    if (!isJson(ctx.headers['content-type'])) throw new HttpError(415, T.harMediaType);
    const tooLarge = () => new HttpError(413, HTTP_MESSAGES.payloadTooLarge, undefined, { Connection: 'close' });
    if (Number(ctx.headers['content-length']) > options.maxHarBody) throw tooLarge();
    const scopeOnly = boolArg(ctx.query, 'scope_only') ?? false;
    const stream = ctx.stream!;
    async function* limited(): AsyncGenerator<Buffer> {
      let size = 0;
      // a refusal before the end leaves the stream whole (a for-await would destroy it, and the
      // connection with it): the server reads the rest and drops it after the answer (linger.ts)
      for await (const chunk of stream.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
        size += chunk.length;
        if (size > options.maxHarBody) throw tooLarge();
        yield chunk;
      }
    }
    let result;
    try {
      result = await evidence.importExchanges(target, readHar(limited()), { scopeOnly });
    } catch (err) {
      // the rest of the body is never read: the connection closes after the answer
      if (err instanceof HarError) throw new HttpError(400, err.message, { [err.field]: err.problem }, { Connection: 'close' });
      throw err;
    }
    if (!result.ok) throw new HttpError(400, M.invalidTargetReference);
    return success(result.counts, 201);
  };
  importHar.streamsBody = true;

  const exportHar: Handler = async (ctx) => {
    const target = targetOf(ctx);
    const filter = searchFilter(ctx);
    const found = await matches(target, filter, countArg(ctx.args, 'offset') ?? 0, countArg(ctx.args, 'limit'), true, exportBudgetMs, ctx);
    const loaded = await evidence.load(target);
    async function* entries() {
      for (const id of found.ids) {
        const stored = await readStored(evidence, loaded, target, id);
        if (stored) yield exchangeToEntry(stored.record.exchange, stored.facts);
      }
    }
    const name = store.state.targets.get(target)?.target.host_name ?? '';
    return {
      status: 200,
      body: '',
      stream: harPieces(entries(), options.version, found.timedOut ? `Cut: the search ran out of its ${exportBudgetMs / 1000} s; these are the matches found by then.` : undefined),
      headers: {
        'Content-Type': 'application/json; charset=utf-8',
        'Content-Disposition': attachment(`${name}-transactions`, `target-${target}-transactions`, '.har'),
        'Cache-Control': 'no-store',
      },
    };
  };

  const base = '/api/v1/targets/{target_id:int}/transactions';
  const one = `${base}/{transaction_id:int}`;
  const range: Record<string, ArgDoc> = {
    offset: { type: 'integer', description: 'Skip this many matches first' },
    after_id: { type: 'integer', description: 'Extension: only transactions with a greater id (what arrived since the last look)' },
    order: { type: 'string', enum: [...ORDERS], description: 'Extension: oldest first (the default) or newest first' },
  };
  const flags: Record<string, ArgDoc> = {
    scope: { type: 'boolean', description: "Only transactions in (or out of) the target's scope (its host and port)" },
    binary_response: { type: 'boolean', description: 'Only transactions whose response body is (or is not) binary' },
  };
  const searchArgs: Record<string, ArgDoc> = {
    ...Object.fromEntries(Object.keys(SEARCH_FIELDS).map((name) => [name, { type: 'string', description: `Only transactions whose ${name} holds this (any case; % and _ are literal)` } satisfies ArgDoc])),
    ...flags,
    q: { type: 'string', description: 'Extension: a filter expression (~u ~m ~c ~d ~t ~h ~hq ~hs ~b ~bq ~bs ~s, !, &, |, parentheses; a bare word is ~u), regexes case-insensitive' },
    ...range,
  };
  router.add('GET', base, list, {
    summary: "A target's transactions, oldest first (newest first with order=newest), without their raw fields",
    args: {
      url: { type: 'string', repeatable: true, description: 'Only these URLs (exact; repeatable: any of them)' },
      method: { type: 'string', repeatable: true, description: 'Only these methods (exact; repeatable)' },
      data: { type: 'string', repeatable: true, description: 'Only these request bodies (exact; repeatable)' },
      ...flags,
      ...range,
      limit: { type: 'integer', description: `At most this many (and never more than ${MAX_LIST}; page on with offset)` },
    },
    ok: {
      status: 200,
      description: 'The transactions (bodies not included)',
      data: arrayOf(TRANSACTION_SUMMARY),
      headers: { 'X-Total-Count': 'Extension: how many match, before limit and offset', 'X-Truncated': TRUNCATED_HEADER },
    },
    fails: { 400: [M.invalidTargetReference, M.invalidParameterType] },
  });
  router.add('POST', base, importHar, {
    summary: 'Import a HAR 1.2 document as transactions of the target (extension): all of them or none, one durable change',
    description: `Streamed: a HAR of any size up to --max-har-body (default 1 GiB) is read as it comes. Entries without a response (status 0) or not http(s) are skipped. A response body beyond 16 MiB is cut (response_body_truncated). Any bad entry refuses the whole HAR, naming the entry and the field.`,
    args: { scope_only: { type: 'boolean', description: "Keep only entries for the target's host and port (out_of_scope counts those left out; without it, those kept out of scope)" } },
    body: { type: 'application/json', description: 'A HAR 1.2 document ({"log":{"entries":[...]}}), as browsers, ZAP, Burp and mitmproxy write it' },
    ok: {
      status: 201,
      description: 'Imported',
      data: { type: 'object', required: ['imported', 'out_of_scope', 'skipped'], properties: { imported: { type: 'integer' }, out_of_scope: { type: 'integer' }, skipped: { type: 'integer' } } },
    },
    fails: { 400: [M.invalidTargetReference, M.invalidParameterType], 415: [T.harMediaType] },
    builtFails: { 400: 'or what is wrong with the HAR and where, e.g. "Invalid HAR entry 3: log.entries[3].response.status: must be an integer from 0 to 999"; data names the field' },
  });
  router.add('DELETE', base, needsId, { summary: 'Refused: a transaction id is needed', fails: { 400: [M.invalidTargetReference, T.needsTransactionId] } });
  router.add('GET', `${base}/search`, search, {
    summary: "Search a target's transactions (each argument must match), oldest first (newest first with order=newest), with their raw fields (bodies cut at 64 KiB)",
    description: 'records_filtered counts every match. With exact=false, a search that reads headers or bodies stops once its page is full and one more match is found: records_filtered is then a lower bound (records_filtered_exact: false). A search stops after 10 s with what it found (timed_out: true).',
    args: {
      ...searchArgs,
      limit: { type: 'integer', description: 'At most this many (default 10)' },
      exact: { type: 'boolean', description: 'Extension: false lets a search that reads records stop once its page is full (records_filtered then a lower bound); default true, every match counted' },
      raw: { type: 'boolean', description: 'Extension: raw=false leaves out raw_request, response_headers and response_body (the fields of a list)' },
    },
    ok: {
      status: 200,
      description: 'The page and the counts',
      data: searchPage(TRANSACTION, {
        records_filtered_exact: { type: 'boolean', description: 'Extension: false when the search (exact=false) stopped before counting every match' },
        last_id: { type: 'integer', description: "Extension: the target's highest transaction id when the search began (0: none); ask with after_id=last_id for what arrives next. Only when the request gives an extension argument (q, after_id, order, raw, exact)" },
        timed_out: { type: 'boolean', description: 'Extension: the search ran out of time' },
      }),
    },
    fails: { 400: [M.invalidTargetReference, M.invalidParameterType] },
    builtFails: { 400: 'or "Invalid filter expression: ..." naming the position in q (data: q, the message, and position, from 0)' },
  });
  router.add('GET', `${base}/har`, exportHar, {
    summary: 'Export the transactions a search finds as a HAR 1.2 document (extension), every match unless limit says',
    args: { ...searchArgs, limit: { type: 'integer', description: 'At most this many (default: all)' } },
    ok: { status: 200, description: 'The HAR, as a download (not in a JSend envelope)', type: 'application/json', schema: { type: 'object' }, headers: { 'Content-Disposition': 'attachment; filename="<host>-transactions.har"' } },
    fails: { 400: [M.invalidTargetReference, M.invalidParameterType] },
    builtFails: { 400: 'or "Invalid filter expression: ..." naming the position in q' },
  });
  router.add('POST', `${base}/hrt`, hrtWithoutId, { summary: 'Refused: a transaction id is needed', fails: { 400: [M.invalidTargetReference, T.needsTransactionId] } });
  router.add('POST', `${base}/hrt/{transaction_id:int}`, hrt, {
    summary: "A transaction's request as code that sends it again, exactly (bare text/plain)",
    args: {
      language: { type: 'string', repeatable: true, enum: [...LANGUAGES], description: 'bash (curl, the default), python, php, ruby; extensions fetch (JavaScript) and raw (HTTP/1.1); repeatable: each in turn, once' },
      proxy: { type: 'string', description: 'Send it through this proxy: http://host:port, or host:port as upstream takes it (language fetch only names it in a comment: node has no proxy of its own)' },
      search_string: { type: 'string', description: 'Show the lines of the response holding this (any case); also searchstring, as the upstream web client sends it' },
      searchstring: { type: 'string', description: 'The same as search_string' },
      data: { type: 'string', description: 'Send this body instead of the recorded one' },
    },
    ok: { status: 200, description: 'The code', type: 'text/plain', schema: { type: 'string' } },
    fails: { 400: [M.invalidTargetReference, T.invalidTransaction, M.invalidParameterType] },
  });
  router.add('GET', one, get, {
    summary: 'One transaction, with its raw fields and its whole body',
    args: { max_body: { type: 'integer', description: 'Extension: each body cut at this many bytes (the response body, then response_body_truncated: true; the request body, in data and raw_request, then request_body_truncated: true and request_size)' } },
    ok: { status: 200, description: 'The transaction', data: TRANSACTION },
    fails: { 400: [M.invalidTargetReference, T.invalidTransaction] },
  });
  router.add('DELETE', one, remove, {
    summary: 'Delete one transaction (its bytes go with it)',
    ok: { status: 200, description: 'Deleted', data: EMPTY },
    fails: { 400: [M.invalidTargetReference, T.invalidTransaction] },
  });
  router.add('GET', `${one}/body`, body, {
    summary: "A transaction's response body as bytes (extension): a download, never a page",
    ok: {
      status: 200,
      description: 'The body as received (as stored: cut at 16 MiB); images as their type, anything else application/octet-stream',
      type: 'application/octet-stream',
      schema: { type: 'string', format: 'binary' },
      headers: { 'Content-Disposition': 'attachment', 'Content-Security-Policy': 'sandbox' },
    },
    fails: { 400: [M.invalidTargetReference, T.invalidTransaction] },
  });
  registerUrls(router, store, evidence);
  registerReplay(router, store, evidence, { timeoutMs: options.replayTimeoutMs ?? 10_000 });
}
