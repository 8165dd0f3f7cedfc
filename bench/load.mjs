// @ts-check
/**
 * A small keep-alive HTTP/1.1 load generator in worker threads, for 127.0.0.1 only.
 *
 * Each worker holds its share of the connections on raw `net` sockets; each connection sends its
 * next request as soon as the previous response is complete (no pipelining), until the deadline or
 * the request cap. Responses are parsed just enough to find their end (Content-Length or chunked).
 * Latencies go into a log-linear histogram (microseconds, < 1% error) that merges across workers.
 *
 * The same generator drives the bare server and assessd, so the ceiling is measured fairly.
 * A run may mix requests: `requests: [a, b, b, b]` gives connection i the spec `i % 4` (counted
 * over all the workers' connections), and the result has one histogram per spec as well.
 *
 *   const pool = await createLoadPool(2);
 *   const result = await pool.run({ port, connections: 32, durationMs: 5000, request: { method: 'GET', path: '/' } });
 *   await pool.close();
 */
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { connect } from 'node:net';
import { performance } from 'node:perf_hooks';

// ---------------------------------------------------------------------------------------------
// Histogram: values < 128 µs exact; above, 7 bits of mantissa per power of two.

const SUB = 128;
/** The token the bench's servers are started with (the API needs one on loopback too): every request sends it. */
export const BENCH_TOKEN = 'assessd-bench-token-0123456789abcdef';

export const HISTOGRAM_SIZE = SUB + 25 * SUB;

/** @param {number} us */
function bucketOf(us) {
  let v = Math.round(us);
  if (v < SUB) return v < 0 ? 0 : v;
  if (v > 0x7fffffff) v = 0x7fffffff;
  const shift = 31 - Math.clz32(v) - 7;
  return SUB + shift * SUB + ((v >>> shift) - SUB);
}

/** @param {number} index */
function valueOf(index) {
  if (index < SUB) return index;
  const shift = Math.floor((index - SUB) / SUB);
  const mant = SUB + ((index - SUB) % SUB);
  return mant * 2 ** shift + (2 ** shift - 1) / 2;
}

/**
 * @param {Uint32Array | number[]} hist
 * @param {number} q quantile, 0..1
 * @returns {number} microseconds (NaN when empty)
 */
export function quantile(hist, q) {
  let total = 0;
  for (const n of hist) total += n;
  if (total === 0) return NaN;
  const rank = Math.max(1, Math.ceil(q * total));
  let seen = 0;
  for (let i = 0; i < hist.length; i++) {
    seen += hist[i];
    if (seen >= rank) return valueOf(i);
  }
  return valueOf(hist.length - 1);
}

// ---------------------------------------------------------------------------------------------
// Main thread: a pool of workers that run one load at a time.

/**
 * @typedef {object} RequestSpec
 * @property {string} method
 * @property {string} path
 * @property {Record<string, string>} [headers]
 * @property {string} [body] `{id}` in it is replaced by an id unique to the request
 *
 * @typedef {object} LoadOptions
 * @property {string} [host] always 127.0.0.1 unless told
 * @property {number} port
 * @property {number} connections
 * @property {number} durationMs stop sending new requests after this
 * @property {number} [maxRequests] stop after this many requests in all (default 10 million)
 * @property {RequestSpec} [request] what every connection sends (or `requests`)
 * @property {RequestSpec[]} [requests] a mix: connection i sends `requests[i % requests.length]`
 * @property {(okBySpec: number[]) => void} [onProgress] successful answers so far per spec, ten times a second
 * @property {string} [tag] unique per run, part of every `{id}`
 * @property {number} [graceMs] how long to wait for responses in flight after the deadline (default 15 s)
 *
 * @typedef {object} LoadResult
 * @property {number} completed responses received
 * @property {number} ok 2xx responses
 * @property {number} non2xx
 * @property {number} errors socket errors, early closes, unparsable responses, timeouts
 * @property {Record<string, number>} statuses
 * @property {string[]} errorSamples
 * @property {number} seconds from the start signal to the last response
 * @property {number} rps completed / seconds
 * @property {Uint32Array} histogram
 * @property {number} p50Ms
 * @property {number} p99Ms
 * @property {number} bytes response bytes received
 * @property {SpecResult[]} bySpec one entry per spec of the mix (one in all without a mix)
 *
 * @typedef {object} SpecResult
 * @property {number} completed
 * @property {number} ok
 * @property {number} rps
 * @property {Uint32Array} histogram
 * @property {number} p50Ms
 * @property {number} p99Ms
 * @property {number} maxMs
 */

/** @param {number} workers */
export async function createLoadPool(workers) {
  /** @type {Worker[]} */
  const pool = [];
  for (let i = 0; i < workers; i++) {
    const worker = new Worker(new URL(import.meta.url), { workerData: { index: i } });
    worker.unref();
    pool.push(worker);
  }
  await Promise.all(pool.map((w) => new Promise((resolve, reject) => {
    w.once('message', resolve);
    w.once('error', reject);
  })));

  /** @param {Worker} worker @param {string} type */
  const next = (worker, type) =>
    new Promise((resolve, reject) => {
      /** @param {any} msg */
      const onMessage = (msg) => {
        if (msg.type !== type) return;
        worker.off('message', onMessage);
        worker.off('error', reject);
        resolve(msg);
      };
      worker.on('message', onMessage);
      worker.once('error', reject);
    });

  let busy = false;
  /** @type {(() => void) | undefined} */
  let stopRun;
  return {
    size: workers,
    /**
     * @param {LoadOptions} options
     * @returns {Promise<LoadResult>}
     */
    async run(options) {
      if (busy) throw new Error('one load at a time');
      busy = true;
      try {
        const host = options.host ?? '127.0.0.1';
        if (host !== '127.0.0.1') throw new Error('the load generator only drives 127.0.0.1');
        const tag = options.tag ?? `${Date.now().toString(36)}${Math.floor(Math.random() * 1e6).toString(36)}`;
        const maxRequests = options.maxRequests ?? 10_000_000;
        const requests = options.requests ?? [/** @type {RequestSpec} */ (options.request)];
        // Connections and the request cap are split across the workers (workers with none sit out).
        const shares = pool.map((_, i) => Math.floor(options.connections / workers) + (i < options.connections % workers ? 1 : 0));
        const firsts = shares.map((_, i) => shares.slice(0, i).reduce((a, b) => a + b, 0));
        const active = pool.map((w, i) => ({ w, i, conns: shares[i], first: firsts[i] })).filter((x) => x.conns > 0);
        const readies = active.map(({ w }) => next(w, 'ready'));
        for (const { w, i, conns, first } of active) {
          w.postMessage({
            type: 'prepare',
            host,
            port: options.port,
            connections: conns,
            firstConnection: first,
            maxRequests: Math.ceil((maxRequests * conns) / options.connections),
            requests,
            tag: `${tag}-${i}`,
            progress: options.onProgress !== undefined,
          });
        }
        await Promise.all(readies);
        const dones = active.map(({ w }) => next(w, 'done'));
        /** @type {number[][]} */
        const okSoFar = active.map(() => requests.map(() => 0));
        /** @param {any} msg */
        const onProgress = (msg) => {
          if (msg.type !== 'progress') return;
          okSoFar[msg.index] = msg.ok;
          options.onProgress?.(requests.map((_, k) => okSoFar.reduce((a, o) => a + o[k], 0)));
        };
        active.forEach(({ w }, index) => {
          w.on('message', onProgress);
          w.postMessage({ type: 'start', index, durationMs: options.durationMs, graceMs: options.graceMs ?? 15_000 });
        });
        stopRun = () => active.forEach(({ w }) => w.postMessage({ type: 'stop' }));
        /** @type {any[]} */
        const parts = await Promise.all(dones);
        for (const { w } of active) w.off('message', onProgress);
        const histogram = new Uint32Array(HISTOGRAM_SIZE);
        /** @type {Record<string, number>} */
        const statuses = {};
        let completed = 0, ok = 0, errors = 0, bytes = 0, seconds = 0;
        /** @type {string[]} */
        const errorSamples = [];
        const bySpec = requests.map(() => ({ completed: 0, ok: 0, histogram: new Uint32Array(HISTOGRAM_SIZE) }));
        for (const p of parts) {
          p.bySpec.forEach((/** @type {any} */ part, /** @type {number} */ k) => {
            bySpec[k].completed += part.completed;
            bySpec[k].ok += part.ok;
            for (let i = 0; i < HISTOGRAM_SIZE; i++) bySpec[k].histogram[i] += part.histogram[i];
          });
          completed += p.completed;
          ok += p.ok;
          errors += p.errors;
          bytes += p.bytes;
          seconds = Math.max(seconds, p.seconds);
          for (const [k, v] of Object.entries(p.statuses)) statuses[k] = (statuses[k] ?? 0) + /** @type {number} */ (v);
          for (let i = 0; i < HISTOGRAM_SIZE; i++) histogram[i] += p.histogram[i];
          for (const s of p.errorSamples) if (errorSamples.length < 5) errorSamples.push(s);
        }
        return {
          completed,
          ok,
          non2xx: completed - ok,
          errors,
          statuses,
          errorSamples,
          seconds,
          rps: seconds > 0 ? completed / seconds : 0,
          histogram,
          p50Ms: quantile(histogram, 0.5) / 1000,
          p99Ms: quantile(histogram, 0.99) / 1000,
          bytes,
          bySpec: bySpec.map((x) => ({
            ...x,
            rps: seconds > 0 ? x.completed / seconds : 0,
            p50Ms: quantile(x.histogram, 0.5) / 1000,
            p99Ms: quantile(x.histogram, 0.99) / 1000,
            maxMs: quantile(x.histogram, 1) / 1000,
          })),
        };
      } finally {
        busy = false;
        stopRun = undefined;
      }
    },
    /** Ends the run in progress early, as its deadline would (responses in flight still count). */
    stop() {
      stopRun?.();
    },
    async close() {
      await Promise.all(pool.map((w) => w.terminate()));
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Worker: the connections.

const CRLFCRLF = Buffer.from('\r\n\r\n');

/**
 * Where the response in `buf` (starting at 0) ends, or -1 if it is not complete yet;
 * -2 if it cannot be parsed. Sets `out.status`.
 * @param {Buffer} buf
 * @param {{ status: number, headEnd: number, contentLength: number, chunked: boolean }} out
 */
function parseHead(buf, out) {
  const end = buf.indexOf(CRLFCRLF);
  if (end === -1) return buf.length > 64 * 1024 ? -2 : -1;
  const head = buf.toString('latin1', 0, end);
  if (!head.startsWith('HTTP/1.')) return -2;
  out.status = Number(head.slice(9, 12));
  out.headEnd = end + 4;
  out.contentLength = -1;
  out.chunked = false;
  for (const line of head.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon === -1) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    if (name === 'content-length') out.contentLength = Number(line.slice(colon + 1).trim());
    else if (name === 'transfer-encoding' && /chunked/i.test(line.slice(colon + 1))) out.chunked = true;
  }
  if (!out.chunked && out.contentLength < 0) out.contentLength = 0; // our servers always send a length
  return 0;
}

/**
 * Length of a complete chunked body starting at `from`, -1 if incomplete, -2 if malformed.
 * @param {Buffer} buf @param {number} from
 */
function chunkedEnd(buf, from) {
  let pos = from;
  for (let guard = 0; guard < 1_000_000; guard++) {
    const eol = buf.indexOf('\r\n', pos, 'latin1');
    if (eol === -1) return -1;
    const size = parseInt(buf.toString('latin1', pos, eol).split(';')[0], 16);
    if (!Number.isFinite(size)) return -2;
    if (size === 0) {
      const end = buf.indexOf(CRLFCRLF, eol, 'latin1');
      return end === -1 ? -1 : end + 4;
    }
    pos = eol + 2 + size + 2;
    if (pos > buf.length) return -1;
  }
  return -2;
}

function workerMain() {
  const port = /** @type {import('node:worker_threads').MessagePort} */ (parentPort);
  /** @type {any} */
  let job;
  /** @type {Conn[]} */
  let conns = [];

  /** @param {Record<string, string>} headers */
  function headerText(headers) {
    return Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('');
  }

  class Conn {
    /** @param {number} index */
    constructor(index) {
      this.index = index;
      this.spec = (job.firstConnection + index) % job.requests.length;
      this.request = job.requests[this.spec];
      this.headBytes = headBytesOf(this.request);
      this.seq = 0;
      /** @type {import('node:net').Socket | undefined} */
      this.socket = undefined;
      /** @type {Buffer[]} */
      this.chunks = [];
      this.buffered = 0;
      this.head = { status: 0, headEnd: 0, contentLength: 0, chunked: false };
      this.inHead = true;
      this.bodyLeft = 0;
      this.sentAt = 0;
      this.inFlight = false;
      this.reconnects = 0;
      this.open = false;
    }

    connect() {
      return new Promise((resolve) => {
        const socket = connect({ host: job.host, port: job.port });
        this.socket = socket;
        socket.setNoDelay(true);
        socket.once('connect', () => {
          this.open = true;
          resolve(true);
        });
        socket.on('data', (data) => this.onData(data));
        socket.on('error', (err) => {
          if (this.inFlight || !this.open) fail(`${err.message}`);
          this.inFlight = false;
          if (!this.open) resolve(false);
        });
        socket.on('close', () => {
          const wasOpen = this.open;
          this.open = false;
          if (this.socket !== socket) return;
          if (this.inFlight) {
            this.inFlight = false;
            fail('connection closed before the response ended');
          }
          if (wasOpen && running && !stopping) this.reconnect();
          else settle();
        });
      });
    }

    async reconnect() {
      if (++this.reconnects > 100) return settle();
      this.resetParser();
      if (await this.connect()) this.send();
      else settle();
    }

    resetParser() {
      this.chunks = [];
      this.buffered = 0;
      this.inHead = true;
    }

    send() {
      if (!running || stopping || issued >= job.maxRequests || !this.open || !this.socket) return settle();
      issued++;
      let body = this.request.body;
      if (body !== undefined && body.includes('{id}')) body = body.replaceAll('{id}', `${job.tag}-${this.index}-${this.seq++}`);
      const bodyBuf = body === undefined ? undefined : Buffer.from(body);
      const head = bodyBuf === undefined ? this.headBytes : `${this.headBytes.slice(0, -2)}Content-Length: ${bodyBuf.length}\r\n\r\n`;
      this.inFlight = true;
      this.sentAt = performance.now();
      if (bodyBuf === undefined) this.socket.write(head);
      else this.socket.write(Buffer.concat([Buffer.from(head, 'latin1'), bodyBuf]));
    }

    /** @param {Buffer} data */
    onData(data) {
      bytes += data.length;
      if (!this.inFlight) {
        fail('data without a request');
        this.socket?.destroy();
        return;
      }
      if (this.inHead) {
        this.chunks.push(data);
        this.buffered += data.length;
        const buf = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks);
        this.chunks = [buf];
        const r = parseHead(buf, this.head);
        if (r === -1) return;
        if (r === -2) return this.protocolError('unparsable response head');
        this.inHead = false;
        if (this.head.chunked) {
          this.chunks = [buf.subarray(this.head.headEnd)];
          this.buffered = this.chunks[0].length;
        } else {
          this.bodyLeft = this.head.contentLength - (buf.length - this.head.headEnd);
          this.chunks = [];
          this.buffered = 0;
        }
      } else if (this.head.chunked) {
        this.chunks.push(data);
        this.buffered += data.length;
      } else {
        this.bodyLeft -= data.length;
      }
      if (this.head.chunked) {
        const buf = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks);
        this.chunks = [buf];
        const end = chunkedEnd(buf, 0);
        if (end === -1) return;
        if (end === -2 || end !== buf.length) return this.protocolError('bad chunked body');
      } else {
        if (this.bodyLeft > 0) return;
        if (this.bodyLeft < 0) return this.protocolError('more bytes than Content-Length');
      }
      this.complete();
    }

    /** @param {string} message */
    protocolError(message) {
      this.inFlight = false;
      fail(message);
      this.socket?.destroy();
    }

    complete() {
      const us = (performance.now() - this.sentAt) * 1000;
      this.inFlight = false;
      this.resetParser();
      completed++;
      const bucket = bucketOf(us);
      histogram[bucket]++;
      const spec = bySpec[this.spec];
      spec.completed++;
      spec.histogram[bucket]++;
      const status = this.head.status;
      if (status >= 200 && status < 300) {
        ok++;
        spec.ok++;
      }
      statuses[status] = (statuses[status] ?? 0) + 1;
      lastDoneAt = performance.now();
      this.send();
    }
  }

  // Per-run counters.
  let running = false;
  let stopping = false;
  let issued = 0, completed = 0, ok = 0, errors = 0, bytes = 0;
  let startedAt = 0, lastDoneAt = 0;
  let histogram = new Uint32Array(HISTOGRAM_SIZE);
  /** @type {Record<number, number>} */
  let statuses = {};
  /** @type {string[]} */
  let errorSamples = [];
  /** @type {{ completed: number, ok: number, histogram: Uint32Array }[]} */
  let bySpec = [];
  /** @type {NodeJS.Timeout | undefined} */
  let progressTimer;
  let runIndex = 0;
  /** @type {NodeJS.Timeout | undefined} */
  let deadlineTimer;
  /** @type {NodeJS.Timeout | undefined} */
  let graceTimer;
  let finished = false;

  /** @param {string} message */
  function fail(message) {
    errors++;
    if (errorSamples.length < 5) errorSamples.push(message);
  }

  /** Called whenever a connection may have gone idle: the run ends once none is in flight. */
  function settle() {
    if (!running || finished) return;
    if (!(stopping || issued >= job.maxRequests) && conns.some((c) => c.open)) return;
    if (conns.some((c) => c.inFlight)) return;
    finish();
  }

  function finish() {
    if (finished) return;
    finished = true;
    running = false;
    clearTimeout(deadlineTimer);
    clearTimeout(graceTimer);
    clearInterval(progressTimer);
    for (const c of conns) {
      if (c.inFlight) fail('timed out');
      c.inFlight = false;
      c.socket?.destroy();
    }
    const seconds = ((lastDoneAt > startedAt ? lastDoneAt : performance.now()) - startedAt) / 1000;
    port.postMessage({ type: 'done', completed, ok, errors, bytes, seconds, statuses, errorSamples, histogram, bySpec });
  }

  let graceMs = 15_000;
  function stop() {
    stopping = true;
    settle();
    if (!finished) graceTimer = setTimeout(finish, graceMs);
  }

  /** @param {RequestSpec} request */
  function headBytesOf(request) {
    const headers = { Host: `${job.host}:${job.port}`, 'User-Agent': 'assessd-bench', Authorization: `Bearer ${BENCH_TOKEN}`, ...(request.headers ?? {}) };
    return `${request.method} ${request.path} HTTP/1.1\r\n${headerText(headers)}\r\n`;
  }

  port.on('message', async (msg) => {
    if (msg.type === 'prepare') {
      job = msg;
      running = false;
      stopping = false;
      finished = false;
      issued = completed = ok = errors = bytes = 0;
      histogram = new Uint32Array(HISTOGRAM_SIZE);
      statuses = {};
      errorSamples = [];
      bySpec = job.requests.map(() => ({ completed: 0, ok: 0, histogram: new Uint32Array(HISTOGRAM_SIZE) }));
      conns = [];
      for (let i = 0; i < job.connections; i++) conns.push(new Conn(i));
      await Promise.all(conns.map((c) => c.connect()));
      port.postMessage({ type: 'ready' });
    } else if (msg.type === 'start') {
      running = true;
      runIndex = msg.index;
      startedAt = lastDoneAt = performance.now();
      graceMs = msg.graceMs;
      deadlineTimer = setTimeout(stop, msg.durationMs);
      if (job.progress) progressTimer = setInterval(() => port.postMessage({ type: 'progress', index: runIndex, ok: bySpec.map((s) => s.ok) }), 100);
      for (const c of conns) c.send();
      settle();
    } else if (msg.type === 'stop' && running && !stopping) {
      clearTimeout(deadlineTimer);
      stop();
    }
  });
  port.postMessage({ type: 'online' });
}

if (!isMainThread && workerData && typeof workerData.index === 'number') workerMain();
