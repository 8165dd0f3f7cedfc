/** Bundles for the import/export suites: building them, posting them, and the store's bytes to compare. */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { LOCK_SOCKET_PREFIX } from '../../src/store/lock.ts';
import { request, type Response, type TestServer } from './server.ts';

export const JSON_BODY = { 'content-type': 'application/json' };

export function bundle(name: string | undefined, urls: unknown[], extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    format: 'assessd-session',
    version: 1,
    exported_at: '2026-11-21T10:00:00.000Z',
    ...(name === undefined ? {} : { session: { name } }),
    targets: urls.map((target_url) => ({ target_url })),
    ...extra,
  });
}

/** POST /api/v1/bundles/ with a JSON body (the query string, if any, in `query`). */
export function postBundle(base: string, body: string | Buffer, query = '', headers: Record<string, string> = JSON_BODY): Promise<Response> {
  return request(base, `/api/v1/bundles/${query}`, { method: 'POST', body, headers });
}

/** Every byte the store keeps (the lock aside), by file path, subdirectories too: equal before and after means nothing changed. */
export async function storeBytes(dataDir: string, within = ''): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  for (const entry of (await readdir(join(dataDir, within), { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : 1))) {
    const name = join(within, entry.name);
    if (entry.name.startsWith(LOCK_SOCKET_PREFIX)) continue;
    if (entry.isDirectory()) Object.assign(files, await storeBytes(dataDir, name));
    else files[name] = (await readFile(join(dataDir, name))).toString('base64');
  }
  return files;
}

/** Everything a client can read of sessions and targets, plus the store's write counters. */
export async function visibleState(server: TestServer): Promise<unknown> {
  const sessions = (await request(server.url, '/api/v1/sessions/')).json.data as { id: number }[];
  const targets: Record<number, unknown> = {};
  for (const s of sessions) targets[s.id] = (await request(server.url, `/api/v1/targets/?session_id=${s.id}`)).json.data;
  const { acknowledged, batches, failedBatches } = (await request(server.url, '/debug/stats')).json.data.store;
  return { sessions, targets, stats: { acknowledged, batches, failedBatches } };
}

/** A target without its id: what is equal between two boxes. */
export function withoutId<T extends { id?: number }>(target: T): Omit<T, 'id'> {
  const { id: _id, ...rest } = target;
  return rest;
}
