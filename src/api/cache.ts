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
