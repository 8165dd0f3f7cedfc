/** Pure functions over the targets of a State, and the fields derived from a target's URL. */
import { isIP } from 'node:net';
import { forgetTarget } from './engine.js';
import { OK, refuse, type Result } from './result.js';
import type { State, Target } from './state.js';
import { queryTargets, type TargetQuery } from './target-query.js';
import { retireTargetSegments } from './transactions.js';

export type { TargetQuery } from './target-query.js';

export const MAX_TARGET_URL = 2048;

/** A DNS label: letters, digits, hyphens (and the underscore some internal names hold), not at its ends. */
const LABEL = /^[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?$/;

/**
 * Why `host` (a URL's hostname, IPv6 without brackets) is not one host, or undefined when it is:
 * a DNS name, an IPv4 address or an IPv6 address. Tools read targets their own way (nmap expands
 * `10.0.0.*`, `10.0.0.1-255` and `192.168.0-255.1-254` into thousands of addresses): anything that
 * is not plainly one host is refused, so a target never reaches beyond itself.
 */
export function notOneHost(host: string): string | undefined {
  if (isIP(host)) return undefined;
  const name = host.endsWith('.') ? host.slice(0, -1) : host;
  const why = `${host} is not one host: a target's host must be a DNS name, an IPv4 address or an IPv6 address (no *, ranges or lists, which tools expand into several hosts)`;
  if (name.length === 0 || name.length > 253) return why;
  const labels = name.split('.');
  if (!labels.every((label) => LABEL.test(label))) return why;
  // a last label without a letter is an address or a range of them, never a top-level domain
  if (!/[A-Za-z]/.test(labels[labels.length - 1]!)) return why;
  return undefined;
}

/**
 * Whether an http(s) URL has its authority as written (RFC 9110 4.2.1: an http URI with an empty
 * host is invalid): the URL parser takes `http:///path` for the host "path", and `\` for `/`.
 */
function hasWrittenAuthority(url: string): boolean {
  const authority = /^https?:\/\/([^/?#]*)/i.exec(url.trim())?.[1];
  return authority !== undefined && authority !== '' && !authority.includes('\\');
}

/** The rules a target URL is checked with beyond being an http(s) URL (deriveTarget). */
export interface URLRules {
  oneHost?: boolean;
  asWritten?: boolean;
}

/**
 * The upstream framework's derived fields, without network access: the port from the scheme when
 * absent, `host_ip` only for an IP literal, `top_domain` the host without its first label.
 * Returns undefined for anything but an absolute http(s) URL with a host, and, with `oneHost`,
 * for a host that is not one host (notOneHost); with `asWritten`, for one without its authority as
 * written. Every new request asks both; a journal record says which it was checked with (records
 * written before a rule lack it, and replay as they were acknowledged).
 */
export function deriveTarget(id: number, rawUrl: string, { oneHost = false, asWritten = false }: URLRules = {}): Target | undefined {
  const targetUrl = rawUrl.trim();
  // The URL parser silently drops tabs and newlines: refuse them, and any other control character.
  if (targetUrl.length === 0 || targetUrl.length > MAX_TARGET_URL || /[\u0000-\u0020\u007f]/.test(targetUrl)) return undefined;
  let url: URL;
  try {
    url = new URL(targetUrl);
  } catch {
    return undefined;
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.hostname === '') return undefined;
  if (!/^https?:\/\//i.test(targetUrl)) return undefined;
  // (records of the journal from before the rule may hold a URL without an authority as written)
  if (asWritten && !hasWrittenAuthority(targetUrl)) return undefined;

  const scheme = url.protocol.slice(0, -1);
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  const port = url.port || (scheme === 'https' ? '443' : '80');
  if (oneHost && notOneHost(host) !== undefined) return undefined;
  const hostIp = isIP(host) ? host : '';
  const hasPath = /^https?:\/\/[^/?#]*\//i.test(targetUrl);
  return {
    id,
    target_url: targetUrl,
    host_name: host,
    host_ip: hostIp,
    port_number: port,
    url_scheme: scheme,
    host_path: host + (hasPath ? url.pathname : ''),
    ip_url: hostIp ? targetUrl : '',
    top_domain: hostIp ? host : host.split('.').slice(1).join('.'),
    top_url: `${scheme}://${url.hostname}:${port}`,
    alternative_ips: hostIp ? [hostIp] : [],
    scope: true,
    max_user_rank: -1,
    max_owtf_rank: -1,
  };
}

/**
 * A target with its host's addresses, as the lookup found them when it was added (or when a run
 * needed them): `host_ip` the first, `alternative_ips` all, `ip_url` the URL with that address.
 */
export function withAddresses(target: Target, addresses: readonly string[]): Target {
  const [first] = addresses;
  if (first === undefined || !isIP(first)) return target;
  let ipUrl = '';
  try {
    const url = new URL(target.target_url);
    url.hostname = isIP(first) === 6 ? `[${first}]` : first;
    ipUrl = url.href;
  } catch {
    // a stored URL always parses; no ip_url otherwise
  }
  return { ...target, host_ip: first, alternative_ips: addresses.filter((a) => isIP(a) !== 0), ip_url: ipUrl };
}

/** Addresses a lookup found, by host name, as an op carries them (pairs: a host may be named `__proto__`). */
export type HostAddresses = [host: string, addresses: string[]][];

const isHostAddresses = (pair: unknown): pair is HostAddresses[number] =>
  Array.isArray(pair) && typeof pair[0] === 'string' && Array.isArray(pair[1]) && pair[1].every((a) => typeof a === 'string' && isIP(a) !== 0);

/**
 * Each URL is created if new and attached to the active session, all or nothing: one invalid URL,
 * or one already in the active session (or twice in the list), and nothing changes. A created
 * target whose host is named in `addresses` gets them (withAddresses).
 */
export function createTargets(state: State, urls: string[], rules: URLRules = {}, addresses: HostAddresses = []): Result<'invalid-url' | 'duplicate'> {
  const sessionId = state.activeSessionId;
  const session = state.sessions.get(sessionId)!;
  const plan: Target[] = [];
  const seen = new Set<string>();
  for (const raw of urls) {
    const derived = deriveTarget(0, raw, rules);
    if (!derived) return refuse('invalid-url');
    const url = derived.target_url;
    const existing = state.targetIdByUrl.get(url);
    if (seen.has(url) || (existing !== undefined && session.targets?.has(existing))) return refuse('duplicate');
    seen.add(url);
    plan.push(derived);
  }
  // a journal edited by hand may hold anything here: only [host, [address...]] pairs are read
  const byHost = new Map(Array.isArray(addresses) ? addresses.filter(isHostAddresses) : []);
  for (const derived of plan) {
    const found = derived.host_ip === '' ? byHost.get(derived.host_name) : undefined;
    attachUrl(state, sessionId, found ? withAddresses(derived, found) : derived);
  }
  return OK;
}

/** A target's addresses, found after it was added (a run needed them): set when it still has none. */
export function setTargetAddresses(state: State, id: number, addresses: string[]): Result<'unknown-target'> {
  const row = state.targets.get(id);
  if (!row) return refuse('unknown-target');
  if (!isHostAddresses([row.target.host_name, addresses])) return OK;
  if (row.target.host_ip === '') Object.assign(row.target, withAddresses(row.target, addresses));
  return OK;
}

/**
 * Attaches the target with `derived`'s URL to a session, creating it (with the next id) if no
 * target has that URL yet: the one way every op adds a target, so that their replays agree.
 */
export function attachUrl(state: State, sessionId: number, derived: Target): { id: number; created: boolean } {
  let id = state.targetIdByUrl.get(derived.target_url);
  const created = id === undefined;
  if (id === undefined) {
    id = state.nextTargetId++;
    state.targets.set(id, { target: { ...derived, id }, sessions: new Set() });
    state.targetIdByUrl.set(derived.target_url, id);
  }
  const session = state.sessions.get(sessionId)!;
  (session.targets ??= new Set()).add(id);
  state.targets.get(id)!.sessions.add(sessionId);
  return { id, created };
}

export function getTarget(state: State, id: number): Target | undefined {
  return state.targets.get(id)?.target;
}

/** The targets of one session, newest first, filtered (each filter any-of), then paged. */
export function listTargets(state: State, query: TargetQuery): Target[] {
  return queryTargets(state, query).page;
}

/** Detaches a target from every session, then deletes it. */
export function deleteTarget(state: State, id: number): Result<'unknown-target'> {
  const row = state.targets.get(id);
  if (!row) return refuse('unknown-target');
  for (const sessionId of row.sessions) state.sessions.get(sessionId)?.targets?.delete(id);
  state.targets.delete(id);
  state.targetIdByUrl.delete(row.target.target_url);
  forgetTarget(state, id);
  retireTargetSegments(state, id);
  return OK;
}

/** Detaches a target from one session; a target left in no session is deleted with it. */
export function detachTarget(state: State, sessionId: number, targetId: number): void {
  state.sessions.get(sessionId)?.targets?.delete(targetId);
  const row = state.targets.get(targetId);
  if (!row) return;
  row.sessions.delete(sessionId);
  if (row.sessions.size === 0) deleteTarget(state, targetId);
}
