/**
 * The few DER (ASN.1) encodings an X.509 certificate needs: `node:crypto` makes keys and
 * signatures, not certificate structures. Each function answers the encoded bytes of one value;
 * a certificate is these nested (RFC 5280, X.690).
 */

/** A tag, its length (short form under 128, long form above), its content. */
export function tlv(tag: number, content: Buffer): Buffer {
  const n = content.length;
  let length: Buffer;
  if (n < 0x80) length = Buffer.from([n]);
  else {
    const bytes: number[] = [];
    for (let rest = n; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest % 256);
    length = Buffer.from([0x80 | bytes.length, ...bytes]);
  }
  return Buffer.concat([Buffer.from([tag]), length, content]);
}

export const sequence = (...items: Buffer[]) => tlv(0x30, Buffer.concat(items));
export const set = (...items: Buffer[]) => tlv(0x31, Buffer.concat(items));
/** `[n]` EXPLICIT: the value wrapped in a constructed context-specific tag. */
export const explicit = (n: number, value: Buffer) => tlv(0xa0 | n, value);
export const boolean = (value: boolean) => tlv(0x01, Buffer.from([value ? 0xff : 0x00]));
export const octetString = (bytes: Buffer) => tlv(0x04, bytes);
export const utf8String = (text: string) => tlv(0x0c, Buffer.from(text, 'utf8'));
/** A BIT STRING of whole bytes (no unused bits). */
export const bitString = (bytes: Buffer) => tlv(0x03, Buffer.concat([Buffer.from([0]), bytes]));

/** A BIT STRING of named bits (bit 0 first), trailing zero bits dropped as DER requires. */
export function namedBits(bits: number[]): Buffer {
  const last = Math.max(...bits);
  const bytes = Buffer.alloc(Math.floor(last / 8) + 1);
  for (const bit of bits) bytes[bit >> 3]! |= 0x80 >> (bit & 7);
  return tlv(0x03, Buffer.concat([Buffer.from([7 - (last & 7)]), bytes]));
}

/** A context-specific primitive `[n]` IMPLICIT value (a GeneralName's dNSName, iPAddress; a keyIdentifier). */
export const implicit = (n: number, bytes: Buffer) => tlv(0x80 | n, bytes);

/** A non-negative INTEGER from its big-endian bytes: leading zeros dropped, one added when the top bit is set. */
export function unsignedInteger(bytes: Buffer): Buffer {
  let start = 0;
  while (start < bytes.length - 1 && bytes[start] === 0) start++;
  const trimmed = bytes.subarray(start);
  return tlv(0x02, trimmed[0]! & 0x80 ? Buffer.concat([Buffer.from([0]), trimmed]) : trimmed);
}

export const smallInteger = (n: number) => unsignedInteger(Buffer.from([n]));

/** An OBJECT IDENTIFIER from its dotted form, `1.2.840.10045.2.1`. */
export function oid(dotted: string): Buffer {
  const [first, second, ...rest] = dotted.split('.').map(Number);
  const bytes = [40 * first! + second!];
  for (const arc of rest) {
    const base128: number[] = [arc & 0x7f];
    for (let value = Math.floor(arc / 128); value > 0; value = Math.floor(value / 128)) base128.unshift(0x80 | (value & 0x7f));
    bytes.push(...base128);
  }
  return tlv(0x06, Buffer.from(bytes));
}

/** UTCTime for years 1950-2049, GeneralizedTime after (RFC 5280 4.1.2.5), to the second, in UTC. */
export function time(date: Date): Buffer {
  const iso = date.toISOString(); // 2026-11-26T14:47:00.123Z
  const digits = iso.slice(0, 19).replace(/[-T:]/g, ''); // 20261126144700
  const year = date.getUTCFullYear();
  return year < 2050 ? tlv(0x17, Buffer.from(`${digits.slice(2)}Z`, 'ascii')) : tlv(0x18, Buffer.from(`${digits}Z`, 'ascii'));
}

/** A distinguished name of one attribute per RDN: `[[oid, value], ...]`, values as UTF8String. */
export function name(attributes: Array<[string, string]>): Buffer {
  return sequence(...attributes.map(([type, value]) => set(sequence(oid(type), utf8String(value)))));
}

/** PEM armour around DER. */
export function pem(label: string, der: Buffer): string {
  const lines = der.toString('base64').match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join('\n')}\n-----END ${label}-----\n`;
}
