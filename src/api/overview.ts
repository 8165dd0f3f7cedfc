/** /api/v1/overview/sessions (extension): every session with its target count, for the web application's views. */
import { success } from '../http/jsend.js';
import type { SessionRow, State } from '../store/state.js';
import type { Store } from '../store/store.js';
import { replyPerGeneration } from './cache.js';
import type { ApiRouter } from './openapi.js';

export interface SessionOverview {
  id: number;
  name: string;
  active: boolean;
  target_count: number;
}

function overview(state: State, row: SessionRow): SessionOverview {
  return { id: row.id, name: row.name, active: row.id === state.activeSessionId, target_count: row.targets?.size ?? 0 };
}

/** Ordered by id; `name` keeps the sessions whose name holds it, ignoring case. */
export function listOverview(state: State, name?: string): SessionOverview[] {
  const needle = name?.trim().toLowerCase() ?? '';
  const rows = [...state.sessions.values()];
  return (needle === '' ? rows : rows.filter((row) => row.name.toLowerCase().includes(needle))).map((row) => overview(state, row));
}

export function registerOverview(router: ApiRouter, store: Store): void {
  const all = replyPerGeneration(store, () => listOverview(store.state));
  router.add('GET', '/api/v1/overview/sessions', (ctx) => {
    const name = ctx.args.get('name');
    return name === null || name.trim() === '' ? all() : success(listOverview(store.state, name));
  }, {
    summary: 'Every session with its number of targets (extension), ordered by id',
    args: { name: { type: 'string', description: 'Only sessions whose name contains this (any case)' } },
    ok: {
      status: 200,
      description: 'The sessions',
      data: { type: 'array', items: { type: 'object', required: ['id', 'name', 'active', 'target_count'], properties: { id: { type: 'integer' }, name: { type: 'string' }, active: { type: 'boolean' }, target_count: { type: 'integer' } } } },
    },
  });
}
