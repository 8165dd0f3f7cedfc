/** The active session as last seen from the server, shared by the header and the views. */
import { api, type Plugin, type Session, type SessionSummary } from './api.js';

type Listener = (active: Session | undefined) => void;

const listeners = new Set<Listener>();
let overviewRequests = 0;

export function onActiveSessionChange(listener: Listener): void {
  listeners.add(listener);
}

/**
 * This browser's other tabs of the page hear what one learned of the active session (an activation
 * made there, a list loaded): their headers said the old one until they loaded a list themselves.
 */
const tabs = typeof BroadcastChannel === 'undefined' ? undefined : new BroadcastChannel('assessd-active-session');
tabs?.addEventListener('message', (event: MessageEvent<Session | null>) => tell(event.data ?? undefined));

function tell(active: Session | undefined): void {
  for (const listener of listeners) listener(active);
}

function publish(active: Session | undefined): void {
  tell(active);
  tabs?.postMessage(active ?? null);
}

/** Every session with its target count, in one request; the header learns the active one from it. */
export async function loadOverview(signal?: AbortSignal): Promise<SessionSummary[]> {
  overviewRequests++;
  const sessions = await api.overview(signal);
  const active = sessions.find((s) => s.active);
  publish(active && { id: active.id, name: active.name, active: true });
  return sessions;
}

/** Only the active session: for the header, when the view on screen does not load the overview. */
export async function loadActiveSession(signal?: AbortSignal): Promise<void> {
  const [active] = await api.activeSessions(signal);
  publish(active);
}

/** How many overview requests the page has started: the header asks for the active session only if none did. */
export function overviewRequestCount(): number {
  return overviewRequests;
}

/** The active session first, then the newest: the ones a tester works on are at the top. */
export function byActiveThenNewest(a: Session, b: Session): number {
  return Number(b.active) - Number(a.active) || b.id - a.id;
}

let plugins: Plugin[] | undefined;

/** The plugin catalogue: asked once a page load (it changes only when the server restarts). */
export async function loadPlugins(signal?: AbortSignal): Promise<Plugin[]> {
  plugins ??= await api.plugins(signal);
  return plugins;
}
