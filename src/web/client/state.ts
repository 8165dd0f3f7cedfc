/** The sessions as last seen from the server, shared by the header and the views. */
import { api, type Session, type Target } from './api.js';

type Listener = (sessions: Session[]) => void;

let latest: Session[] = [];
const listeners = new Set<Listener>();

export function onSessionsChange(listener: Listener): void {
  listeners.add(listener);
}

function publish(sessions: Session[]): void {
  latest = sessions;
  for (const listener of listeners) listener(sessions);
}

export function knownSessions(): Session[] {
  return latest;
}

export async function loadSessions(signal?: AbortSignal): Promise<Session[]> {
  const sessions = await api.sessions(signal);
  publish(sessions);
  return sessions;
}

export interface Overview {
  sessions: Session[];
  /** Each session's targets, newest first. */
  targets: Map<number, Target[]>;
}

/** Sessions and the targets of each: a target object does not say which sessions hold it. */
export async function loadOverview(signal?: AbortSignal): Promise<Overview> {
  const sessions = await loadSessions(signal);
  const lists = await Promise.all(sessions.map((s) => api.targets(s.id, signal)));
  return { sessions, targets: new Map(sessions.map((s, i) => [s.id, lists[i]])) };
}

/** The sessions that hold the target, in id order. */
export function sessionsOf(overview: Overview, targetId: number): Session[] {
  return overview.sessions.filter((s) => overview.targets.get(s.id)?.some((t) => t.id === targetId));
}
