/** Reading a session's targets at any size: text search, the two orders, filters, and a page with its total. */
import type { State, Target } from './state.js';

export type TargetSort = 'newest' | 'host';

export const TARGET_SORTS: readonly TargetSort[] = ['newest', 'host'];

export interface TargetQuery {
  sessionId: number;
  /** Case-insensitive substring of `target_url`, `host_name` or `host_ip`. */
  q?: string;
  sort?: TargetSort;
  target_url?: string[];
  host_name?: string[];
  host_ip?: string[];
  id?: number[];
  scope?: boolean;
  limit?: number;
  offset?: number;
}

export interface TargetPage {
  /** Matches before `limit` and `offset`. */
  total: number;
  page: Target[];
}

// Target objects are never changed in place (a change makes a new one), so what is derived from
// one can be kept beside it for as long as it lives.
const haystacks = new WeakMap<Target, string>();
const hostKeys = new WeakMap<Target, string>();

function haystack(target: Target): string {
  let text = haystacks.get(target);
  if (text === undefined) {
    text = `${target.target_url}\n${target.host_name}\n${target.host_ip}`.toLowerCase();
    haystacks.set(target, text);
  }
  return text;
}

/** The search text as the store compares it: trimmed, lower case; empty means no search. */
export function normalizeQ(q: string | undefined): string {
  return (q ?? '').trim().toLowerCase();
}

/** Whether `needle` (from normalizeQ) is in the target's URL, host name or IP, ignoring case. */
export function matchesQ(target: Target, needle: string): boolean {
  return needle === '' || haystack(target).includes(needle);
}

/**
 * The key of the "host" order: IPv4 addresses first, in numeric order (10.0.0.2 before
 * 10.0.0.10), then names and IPv6 addresses in code-unit order.
 */
function hostKey(target: Target): string {
  let key = hostKeys.get(target);
  if (key === undefined) {
    const host = target.host_name.toLowerCase();
    const v4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(host);
    key = v4 ? `0${v4.slice(1).map((octet) => octet.padStart(3, '0')).join('.')}` : `1${host}`;
    hostKeys.set(target, key);
  }
  return key;
}

/** The ids of a session's targets in one order: newest first, or by host (ties newest first). */
export function orderSessionTargets(state: State, sessionId: number, sort: TargetSort = 'newest'): number[] {
  const ids = [...(state.sessions.get(sessionId)?.targets ?? [])];
  if (sort === 'newest') return ids.sort((a, b) => b - a);
  const keyed = ids.map((id) => ({ id, key: hostKey(state.targets.get(id)!.target) }));
  keyed.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : b.id - a.id));
  return keyed.map((k) => k.id);
}

/** The ids of `ordered` whose target matches the text search, order kept. */
export function searchTargets(state: State, ordered: number[], q: string | undefined): number[] {
  const needle = normalizeQ(q);
  if (needle === '') return ordered;
  return ordered.filter((id) => matchesQ(state.targets.get(id)!.target, needle));
}

/** A filter: absent (undefined) lets everything through; a Set keeps each test O(1) however long. */
function anyOf<T>(values: T[] | undefined): ((value: T) => boolean) | undefined {
  if (values === undefined) return undefined;
  const set = new Set(values);
  return (value) => set.has(value);
}

/** The filters of a target query as one test: any of each list's values, and the scope; undefined when none is given. */
export function targetFilter(query: Pick<TargetQuery, 'target_url' | 'host_name' | 'host_ip' | 'id' | 'scope'>): ((target: Target) => boolean) | undefined {
  const [url, host, ip, byId] = [anyOf(query.target_url), anyOf(query.host_name), anyOf(query.host_ip), anyOf(query.id)];
  const { scope } = query;
  if (!url && !host && !ip && !byId && scope === undefined) return undefined;
  return (target) =>
    (!url || url(target.target_url)) && (!host || host(target.host_name)) && (!ip || ip(target.host_ip)) &&
    (!byId || byId(target.id)) && (scope === undefined || target.scope === scope);
}

/**
 * One page of a session's targets, and how many match in all. `searched`, when given, is the
 * session's ids already ordered and searched for this query (a caller may keep it between pages).
 */
export function queryTargets(state: State, query: TargetQuery, searched?: number[]): TargetPage {
  if (!state.sessions.has(query.sessionId)) return { total: 0, page: [] };
  const ids = searched ?? searchTargets(state, orderSessionTargets(state, query.sessionId, query.sort), query.q);
  const matches = targetFilter(query);
  const offset = query.offset ?? 0;
  const end = query.limit === undefined ? Infinity : offset + query.limit;
  if (!matches) {
    const page = ids.slice(offset, end).map((id) => state.targets.get(id)!.target);
    return { total: ids.length, page };
  }
  const page: Target[] = [];
  let total = 0;
  for (const id of ids) {
    const target = state.targets.get(id)!.target;
    if (matches(target)) {
      if (total >= offset && total < end) page.push(target);
      total++;
    }
  }
  return { total, page };
}
