/** Entry point: the header, the routes, and what happens when the server comes back. */
import { setUnauthenticatedHandler, setUnreachableHandler } from './api.js';
import { authenticationRequired, startAuth } from './auth.js';
import { configurationView } from './configuration.js';
import { byId, h } from './dom.js';
import { checkHealth, startHeader } from './header.js';
import { hasLeaveGuard, render, startRouter, type Route, type ViewContext } from './router.js';
import { pluginsView } from './plugins.js';
import { proxyView } from './proxy.js';
import { resultsView } from './results.js';
import { sessionsView } from './sessions.js';
import { loadActiveSession, overviewRequestCount } from './state.js';
import { targetsView } from './targets.js';
import { transactionView } from './transaction.js';
import { transactionsView } from './transactions.js';
import { urlsView } from './urls.js';
import { viewHeading } from './ui.js';
import { workersView } from './workers.js';
import { worklistView } from './worklist.js';

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
  { path: '/targets/:id', title: 'Results', within: '/targets', render: resultsView },
  { path: '/targets/:id/transactions', title: 'Transactions', within: '/targets', render: transactionsView },
  { path: '/targets/:id/transactions/:tx', title: 'Transaction', within: '/targets', render: transactionView },
  { path: '/targets/:id/urls', title: 'URLs', within: '/targets', render: urlsView },
  { path: '/plugins', title: 'Plugins', render: pluginsView },
  { path: '/worklist', title: 'Worklist', render: worklistView },
  { path: '/workers', title: 'Workers', render: workersView },
  { path: '/proxy', title: 'Proxy', render: proxyView },
  { path: '/configuration', title: 'Configuration', render: configurationView },
];

/** The server is back, or the user just logged in: fresh data, unless unsaved edits are worth more. */
function refresh(): void {
  // Unsaved edits are worth more than fresh data: keep them, refresh only the header.
  if (hasLeaveGuard()) void loadActiveSession().catch(() => {});
  else render(false);
}

setUnreachableHandler(() => void checkHealth());
setUnauthenticatedHandler(authenticationRequired);
await startAuth(refresh);
startHeader(refresh);
startRouter(routes, { path: '', title: 'Page not found', render: notFoundView }, byId('main'));
// The sessions, targets and plugins views tell the header which session is active; the others do not.
if (overviewRequestCount() === 0) void loadActiveSession().catch(() => {});
