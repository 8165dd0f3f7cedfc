/**
 * A session bundle's transactions: each target's as HAR entries in the bundle (`transactions`),
 * written on import into one segment per target before the op that imports the session names them.
 */
import { pace } from '../engine/pace.js';
import { deriveTarget } from '../store/targets.js';
import type { BundledTransactions } from '../store/bundle.js';
import type { ImportedSegment } from '../store/import.js';
import type { State } from '../store/state.js';
import { entryToExchange, exchangeToEntry, HarError } from './har.js';
import { readStored } from './read.js';
import { scopeTest } from './scope.js';
import { FLAG_DEAD } from './segment.js';
import type { Evidence, PendingSegment } from './store.js';

/** A bundled transaction refused: the field, in the bundle (`targets[2].transactions[5].request.url`), and what is wrong. */
export class BundledTransactionError extends Error {
  constructor(
    readonly field: string,
    readonly problem: string,
  ) {
    super(`${field}: ${problem}`);
  }
}

export interface WrittenSegments {
  /** What the import op names. */
  segments: ImportedSegment[];
  /** The op was refused or failed: the files go. */
  abort(): Promise<void>;
  /** The op is durable: the targets' indexes learn their segments. */
  committed(state: State): void;
}

/**
 * Writes the bundle's transactions, one durable segment per target, noting where those `referenced`
 * by findings (their `_id` on the exporting box) land. Throws BundledTransactionError.
 */
export async function writeBundledTransactions(evidence: Evidence, bundled: readonly BundledTransactions[], referenced: ReadonlySet<number> = new Set()): Promise<WrittenSegments> {
  const written: { url: string; pending: PendingSegment; positions: [number, number][] }[] = [];
  const abort = async () => {
    for (const { pending } of written) await pending.abort();
  };
  try {
    for (const { url, index, entries } of bundled) {
      const target = deriveTarget(0, url)!;
      const inScope = scopeTest(target.host_name, target.port_number);
      const pending = await evidence.newSegment();
      const positions: [number, number][] = [];
      written.push({ url, pending, positions });
      for (let i = 0; i < entries.length; i++) {
        let exchange;
        try {
          exchange = entryToExchange(entries[i], i, true);
        } catch (err) {
          if (!(err instanceof HarError)) throw err;
          throw new BundledTransactionError(err.field.replace(/^log\.entries\[\d+\]/, `targets[${index}].transactions[${i}]`), err.problem);
        }
        if (!exchange) continue;
        const old = (entries[i] as { _id?: unknown })._id;
        if (typeof old === 'number' && referenced.has(old)) positions.push([old, pending.count]);
        await pending.add(exchange, inScope(exchange.url));
      }
      if (pending.count === 0) {
        await pending.abort();
        written.pop();
      } else await pending.finish();
    }
  } catch (err) {
    await abort();
    throw err;
  }
  return {
    segments: written.map(({ url, pending, positions }) => ({ url, segment: pending.n, count: pending.count, ...(positions.length > 0 ? { positions } : {}) })),
    abort,
    committed(state) {
      evidence.committed(written.map(({ url, pending }) => ({ target: state.targetIdByUrl.get(url)!, pending })));
    },
  };
}

/**
 * Stored bytes of transactions one bundle may carry. A bundle is one JSON text built in memory, and
 * V8's longest string is about 512 Mi characters: a session holding gigabytes of recorded traffic
 * (a HAR import may be 1 GiB) ran the server out of memory. Past this, the export is refused
 * (its HAR exports stream any size).
 */
export const MAX_BUNDLED_TRANSACTION_BYTES = 256 * 1024 * 1024;

/** A session whose transactions are more than one bundle carries: how many bytes they hold. */
export class TooManyTransactionsError extends Error {
  constructor(readonly bytes: number, budget: number) {
    super(`its targets' transactions hold ${(bytes / 2 ** 20).toFixed(1)} MiB, more than a bundle carries (${(budget / 2 ** 20).toFixed(1)} MiB)`);
  }
}

/** Each target's transactions as HAR entries, oldest first (for a bundle); TooManyTransactionsError past MAX_BUNDLED_TRANSACTION_BYTES, before any is read. */
export async function transactionEntries(evidence: Evidence, targets: readonly number[], budget = MAX_BUNDLED_TRANSACTION_BYTES): Promise<Map<number, unknown[]>> {
  const out = new Map<number, unknown[]>();
  let bytes = 0;
  for (const target of targets) {
    const { index } = await evidence.load(target);
    for (let row = 0; row < index.n; row++) if ((index.flags[row]! & FLAG_DEAD) === 0) bytes += index.len[row]!;
  }
  if (bytes > budget) throw new TooManyTransactionsError(bytes, budget);
  // reads from the cache resolve without the event loop: it gets its turn between slices
  const tick = pace();
  for (const target of targets) {
    const loaded = await evidence.load(target);
    const entries: unknown[] = [];
    for (let row = 0; row < loaded.index.n; row++) {
      const stored = await readStored(evidence, loaded, target, loaded.index.ids[row]);
      if (stored) entries.push(exchangeToEntry(stored.record.exchange, stored.facts));
      await tick();
    }
    if (entries.length > 0) out.set(target, entries);
  }
  return out;
}
