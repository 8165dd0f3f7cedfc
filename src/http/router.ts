/** A route table as plain data: `add(method, pattern, handler)` and `match(method, path)`. */

/** Pattern segments: a literal, a typed parameter `{name:int}` / `{name:word}`, or a final `*`. */
type Segment =
  | { kind: 'literal'; value: string }
  | { kind: 'param'; name: string; test: RegExp }
  | { kind: 'rest' };

const PARAM_TYPES: Record<string, RegExp> = {
  int: /^[0-9]+$/,
  word: /^[A-Za-z_]+$/,
};

interface Route<H> {
  segments: Segment[];
  handlers: Map<string, H>;
}

export type Params = Record<string, string>;

export type RouteMatch<H> =
  | { kind: 'found'; handler: H; params: Params }
  | { kind: 'method-not-allowed'; allow: string[] }
  | { kind: 'not-found' };

export interface Router<H> {
  add(method: string, pattern: string, handler: H): void;
  /** `path` is the raw (still percent-encoded) path, without the query string. */
  match(method: string, path: string): RouteMatch<H>;
}

/** Thrown by `match` when a path segment is not valid percent-encoding. */
export class MalformedPathError extends Error {}

function compile(pattern: string): Segment[] {
  return pattern
    .split('/')
    .slice(1)
    .map((part, i, all): Segment => {
      if (part === '*') {
        if (i !== all.length - 1) throw new Error(`'*' must end the pattern: ${pattern}`);
        return { kind: 'rest' };
      }
      const param = /^\{(\w+):(\w+)\}$/.exec(part);
      if (!param) return { kind: 'literal', value: part };
      const test = PARAM_TYPES[param[2]];
      if (!test) throw new Error(`unknown parameter type '${param[2]}' in ${pattern}`);
      return { kind: 'param', name: param[1], test };
    });
}

/** Splits a raw path into percent-decoded segments; one trailing slash is optional. */
export function splitPath(path: string): string[] {
  const trimmed = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
  return trimmed
    .split('/')
    .slice(1)
    .map((raw) => {
      if (!raw.includes('%')) return raw;
      try {
        return decodeURIComponent(raw);
      } catch {
        throw new MalformedPathError(`malformed percent-encoding in ${JSON.stringify(raw)}`);
      }
    });
}

function matchSegments(segments: Segment[], parts: string[], rawParts: () => string[]): Params | null {
  const params: Params = {};
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i];
    if (segment.kind === 'rest') {
      // The rest stays encoded: its handler decides how to read it.
      params['*'] = rawParts().slice(i).join('/');
      return params;
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

export function createRouter<H>(): Router<H> {
  const routes: Route<H>[] = [];

  return {
    add(method, pattern, handler) {
      let route = routes.find((r) => sameSegments(r.segments, compile(pattern)));
      if (!route) {
        route = { segments: compile(pattern), handlers: new Map() };
        routes.push(route);
      }
      route.handlers.set(method.toUpperCase(), handler);
    },

    match(method, path) {
      const parts = splitPath(path);
      let raw: string[] | undefined;
      const rawParts = () => (raw ??= path.split('/').slice(1));
      let allowed: Set<string> | undefined;
      for (const route of routes) {
        const params = matchSegments(route.segments, parts, rawParts);
        if (!params) continue;
        const handler = route.handlers.get(method) ?? (method === 'HEAD' ? route.handlers.get('GET') : undefined);
        if (handler) return { kind: 'found', handler, params };
        allowed ??= new Set();
        for (const m of route.handlers.keys()) allowed.add(m);
      }
      if (!allowed) return { kind: 'not-found' };
      if (allowed.has('GET')) allowed.add('HEAD');
      return { kind: 'method-not-allowed', allow: [...allowed] };
    },
  };
}

function segmentKey(s: Segment): string {
  if (s.kind === 'literal') return `=${s.value}`;
  return s.kind === 'param' ? `{${s.name}:${s.test.source}}` : '*';
}

function sameSegments(a: Segment[], b: Segment[]): boolean {
  return a.length === b.length && a.every((s, i) => segmentKey(s) === segmentKey(b[i]));
}
