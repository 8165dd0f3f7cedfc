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
/**
 * The shown entry's number in this tab's history (`history.state.index`, one more at each view
 * pushed): a Back or Forward the leave guard holds is undone by going back exactly that far, which
 * keeps the history as it was (a new entry pushed in its place cut the forward ones off).
 */
let shownIndex = 0;
/** Resolves when the popstate of our own history.go() arrives: that one is not the user's. */
let arrived: (() => void) | undefined;

const indexOf = (state: unknown): number | undefined => {
  const index = (state as { index?: unknown } | null)?.index;
  return typeof index === 'number' ? index : undefined;
};

/** Moves `delta` entries through history, resolving once the browser has. */
function go(delta: number): Promise<void> {
  return new Promise((resolve) => {
    arrived = resolve;
    history.go(delta);
  });
}

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
  shownIndex = indexOf(history.state) ?? shownIndex;
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
  history.replaceState({ index: shownIndex }, '', location.pathname + (search ? `?${search}` : ''));
  shownUrl = currentUrl();
}

export async function navigate(url: string, options: { replace?: boolean } = {}): Promise<void> {
  if (guard && !(await guard())) return;
  if (options.replace) history.replaceState({ index: shownIndex }, '', url);
  else history.pushState({ index: shownIndex + 1 }, '', url);
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
  if (arrived) {
    const done = arrived;
    arrived = undefined;
    return done();
  }
  if (currentUrl() === shownUrl) return;
  if (guard) {
    const to = indexOf(history.state);
    // The browser has already moved: back to the shown entry while the user decides, then (leaving)
    // to where they went. History stays as it was, forward entries and all.
    if (to !== undefined && to !== shownIndex) {
      await go(shownIndex - to);
      if (!(await guard())) return;
      await go(to - shownIndex);
      return render();
    }
    // an entry without a number: the shown URL put back as a new one
    const target = currentUrl();
    history.pushState({ index: shownIndex + 1 }, '', shownUrl);
    if (!(await guard())) return;
    history.replaceState({ index: shownIndex + 1 }, '', target);
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
  // a reload keeps its entry's number; a first load numbers its entry 0
  if (indexOf(history.state) === undefined) history.replaceState({ ...(history.state as object | null), index: 0 }, '');
  render(false);
}
