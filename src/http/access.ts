/**
 * Access control, before routing: the Host (DNS rebinding), cross-origin writes, and the token.
 * Headers in, a refusal (an HttpError) or nothing out.
 */
import type { IncomingMessage } from 'node:http';
import { isIPv6 } from 'node:net';
import { crypto } from '../lazy-builtins.js';
import { isDottedQuad } from './ipv4.js';
import { HttpError, HTTP_MESSAGES } from './jsend.js';

export interface AccessPolicy {
  /** Extra Host names allowed (`.lab.example` allows the domain and its subdomains), or `'*'`: no Host check. */
  allowedHosts: string[] | '*';
  /** The machine's own host name, always allowed. */
  hostname: string;
  /** With a token, every request not `exempt` needs it (bearer header or the login cookie). */
  token?: string;
  /** Requests that need no token: they hold no data, or (the login) prove the token themselves. */
  exempt(method: string, path: string): boolean;
  /** The login cookie's name: one per server port, since cookies ignore ports. */
  cookieName(): string;
  /** The web application's logins, by digest of their cookie's value (src/store/logins.ts keeps them). */
  logins: Logins;
  log(line: string): void;
}

/** Where logins are kept: by a digest of the cookie's value, never the value itself. */
export interface Logins {
  has(digest: string): boolean;
  add(digest: string, expires: number): Promise<void>;
  remove(digest: string): Promise<void>;
}

/** How long a login lasts (the cookie's Max-Age): 30 days. */
export const LOGIN_SECONDS = 30 * 24 * 3600;

export interface AccessCheck {
  /** The refusal of a request, or undefined when it may go on. `path` is without the query. */
  refusal(req: IncomingMessage, method: string, path: string): HttpError | undefined;
  readonly tokenRequired: boolean;
  /** Whether `candidate` is the token, in constant time. */
  tokenMatches(candidate: string): boolean;
  /** A new login: the `Set-Cookie` value that gives it to the browser, once it is kept. */
  logIn(): Promise<string>;
  /** Ends the login the `Cookie` header holds (if any): the `Set-Cookie` value that clears it. */
  logOut(cookieHeader: string | undefined): Promise<string>;
  /** Counts (and at most once a minute logs) a refused credential: what, and who sent it. */
  noteFailure(what: string, from: string | undefined): void;
}

/** Methods that change nothing: never refused as cross-origin. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
const LOG_INTERVAL = 60_000;
const COOKIE_ATTRIBUTES = 'Path=/; HttpOnly; SameSite=Strict';
/** Raw Host values already judged: a few per server, so each is parsed once. */
const HOST_CACHE_LIMIT = 256;

/**
 * A request's URL as a log line shows it: the path, the query left out (`?…`). A query may hold a
 * secret: `?token=` is how the page's login URL carries the token, and a user tries it on the API.
 */
export function loggedUrl(url: string | undefined): string {
  const at = url?.indexOf('?') ?? -1;
  return at === -1 ? (url ?? '') : `${url!.slice(0, at)}?…`;
}

/** `Host` -> its name (lowercase, no trailing dot, IPv6 without brackets), or undefined when it is not a Host. */
export function hostName(host: string): string | undefined {
  let name: string;
  let port: string;
  if (host.startsWith('[')) {
    const end = host.indexOf(']');
    if (end === -1) return undefined;
    name = host.slice(1, end).toLowerCase();
    port = host.slice(end + 1);
    if (!isIPv6(name)) return undefined;
  } else {
    const colon = host.lastIndexOf(':');
    name = (colon === -1 ? host : host.slice(0, colon)).toLowerCase();
    port = colon === -1 ? '' : host.slice(colon);
    if (name.endsWith('.')) name = name.slice(0, -1);
    if (!/^[a-z0-9_.-]+$/.test(name)) return undefined;
  }
  return port === '' || /^:[0-9]{1,5}$/.test(port) ? name : undefined;
}

/** Whether a Host name is one a browser can only reach this server by, or one the user allowed. */
export function isAllowedHostName(name: string, hostname: string, allowed: string[]): boolean {
  // the names first: node's isIPv6 compiles its pattern on its first call (~10 ms, the first request from
  // a browser on localhost); a name with a colon came in brackets (hostName)
  if (name === 'localhost' || name.endsWith('.localhost') || name === hostname || isDottedQuad(name) || (name.includes(':') && isIPv6(name))) return true;
  for (const entry of allowed) {
    if (entry.startsWith('.') ? name === entry.slice(1) || name.endsWith(entry) : name === entry) return true;
  }
  return false;
}

/** Whether the Origin of a write is this server as the Host header names it (scheme, host and port). */
function sameOrigin(origin: string, host: string): boolean {
  try {
    const url = new URL(origin);
    // as serialized (nothing past the port), the default port written or not
    const serialized = origin.toLowerCase().replace(/:80$/, '');
    return url.protocol === 'http:' && url.host === new URL(`http://${host}`).host && serialized === url.origin;
  } catch {
    return false;
  }
}

/**
 * SHA-256 of a text. Every request with a token pays it: the one-shot `crypto.hash` (Node 20.12
 * and later) takes 0.6 µs where a Hash object takes 1.1 µs; earlier Node 20 releases use the object.
 * node:crypto is loaded with the first request that needs it (lazy-builtins.ts).
 */
let digestOf: ((text: string) => Buffer) | undefined;
function digest(text: string): Buffer {
  if (!digestOf) {
    const c = crypto();
    // read from the namespace: a named import of `hash` would stop an older Node 20 from loading the module
    const oneShot = (c as { hash?: typeof c.hash }).hash;
    digestOf = typeof oneShot === 'function' ? (t) => oneShot('sha256', t, 'buffer') : (t) => c.createHash('sha256').update(t).digest();
  }
  return digestOf(text);
}

/** The value of cookie `name` in a Cookie header, if any. */
function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq !== -1 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/**
 * Whether a candidate is `token`, in constant time (digests of equal length: neither the token's
 * length nor a matching prefix shows in the timing); never, without a token.
 */
export function tokenMatcher(token: string | undefined): (candidate: string) => boolean {
  // worked out with the first candidate (node:crypto is loaded then)
  let tokenDigest: Buffer | undefined;
  return (candidate) => token !== undefined && crypto().timingSafeEqual(digest(candidate), (tokenDigest ??= digest(token)));
}

export function createAccessCheck(policy: AccessPolicy): AccessCheck {
  const allowed = policy.allowedHosts;
  const hostname = policy.hostname.toLowerCase();
  const judged = new Map<string, boolean>();
  const { token } = policy;
  // worked out with the first request that presents a credential (node:crypto is loaded then)
  const tokenMatches = tokenMatcher(token);
  // A login cookie holds a random value, one per login, kept as its digest keyed with the token (a
  // new token ends every login): other servers on this host receive the cookies too (cookies
  // ignore ports), so a login must be one that can end, at its browser's Log out or in 30 days.
  const loginDigest = (value: string) => crypto().createHmac('sha256', token!).update(value).digest('hex');

  let failures = 0;
  let lastLogged = -Infinity;
  let flush: NodeJS.Timeout | undefined;

  function hostAllowed(host: string | undefined): boolean {
    if (allowed === '*') return true;
    // no name at all (HTTP/1.0 may leave it out): not one of the allowed, as the contract words it
    if (host === undefined) return false;
    let ok = judged.get(host);
    if (ok === undefined) {
      const name = hostName(host);
      ok = name !== undefined && isAllowedHostName(name, hostname, allowed);
      if (judged.size >= HOST_CACHE_LIMIT) judged.clear();
      judged.set(host, ok);
    }
    return ok;
  }

  function crossOrigin(req: IncomingMessage): boolean {
    // As Go's CrossOriginProtection: a browser that sends Sec-Fetch-Site says it all; an older one, its Origin
    const site = req.headers['sec-fetch-site'];
    if (site !== undefined) return site !== 'same-origin' && site !== 'none';
    const origin = req.headers.origin;
    if (origin === undefined) return false;
    return origin === 'null' || !sameOrigin(origin, req.headers.host ?? '');
  }

  function authenticated(req: IncomingMessage): boolean {
    const authorization = req.headers.authorization?.trim();
    // a Bearer header is the credential; another scheme (a proxy's Basic login) leaves it to the cookie
    if (authorization !== undefined && /^bearer\s/i.test(authorization)) {
      // exactly `Bearer <token>`: anything after the token is not this server's token
      const match = /^bearer +(\S+)$/i.exec(authorization);
      return match !== null && tokenMatches(match[1]);
    }
    const cookie = cookieValue(req.headers.cookie, policy.cookieName());
    return cookie !== undefined && token !== undefined && policy.logins.has(loginDigest(cookie));
  }

  function noteFailure(what: string, from: string | undefined): void {
    const now = Date.now();
    if (now - lastLogged >= LOG_INTERVAL) {
      const earlier = failures > 0 ? ` (and ${failures} more since the last such line)` : '';
      policy.log(`refused ${what} from ${from ?? 'an unknown address'}${earlier}; such refusals are logged at most once a minute`);
      lastLogged = now;
      failures = 0;
      return;
    }
    failures++;
    flush ??= setTimeout(() => {
      flush = undefined;
      if (failures > 0) policy.log(`refused ${failures} more requests without a valid token in the last minute`);
      failures = 0;
      lastLogged = Date.now();
    }, lastLogged + LOG_INTERVAL - now).unref();
  }

  return {
    refusal(req, method, path) {
      if (!hostAllowed(req.headers.host)) return new HttpError(403, HTTP_MESSAGES.hostNotAllowed);
      if (!SAFE_METHODS.has(method) && crossOrigin(req)) return new HttpError(403, HTTP_MESSAGES.crossOrigin);
      if (token === undefined || policy.exempt(method, path) || authenticated(req)) return undefined;
      const presented = /^\s*bearer\s/i.test(req.headers.authorization ?? '') || req.headers.cookie?.includes(policy.cookieName()) === true;
      noteFailure(`${presented ? 'a wrong token' : 'a request without the token'} (${method} ${loggedUrl(req.url)})`, req.socket.remoteAddress);
      return new HttpError(401, HTTP_MESSAGES.authenticationRequired, undefined, { 'WWW-Authenticate': 'Bearer realm="assessd"' });
    },
    tokenRequired: token !== undefined,
    tokenMatches,
    async logIn() {
      const value = crypto().randomBytes(32).toString('base64url');
      await policy.logins.add(loginDigest(value), Date.now() + LOGIN_SECONDS * 1000);
      return `${policy.cookieName()}=${value}; ${COOKIE_ATTRIBUTES}; Max-Age=${LOGIN_SECONDS}`;
    },
    async logOut(cookieHeader) {
      const value = cookieValue(cookieHeader, policy.cookieName());
      if (value !== undefined && token !== undefined) await policy.logins.remove(loginDigest(value));
      return `${policy.cookieName()}=; ${COOKIE_ATTRIBUTES}; Max-Age=0`;
    },
    noteFailure,
  };
}
