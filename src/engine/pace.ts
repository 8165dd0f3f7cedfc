/**
 * Cooperative slicing for loops over what a target or a tool sent. A linear loop over a megabyte
 * still takes tens of milliseconds, and the server has one event loop: such loops call `tick()`
 * each turn, and await it when it answers a promise, which it does once the slice has run
 * `sliceMs`: the loop then yields to the event loop (other requests go first) and goes on.
 */
import { setImmediate as yieldToLoop } from 'node:timers/promises';

/** Counts a turn of work (`weight` turns for a coarse one: many characters read at once). */
export type Tick = (weight?: number) => Promise<void> | undefined;

/** Turns of work between two looks at the clock. */
const TURNS_PER_LOOK = 128;

export function pace(sliceMs = 8, signal?: AbortSignal): Tick {
  let since = performance.now();
  let turns = 0;
  const resume = () => {
    signal?.throwIfAborted();
    since = performance.now();
  };
  return (weight = 1) => {
    turns += weight;
    if (turns < TURNS_PER_LOOK) return undefined;
    turns = 0;
    if (performance.now() - since < sliceMs) return undefined;
    return yieldToLoop().then(resume);
  };
}
