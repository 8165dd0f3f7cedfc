/** Serialize once per change, not once per request: a success body kept until the store changes. */
import { successBody } from '../http/jsend.js';
import type { Store } from '../store/store.js';

export function bodyPerGeneration(store: Store, compute: () => unknown): () => string {
  let generation = -1;
  let body = '';
  return () => {
    if (generation !== store.generation) {
      body = successBody(compute());
      generation = store.generation;
    }
    return body;
  };
}
