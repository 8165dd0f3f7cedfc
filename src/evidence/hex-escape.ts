/** Bytes written as text, each one not `plain` as `lead` and its two hex digits: one pass, into one buffer. */

/** A table of the bytes written as they are: `from`-`to`, but `except`. */
export function plainBytes(from: number, to: number, except = ''): Uint8Array {
  const plain = new Uint8Array(256);
  for (let b = from; b <= to; b++) plain[b] = 1;
  for (const c of except) plain[c.charCodeAt(0)] = 0;
  return plain;
}

/**
 * `bytes` as latin1 text, each byte `plain` does not hold written as `lead` and its hex digits (in
 * `digits`' case). A string grown a byte at a time, or a callback a character, took seconds for
 * the MiBs a target may send (a 16 MiB URL: 31 s; a 16 MiB body as code: 2-10 s).
 */
export function hexEscaped(bytes: Uint8Array, plain: Uint8Array, lead: string, digits = '0123456789abcdef'): string {
  let escapes = 0;
  for (let i = 0; i < bytes.length; i++) escapes += plain[bytes[i]!]! ^ 1;
  const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
  if (escapes === 0) return view.toString('latin1');
  const out = Buffer.allocUnsafe(bytes.length + (lead.length + 1) * escapes);
  let at = 0;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    if (plain[b]) {
      out[at++] = b;
      continue;
    }
    at += out.write(lead, at, 'latin1');
    out[at++] = digits.charCodeAt(b >> 4);
    out[at++] = digits.charCodeAt(b & 15);
  }
  return out.toString('latin1', 0, at);
}
