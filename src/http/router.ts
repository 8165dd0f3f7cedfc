/** A route table as plain data: `add(method, pattern, handler)` and `match(method, path)`. */

/**
 * Pattern segments: a literal, a typed parameter `{name:int}` / `{name:word}` / `{name:any}`, or a
 * final `*` (any rest) or `*N` (at most N more segments, none of them empty).
 */
type Segment =
  | { kind: 'literal'; value: string }
  | { kind: 'param'; name: string; test: RegExp }
  | { kind: 'rest'; most?: number };

const PARAM_TYPES: Record<string, RegExp> = {
  int: /^[0-9]+$/,
  word: /^[A-Za-z_]+$/,
  /** any segment but an empty one */
  any: /^[\s\S]/,
};

/** How specific a segment is: a literal before a parameter before a rest. */
const RANK = { literal: 0, param: 1, rest: 2 } as const;

interface Route<H> {
  segments: Segment[];
  handlers: Map<string, H>;
  /** For a route with no parameter, its answer per method, made once. */
  found?: Map<string, RouteMatch<H>>;
}

export type Params = Record<string, string>;

export type RouteMatch<H> =
  | { kind: 'found'; handler: H; params: Params; rest: string[] }
  | { kind: 'method-not-allowed'; allow: string[] }
  | { kind: 'not-found' };

/** A registered route, as the table holds it (for a document of the API: `doc` is what `add` was given). */
export interface RouteEntry<D> {
  method: string;
  pattern: string;
  doc?: D;
}

export interface Router<H, D = unknown> {
  /** `doc` rides along for `routes()`: the router only keeps it. */
  add(method: string, pattern: string, handler: H, doc?: D): void;
  /** Every route added, in order. */
  routes(): RouteEntry<D>[];
  /**
   * `path` is the raw (still percent-encoded) path, without the query string. A final `*` hands
   * the handler the rest of the path as decoded segments, a trailing slash kept as a last `''`.
   */
  match(method: string, path: string): RouteMatch<H>;
}

function compile(pattern: string): Segment[] {
  return pattern
    .split('/')
    .slice(1)
    .map((part, i, all): Segment => {
      const rest = /^\*([1-9])?$/.exec(part);
      if (rest) {
        if (i !== all.length - 1) throw new Error(`'*' must end the pattern: ${pattern}`);
        return rest[1] === undefined ? { kind: 'rest' } : { kind: 'rest', most: Number(rest[1]) };
      }
      const param = /^\{(\w+):(\w+)\}$/.exec(part);
      if (!param) return { kind: 'literal', value: part };
      const test = PARAM_TYPES[param[2]];
      if (!test) throw new Error(`unknown parameter type '${param[2]}' in ${pattern}`);
      return { kind: 'param', name: param[1], test };
    });
}

/**
 * Percent-decodes each segment once. A segment that is not valid percent-encoding stays as it
 * is: it then matches no typed parameter, and no literal.
 */
export function decodeSegments(path: string): string[] {
  return path.split('/').map((raw) => {
    if (!raw.includes('%')) return raw;
    try {
      return decodeURIComponent(raw);
    } catch {
      return raw;
    }
  });
}

/** One trailing slash is optional on every path. */
function withoutTrailingSlash(path: string): string {
  return path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
}

/** The decoded segments of a path; one trailing slash is optional. */
export function splitPath(path: string): string[] {
  return decodeSegments(withoutTrailingSlash(path).slice(1));
}

function matchSegments(segments: Segment[], parts: string[]): Params | null {
  const params: Params = {};
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i];
    if (segment.kind === 'rest') {
      if (segment.most === undefined) return params;
      const more = parts.length - i;
      return more <= segment.most && !parts.includes('', i) ? params : null;
    }
    const part = parts[i];
    if (part === undefined) return null;
    if (segment.kind === 'literal') {
      if (part !== segment.value) return null;
    } else {
      if (!segment.test.test(part)) return null;
      params[segment.name] = part;
    }
  }
  return segments.length === parts.length ? params : null;
}

function segmentKey(s: Segment): string {
  if (s.kind === 'literal') return `=${s.value}`;
  return s.kind === 'param' ? `{${s.name}:${s.test.source}}` : `*${s.most ?? ''}`;
}

/** How much more specific route `a` is than `b` (< 0: less): at their first difference, a literal beats a parameter, which beats a rest. */
function specificity(a: Segment[], b: Segment[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const diff = RANK[b[i].kind] - RANK[a[i].kind];
    if (diff !== 0) return diff;
  }
  return 0;
}

export function createRouter<H, D = unknown>(): Router<H, D> {
  const routes: Route<H>[] = [];
  const entries: RouteEntry<D>[] = [];
  /** Routes with no parameter, by path: most requests are answered by one lookup, no splitting. */
  const literal = new Map<string, Route<H>>();
  /** Routes by their key (the pattern with its parameters' names and types): two patterns with one key are one route. */
  const byKey = new Map<string, Route<H>>();

  return {
    add(method, pattern, handler, doc) {
      const segments = compile(pattern);
      entries.push({ method: method.toUpperCase(), pattern, doc });
      const key = segments.map(segmentKey).join('/');
      let route = byKey.get(key);
      if (!route) {
        route = { segments, handlers: new Map() };
        routes.push(route);
        byKey.set(key, route);
        if (segments.every((s) => s.kind === 'literal')) {
          route.found = new Map();
          literal.set(pattern, route);
        }
      }
      route.handlers.set(method.toUpperCase(), handler);
      route.found?.set(method.toUpperCase(), { kind: 'found', handler, params: {}, rest: [] });
    },

    routes: () => [...entries],

    match(method, path) {
      const exact = literal.get(withoutTrailingSlash(path))?.found;
      const fast = exact?.get(method) ?? (method === 'HEAD' ? exact?.get('GET') : undefined);
      if (fast) return fast;

      // The path is the most specific routes' that match it (`/worklist/search` is not a
      // `/worklist/{action:word}`): their handler for the method, else 405 with their methods.
      const parts = splitPath(path);
      let best: { route: Route<H>; params: Params }[] = [];
      for (const route of routes) {
        const params = matchSegments(route.segments, parts);
        if (!params) continue;
        const than = best.length === 0 ? 1 : specificity(route.segments, best[0].route.segments);
        if (than > 0) best = [{ route, params }];
        else if (than === 0) best.push({ route, params });
      }
      if (best.length === 0) return { kind: 'not-found' };
      for (const { route, params } of best) {
        const handler = route.handlers.get(method) ?? (method === 'HEAD' ? route.handlers.get('GET') : undefined);
        if (!handler) continue;
        const fixed = route.segments.length - 1;
        const rest = route.segments[fixed]?.kind === 'rest' ? decodeSegments(path.slice(1)).slice(fixed) : [];
        return { kind: 'found', handler, params, rest };
      }
      const allowed = new Set(best.flatMap(({ route }) => [...route.handlers.keys()]));
      if (allowed.has('GET')) allowed.add('HEAD');
      return { kind: 'method-not-allowed', allow: [...allowed] };
    },
  };
}
