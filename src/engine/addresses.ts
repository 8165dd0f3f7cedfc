/**
 * Host names resolved as the box resolves them (getaddrinfo: /etc/hosts first, so an air-gapped
 * box works, then DNS), within a time limit. A lookup cannot be cancelled: one past the limit is
 * no longer waited for and ends unseen. Each running lookup holds a libuv thread, which the
 * store's writes need too: at most two run at once, and a long queue refuses more.
 */
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';

const MAX_RUNNING = 2;
const MAX_WAITING = 1024;
/** Addresses kept per name (the first is the target's `host_ip`). */
const MAX_ADDRESSES = 16;

let running = 0;
const waiting: (() => void)[] = [];
/** One lookup per name at a time, whoever asks. */
const inFlight = new Map<string, Promise<string[]>>();

async function resolveName(name: string): Promise<string[]> {
  if (running >= MAX_RUNNING) {
    if (waiting.length >= MAX_WAITING) return [];
    await new Promise<void>((go) => waiting.push(go));
  }
  running++;
  try {
    const found = await lookup(name, { all: true });
    // IPv4 first: tools given an IPv6 address often need a flag to use it (nmap's -6)
    const ordered = [...found.filter((a) => a.family === 4), ...found.filter((a) => a.family !== 4)].map((a) => a.address);
    return [...new Set(ordered)].slice(0, MAX_ADDRESSES);
  } catch {
    return [];
  } finally {
    running--;
    waiting.shift()?.();
  }
}

/**
 * The addresses of each name that resolved within `timeoutMs` (IPv4 first); a name that did not,
 * or that is an IP already, is absent.
 */
export async function lookupHosts(names: Iterable<string>, timeoutMs: number): Promise<Map<string, string[]>> {
  const found = new Map<string, string[]>();
  const each: Promise<void>[] = [];
  for (const name of new Set(names)) {
    if (isIP(name)) continue;
    let pending = inFlight.get(name);
    if (!pending) {
      pending = resolveName(name).finally(() => inFlight.delete(name));
      inFlight.set(name, pending);
    }
    each.push(pending.then((addresses) => void (addresses.length > 0 && found.set(name, addresses))));
  }
  if (each.length === 0) return found;
  const cancel = new AbortController();
  await Promise.race([Promise.all(each), delay(timeoutMs, undefined, { ref: false, signal: cancel.signal }).catch(() => {})]);
  cancel.abort();
  return new Map(found);
}
