/**
 * Maps split into many small ones, so that no insert ever rehashes more than one small shard: a
 * single Map doubles its table when full, and at 262,144 and 524,288 entries that copy stalled a
 * write for ~14 and ~40 ms per Map (the session indexes are two of them).
 */

/**
 * A Map made of shards, each a Map, picked by the subclass from the key. Iterates shard by shard,
 * each in insertion order.
 */
abstract class ShardedMap<K, V> implements Map<K, V> {
  #size = 0;

  /** The shard `key` belongs in (created if `create`), undefined if none yet. */
  protected abstract shardOf(key: K, create: boolean): Map<K, V> | undefined;
  /** The shards, in the order to iterate them. */
  protected abstract allShards(): Iterable<Map<K, V>>;
  protected abstract clearShards(): void;

  get size(): number {
    return this.#size;
  }

  get [Symbol.toStringTag](): string {
    return 'ShardedMap';
  }

  get(key: K): V | undefined {
    return this.shardOf(key, false)?.get(key);
  }

  has(key: K): boolean {
    return this.shardOf(key, false)?.has(key) ?? false;
  }

  set(key: K, value: V): this {
    const shard = this.shardOf(key, true)!;
    const before = shard.size;
    shard.set(key, value);
    this.#size += shard.size - before;
    return this;
  }

  delete(key: K): boolean {
    if (!this.shardOf(key, false)?.delete(key)) return false;
    this.#size--;
    return true;
  }

  clear(): void {
    this.clearShards();
    this.#size = 0;
  }

  forEach(callback: (value: V, key: K, map: Map<K, V>) => void, thisArg?: unknown): void {
    for (const [key, value] of this.entries()) callback.call(thisArg, value, key, this);
  }

  *entries(): MapIterator<[K, V]> {
    for (const shard of this.allShards()) yield* shard.entries();
  }

  *keys(): MapIterator<K> {
    for (const shard of this.allShards()) yield* shard.keys();
  }

  *values(): MapIterator<V> {
    for (const shard of this.allShards()) yield* shard.values();
  }

  [Symbol.iterator](): MapIterator<[K, V]> {
    return this.entries();
  }
}

/** Ids per shard: a shard's rehash copies at most this many entries. */
const IDS_PER_SHARD = 4096;

/**
 * Rows by positive integer id, in shards of consecutive ids, iterated in the order the shards
 * were first used: with ids handed out in increasing order, id order, as one Map's insertion
 * order was.
 */
export class IdMap<V> extends ShardedMap<number, V> {
  readonly #shards = new Map<number, Map<number, V>>();
  // new ids all go to the newest shard: one comparison finds it
  #lastNumber = -1;
  #last: Map<number, V> | undefined;

  protected shardOf(id: number, create: boolean): Map<number, V> | undefined {
    const n = Math.floor(id / IDS_PER_SHARD);
    if (n === this.#lastNumber) return this.#last;
    let shard = this.#shards.get(n);
    if (!shard && create) this.#shards.set(n, (shard = new Map()));
    if (shard) [this.#lastNumber, this.#last] = [n, shard];
    return shard;
  }

  protected allShards(): Iterable<Map<number, V>> {
    return this.#shards.values();
  }

  protected clearShards(): void {
    this.#shards.clear();
    [this.#lastNumber, this.#last] = [-1, undefined];
  }

  /** The highest id, 0 if none: a look at the highest shard, not at every row. */
  highestId(): number {
    let top: Map<number, V> | undefined;
    let topNumber = -1;
    for (const [n, shard] of this.#shards) {
      if (n > topNumber && shard.size > 0) [topNumber, top] = [n, shard];
    }
    let highest = 0;
    for (const id of top?.keys() ?? []) highest = Math.max(highest, id);
    return highest;
  }
}

const STRING_SHARDS = 256;
/**
 * Keys a StringMap holds in one Map before it splits into hashed shards: growing one Map to this
 * size rehashes at most ~1 ms, and a store's few hundred or thousand names and URLs are found
 * without hashing them in JavaScript first (at start-up, 1,000 sessions loaded ~2 ms sooner).
 */
export const SHARD_FROM = 16_384;

/** FNV-1a over the UTF-16 units, folded to a shard number. */
function stringShard(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return (h >>> 0) % STRING_SHARDS;
}

/**
 * Values by string key (names, URLs): one Map up to `SHARD_FROM` keys, hashed shards from then on
 * (the split moves every key once); its order is not meant to be read.
 */
export class StringMap<V> extends ShardedMap<string, V> {
  #one: Map<string, V> | undefined = new Map();
  #shards: Map<string, V>[] = [];

  protected shardOf(key: string): Map<string, V> {
    return this.#one ?? this.#shards[stringShard(key)]!;
  }

  protected allShards(): Iterable<Map<string, V>> {
    return this.#one ? [this.#one] : this.#shards;
  }

  protected clearShards(): void {
    this.#one = new Map();
    this.#shards = [];
  }

  override set(key: string, value: V): this {
    super.set(key, value);
    if (this.#one && this.#one.size >= SHARD_FROM) this.#split(this.#one);
    return this;
  }

  #split(one: Map<string, V>): void {
    this.#shards = Array.from({ length: STRING_SHARDS }, () => new Map<string, V>());
    for (const [key, value] of one) this.#shards[stringShard(key)]!.set(key, value);
    this.#one = undefined;
  }
}
