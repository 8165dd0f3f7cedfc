/** Scope: a transaction is in its target's scope when its host and port are the target's. */
import { hexEscaped, plainBytes } from './hex-escape.js';
import { trimControlsAndSpaces } from './record.js';

/** A host (a URL's, or an authority's host part) as a socket takes it: an IPv6 address without its brackets. */
export function bareHost(host: string | URL): string {
  const name = typeof host === 'string' ? host : host.hostname;
  return name.startsWith('[') ? name.slice(1, -1) : name;
}

/** The host (lower case, IPv6 without brackets) and port (the scheme's default when absent) of a URL (ws and wss as http and https). */
export function hostAndPort(url: string | URL): { host: string; port: string } | undefined {
  let parsed: URL;
  try {
    parsed = typeof url === 'string' ? new URL(url) : url;
  } catch {
    return undefined;
  }
  return { host: bareHost(parsed).toLowerCase(), port: parsed.port || (parsed.protocol === 'https:' || parsed.protocol === 'wss:' ? '443' : '80') };
}

/** A test of URLs against a target's host name and port number. */
export function scopeTest(hostName: string, portNumber: string): (url: string) => boolean {
  const host = hostName.toLowerCase();
  return (url) => {
    const hp = hostAndPort(url);
    return hp !== undefined && hp.host === host && hp.port === portNumber;
  };
}

/**
 * The path and query of a request target as written (an absolute URL's, or an origin-form
 * target's), without a fragment: what goes on the request line. A URL parser would resolve `..`
 * and `.`, turn `\` into `/` and percent-encode what it dislikes, so a tester's payload
 * (`/a/../../etc/passwd`, `?q=<script>`) would never reach the target as written. What a request
 * line cannot carry (a space, a control, a character past ASCII: node's parser refuses such bytes
 * from a client, a user may type them in a replay's URL or a HAR may hold them) is percent-encoded
 * as its UTF-8 bytes, as a URL parser would.
 */
export function pathAsWritten(target: string): string {
  // What a URL parser removes before it reads anything (WHATWG URL): leading and trailing C0
  // controls and spaces, then every tab and newline. Kept, `\x01http://h/x` gave the path
  // `//h/x` (the authority read twice) while the host came from the parser.
  // (not with a regex: `[\x00-\x20]+$` was quadratic over a URL with a long run of spaces inside
  // it, which a HAR may hold: 5 s for 80,000)
  let path = trimControlsAndSpaces(target).replace(/[\t\n\r]/g, '');
  if (!path.startsWith('/')) {
    // Absolute form: the path starts where the authority ends. As a URL parser reads an http(s)
    // URL, the scheme is followed by any run of `/` and `\` (none too: `http:host/x`), and the
    // authority ends at `/`, `\`, `?` or `#`.
    const rest = path.replace(/^[A-Za-z][A-Za-z0-9+.-]*:[/\\]*/, '');
    const end = rest.search(/[/\\?#]/);
    path = end === -1 ? '' : rest.slice(end);
    if (path.startsWith('\\')) path = `/${path.slice(1)}`;
  }
  const fragment = path.indexOf('#');
  if (fragment !== -1) path = path.slice(0, fragment);
  if (!path.startsWith('/')) path = `/${path}`;
  return percentEncoded(path);
}

/**
 * The longest URL a transaction keeps, percent-encoded: Chromium's own bound (`url::kMaxURLChars`,
 * 2 MiB), so no browser's HAR holds a longer one. A HAR's URL of 16 MiB of spaces was stored as a
 * 50 MB one, held in the target's index, and its export could not be imported again.
 */
export const MAX_URL_CHARS = 2 * 1024 * 1024;

/** What a request line carries as it is: visible ASCII. */
const URL_PLAIN = plainBytes(0x21, 0x7e);

/** `text` with every character that is no visible ASCII (`\x21`-`\x7e`) percent-encoded as its UTF-8 bytes. */
export function percentEncoded(text: string): string {
  return /[^\x21-\x7e]/.test(text) ? hexEscaped(Buffer.from(text, 'utf8'), URL_PLAIN, '%', '0123456789ABCDEF') : text;
}
