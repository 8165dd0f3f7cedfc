/**
 * The proxy's exchanges stored as their targets' transactions (`source: "proxy"`): an exchange
 * whose host and port are a target's is queued, and the queue is written every FLUSH_MS as one
 * segment and one durable op per target, so the client never waits for the disk. An exchange that
 * would take the queue past its bound is stored with its bodies cut to what is left (saying so);
 * what cannot be kept (a disk that refuses, a target deleted meanwhile) is dropped, counted and
 * logged: the traffic itself was forwarded whole.
 */
import type { Evidence } from '../evidence/store.js';
import { mediaTypeOf, type Exchange } from '../evidence/record.js';
import { hostAndPort } from '../evidence/scope.js';
import type { Store } from '../store/store.js';
import type { ProxyExchange, Recorder } from './record.js';

export interface EvidenceRecorder extends Recorder {
  /** Writes what is queued now (tests, and the server's stop). */
  flush(): Promise<void>;
  /** Exchanges that could not be stored (the queue full, the disk refusing, the target deleted). */
  readonly dropped: number;
}

const FLUSH_MS = 250;
/** Bytes of bodies queued at most: past it, exchanges are stored with their bodies cut. */
const MAX_QUEUED_BYTES = 64 * 1024 * 1024;
const LOG_EVERY_MS = 60_000;

interface Candidate {
  id: number;
  /** The target's path: the longest one that prefixes a URL wins among targets of one host and port. */
  path: string;
}

function asExchange(x: ProxyExchange): Exchange {
  return {
    url: x.url,
    method: x.method,
    httpVersion: x.httpVersion,
    requestHeaders: x.requestHeaders,
    requestBody: x.requestBody,
    status: x.status,
    statusText: x.statusText,
    responseHttpVersion: 'HTTP/1.1',
    responseHeaders: x.responseHeaders,
    responseBody: x.responseBody,
    responseSize: x.responseSize,
    truncated: x.truncated,
    mimeType: mediaTypeOf(x.responseHeaders),
    startedAt: x.startedAt,
    time: x.time,
    source: 'proxy',
    ...(x.serverIPAddress ? { serverIPAddress: x.serverIPAddress } : {}),
    ...(x.tlsProblem ? { tlsProblem: x.tlsProblem } : {}),
    ...(x.error ? { error: x.error } : {}),
    ...(x.resent ? { resent: x.resent } : {}),
    // a body past the cap was forwarded whole and stored cut: the record says how much was sent
    ...(x.requestSize < 0 || x.requestSize > x.requestBody.length ? { requestSize: x.requestSize } : {}),
  };
}

async function* each(list: readonly Exchange[]): AsyncGenerator<Exchange> {
  yield* list;
}

export function evidenceRecorder(options: { store: Store; evidence: Evidence; log: (line: string) => void }): EvidenceRecorder {
  const { store, evidence, log } = options;
  let byOrigin = new Map<string, Candidate[]>();
  let generation = -1;
  const queued = new Map<number, Exchange[]>();
  let queuedBytes = 0;
  let dropped = 0;
  let timer: NodeJS.Timeout | undefined;
  let writing: Promise<void> = Promise.resolve();
  let lastLog = -Infinity;
  let cut = 0;
  let lastCutLog = -Infinity;

  const note = (what: string) => {
    dropped++;
    if (Date.now() - lastLog < LOG_EVERY_MS) return;
    lastLog = Date.now();
    log(`the proxy forwarded an exchange it could not store (${what}); ${dropped} so far`);
  };

  /** host:port -> the targets there, rebuilt when the store changes. */
  function origins(): Map<string, Candidate[]> {
    if (generation === store.generation) return byOrigin;
    generation = store.generation;
    byOrigin = new Map();
    for (const { target } of store.state.targets.values()) {
      const key = `${target.host_name.toLowerCase()}:${target.port_number}`;
      const path = new URL(target.target_url).pathname;
      const list = byOrigin.get(key) ?? [];
      list.push({ id: target.id, path });
      byOrigin.set(key, list);
    }
    for (const list of byOrigin.values()) list.sort((a, b) => b.path.length - a.path.length || a.id - b.id);
    return byOrigin;
  }

  async function write(): Promise<void> {
    const batches = [...queued];
    queued.clear();
    queuedBytes = 0;
    for (const [target, list] of batches) {
      try {
        const result = await evidence.importExchanges(target, each(list));
        if (!result.ok) for (let i = 0; i < list.length; i++) note('its target was deleted');
      } catch (err) {
        for (let i = 0; i < list.length; i++) note((err as Error).message);
      }
    }
  }

  function flush(): Promise<void> {
    clearTimeout(timer);
    timer = undefined;
    // one write at a time, in order
    writing = writing.then(write);
    return writing;
  }

  return {
    targetOf(url) {
      const { host, port } = hostAndPort(url)!;
      const candidates = origins().get(`${host}:${port}`);
      if (!candidates) return undefined;
      return (candidates.find((c) => url.pathname.startsWith(c.path)) ?? candidates[candidates.length - 1]!).id;
    },
    record(target, exchange) {
      let x = asExchange(exchange);
      let bytes = x.requestBody.length + x.responseBody.length;
      if (queuedBytes + bytes > MAX_QUEUED_BYTES) {
        // the disk is behind: the exchange is stored all the same, its bodies cut to what is left
        const left = Math.max(0, MAX_QUEUED_BYTES - queuedBytes);
        const requestBody = x.requestBody.subarray(0, left);
        const responseBody = x.responseBody.subarray(0, left - requestBody.length);
        x = { ...x, requestBody, responseBody, truncated: true, ...(requestBody.length < x.requestBody.length ? { requestSize: x.requestSize ?? x.requestBody.length } : {}) };
        bytes = requestBody.length + responseBody.length;
        cut++;
        if (Date.now() - lastCutLog >= LOG_EVERY_MS) {
          lastCutLog = Date.now();
          log(`the proxy stored an exchange with its bodies cut: the queue to the disk was full (${MAX_QUEUED_BYTES} bytes); ${cut} so far`);
        }
      }
      const list = queued.get(target) ?? [];
      list.push(x);
      queued.set(target, list);
      queuedBytes += bytes;
      timer ??= setTimeout(() => void flush(), FLUSH_MS).unref();
    },
    flush,
    get dropped() {
      return dropped;
    },
  };
}
