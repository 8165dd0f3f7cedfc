/**
 * V8's `gc` for a test that must see what is still referenced: taken from a context made while the
 * flag is on, which is put back at once (contexts made later get no `gc`), as src/young-generation.ts
 * takes it.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

export function exposedGc(): () => void {
  setFlagsFromString('--expose-gc');
  try {
    return runInNewContext('gc') as () => void;
  } finally {
    setFlagsFromString('--no-expose-gc');
  }
}
