/**
 * The session bundle: one session and its targets as a file that travels between boxes,
 * `{"format":"assessd-session","version":1,"exported_at","session":{"name"},"targets":[...]}`.
 */
import { normalizeSessionName } from './sessions.js';
import type { State } from './state.js';
import { deriveTarget, listTargets } from './targets.js';

export const BUNDLE_FORMAT = 'assessd-session';
export const BUNDLE_VERSION = 1;
/** One import is one op applied at once: this bounds the time it holds the event loop. */
export const MAX_BUNDLE_TARGETS = 100_000;

/** The session's bundle as JSON text, its targets newest first; undefined for an unknown session. */
export function buildBundle(state: State, sessionId: number, now: Date): string | undefined {
  const row = state.sessions.get(sessionId);
  if (!row) return undefined;
  return JSON.stringify({
    format: BUNDLE_FORMAT,
    version: BUNDLE_VERSION,
    exported_at: now.toISOString(),
    session: { name: row.name },
    targets: listTargets(state, { sessionId }),
  });
}

/** Why a bundle was refused; `index` is the position in its `targets` list. */
export type BundleProblem =
  | { kind: 'not-utf8' | 'not-json' | 'not-object' | 'format' | 'session' | 'name-type' | 'no-name' | 'targets' }
  | { kind: 'version'; version: unknown }
  | { kind: 'invalid-name'; from: 'argument' | 'bundle' }
  | { kind: 'too-many'; count: number }
  | { kind: 'target'; index: number }
  | { kind: 'target-url'; index: number; what: 'missing' | 'not-string' | 'invalid' };

export type ParsedBundle =
  | { ok: true; name: string; urls: string[] }
  | { ok: false; problem: BundleProblem };

/** A property of the object itself: a `__proto__` or `toString` key in a bundle never reaches a prototype. */
function own(value: object, key: string): unknown {
  return Object.hasOwn(value, key) ? (value as Record<string, unknown>)[key] : undefined;
}

const isObject = (v: unknown): v is object => typeof v === 'object' && v !== null && !Array.isArray(v);

function decode(bytes: Uint8Array): string | undefined {
  try {
    // fatal: a stray byte is refused rather than turned into U+FFFD inside a name; a BOM is dropped
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

/**
 * Checks a bundle from top to bottom and returns the session name (the `name` argument if given,
 * else the bundle's, trimmed) and its target URLs, trimmed, each once, OLDEST first (the order to
 * create them in, so that the new box lists them newest first as the old one did). Every field of
 * a target but `target_url` is ignored: they are derived again. Unknown fields are ignored.
 */
export function parseBundle(bytes: Uint8Array, nameArgument?: string): ParsedBundle {
  const fail = (problem: BundleProblem): ParsedBundle => ({ ok: false, problem });
  const text = decode(bytes);
  if (text === undefined) return fail({ kind: 'not-utf8' });
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return fail({ kind: 'not-json' });
  }
  if (!isObject(doc)) return fail({ kind: 'not-object' });
  if (own(doc, 'format') !== BUNDLE_FORMAT) return fail({ kind: 'format' });
  const version = own(doc, 'version');
  if (version !== BUNDLE_VERSION) return fail({ kind: 'version', version });

  const session = own(doc, 'session');
  if (session !== undefined && !isObject(session)) return fail({ kind: 'session' });
  let rawName = nameArgument;
  if (rawName === undefined) {
    const bundled = session && own(session, 'name');
    if (bundled === undefined) return fail({ kind: 'no-name' });
    if (typeof bundled !== 'string') return fail({ kind: 'name-type' });
    rawName = bundled;
  }
  const name = normalizeSessionName(rawName);
  if (name === undefined) return fail({ kind: 'invalid-name', from: nameArgument === undefined ? 'bundle' : 'argument' });

  const targets = own(doc, 'targets');
  if (!Array.isArray(targets)) return fail({ kind: 'targets' });
  if (targets.length > MAX_BUNDLE_TARGETS) return fail({ kind: 'too-many', count: targets.length });
  const urls: string[] = [];
  for (let index = 0; index < targets.length; index++) {
    const target: unknown = targets[index];
    if (!isObject(target)) return fail({ kind: 'target', index });
    const url = own(target, 'target_url');
    if (url === undefined) return fail({ kind: 'target-url', index, what: 'missing' });
    if (typeof url !== 'string') return fail({ kind: 'target-url', index, what: 'not-string' });
    const derived = deriveTarget(0, url);
    if (!derived) return fail({ kind: 'target-url', index, what: 'invalid' });
    urls.push(derived.target_url);
  }
  return { ok: true, name, urls: [...new Set(urls)].reverse() };
}
