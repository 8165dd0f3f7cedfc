/** Serialize once per change, not once per request: an answer kept, headers and all, until the store changes. */
import { successBody } from '../http/jsend.js';
import { prepared, type PreparedReply } from '../http/respond.js';
import type { Store } from '../store/store.js';

export function replyPerGeneration(store: Store, compute: () => unknown): () => PreparedReply {
  let generation = -1;
  let reply: PreparedReply | undefined;
  return () => {
    if (!reply || generation !== store.generation) {
      // kept as bytes: a string would be encoded again for every answer
      reply = prepared({ status: 200, body: Buffer.from(successBody(compute())) });
      generation = store.generation;
    }
    return reply;
  };
}

/**
 * A memo emptied whenever the store changes: a value worked out once per key and generation
 * (a session's targets in order, a search over them), at most `size` keys at a time.
 */
export function memoPerGeneration<V>(store: Store, size: number): (key: string, compute: () => V) => V {
  let generation = -1;
  const values = new Map<string, V>();
  return (key, compute) => {
    if (generation !== store.generation) {
      values.clear();
      generation = store.generation;
    }
    let value = values.get(key);
    if (value === undefined) {
      if (values.size >= size) values.delete(values.keys().next().value!);
      value = compute();
      values.set(key, value);
    }
    return value;
  };
}
