/**
 * Counts the event loop's turns while `work` runs: an immediate queued before it re-queues itself
 * each turn. Work that never yields (one long synchronous call, or a chain of resolved promises)
 * lets it run at most once; work done a slice at a time, many times.
 */
export async function turnsDuring<T>(work: () => Promise<T>): Promise<{ result: T; turns: number }> {
  let turns = 0;
  let done = false;
  const tick = () => {
    turns++;
    if (!done) setImmediate(tick);
  };
  setImmediate(tick);
  try {
    return { result: await work(), turns };
  } finally {
    done = true;
  }
}
