/** Serialize once per change, not once per request: a success body kept until the store changes. */
import { successBody } from '../http/jsend.js';
import type { Store } from '../store/store.js';

export function bodyPerGeneration(store: Store, compute: () => unknown): () => Buffer {
  let generation = -1;
  let body = Buffer.alloc(0);
  return () => {
    if (generation !== store.generation) {
      // kept as bytes: a string would be encoded again for every answer
      body = Buffer.from(successBody(compute()));
      generation = store.generation;
    }
    return body;
  };
}
