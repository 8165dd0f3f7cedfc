/**
 * POST /api/v1/targets/<tid>/transactions/<id>/replay (extension, the repeater): the stored request
 * sent again, with optional edits, to the target's own host and port; the answer is stored as a new
 * transaction (`source: "replay"`) and answered whole but for its body (cut at 64 KiB).
 */
import { BODY_CAP } from '../evidence/har.js';
import { readStored } from '../evidence/read.js';
import { LIST_BODY_CAP, transactionView, type Exchange } from '../evidence/record.js';
import type { ReplayEdits, ReplayRequest } from '../evidence/replay.js';
import type { Evidence } from '../evidence/store.js';
import { HttpError, success } from '../http/jsend.js';
import type { Store } from '../store/store.js';
import type { Handler, RequestContext } from './context.js';
import { invalidReplay, MESSAGES as M, TRANSACTION_MESSAGES as T } from './messages.js';
import type { ApiRouter } from './openapi.js';
import { parseUnsigned } from './params.js';
import { TRANSACTION } from './transaction-docs.js';

export interface ReplayOptions {
  /** Connect to last byte, in milliseconds. */
  timeoutMs: number;
}

export function registerReplay(router: ApiRouter, store: Store, evidence: Evidence, options: ReplayOptions): void {
  const replay: Handler = async (ctx: RequestContext) => {
    const target = parseUnsigned(ctx.params.target_id);
    const row = target === undefined ? undefined : store.state.targets.get(target)?.target;
    if (target === undefined || !row) throw new HttpError(400, M.invalidTargetReference);
    const id = parseUnsigned(ctx.params.transaction_id);
    if (id === undefined || !evidence.has(target, id)) throw new HttpError(400, T.invalidTransaction);
    const stored = await readStored(evidence, await evidence.load(target), target, id);
    if (!stored) throw new HttpError(400, T.invalidTransaction);
    // node:https and node:zlib with it, loaded by the first replay: the start needs neither
    const { NoAnswer, parseHeaderLines, replayRequest, ReplayError, sendReplay } = await import('../evidence/replay.js');

    let request: ReplayRequest;
    try {
      const edits: ReplayEdits = {};
      const [method, url, headers, body] = ['method', 'url', 'headers', 'body'].map((name) => ctx.args.get(name));
      if (method !== null) edits.method = method;
      if (url !== null) edits.url = url;
      if (headers !== null) edits.headers = parseHeaderLines(headers);
      if (body !== null) edits.body = Buffer.from(body);
      if (edits.body && edits.body.length > BODY_CAP) throw new ReplayError('body', `a body of at most ${BODY_CAP} bytes is sent`);
      request = replayRequest(stored.record.exchange, edits, { host: row.host_name.toLowerCase(), port: row.port_number });
    } catch (err) {
      if (err instanceof ReplayError) throw new HttpError(400, invalidReplay(err.message), { [err.field]: err.message });
      throw err;
    }

    let answer: Exchange;
    try {
      answer = await sendReplay(request, options.timeoutMs);
    } catch (err) {
      // the target's failure, not ours: said as it is (a 5xx of ours would say nothing)
      if (err instanceof NoAnswer) return { status: 502, body: JSON.stringify({ status: 'error', message: `The target did not answer: ${err.message}`, code: 502 }) };
      throw err;
    }
    const imported = await evidence.importExchanges(target, (async function* () {
      yield answer;
    })());
    if (!imported.ok || imported.first === undefined) throw new HttpError(400, M.invalidTargetReference);
    const fresh = await readStored(evidence, await evidence.load(target), target, imported.first, LIST_BODY_CAP);
    if (!fresh) throw new HttpError(400, T.invalidTransaction);
    return success(transactionView(fresh.facts, fresh.record, true, { bodyCap: LIST_BODY_CAP }), 201);
  };
  // a form-encoded body may be three times the bytes it carries
  replay.maxBody = 3 * BODY_CAP + 64 * 1024;

  router.add('POST', '/api/v1/targets/{target_id:int}/transactions/{transaction_id:int}/replay', replay, {
    summary: 'Send a stored request again, as recorded or edited, to the target (extension: the repeater); the answer is stored as a new transaction',
    description:
      "Sent to the target's own host and port only (a url naming another is refused); HTTP/1.1, the target's certificate not checked (labs use self-signed ones), " +
      'within the check time limit (--check-timeout), the answer cut at 16 MiB. Host and Content-Length are set from the URL and the body; HTTP/2 pseudo-headers and ' +
      "hop-by-hop headers are not sent. A compressed answer is stored decoded, as browsers' HARs keep it. A target that does not answer is a 502 saying why; nothing is stored.",
    args: {
      method: { type: 'string', description: 'Send with this method instead of the recorded one' },
      url: { type: 'string', description: "Send to this absolute URL instead (same host and port as the target's)" },
      headers: { type: 'string', description: 'Send these headers instead of the recorded ones: "Name: value" lines' },
      body: { type: 'string', description: 'Send this body (UTF-8) instead of the recorded bytes' },
    },
    ok: { status: 201, description: 'The new transaction (source "replay"), its body cut at 64 KiB', data: TRANSACTION },
    fails: { 400: [M.invalidTargetReference, T.invalidTransaction] },
    builtFails: { 400: 'or "Invalid replay: ..." saying what is wrong (a url of another host or port, a header line, a method)', 502: '"The target did not answer: ..." saying why (refused, reset, timeout, not HTTP, TLS)' },
  });
}
