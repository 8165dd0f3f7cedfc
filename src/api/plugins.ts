/** /api/v1/plugins: the catalogue, filtered, by group, type and code (the upstream plugin handler). */
import { HttpError, HTTP_MESSAGES, success } from '../http/jsend.js';
import type { Catalogue, PluginFilter } from '../engine/catalogue.js';
import { PLUGIN_GROUPS, PLUGIN_TYPES, type PluginGroup } from '../engine/types.js';
import type { Args } from '../http/args.js';
import type { Handler } from './context.js';
import { ENGINE_MESSAGES as E } from './messages.js';
import { arrayOf, ref, type ApiRouter } from './openapi.js';
import { listArg } from './params.js';

/** The filters `group`, `type`, `code`, `name` (each repeatable, any-of). */
export function pluginFilter(args: Args): PluginFilter {
  return { group: listArg(args, 'group'), type: listArg(args, 'type'), code: listArg(args, 'code'), name: listArg(args, 'name') };
}

/** A path's segments after the fixed ones, without the empty one a trailing slash leaves. */
export function restSegments(rest: string[]): string[] {
  return rest.at(-1) === '' ? rest.slice(0, -1) : rest;
}

export function registerPlugins(router: ApiRouter, catalogue: Catalogue): void {
  const list: Handler = (ctx) => success(catalogue.filter(pluginFilter(ctx.args)));

  const byPath: Handler = (ctx) => {
    const [group, type, code, ...more] = restSegments(ctx.rest);
    // past <group>/<type>/<code> a path names nothing
    if (more.length > 0) throw new HttpError(404, HTTP_MESSAGES.notFound);
    // as upstream: a group alone filters (an unknown one holds nothing: []); a type must be one of
    // its group's (an unknown group has none: 422)
    const types: readonly string[] = PLUGIN_GROUPS.includes(group as PluginGroup) ? PLUGIN_TYPES[group as PluginGroup] : [];
    if (type !== undefined && !types.includes(type)) throw new HttpError(422, E.pluginTypeNotInGroup);
    const filter = pluginFilter(ctx.args);
    const found = catalogue.filter({ ...filter, group: [group], ...(type ? { type: [type] } : {}), ...(code ? { code: [code] } : {}) });
    if (code === undefined) return success(found);
    if (found.length === 0) throw new HttpError(404, E.pluginNotFound);
    return success(found[0]);
  };

  const filters = {
    group: { type: 'string', repeatable: true, enum: ['web', 'network', 'auxiliary'] as string[], description: 'Only plugins of this group (repeatable: any of them)' },
    type: { type: 'string', repeatable: true, description: 'Only plugins of this type: external, passive, semi_passive, active, grep (web); active, bruteforce (network)' },
    code: { type: 'string', repeatable: true, description: 'Only plugins of this test group code, e.g. OWTF-IG-001 (any case)' },
    name: { type: 'string', repeatable: true, description: 'Only plugins of this name, e.g. Spiders_Robots_and_Crawlers (any case)' },
  } as const;
  router.add('GET', '/api/v1/plugins', list, {
    summary: 'The plugin catalogue: shipped plugins and the user\'s (DATA_DIR/plugins)',
    args: filters,
    ok: { status: 200, description: 'The plugins, by group, type and the testing guide\'s order', data: arrayOf(ref('Plugin')) },
  });
  router.add('GET', '/api/v1/plugins/*3', byPath, {
    summary: 'Plugins of a group, of a group and type, or the one plugin of a group, type and code: /plugins/<group>/[<type>/[<code>]]',
    args: filters,
    ok: { status: 200, description: 'An array of plugins; with a code, the one plugin', data: { oneOf: [arrayOf(ref('Plugin')), ref('Plugin')] } },
    fails: { 404: [E.pluginNotFound, HTTP_MESSAGES.notFound], 422: [E.pluginTypeNotInGroup] },
  });
}
