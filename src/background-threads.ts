/**
 * The event loop first. At saturation on a small machine (2 cores: the clients on one, the loop on
 * the other) every other runnable thread of the process (V8's garbage-collection helpers, libuv's
 * thread pool waking after each write) takes its CPU from the loop or its clients, and the loop
 * waits in the run queue for a scheduler slice, holding every request in flight. Measured: most
 * of the loop's stalls over 5 ms were run-queue waits, not work (docs/PERFORMANCE.md, issue #17).
 */
import { readdirSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';

/** How much nicer than the loop the other threads run: the compaction worker's own setting. */
const BACKGROUND_NICE = 10;

/**
 * Lowers the priority of every thread of the process but the main one, by 10 nice levels (never
 * raising one). Linux only, where the nice value is per thread; elsewhere it is the process's,
 * and this does nothing. Returns the threads lowered.
 */
export function lowerBackgroundThreads(): number {
  if (process.platform !== 'linux') return 0;
  let lowered = 0;
  let tasks: string[];
  try {
    tasks = readdirSync('/proc/self/task');
  } catch {
    return 0;
  }
  const nice = Math.min(19, getPriority() + BACKGROUND_NICE);
  for (const task of tasks) {
    const tid = Number(task);
    if (tid === process.pid) continue;
    try {
      if (getPriority(tid) < nice) {
        setPriority(tid, nice);
        lowered++;
      }
    } catch {
      // the thread ended meanwhile, or this system does not let us: it keeps its priority
    }
  }
  return lowered;
}
