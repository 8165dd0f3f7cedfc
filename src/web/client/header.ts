/** The header: the active session, and the server's health, polled so the page notices outages. */
import { shown } from '../bidi.js';
import { api, type Session } from './api.js';
import { byId, replace } from './dom.js';
import { loadActiveSession, onActiveSessionChange } from './state.js';
import { announce } from './ui.js';

const POLL_OK_MS = 10_000;
const POLL_DOWN_MS = 2_000;

type Health = 'checking' | 'ok' | 'down';

let health: Health = 'checking';
let timer: number | undefined;
let inFlight = false;
let onBack: () => void = () => {};

function showActiveSession(active: Session | undefined): void {
  replace(byId('active-session-name'), active ? active.name : '—');
  // The name may be cut short on a narrow screen: the whole of it on hover.
  byId('active-session').title = active ? shown(`Active session: ${active.name} (new targets go to it)`) : '';
}

function showHealth(next: Health): void {
  const el = byId('health');
  el.dataset.state = next;
  replace(byId('health-text'), next === 'ok' ? 'Server online' : next === 'down' ? 'Server unreachable' : 'Checking server…');
  el.title = next === 'down' ? 'Retrying every few seconds' : '';
}

/** Asks /debug/health now; reports a change of state and schedules the next check. */
export async function checkHealth(): Promise<void> {
  if (inFlight) return;
  inFlight = true;
  window.clearTimeout(timer);
  let next: Health;
  try {
    const answer = await api.health(AbortSignal.timeout(4000));
    next = answer.status === 'ok' ? 'ok' : 'down';
  } catch {
    next = 'down';
  }
  inFlight = false;
  const previous = health;
  health = next;
  showHealth(next);
  if (previous === 'ok' && next === 'down') announce('The server is unreachable. Changes cannot be saved until it is back.', 'error');
  if (previous === 'down' && next === 'ok') {
    announce('The server is back.');
    onBack();
  }
  schedule(next === 'ok' ? POLL_OK_MS : POLL_DOWN_MS);
}

function schedule(ms: number): void {
  window.clearTimeout(timer);
  timer = window.setTimeout(() => (document.hidden ? schedule(ms) : void checkHealth()), ms);
}

let askingActive = false;

/**
 * Another client (curl in a terminal, another browser) may have activated a session while the page
 * was not looked at: asked again when it is (another tab of this browser is heard at once, state.ts).
 * One request at a time: a tab brought to the front fires both events.
 */
function askActiveSession(): void {
  if (askingActive) return;
  askingActive = true;
  loadActiveSession()
    .catch(() => {})
    .finally(() => (askingActive = false));
}

export function startHeader(whenServerBack: () => void): void {
  onBack = whenServerBack;
  onActiveSessionChange(showActiveSession);
  showHealth(health);
  // A tab in the background checks when it is looked at again rather than on a timer.
  document.addEventListener('visibilitychange', () => {
    if (document.hidden) return;
    void checkHealth();
    askActiveSession();
  });
  // the window in front again (from a terminal, say): the tab was visible all along
  window.addEventListener('focus', askActiveSession);
  void checkHealth();
}
