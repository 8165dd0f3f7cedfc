/** /api/v1/bundles (extension): a session exported as a file, and such a file imported as a new session. */
import { HttpError, success } from '../http/jsend.js';
import { buildBundle, parseBundle } from '../store/bundle.js';
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

export function registerBundles(router: ApiRouter, store: Store, maxImportBody: number): void {
  const exportBundle: Handler = (ctx) => {
    const id = parseUnsigned(ctx.params.session_id);
    const body = id === undefined ? undefined : buildBundle(store.state, id, new Date());
    if (body === undefined) throw new HttpError(400, MESSAGES.invalidSessionId);
    const name = store.state.sessions.get(id!)!.name;
    // a file, not an envelope: it is what `import` reads back
    return {
      status: 200,
      body,
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
    const result = await store.change({ op: 'importSession', name: parsed.name, urls: parsed.urls, at: Date.now() });
    if (!result.ok) {
      if (result.reason === 'duplicate-name') throw new HttpError(409, MESSAGES.dbError, { name: 'already exists' });
      // parseBundle has checked the name and every URL as the op does: the op cannot refuse them
      throw new Error(`import refused after its checks passed: ${result.reason}`);
    }
    return success({ id: result.id, targets: result.targets }, 201);
  };
  // bundles are larger than forms: they get a body limit of their own
  importBundle.maxBody = maxImportBody;

  const bundle = {
    type: 'object',
    required: ['format', 'version', 'session', 'targets'],
    properties: {
      format: { const: 'assessd-session' },
      version: { const: 1 },
      exported_at: { type: 'string', format: 'date-time' },
      session: { type: 'object', properties: { name: { type: 'string' } } },
      targets: { type: 'array', items: ref('Target'), description: 'Newest first' },
    },
  };
  router.add('GET', '/api/v1/bundles/{session_id:int}', exportBundle, {
    summary: 'Export a session as a file (extension): its name and every target, newest first',
    ok: { status: 200, description: 'The bundle, not in a JSend envelope', type: 'application/json', schema: bundle, headers: { 'Content-Disposition': 'attachment; filename="<safe name>.assessd.json"' } },
    fails: { 400: [MESSAGES.invalidSessionId] },
  });
  router.add('POST', '/api/v1/bundles', importBundle, {
    summary: 'Import a bundle as a new session (extension), all or nothing, in one durable change; the active session does not change',
    description: 'Each target whose URL is new is created (its fields derived again from target_url); all are attached to the new session.',
    args: { name: { type: 'string', description: "The new session's name, instead of the bundle's" } },
    body: { type: 'application/json', description: `A bundle as GET /api/v1/bundles/<id> answers it (at most --max-import-body bytes, 64 MiB by default)`, schema: bundle },
    ok: { status: 201, description: 'The new session, and how many targets it holds', data: { type: 'object', required: ['id', 'targets'], properties: { id: { type: 'integer' }, targets: { type: 'integer' } } } },
    fails: { 400: Object.values(BUNDLE_MESSAGES).filter((m) => m !== BUNDLE_MESSAGES.mediaType), 409: [MESSAGES.dbError], 415: [BUNDLE_MESSAGES.mediaType] },
    builtFails: { 400: 'or a message naming the version, the number of targets, or the first bad target (e.g. "targets[3].target_url is not an absolute http(s) URL")' },
  });
}
