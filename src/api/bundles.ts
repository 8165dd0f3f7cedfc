/** /api/v1/bundles (extension): a session exported as a file, and such a file imported as a new session. */
import { exportSession, type OutputSources } from '../engine/bundle-outputs.js';
import { BundledTransactionError, TooManyTransactionsError, transactionEntries, writeBundledTransactions } from '../evidence/bundle.js';
import type { Evidence } from '../evidence/store.js';
import { HttpError, success } from '../http/jsend.js';
import { parseBundle, referencedTransactions } from '../store/bundle.js';
import { MAX_FINDINGS, MAX_NOTES, MAX_SUMMARY } from '../store/engine.js';
import type { Store } from '../store/store.js';
import type { Handler } from './context.js';
import { attachment } from './filename.js';
import { BUNDLE_MESSAGES, bundleProblem, MESSAGES } from './messages.js';
import { ref, type ApiRouter } from './openapi.js';
import { parseUnsigned } from './params.js';

export const BUNDLE_SUFFIX = '.assessd.json';

function isJson(contentType: string | undefined): boolean {
  return contentType?.split(';', 1)[0].trim().toLowerCase() === 'application/json';
}

/**
 * `engine`: where outputs' texts come from (without one, an output exports its stored text only);
 * `evidence`: the targets' transactions (without it, bundles carry none and an import ignores them).
 */
export function registerBundles(router: ApiRouter, store: Store, maxImportBody: number, engine?: OutputSources, evidence?: Evidence, maxBundledTransactions?: number): void {
  const exportBundle: Handler = async (ctx) => {
    const id = parseUnsigned(ctx.params.session_id);
    const transactionsOf = evidence && ((targets: number[]) => transactionEntries(evidence, targets, maxBundledTransactions));
    let exported: Awaited<ReturnType<typeof exportSession>>;
    try {
      exported = id === undefined ? undefined : await exportSession(store.state, engine, id, undefined, transactionsOf);
    } catch (err) {
      // more than one JSON text holds: said, before the memory runs out (a string past V8's longest is a RangeError)
      if (err instanceof TooManyTransactionsError || (err instanceof RangeError && /string length/i.test(err.message))) {
        const why = err instanceof TooManyTransactionsError ? err.message : 'it is more than one JSON text can hold';
        throw new HttpError(422, `Session too large to export as one bundle: ${why}; export each target's transactions as HAR (GET /api/v1/targets/<id>/transactions/har), which streams any size`);
      }
      throw err;
    }
    if (exported === undefined) throw new HttpError(400, MESSAGES.invalidSessionId);
    const { name, text } = exported;
    // a file, not an envelope: it is what `import` reads back
    return {
      status: 200,
      body: text,
      headers: {
        'Content-Type': 'application/json; charset=utf-8',
        'Cache-Control': 'no-store',
        'Content-Disposition': attachment(name, `session-${id}`, BUNDLE_SUFFIX),
      },
    };
  };

  const importBundle: Handler = async (ctx) => {
    if (!isJson(ctx.headers['content-type'])) throw new HttpError(415, BUNDLE_MESSAGES.mediaType);
    const parsed = parseBundle(ctx.body, ctx.query.get('name') ?? undefined);
    if (!parsed.ok) {
      const { message, field, detail } = bundleProblem(parsed.problem);
      throw new HttpError(400, message, { [field]: detail });
    }
    const { name, urls, outputs } = parsed;
    // a name in use is refused before any transaction is written
    if (store.state.sessionIdByName.has(name)) throw new HttpError(409, MESSAGES.dbError, { name: 'already exists' });
    let written;
    try {
      written = evidence ? await writeBundledTransactions(evidence, parsed.transactions, referencedTransactions(parsed.outputs)) : undefined;
    } catch (err) {
      if (err instanceof BundledTransactionError) throw new HttpError(400, `Bundle ${err.message}`, { [err.field]: err.problem });
      throw err;
    }
    const segments = written?.segments ?? [];
    let result;
    try {
      // without outputs nor transactions the op is the one earlier builds wrote
      result = await store.change({ op: 'importSession', name, urls, at: Date.now(), ...(outputs.length > 0 ? { outputs } : {}), ...(segments.length > 0 ? { segments } : {}) });
    } catch (err) {
      await written?.abort();
      throw err;
    }
    if (!result.ok) {
      await written?.abort();
      if (result.reason === 'duplicate-name') throw new HttpError(409, MESSAGES.dbError, { name: 'already exists' });
      // parseBundle has checked the name and every URL as the op does: the op cannot refuse them
      throw new Error(`import refused after its checks passed: ${result.reason}`);
    }
    written?.committed(store.state);
    return success({ id: result.id, targets: result.targets }, 201);
  };
  // bundles are larger than forms: they get a body limit of their own
  importBundle.maxBody = maxImportBody;

  const rank = { type: 'integer', minimum: -1, maximum: 5 };
  const time = { type: ['string', 'null'], format: 'date-time' };
  const bundledOutput = {
    type: 'object',
    required: ['plugin_key', 'plugin_code', 'plugin_group', 'plugin_type', 'status'],
    properties: {
      plugin_key: { type: 'string', description: '<plugin_type>@<plugin_code>' },
      plugin_code: { type: 'string' },
      plugin_group: { type: 'string', enum: ['web', 'network', 'auxiliary'] },
      plugin_type: { type: 'string' },
      status: { type: 'string', enum: ['Successful', 'Aborted', 'Crashed', 'Skipped', 'Running'], description: 'A Running one imports as Aborted' },
      owtf_rank: rank,
      user_rank: rank,
      user_notes: { type: 'string', description: `At most ${MAX_NOTES} bytes of UTF-8` },
      findings: { type: 'array', maxItems: MAX_FINDINGS, items: ref('Finding') },
      exit_code: { type: ['integer', 'null'] },
      error: { type: ['string', 'null'] },
      started_at: time,
      ended_at: time,
      output: { type: 'string', description: `Its text, at most ${MAX_SUMMARY} bytes of UTF-8; kept as the output's text on import (its files do not travel)` },
    },
  };
  const bundle = {
    type: 'object',
    required: ['format', 'version', 'session', 'targets'],
    properties: {
      format: { const: 'assessd-session' },
      version: { const: 1 },
      exported_at: { type: 'string', format: 'date-time' },
      session: { type: 'object', properties: { name: { type: 'string' } } },
      targets: {
        type: 'array',
        description: 'Newest first',
        items: {
          allOf: [
            ref('Target'),
            {
              type: 'object',
              properties: {
                outputs: { type: 'array', items: bundledOutput, description: 'Optional on import; oldest first' },
                transactions: { type: 'array', items: { type: 'object' }, description: "The target's transactions as HAR 1.2 entries, oldest first (absent when it has none; optional on import)" },
              },
            },
          ],
        },
      },
    },
  };
  router.add('GET', '/api/v1/bundles/{session_id:int}', exportBundle, {
    summary: 'Export a session as a file (extension): its name and every target, newest first, with its outputs and their text',
    ok: { status: 200, description: 'The bundle, not in a JSend envelope', type: 'application/json', schema: bundle, headers: { 'Content-Disposition': 'attachment; filename="<safe name>.assessd.json"' } },
    fails: { 400: [MESSAGES.invalidSessionId], 422: ["Session too large to export as one bundle: its targets' transactions hold N MiB, more than a bundle carries (256.0 MiB); export each target's transactions as HAR (GET /api/v1/targets/<id>/transactions/har), which streams any size"] },
  });
  router.add('POST', '/api/v1/bundles', importBundle, {
    summary: 'Import a bundle as a new session (extension), all or nothing, in one durable change; the active session does not change',
    description: "Each target whose URL is new is created (its fields derived again from target_url); all are attached to the new session. Each target's outputs become its own, but for a plugin it already has an output of; its ranks follow.",
    args: { name: { type: 'string', description: "The new session's name, instead of the bundle's" } },
    body: { type: 'application/json', description: `A bundle as GET /api/v1/bundles/<id> answers it (at most --max-import-body bytes, 64 MiB by default)`, schema: bundle },
    ok: { status: 201, description: 'The new session, and how many targets it holds', data: { type: 'object', required: ['id', 'targets'], properties: { id: { type: 'integer' }, targets: { type: 'integer' } } } },
    fails: { 400: Object.values(BUNDLE_MESSAGES).filter((m) => m !== BUNDLE_MESSAGES.mediaType), 409: [MESSAGES.dbError], 415: [BUNDLE_MESSAGES.mediaType] },
    builtFails: { 400: 'or a message naming the version, the number of targets, or the first bad target, output or transaction field (e.g. "targets[3].target_url is not an absolute http(s) URL", "targets[2].outputs[0].user_rank must be an integer from -1 to 5", "Bundle targets[0].transactions[4].response.status: must be an integer from 0 to 999")' },
  });
}
