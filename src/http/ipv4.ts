/**
 * Whether `text` is an IPv4 address as node's isIPv4 has it (four decimal numbers up to 255, no
 * leading zero), read without the pattern isIPv4 compiles on its first call (~1 ms; isIPv6's, ~10
 * ms): a start asks this of its own host, and the Host check of every request.
 */
export function isDottedQuad(text: string): boolean {
  const parts = text.split('.');
  if (parts.length !== 4) return false;
  for (const part of parts) {
    if (part.length === 0 || part.length > 3 || (part.length > 1 && part[0] === '0')) return false;
    for (let i = 0; i < part.length; i++) if (part.charCodeAt(i) < 48 || part.charCodeAt(i) > 57) return false;
    if (Number(part) > 255) return false;
  }
  return true;
}
