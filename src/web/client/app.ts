/** Entry point: the header, the routes, and what happens when the server comes back. */
import { setUnauthenticatedHandler, setUnreachableHandler } from './api.js';
import { authenticationRequired, startAuth } from './auth.js';
import { configurationView } from './configuration.js';
import { byId, h } from './dom.js';
import { checkHealth, startHeader } from './header.js';
import { hasLeaveGuard, render, startRouter, type Route, type ViewContext } from './router.js';
import { sessionsView } from './sessions.js';
import { loadSessions } from './state.js';
import { targetsView } from './targets.js';
import { viewHeading } from './ui.js';

function notFoundView({ root }: ViewContext): void {
  root.append(
    ...viewHeading('Page not found'),
    h('p', {}, `Nothing lives at ${location.pathname}. `, h('a', { href: '/sessions' }, 'Go to the sessions'), '.'),
  );
}

const routes: Route[] = [
  { path: '/', title: 'Sessions', render: sessionsView },
  { path: '/sessions', title: 'Sessions', render: sessionsView },
  { path: '/targets', title: 'Targets', render: targetsView },
  { path: '/configuration', title: 'Configuration', render: configurationView },
];

/** The server is back, or the user just logged in: fresh data, unless unsaved edits are worth more. */
function refresh(): void {
  // Unsaved edits are worth more than fresh data: keep them, refresh only the header.
  if (hasLeaveGuard()) void loadSessions().catch(() => {});
  else render(false);
}

setUnreachableHandler(() => void checkHealth());
setUnauthenticatedHandler(authenticationRequired);
await startAuth(refresh);
startHeader(refresh);
startRouter(routes, { path: '', title: 'Page not found', render: notFoundView }, byId('main'));
