/** /api/v1/configuration: the framework's settings and tool paths. */
import { HttpError, success } from '../http/jsend.js';
import { listConfig } from '../store/configuration.js';
import type { Store } from '../store/store.js';
import { replyPerGeneration } from './cache.js';
import type { Handler } from './context.js';
import { MESSAGES } from './messages.js';
import { arrayOf, EMPTY, ref, type ApiRouter } from './openapi.js';
import { boolArg, listArg } from './params.js';

export function registerConfiguration(router: ApiRouter, store: Store): void {
  const allItems = replyPerGeneration(store, () => listConfig(store.state));

  const get: Handler = (ctx) => {
    const query = { key: listArg(ctx.args, 'key'), section: listArg(ctx.args, 'section'), dirty: boolArg(ctx.args, 'dirty') };
    if (query.key === undefined && query.section === undefined && query.dirty === undefined) {
      return allItems();
    }
    return success(listConfig(store.state, query));
  };

  const patch: Handler = async (ctx) => {
    const values = new Map<string, string>();
    for (const [key, value] of ctx.args) if (!values.has(key)) values.set(key, value);
    if (values.size === 0) throw new HttpError(400, MESSAGES.incorrectQueryParameters);
    const result = await store.change({ op: 'patchConfig', values: [...values] });
    if (!result.ok) {
      const data = Object.fromEntries(result.unknown.map((key) => [key, 'not a configuration item']));
      throw new HttpError(400, MESSAGES.invalidConfigurationItem, data);
    }
    return success();
  };

  router.add('GET', '/api/v1/configuration', get, {
    summary: 'The configuration items, ordered by key',
    args: {
      key: { type: 'string', repeatable: true, description: 'Only these keys (repeatable)' },
      section: { type: 'string', repeatable: true, description: 'Only these sections (repeatable)' },
      dirty: { type: 'boolean', description: 'Only the items changed through the API (or the others)' },
    },
    ok: { status: 200, description: 'The items', data: arrayOf(ref('ConfigItem')) },
    fails: { 400: [MESSAGES.invalidParameterType] },
  });
  router.add('PATCH', '/api/v1/configuration', patch, {
    summary: 'Set configuration values, all or nothing: each argument name is a key, its first value the new value',
    description: 'Every patched item becomes dirty. One unknown key and nothing changes: `data` names the unknown keys.',
    ok: { status: 200, description: 'Saved', data: EMPTY },
    fails: { 400: [MESSAGES.incorrectQueryParameters, MESSAGES.invalidConfigurationItem] },
  });
}
