/** Pure functions over the sessions of a State. A refused change leaves the state untouched. */
import { OK, refuse, type Result } from './result.js';
import { DEFAULT_SESSION_NAME, type Session, type SessionRow, type State } from './state.js';
import { detachTarget } from './targets.js';

export const MAX_SESSION_NAME = 255;

export function toSession(state: State, row: SessionRow): Session {
  return { id: row.id, name: row.name, active: row.id === state.activeSessionId };
}

export function listSessions(state: State, active?: boolean): Session[] {
  const all = [...state.sessions.values()].map((row) => toSession(state, row));
  return active === undefined ? all : all.filter((s) => s.active === active);
}

export function getSession(state: State, id: number): Session | undefined {
  const row = state.sessions.get(id);
  return row && toSession(state, row);
}

/** Trims, then checks 1 to 255 characters (code points, not UTF-16 units). */
export function normalizeSessionName(name: string): string | undefined {
  const trimmed = name.trim();
  const length = [...trimmed].length;
  return length >= 1 && length <= MAX_SESSION_NAME ? trimmed : undefined;
}

/** `at` comes from the op (checked by applyOp), never from the clock, so that a replay recreates the same row. */
export function insertSession(state: State, name: string, at: number | undefined, activate = true): number {
  const id = state.nextSessionId++;
  const row: SessionRow = at === undefined ? { id, name } : { id, name, createdAt: at };
  state.sessions.set(id, row);
  state.sessionIdByName.set(name, id);
  if (activate) state.activeSessionId = id;
  return id;
}

/** A store never goes without a session: the default one, active (made now, unless an op says when). */
export function ensureDefaultSession(state: State, at: number | undefined = Date.now()): void {
  if (state.sessions.size === 0) insertSession(state, DEFAULT_SESSION_NAME, at);
}

/** Why a name cannot be a new session's, if it cannot. */
export function checkNewSessionName(state: State, rawName: string): Result<'invalid-name' | 'duplicate-name', { name: string }> {
  const name = normalizeSessionName(rawName);
  if (name === undefined) return refuse('invalid-name');
  if (state.sessionIdByName.has(name)) return refuse('duplicate-name');
  return { ok: true, name };
}

/** Creating a session makes it the active one. */
export function createSession(state: State, rawName: string, at?: number): Result<'invalid-name' | 'duplicate-name', { id: number }> {
  const checked = checkNewSessionName(state, rawName);
  if (!checked.ok) return checked;
  return { ok: true, id: insertSession(state, checked.name, at) };
}

export function activateSession(state: State, id: number): Result<'unknown-session'> {
  if (!state.sessions.has(id)) return refuse('unknown-session');
  state.activeSessionId = id;
  return OK;
}

/**
 * Detaches the session's targets (deleting those left in no session). Deleting the active session
 * activates the remaining one with the highest id; deleting the last re-creates the default session.
 */
export function deleteSession(state: State, id: number, at?: number): Result<'unknown-session'> {
  const row = state.sessions.get(id);
  if (!row) return refuse('unknown-session');
  for (const targetId of row.targets ?? []) detachTarget(state, id, targetId);
  state.sessions.delete(id);
  state.sessionIdByName.delete(row.name);
  if (state.activeSessionId === id) {
    state.activeSessionId = state.sessions.highestId();
    // not ensureDefaultSession: a replay must not stamp the re-created session with today's clock
    if (state.sessions.size === 0) insertSession(state, DEFAULT_SESSION_NAME, at);
  }
  return OK;
}

/** Adding a target already in the session is a no-op success. */
export function addTargetToSession(state: State, sessionId: number, targetId: number): Result<'unknown-session' | 'unknown-target'> {
  const session = state.sessions.get(sessionId);
  if (!session) return refuse('unknown-session');
  const target = state.targets.get(targetId);
  if (!target) return refuse('unknown-target');
  (session.targets ??= new Set()).add(targetId);
  target.sessions.add(sessionId);
  return OK;
}

/** A target that `remove` leaves attached to no session is deleted. */
export function removeTargetFromSession(state: State, sessionId: number, targetId: number): Result<'unknown-session' | 'unknown-target'> {
  const session = state.sessions.get(sessionId);
  if (!session) return refuse('unknown-session');
  if (!session.targets?.has(targetId)) return refuse('unknown-target');
  detachTarget(state, sessionId, targetId);
  return OK;
}
