/** Client-side routes on real paths (history.pushState), so a reload of any view lands on it again. */
import { confirmDialog } from './ui.js';

export interface ViewContext {
  /** The element the view renders into; empty when the view starts. */
  root: HTMLElement;
  query: URLSearchParams;
  /** The path's named segments (`/targets/:id` gives `id`). */
  params: Record<string, string>;
  /** Aborted when the user leaves the view: late answers must not touch the page. */
  signal: AbortSignal;
}

export interface Route {
  /** A fixed path, or one with named segments: `/targets/:id` (a segment of digits). */
  path: string;
  title: string;
  /** The main navigation's link this view belongs to, when it has none of its own (a target's results: Targets). */
  within?: string;
  render: (ctx: ViewContext) => void;
}

/** Asked before leaving the current view; resolves false to stay. */
export type LeaveGuard = () => Promise<boolean>;

let routes: Route[] = [];
let outlet: HTMLElement;
let fallback: Route;
let controller = new AbortController();
let guard: LeaveGuard | undefined;
let shownUrl = '';

export function setLeaveGuard(next: LeaveGuard | undefined): void {
  guard = next;
}

/**
 * Leaving the view asks first while `unsaved` says what is not saved (a sentence), and leaves at
 * once when it is undefined: the configuration's edits, the results' ranks and notes.
 */
export function askBeforeLeaving(unsaved: string | undefined): void {
  setLeaveGuard(unsaved === undefined ? undefined : () => confirmDialog({ title: 'Leave without saving?', message: `${unsaved} They are lost if you leave this page.`, confirm: 'Leave without saving' }));
}

export function hasLeaveGuard(): boolean {
  return guard !== undefined;
}

/** The route for a path, and its named segments (digits only: ids). */
function match(path: string): { route: Route; params: Record<string, string> } {
  const clean = path.length > 1 ? path.replace(/\/+$/, '') : path;
  const parts = clean.split('/');
  for (const route of routes) {
    const pattern = route.path.split('/');
    if (pattern.length !== parts.length) continue;
    const params: Record<string, string> = {};
    if (pattern.every((seg, i) => (seg.startsWith(':') ? /^[0-9]{1,15}$/.test(parts[i]) && ((params[seg.slice(1)] = parts[i]), true) : seg === parts[i]))) {
      return { route, params };
    }
  }
  return { route: fallback, params: {} };
}

function routeFor(path: string): Route {
  return match(path).route;
}

function currentUrl(): string {
  return location.pathname + location.search;
}

function markNavigation(path: string): void {
  const active = routeFor(path);
  for (const link of document.querySelectorAll<HTMLAnchorElement>('[data-nav]')) {
    if (routeFor(link.pathname) === active) link.setAttribute('aria-current', 'page');
    else if (active.within === link.pathname) link.setAttribute('aria-current', 'true');
    else link.removeAttribute('aria-current');
  }
}

/** Renders the view for the current URL; focus moves to its heading unless this is the first load. */
export function render(moveFocus = true): void {
  controller.abort();
  controller = new AbortController();
  guard = undefined;
  shownUrl = currentUrl();
  const { route, params } = match(location.pathname);
  document.title = `${route.title} · assessd`;
  markNavigation(location.pathname);
  outlet.replaceChildren();
  route.render({ root: outlet, query: new URLSearchParams(location.search), params, signal: controller.signal });
  if (moveFocus) outlet.querySelector<HTMLElement>('h1')?.focus();
}

/** Changes the view's own query (a search, a page) without rendering it again; a reload comes back to it. */
export function replaceQuery(query: URLSearchParams): void {
  const search = query.toString();
  history.replaceState(null, '', location.pathname + (search ? `?${search}` : ''));
  shownUrl = currentUrl();
}

export async function navigate(url: string, options: { replace?: boolean } = {}): Promise<void> {
  if (guard && !(await guard())) return;
  if (options.replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  render();
}

function onClick(event: MouseEvent): void {
  if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  const link = (event.target as Element).closest('a');
  if (!link || link.target || link.hasAttribute('download') || link.origin !== location.origin) return;
  if (/^\/(api|debug|static|output_files|logs)(\/|$)/.test(link.pathname)) return;
  const sameView = link.pathname + link.search === currentUrl();
  // A link to a place on this view (#section) is the browser's to follow.
  if (sameView && link.hash) return;
  event.preventDefault();
  if (!sameView) void navigate(link.pathname + link.search);
}

async function onPopState(): Promise<void> {
  if (currentUrl() === shownUrl) return;
  if (guard) {
    const target = currentUrl();
    // The browser has already moved: put the shown URL back while the user decides.
    history.pushState(null, '', shownUrl);
    if (!(await guard())) return;
    history.replaceState(null, '', target);
  }
  render();
}

export function startRouter(table: Route[], notFound: Route, root: HTMLElement): void {
  routes = table;
  fallback = notFound;
  outlet = root;
  document.addEventListener('click', onClick);
  window.addEventListener('popstate', () => void onPopState());
  window.addEventListener('beforeunload', (event) => {
    if (guard) event.preventDefault();
  });
  render(false);
}
