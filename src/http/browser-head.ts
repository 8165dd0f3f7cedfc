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
 * those lines mended or left out, every other byte as received. It waits for a head's end only
 * when the answer starts as HTTP (other bytes go on as they came, for the parser to refuse), and
 * for at most `maxHeadBytes`: past them it fails with `HEAD_TOO_LARGE`.
 */
import { Agent as HttpAgent, type AgentOptions } from 'node:http';
import type { AgentOptions as HttpsAgentOptions } from 'node:https';
import type { Socket } from 'node:net';
import { Duplex } from 'node:stream';
import { ByteBlocks } from '../byte-blocks.js';
import { https as httpsModule } from '../lazy-builtins.js';

/** RFC 9110's token, as a header name must be. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** The error code of a head past `maxHeadBytes`. */
export const HEAD_TOO_LARGE = 'ERR_ASSESSD_HEAD_TOO_LARGE';

const LF = 0x0a;
const CR = 0x0d;
const SP = 0x20;
const HT = 0x09;

/**
 * A head (the status line, the header lines and the empty line that ends them; bytes as Latin-1
 * characters) with each header line as Chromium reads it: the space or tab before a colon
 * dropped; a line without a colon, or whose name is not a token, left out. A line that starts
 * with a space or a tab continues the line before it (obs-fold), which node joins as browsers do,
 * and is left as it is. The same string when nothing changes.
 */
export function browserHead(head: string): string {
  // [status line, header lines..., the empty line ('\r' or ''), ''] once split at each LF
  const lines = head.split('\n');
  const kept = [lines[0]!];
  let changed = false;
  for (let i = 1; i < lines.length - 2; i++) {
    const line = lines[i]!;
    const read = headerLine(line);
    if (read !== line) changed = true;
    if (read !== undefined) kept.push(read);
  }
  return changed ? [...kept, ...lines.slice(-2)].join('\n') : head;
}

function headerLine(line: string): string | undefined {
  const first = line.charCodeAt(0);
  if (first === SP || first === HT) return line;
  const colon = line.indexOf(':');
  if (colon === -1) return undefined;
  let end = colon;
  while (end > 0 && (line.charCodeAt(end - 1) === SP || line.charCodeAt(end - 1) === HT)) end--;
  const name = line.slice(0, end);
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
  private state: State = 'head';
  /** The head so far, copied into blocks: a head trickled a byte at a time kept as chunks took ~100 bytes a byte. */
  private readonly head: ByteBlocks;
  /** Bytes since the last LF: 0 none, 1 the LF itself, 2 an LF then a CR. */
  private afterLf = 0;
  /** The head so far starts with `HTTP/` (it has five bytes or more). */
  private startedAsHttp = false;

  constructor(
    readonly inner: Socket,
    private readonly maxHeadBytes: number,
  ) {
    super({ allowHalfOpen: true });
    this.head = new ByteBlocks(maxHeadBytes);
    inner.on('data', (chunk: Buffer) => this.received(chunk));
    inner.on('end', () => {
      // a head that never ended goes on as it came: the parser says what it is
      this.flushHead();
      this.push(null);
    });
    inner.on('error', (error) => this.destroy(error));
    inner.on('close', () => {
      if (this.destroyed) return;
      if (this.readableEnded) this.destroy();
      else this.once('end', () => this.destroy());
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

  private received(chunk: Buffer): void {
    let rest: Buffer | undefined = chunk;
    while (rest && rest.length > 0) {
      if (this.state === 'rest') {
        this.forward(rest);
        return;
      }
      rest = this.readHead(rest);
    }
  }

  /** Takes the head's bytes from `chunk`; what follows the head, if it ended in it. */
  private readHead(chunk: Buffer): Buffer | undefined {
    if (!this.startedAsHttp) {
      // the first five bytes decide (the head so far is shorter)
      const start = Buffer.concat([this.head.bytes(), chunk]).subarray(0, 5);
      if (!startsAsHttp(start)) {
        this.flushHead();
        this.state = 'rest';
        this.forward(chunk);
        return undefined;
      }
      this.startedAsHttp = start.length === 5;
    }
    let end = -1;
    for (let i = 0; i < chunk.length; i++) {
      const byte = chunk[i];
      if (byte === LF) {
        if (this.afterLf !== 0) {
          end = i + 1;
          break;
        }
        this.afterLf = 1;
      } else this.afterLf = byte === CR && this.afterLf === 1 ? 2 : 0;
    }
    if (end === -1) {
      if (this.head.length + chunk.length > this.maxHeadBytes) {
        this.destroy(Object.assign(new Error(`an answer's head over ${this.maxHeadBytes} bytes`), { code: HEAD_TOO_LARGE }));
      } else this.head.push(chunk);
      return undefined;
    }
    const head = Buffer.concat([this.head.bytes(), chunk.subarray(0, end)]).toString('latin1');
    this.head.clear();
    this.afterLf = 0;
    this.startedAsHttp = false;
    this.forward(Buffer.from(browserHead(head), 'latin1'));
    const status = statusOf(head);
    // an interim answer (100, 103) is followed by another head; after 101 the bytes are another protocol's
    if (!(status >= 100 && status < 200 && status !== 101)) this.state = 'rest';
    return chunk.subarray(end);
  }

  private flushHead(): void {
    if (this.head.length === 0) return;
    const head = this.head.bytes();
    this.head.clear();
    this.forward(head);
  }

  private forward(bytes: Buffer): void {
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
 * a little past what the client's parser reads (`maxHeaderSize`), which then says so first.
 */
export function browserAgent(https: boolean, maxHeadBytes: number, options: AgentOptions & HttpsAgentOptions = {}): HttpAgent {
  // node:https when first needed: the proxy's module holds this, and a start loads no cryptography
  const agent = https ? new (httpsModule().Agent)(options) : new HttpAgent(options);
  const connect = agent.createConnection.bind(agent);
  // the socket is returned, which the agent takes at once (no callback)
  agent.createConnection = (connection) => new BrowserHeadSocket(connect(connection) as Socket, maxHeadBytes);
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
