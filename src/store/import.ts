/** One op for a whole imported session: the session, its new targets and their links, all or nothing. */
import { refuse, type Result } from './result.js';
import { checkNewSessionName, insertSession } from './sessions.js';
import type { State, Target } from './state.js';
import { attachUrl, deriveTarget } from './targets.js';

export type ImportRefusal = 'invalid-name' | 'duplicate-name' | 'invalid-url';

/**
 * Creates a session named `name` (without activating it), creates each URL not yet a target, in
 * the order given, and attaches every one of them to it. A URL repeated in `urls` is attached once.
 * Refused, with nothing changed, for a name that is invalid or in use, or one invalid URL.
 * Returns the new session's id and how many distinct targets it holds.
 */
export function importSession(state: State, name: string, urls: string[], at?: number): Result<ImportRefusal, { id: number; targets: number }> {
  const checked = checkNewSessionName(state, name);
  if (!checked.ok) return checked;
  const derived = new Map<string, Target>();
  for (const raw of urls) {
    const target = deriveTarget(0, raw);
    if (!target) return refuse('invalid-url');
    if (!derived.has(target.target_url)) derived.set(target.target_url, target);
  }
  const sessionId = insertSession(state, checked.name, at, false);
  for (const target of derived.values()) attachUrl(state, sessionId, target);
  return { ok: true, id: sessionId, targets: state.sessions.get(sessionId)!.targets?.size ?? 0 };
}
