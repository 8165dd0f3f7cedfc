/** /api/v1/bundles (extension): a session exported as a file, and such a file imported as a new session. */
import { HttpError, success } from '../http/jsend.js';
import type { Router } from '../http/router.js';
import { buildBundle, parseBundle } from '../store/bundle.js';
import type { Store } from '../store/store.js';
import type { Handler } from './context.js';
import { attachment } from './filename.js';
import { BUNDLE_MESSAGES, bundleProblem, MESSAGES } from './messages.js';
import { parseUnsigned } from './params.js';

/** Bundles are larger than forms: they get a body limit of their own. */
export const DEFAULT_MAX_IMPORT_BODY = 64 * 1024 * 1024;

export const BUNDLE_SUFFIX = '.assessd.json';

function isJson(contentType: string | undefined): boolean {
  return contentType?.split(';', 1)[0].trim().toLowerCase() === 'application/json';
}

export function registerBundles(router: Router<Handler>, store: Store, maxImportBody: number): void {
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
  importBundle.maxBody = maxImportBody;

  router.add('GET', '/api/v1/bundles/{session_id:int}', exportBundle);
  router.add('POST', '/api/v1/bundles', importBundle);
}
