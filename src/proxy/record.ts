/**
 * What the proxy hands over of each exchange it forwarded: the request and the answer as they
 * crossed it (bodies up to the storage cap, decoded when the answer was compressed, as a HAR has
 * them), and what was wrong with the target's certificate. Where it goes (a target's transactions,
 * or only a count) is the recorder's business: the proxy knows nothing of targets.
 */

export type Header = [name: string, value: string];

export interface ProxyExchange {
  /** Absolute http(s) or ws(s) URL as the client asked for it. */
  url: string;
  method: string;
  httpVersion: string;
  requestHeaders: Header[];
  /** Up to the cap. */
  requestBody: Buffer;
  /** Bytes of the body as sent; -1: the client was still sending one of no stated length when the answer ended. */
  requestSize: number;
  /** 0: no answer (the upstream failed; `error` says how). */
  status: number;
  statusText: string;
  responseHeaders: Header[];
  /** Up to the cap, decoded when the answer came gzip, deflate or br. */
  responseBody: Buffer;
  /** Bytes of the body as received (before decoding, before any cut). */
  responseSize: number;
  /** The stored body was cut at the cap. */
  truncated: boolean;
  /** ms since the epoch, and ms it took to the answer's last byte. */
  startedAt: number;
  time: number;
  serverIPAddress?: string;
  /** https: what the target's certificate was, when not one the box trusts (a lab's self-signed one). */
  tlsProblem?: string;
  /** The upstream failed: DNS, refused, timeout, TLS, reset. */
  error?: string;
  /** Sent this many times more (forward.ts: resendable, readLeniently). */
  resent?: number;
}

export interface Recorder {
  /** The target an exchange with this URL belongs to (its host and port are the target's), or undefined. */
  targetOf(url: URL): number | undefined;
  /** Called once the exchange has ended; must not make the client wait (queue it). */
  record(target: number, exchange: ProxyExchange): void;
  /** Exchanges handed over that could not be stored (the disk refused, the target was deleted). */
  readonly dropped?: number;
}

/** The headers of a raw header list as they crossed (node's one character per byte) as pairs of text, in order, repeated ones kept. */
export { headerPairs as pairs } from '../evidence/record.js';

