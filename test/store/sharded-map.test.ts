import { test } from 'node:test';
import assert from 'node:assert/strict';
import { IdMap, SHARD_FROM, StringMap } from '../../src/store/sharded-map.ts';

test('an IdMap answers like a Map, and iterates in id order across its shards', () => {
  const map = new IdMap<string>();
  const native = new Map<number, string>();
  for (const id of [1, 2, 4095, 4096, 4097, 9000, 20_000, 100_000]) {
    map.set(id, `v${id}`);
    native.set(id, `v${id}`);
  }
  map.set(4096, 'again');
  native.set(4096, 'again');
  assert.equal(map.delete(2), true);
  assert.equal(map.delete(2), false);
  native.delete(2);
  assert.equal(map.size, native.size);
  assert.deepEqual([...map], [...native]);
  assert.deepEqual([...map.keys()], [...native.keys()]);
  assert.deepEqual([...map.values()], [...native.values()]);
  assert.equal(map.get(9000), 'v9000');
  assert.equal(map.get(9001), undefined);
  assert.equal(map.has(4097), true);
  assert.equal(map.has(2), false);
  const seen: [number, string][] = [];
  map.forEach((value, key, self) => {
    assert.equal(self, map);
    seen.push([key, value]);
  });
  assert.deepEqual(seen, [...native]);
  map.clear();
  assert.equal(map.size, 0);
  assert.deepEqual([...map], []);
});

test('highestId finds the highest id left, 0 when none', () => {
  const map = new IdMap<number>();
  assert.equal(map.highestId(), 0);
  for (const id of [3, 5000, 70_000, 70_001]) map.set(id, id);
  assert.equal(map.highestId(), 70_001);
  map.delete(70_001);
  map.delete(70_000);
  assert.equal(map.highestId(), 5000);
  map.delete(5000);
  map.delete(3);
  assert.equal(map.highestId(), 0);
});

test('a StringMap keeps every key apart, and its size', () => {
  const map = new StringMap<number>();
  const keys = Array.from({ length: 2000 }, (_, i) => `session ${i} ${'é'.repeat(i % 3)}`);
  keys.forEach((key, i) => map.set(key, i));
  assert.equal(map.size, 2000);
  keys.forEach((key, i) => assert.equal(map.get(key), i));
  assert.equal(map.get('session 1 x'), undefined);
  for (const key of keys.slice(0, 1000)) assert.equal(map.delete(key), true);
  assert.equal(map.size, 1000);
  assert.deepEqual(new Set(map.keys()), new Set(keys.slice(1000)));
});

/** A StringMap that says how many Maps hold its keys. */
class CountedStringMap<V> extends StringMap<V> {
  maps(): number {
    return [...this.allShards()].length;
  }
}

test('a StringMap past SHARD_FROM keys splits into shards and keeps every key, its size and its deletes; clear makes it one Map again', () => {
  const map = new CountedStringMap<number>();
  const count = SHARD_FROM * 2 + 7;
  const keys = Array.from({ length: count }, (_, i) => `https://host${i % 97}.example/${i}`);
  keys.forEach((key, i) => {
    map.set(key, i);
    // one Map until the key that splits it; that key, and the ones after, are found at once
    if (i === SHARD_FROM - 2) assert.equal(map.maps(), 1);
    if (i === SHARD_FROM - 1) assert.equal(map.maps(), 256);
    if (i === SHARD_FROM - 1 || i === SHARD_FROM) assert.equal(map.get(key), i);
  });
  map.set(keys[5]!, -5);
  assert.equal(map.size, count);
  keys.forEach((key, i) => assert.equal(map.get(key), i === 5 ? -5 : i));
  for (const key of keys.slice(0, SHARD_FROM)) assert.equal(map.delete(key), true);
  assert.equal(map.delete(keys[0]!), false);
  assert.equal(map.size, count - SHARD_FROM);
  assert.deepEqual(new Set(map.keys()), new Set(keys.slice(SHARD_FROM)));
  map.clear();
  assert.equal(map.size, 0);
  assert.equal(map.maps(), 1);
  map.set('again', 1);
  assert.deepEqual([...map], [['again', 1]]);
});
