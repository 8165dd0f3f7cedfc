/** Which names the proxy's CA signs leaves for (CONNECT's host, a client's SNI): loaded with the proxy, not with its TLS. */
import { isIP } from 'node:net';

/** A DNS name a leaf may carry: letters, digits, hyphens (and underscores, which labs use) in labels of at most 63, at most 253 in all. */
const DNS_NAME = /^(?=.{1,253}\.?$)[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*\.?$/;

/**
 * Whether the proxy signs a leaf for `name` (a CONNECT's host, a client's SNI): an IP address, or a
 * DNS name as written (no `*`, no percent-escape the URL parser would decode into another name,
 * no space or punctuation): the CA signs only names a request could be for.
 */
export function signableName(name: string): boolean {
  const bare = name.startsWith('[') && name.endsWith(']') ? name.slice(1, -1) : name;
  return isIP(bare) !== 0 || DNS_NAME.test(bare.toLowerCase());
}
