/** Entry point: the header, the routes, and what happens when the server comes back. */
import { setUnreachableHandler } from './api.js';
import { configurationView } from './configuration.js';
import { byId, h } from './dom.js';
import { checkHealth, startHeader } from './header.js';
import { hasLeaveGuard, render, startRouter, type Route, type ViewContext } from './router.js';
import { sessionsView } from './sessions.js';
import { loadActiveSession, overviewRequestCount } from './state.js';
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

setUnreachableHandler(() => void checkHealth());
startHeader(() => {
  // Unsaved edits are worth more than fresh data: keep them, refresh only the header.
  if (hasLeaveGuard()) void loadActiveSession().catch(() => {});
  else render(false);
});
startRouter(routes, { path: '', title: 'Page not found', render: notFoundView }, byId('main'));
// The sessions and targets views tell the header which session is active; the others do not.
if (overviewRequestCount() === 0) void loadActiveSession().catch(() => {});
