/**
 * Maps split into many small ones, so that no insert ever rehashes more than one shard: a single
 * Map doubles its table when full, and at 262,144 and 524,288 entries that copy stalled a write
 * for ~14 and ~40 ms per Map (the session indexes are two of them).
 */

/**
 * A Map of shards picked by `shardOf(key)`. Iterates shard by shard in the order the shards were
 * first used, each in insertion order: with ids handed out in increasing order and shards that
 * are ranges of ids, that is id order, as one Map's insertion order was.
 */
export class ShardedMap<K, V> implements Map<K, V> {
  readonly #shardOf: (key: K) => number;
  readonly #shards = new Map<number, Map<K, V>>();
  #size = 0;

  constructor(shardOf: (key: K) => number) {
    this.#shardOf = shardOf;
  }

  get size(): number {
    return this.#size;
  }

  get [Symbol.toStringTag](): string {
    return 'ShardedMap';
  }

  get(key: K): V | undefined {
    return this.#shards.get(this.#shardOf(key))?.get(key);
  }

  has(key: K): boolean {
    return this.#shards.get(this.#shardOf(key))?.has(key) ?? false;
  }

  set(key: K, value: V): this {
    const n = this.#shardOf(key);
    let shard = this.#shards.get(n);
    if (!shard) this.#shards.set(n, (shard = new Map()));
    const before = shard.size;
    shard.set(key, value);
    this.#size += shard.size - before;
    return this;
  }

  delete(key: K): boolean {
    if (!this.#shards.get(this.#shardOf(key))?.delete(key)) return false;
    this.#size--;
    return true;
  }

  clear(): void {
    this.#shards.clear();
    this.#size = 0;
  }

  forEach(callback: (value: V, key: K, map: Map<K, V>) => void, thisArg?: unknown): void {
    for (const [key, value] of this.entries()) callback.call(thisArg, value, key, this);
  }

  *entries(): MapIterator<[K, V]> {
    for (const shard of this.#shards.values()) yield* shard.entries();
  }

  *keys(): MapIterator<K> {
    for (const shard of this.#shards.values()) yield* shard.keys();
  }

  *values(): MapIterator<V> {
    for (const shard of this.#shards.values()) yield* shard.values();
  }

  [Symbol.iterator](): MapIterator<[K, V]> {
    return this.entries();
  }

  /** The shards, keyed by shard number. */
  protected get shards(): ReadonlyMap<number, ReadonlyMap<K, V>> {
    return this.#shards;
  }
}

/** Ids per shard: a shard's rehash copies at most this many entries. */
const IDS_PER_SHARD = 4096;

/** Rows by positive integer id, in shards of consecutive ids. */
export class IdMap<V> extends ShardedMap<number, V> {
  constructor() {
    super((id) => Math.floor(id / IDS_PER_SHARD));
  }

  /** The highest id, 0 if none: a look at the highest shard, not at every row. */
  highestId(): number {
    let top: ReadonlyMap<number, V> | undefined;
    let topShard = -1;
    for (const [n, shard] of this.shards) {
      if (n > topShard && shard.size > 0) [topShard, top] = [n, shard];
    }
    let highest = 0;
    for (const id of top?.keys() ?? []) highest = Math.max(highest, id);
    return highest;
  }
}

const STRING_SHARDS = 256;

/** FNV-1a over the UTF-16 units, folded to a shard number. */
function stringShard(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return (h >>> 0) % STRING_SHARDS;
}

/** Values by string key (names, URLs), in hashed shards; its order is not meant to be read. */
export class StringMap<V> extends ShardedMap<string, V> {
  constructor() {
    super(stringShard);
  }
}
