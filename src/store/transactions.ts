/**
 * Which transaction segment files are live, as pure functions over the state: the journal records
 * each file once it is durable (the commit point of an import), and every change to the set of
 * files. The files themselves, and what is in them, are src/evidence's.
 */
import { OK, refuse, type Result } from './result.js';
import type { SegmentRow, State } from './state.js';

/** Most transactions one segment may name: one import is one op, applied at once. */
export const MAX_SEGMENT_TRANSACTIONS = 10_000_000;

const isSegmentNumber = (n: unknown): n is number => Number.isSafeInteger(n) && (n as number) > 0;

/** Whether segment `n` is named by the state, live or waiting for its file to be deleted. */
export function segmentKnown(state: State, n: number): boolean {
  return state.segments.has(n) || state.retiredSegments.has(n);
}

/**
 * Adds a durable segment of `count` transactions to a target: they take the next `count` ids,
 * in the file's order. Refused for an unknown target or a segment number already in use.
 */
export function addTransactions(state: State, op: { target: number; segment: number; count: number }): Result<'unknown-target' | 'duplicate-segment', { base: number }> {
  if (!state.targets.has(op.target)) return refuse('unknown-target');
  if (!isSegmentNumber(op.segment) || segmentKnown(state, op.segment)) return refuse('duplicate-segment');
  if (!(Number.isSafeInteger(op.count) && op.count > 0 && op.count <= MAX_SEGMENT_TRANSACTIONS)) throw new TypeError('"count" must be a positive integer');
  const base = state.nextTransactionId;
  state.nextTransactionId += op.count;
  state.segments.set(op.segment, { n: op.segment, target: op.target, base, span: op.count, gone: [], purged: 0 });
  return { ok: true, base };
}

/** The live segment of a target holding transaction `id`, and the id's place in it. */
export function findTransaction(state: State, target: number, id: number): { row: SegmentRow; local: number } | undefined {
  for (const row of state.segments.values()) {
    if (row.target !== target || id < row.base || id >= row.base + row.span) continue;
    const local = id - row.base;
    return sortedHas(row.gone, local) ? undefined : { row, local };
  }
  return undefined;
}

function sortedIndex(list: number[], value: number): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (list[mid] < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

const sortedHas = (list: number[], value: number) => list[sortedIndex(list, value)] === value;

/** Deletes one transaction; a segment left with none is retired (its file goes once that is durable). */
export function deleteTransaction(state: State, op: { target: number; id: number }): Result<'unknown-transaction'> {
  const found = findTransaction(state, op.target, op.id);
  if (!found) return refuse('unknown-transaction');
  const { row, local } = found;
  row.gone.splice(sortedIndex(row.gone, local), 0, local);
  if (row.gone.length === row.span) retire(state, row.n);
  return OK;
}

function retire(state: State, n: number): void {
  state.segments.delete(n);
  state.retiredSegments.add(n);
}

/** A target's segments all retire with it. */
export function retireTargetSegments(state: State, target: number): void {
  for (const row of [...state.segments.values()]) if (row.target === target) retire(state, row.n);
}

/**
 * Segment `segment` is now file `into`, rewritten without `purged` of its deleted transactions
 * (those deleted before the rewrite read it): the same ids, the old file retired. Refused when
 * the segment is gone meanwhile (its target deleted).
 */
export function rewriteSegment(state: State, op: { segment: number; into: number; purged: number }): Result<'unknown-segment' | 'duplicate-segment'> {
  const row = state.segments.get(op.segment);
  if (!row) return refuse('unknown-segment');
  if (!isSegmentNumber(op.into) || segmentKnown(state, op.into)) return refuse('duplicate-segment');
  if (!(Number.isSafeInteger(op.purged) && op.purged >= 0 && op.purged <= row.gone.length)) throw new TypeError('"purged" must count deleted transactions');
  retire(state, row.n);
  state.segments.set(op.into, { ...row, n: op.into, purged: op.purged });
  return OK;
}

/**
 * Segment `segment`'s file was found damaged: file `into` holds what could be read back of it,
 * its transactions before place `kept` but the `purged` deleted before it was read; those from
 * `kept` on are lost (their ids answer as deleted ones do, and are never given again). The old
 * file is retired, and the segment with it when nothing is left (`into` absent).
 */
export function salvageSegment(state: State, op: { segment: number; into?: number; kept: number; purged: number }): Result<'unknown-segment' | 'duplicate-segment'> {
  const row = state.segments.get(op.segment);
  if (!row) return refuse('unknown-segment');
  if (!(Number.isSafeInteger(op.kept) && op.kept >= 0 && op.kept <= row.span)) throw new TypeError('"kept" must be a place in the segment');
  const gone = row.gone.filter((local) => local < op.kept);
  if (!(Number.isSafeInteger(op.purged) && op.purged >= 0 && op.purged <= gone.length)) throw new TypeError('"purged" must count deleted transactions');
  const left = gone.length < op.kept;
  if (left && op.into === undefined) throw new TypeError('"into" must name the file that holds what is left');
  if (op.into !== undefined && (!isSegmentNumber(op.into) || segmentKnown(state, op.into))) return refuse('duplicate-segment');
  retire(state, row.n);
  // (a file named while the last of it was deleted meanwhile is swept at the next start)
  if (left) state.segments.set(op.into!, { ...row, n: op.into!, span: op.kept, gone, purged: op.purged });
  return OK;
}

/** Retired segments whose files may now be deleted: the state forgets them. */
export function forgetSegments(state: State, op: { segments: number[] }): Result<never> {
  for (const n of op.segments) state.retiredSegments.delete(n);
  return OK;
}

/** Live transactions of a segment. */
export const liveCount = (row: SegmentRow): number => row.span - row.gone.length;

/** A target's live segments, oldest ids first. */
export function targetSegments(state: State, target: number): SegmentRow[] {
  const rows: SegmentRow[] = [];
  for (const row of state.segments.values()) if (row.target === target) rows.push(row);
  return rows.sort((a, b) => a.base - b.base);
}

/** How many live transactions a target has (no file read). */
export function transactionCount(state: State, target: number): number {
  let count = 0;
  for (const row of state.segments.values()) if (row.target === target) count += liveCount(row);
  return count;
}
