/**
 * An answer's head as a browser reads it, for node's HTTP client. node's parser (llhttp) refuses a
 * whole answer for one header line it cannot read, even with `insecureHTTPParser`: a space before
 * the colon (`X-Frame-Options : DENY`, which nginx sends for `add_header "X-Frame-Options " DENY`),
 * a name that is not a token (`Bad Name: x`), a line without a colon. Chromium reads on: it trims
 * the space and acts on the header, and skips the others (net/http/http_util.cc, HeadersIterator),
 * so a check that said "not valid HTTP" disagreed with the browser on every header it reads, and
 * the proxy answered 502 for a page the browser shows.
 *
 * `BrowserHeadSocket` stands between a connection and the parser and writes each head again so:
 * those lines mended or left out, every byte after the heads as received. It waits for a head's
 * end only when the answer starts as HTTP (other bytes go on as they came, for the parser to
 * refuse), and for at most `maxHeadBytes`: past them it fails with `HEAD_TOO_LARGE`. A head with
 * a NUL, which Chromium refuses whole (ERR_INVALID_HTTP_RESPONSE), fails with `NUL_IN_HEAD`, or
 * goes on as it came (`nulInHead: 'as-is'`: a proxy relays it, for the browser to refuse).
 * Interim (1xx) heads are read too, MAX_INTERIM_BYTES of them at most (`TOO_MANY_INTERIM`).
 */
import { Agent as HttpAgent, type AgentOptions } from 'node:http';
import type { AgentOptions as HttpsAgentOptions } from 'node:https';
import type { Socket } from 'node:net';
import { Duplex } from 'node:stream';
import { ByteBlocks } from '../byte-blocks.js';
import { https as httpsModule } from '../lazy-builtins.js';

/** RFC 9110's token, as a header name (and a method) must be. */
export const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** The error code of a head past `maxHeadBytes`. */
export const HEAD_TOO_LARGE = 'ERR_ASSESSD_HEAD_TOO_LARGE';
/**
 * For an error that says an answer's head was past what is read, the code to quote after the
 * reason: node's parser's (` (HPE_HEADER_OVERFLOW)`: a head that came whole in one read), or
 * none for this socket's own (HEAD_TOO_LARGE: one that came in pieces); undefined for any other.
 */
export function headOverflowCode(code: string | undefined): string | undefined {
  if (code === HEAD_TOO_LARGE) return '';
  return code === 'HPE_HEADER_OVERFLOW' ? ` (${code})` : undefined;
}

/** The error code of a head with a NUL byte, which browsers refuse. */
export const NUL_IN_HEAD = 'ERR_ASSESSD_NUL_IN_HEAD';
/** The error code past MAX_INTERIM_BYTES of interim heads (the proxy's own code for a 1xx flood). */
export const TOO_MANY_INTERIM = 'TOO_MANY_INFORMATIONAL';
/**
 * Bytes of interim (1xx) heads one connection may send, as received: each is read and written
 * again, and a flood of them with lines left out would cost that work without counting.
 */
export const MAX_INTERIM_BYTES = 1024 * 1024;
/**
 * Interim heads one connection may send, as the proxy allows a request: each costs node's parser
 * and the client a few microseconds, and a megabyte of `100 Continue` (40,000 of them) held the
 * event loop ~200 ms. A server sends a handful (100, 103, a 102 now and then).
 */
export const MAX_INTERIM_HEADS = 1000;

/** What the socket does with a head holding a NUL: fail (what a browser does with the answer), or let it through as it came. */
export interface HeadOptions {
  maxHeadBytes: number;
  nulInHead: 'fail' | 'as-is';
}

const LF = 0x0a;
const CR = 0x0d;
const SP = 0x20;
const HT = 0x09;

/**
 * A head (the status line, the header lines and the empty line that ends them; bytes as Latin-1
 * characters) as Chromium reads it (net/http/http_util.cc): the status line ends at its first CR
 * or LF; the rest is split at every CR and LF (AssembleRawHeaders); a line that starts with a
 * space or tab continues the one before it, joined with one space, when that one could be
 * continued (it has a colon with a name before it and does not start with a space or tab), and is
 * a line of its own otherwise; then each line (HeadersIterator) without a colon, starting with a
 * space or tab, or whose name is not a token is left out, and the space or tab before a colon is
 * dropped. Written back with CRLF line ends, so node reads what Chromium reads.
 */
export function browserHead(head: string): string {
  const statusEnd = head.search(/[\r\n]/);
  const lines: string[] = [];
  let continuable = false;
  for (const segment of head.slice(statusEnd).split(/[\r\n]+/)) {
    if (segment === '') continue;
    const first = segment.charCodeAt(0);
    if (continuable && (first === SP || first === HT)) {
      lines[lines.length - 1] += ` ${segment.replace(/^[ \t]+/, '')}`;
      continue;
    }
    lines.push(segment);
    continuable = segment.indexOf(':') > 0 && first !== SP && first !== HT;
  }
  const kept = [head.slice(0, statusEnd)];
  for (const line of lines) {
    const read = headerLine(line);
    if (read !== undefined) kept.push(read);
  }
  return `${oneContentLength(kept).join('\r\n')}\r\n\r\n`;
}

/**
 * Content-Length given more than once (two lines, or `2, 2`) with one value, as Chromium reads it
 * (net/http/http_stream_parser.cc): one line of it, where the first was. Values that differ are
 * left, for the parser to refuse as Chromium does (ERR_RESPONSE_HEADERS_MULTIPLE_CONTENT_LENGTH).
 */
function oneContentLength(lines: string[]): string[] {
  const at: number[] = [];
  const values = new Set<string>();
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.length < 15 || line.slice(0, 15).toLowerCase() !== 'content-length:') continue;
    at.push(i);
    for (const value of line.slice(15).split(',')) values.add(value.trim());
  }
  if (at.length === 0 || (at.length === 1 && !lines[at[0]!]!.includes(','))) return lines;
  const [only] = values;
  if (values.size !== 1 || !/^\d+$/.test(only!)) return lines;
  const out = lines.filter((_, i) => i === at[0] || !at.includes(i));
  out[at[0]!] = `Content-Length: ${only}`;
  return out;
}

function headerLine(line: string): string | undefined {
  const colon = line.indexOf(':');
  if (colon <= 0) return undefined;
  let end = colon;
  while (end > 0 && (line.charCodeAt(end - 1) === SP || line.charCodeAt(end - 1) === HT)) end--;
  const name = line.slice(0, end);
  // (a name starting with a space or tab is no token either)
  if (!TOKEN.test(name)) return undefined;
  return end === colon ? line : name + line.slice(colon);
}

/** The three-digit status of a head's status line (`HTTP/1.1 103 Early Hints`), or NaN. */
function statusOf(head: string): number {
  const match = /^HTTP\/\d\.\d[ \t]+(\d{3})/.exec(head.slice(0, 32));
  return match ? Number(match[1]) : NaN;
}

type State = 'head' | 'rest';

/** `inner`'s bytes, each head read as a browser reads it (above); what is written goes to `inner` as it is. */
export class BrowserHeadSocket extends Duplex {
  #state: State = 'head';
  /** The head so far, copied into blocks: a head trickled a byte at a time kept as chunks took ~100 bytes a byte. */
  readonly #head: ByteBlocks;
  /** Bytes since the last LF: 0 none, 1 the LF itself, 2 an LF then a CR. */
  #afterLf = 0;
  /** The head so far starts with `HTTP/` (it has five bytes or more). */
  #startedAsHttp = false;
  /** Bytes of interim heads so far, and how many. */
  #interimBytes = 0;
  #interimHeads = 0;
  /** The end of what is read is pushed. */
  #endPushed = false;

  readonly #options: HeadOptions;

  constructor(
    readonly inner: Socket,
    options: HeadOptions,
  ) {
    super({ allowHalfOpen: true });
    this.#options = options;
    this.#head = new ByteBlocks(options.maxHeadBytes);
    inner.on('data', (chunk: Buffer) => this.#received(chunk));
    inner.on('end', () => this.#endReadable());
    inner.on('error', (error) => this.destroy(error));
    inner.on('close', () => {
      if (this.destroyed) return;
      if (this.readableEnded) return void this.destroy();
      // closed without an end (destroyed here) too: the parser is not left waiting
      this.#endReadable();
      this.once('end', () => this.destroy());
    });
    inner.on('connect', () => this.emit('connect'));
    inner.on('timeout', () => this.emit('timeout'));
  }

  // what node's client and agent, and their users, ask of a socket
  get connecting(): boolean {
    return this.inner.connecting;
  }
  get remoteAddress(): string | undefined {
    return this.inner.remoteAddress;
  }
  get remotePort(): number | undefined {
    return this.inner.remotePort;
  }
  get localAddress(): string | undefined {
    return this.inner.localAddress;
  }
  get localPort(): number | undefined {
    return this.inner.localPort;
  }
  setTimeout(ms: number, callback?: () => void): this {
    this.inner.setTimeout(ms);
    if (callback) this.once('timeout', callback);
    return this;
  }
  setNoDelay(noDelay?: boolean): this {
    this.inner.setNoDelay(noDelay);
    return this;
  }
  setKeepAlive(enable?: boolean, delay?: number): this {
    this.inner.setKeepAlive(enable, delay);
    return this;
  }
  ref(): this {
    this.inner.ref();
    return this;
  }
  unref(): this {
    this.inner.unref();
    return this;
  }
  /** As net.Socket's: node's client calls it once an answer has ended, and a mere end() left the connection open until the target closed it. */
  destroySoon(): void {
    if (this.writable) this.end();
    if (this.writableFinished) this.destroy();
    else this.once('finish', () => this.destroy());
  }

  #received(chunk: Buffer): void {
    let rest: Buffer | undefined = chunk;
    while (rest && rest.length > 0) {
      if (this.#state === 'rest') {
        this.#forward(rest);
        return;
      }
      rest = this.#readHead(rest);
    }
  }

  /** Takes the head's bytes from `chunk`; what follows the head, if it ended in it. */
  #readHead(chunk: Buffer): Buffer | undefined {
    if (!this.#startedAsHttp) {
      // the first five bytes decide (the head so far is shorter): a few bytes copied, not the chunk
      const start = Buffer.concat([this.#head.bytes(), chunk.subarray(0, 5)]).subarray(0, 5);
      if (!startsAsHttp(start)) {
        this.#flushHead();
        this.#state = 'rest';
        this.#forward(chunk);
        return undefined;
      }
      this.#startedAsHttp = start.length === 5;
    }
    let end = -1;
    for (let i = 0; i < chunk.length; i++) {
      const byte = chunk[i];
      if (byte === LF) {
        if (this.#afterLf !== 0) {
          end = i + 1;
          break;
        }
        this.#afterLf = 1;
      } else this.#afterLf = byte === CR && this.#afterLf === 1 ? 2 : 0;
    }
    if (end === -1) {
      if (this.#head.length + chunk.length > this.#options.maxHeadBytes) {
        this.destroy(Object.assign(new Error(`an answer's head over ${this.#options.maxHeadBytes} bytes`), { code: HEAD_TOO_LARGE }));
      } else this.#head.push(chunk);
      return undefined;
    }
    const bytes = Buffer.concat([this.#head.bytes(), chunk.subarray(0, end)]);
    this.#head.clear();
    this.#afterLf = 0;
    this.#startedAsHttp = false;
    const head = bytes.toString('latin1');
    const status = statusOf(head);
    // an interim answer (100, 103) is followed by another head; after 101 the bytes are another protocol's
    const interim = status >= 100 && status < 200 && status !== 101;
    if (interim && (this.#interimBytes += bytes.length) > MAX_INTERIM_BYTES) {
      this.destroy(Object.assign(new Error(`over ${MAX_INTERIM_BYTES / 1024 / 1024} MiB of`), { code: TOO_MANY_INTERIM }));
      return undefined;
    }
    if (interim && ++this.#interimHeads > MAX_INTERIM_HEADS) {
      this.destroy(Object.assign(new Error(`over ${MAX_INTERIM_HEADS}`), { code: TOO_MANY_INTERIM }));
      return undefined;
    }
    if (!head.includes('\0')) this.#forward(Buffer.from(browserHead(head), 'latin1'));
    else if (this.#options.nulInHead === 'as-is') this.#forward(bytes);
    else {
      this.destroy(Object.assign(new Error("a NUL byte in the answer's head"), { code: NUL_IN_HEAD }));
      return undefined;
    }
    if (!interim) this.#state = 'rest';
    return chunk.subarray(end);
  }

  /** The end of what is read: a head that never ended goes on as it came, for the parser to say what it is. */
  #endReadable(): void {
    if (this.#endPushed) return;
    this.#endPushed = true;
    this.#flushHead();
    this.push(null);
  }

  #flushHead(): void {
    if (this.#head.length === 0) return;
    const head = this.#head.bytes();
    this.#head.clear();
    this.#forward(head);
  }

  #forward(bytes: Buffer): void {
    if (bytes.length > 0 && !this.push(bytes)) this.inner.pause();
  }

  override _read(): void {
    this.inner.resume();
  }

  override _write(chunk: Buffer, encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.inner.write(chunk, encoding, callback);
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.inner.end(callback);
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.inner.destroy();
    callback(error);
  }
}

/**
 * A fresh agent (as `agent: false` makes one: no kept connection, no TLS session resumed unless
 * `options` say so) whose connections read each answer's head as a browser does. `maxHeadBytes`:
 * a little past what the client's parser reads (`maxHeaderSize`): a head that comes whole in one
 * read is the parser's to refuse (HPE_HEADER_OVERFLOW), one that comes in pieces this socket's
 * (HEAD_TOO_LARGE).
 */
export function browserAgent(https: boolean, head: HeadOptions, options: AgentOptions & HttpsAgentOptions = {}): HttpAgent {
  // node:https when first needed: the proxy's module holds this, and a start loads no cryptography
  const agent = https ? new (httpsModule().Agent)(options) : new HttpAgent(options);
  const connect = agent.createConnection.bind(agent);
  // the socket is returned, which the agent takes at once (no callback)
  agent.createConnection = (connection) => new BrowserHeadSocket(connect(connection) as Socket, head);
  return agent;
}

/** The connection under `socket`, when it is a BrowserHeadSocket (a TLS socket's certificate is asked of it). */
export function underlying(socket: Duplex | null): Duplex | null {
  return socket instanceof BrowserHeadSocket ? socket.inner : socket;
}

const HTTP = Buffer.from('HTTP/');

/** `bytes` (at most five) are, or may go on to be, `HTTP/`. */
function startsAsHttp(bytes: Buffer): boolean {
  return bytes.equals(HTTP.subarray(0, bytes.length));
}
