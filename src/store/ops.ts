/** Changes as data: what the API asks for, what the journal records, what a replay applies. */
import { addTargetsPartial, bulkTargets, type BulkRequest } from './bulk.js';
import { patchConfig } from './configuration.js';
import { activateSession, addTargetToSession, createSession, deleteSession, removeTargetFromSession } from './sessions.js';
import type { Part, State } from './state.js';
import { createTargets, deleteTarget, setTargetAddresses, type HostAddresses } from './targets.js';
import { importSession, type ImportedOutput, type ImportedSegment } from './import.js';
import { addTransactions, deleteTransaction, forgetSegments, rewriteSegment, salvageSegment } from './transactions.js';
import {
  deleteError, deleteOutputs, deleteOutputsWhere, deleteWork, endRun, patchError, queueWorks, rankOutput, requeueRun, runStarted, setWorkActive, startRun,
  type OutputFilter, type PluginRef, type RunEnd,
} from './engine.js';

/** `at`: when the change was asked for (ms since the epoch), carried in the op so that a replay is exact. */
const APPLY = {
  createSession: (state: State, op: { name: string; at?: number }) => createSession(state, op.name, op.at),
  activateSession: (state: State, op: { id: number }) => activateSession(state, op.id),
  deleteSession: (state: State, op: { id: number; at?: number }) => deleteSession(state, op.id, op.at),
  addTarget: (state: State, op: { session: number; target: number }) => addTargetToSession(state, op.session, op.target),
  removeTarget: (state: State, op: { session: number; target: number }) => removeTargetFromSession(state, op.session, op.target),
  // oneHost: set by every request since hosts must be one host; asWritten: since URLs must have
  // their authority as written; journal records from before lack them, and replay as they were
  // acknowledged (a record with oneHost but no asWritten holds `http:///path`: it still applies)
  // addresses: what the lookup found when the targets were added (absent in records from before)
  createTargets: (state: State, op: { urls: string[]; oneHost?: boolean; asWritten?: boolean; addresses?: HostAddresses }) =>
    createTargets(state, op.urls, { oneHost: op.oneHost === true, asWritten: op.asWritten === true }, op.addresses),
  setTargetAddresses: (state: State, op: { target: number; addresses: string[] }) => setTargetAddresses(state, op.target, op.addresses),
  deleteTarget: (state: State, op: { id: number }) => deleteTarget(state, op.id),
  addTargetsPartial: (state: State, op: { session: number; urls: string[]; oneHost?: boolean; asWritten?: boolean }) =>
    addTargetsPartial(state, op.session, op.urls, { oneHost: op.oneHost === true, asWritten: op.asWritten === true }),
  bulkTargets: (state: State, op: BulkRequest) => bulkTargets(state, op),
  patchConfig: (state: State, op: { values: [key: string, value: string][] }) => patchConfig(state, op.values),
  importSession: (state: State, op: { name: string; urls: string[]; at?: number; outputs?: ImportedOutput[]; segments?: ImportedSegment[] }) =>
    importSession(state, op.name, op.urls, op.at, op.outputs, op.segments),
  queueWorks: (state: State, op: { targets: number[]; plugins: string[]; force: boolean }) => queueWorks(state, op.targets, op.plugins, op.force),
  setWorkActive: (state: State, op: { id: number; active: boolean }) => setWorkActive(state, op.id, op.active),
  deleteWork: (state: State, op: { id: number }) => deleteWork(state, op.id),
  startRun: (state: State, op: { work: number; plugin: PluginRef; outputPath: string; at: number }) => startRun(state, op),
  runStarted: (state: State, op: { output: number; pid: number; pidStart: string }) => runStarted(state, op),
  endRun: (state: State, op: RunEnd) => endRun(state, op),
  requeueRun: (state: State, op: { output: number; at: number; reason: string; crashed?: boolean }) => requeueRun(state, op),
  rankOutput: (state: State, op: { target: number; key: string; userRank?: number; notes?: string }) => rankOutput(state, op),
  deleteOutputs: (state: State, op: { target: number; group?: string; type?: string; code?: string }) => deleteOutputs(state, op),
  // a DELETE with filters (an op of its own: a build that does not know it refuses the journal
  // rather than take it for the deletion of every output)
  deleteOutputsWhere: (state: State, op: { target: number } & OutputFilter) => deleteOutputsWhere(state, op),
  patchError: (state: State, op: { id: number; message: string }) => patchError(state, op),
  deleteError: (state: State, op: { id: number }) => deleteError(state, op),
  addTransactions: (state: State, op: { target: number; segment: number; count: number }) => addTransactions(state, op),
  deleteTransaction: (state: State, op: { target: number; id: number }) => deleteTransaction(state, op),
  rewriteSegment: (state: State, op: { segment: number; into: number; purged: number }) => rewriteSegment(state, op),
  forgetSegments: (state: State, op: { segments: number[] }) => forgetSegments(state, op),
  salvageSegment: (state: State, op: { segment: number; into?: number; kept: number; purged: number }) => salvageSegment(state, op),
};

type Appliers = typeof APPLY;
export type OpName = keyof Appliers;
export type Op = { [K in OpName]: { op: K } & Parameters<Appliers[K]>[1] }[OpName];
export type ResultOf<O extends Op> = ReturnType<Appliers[O['op']]>;

export function isOpName(name: unknown): name is OpName {
  return typeof name === 'string' && Object.hasOwn(APPLY, name);
}

/** Applies one op; a refusal (`ok: false`) leaves the state untouched. Deterministic, for replay. */
export function applyOp<O extends Op>(state: State, op: O): ResultOf<O> {
  // checked before anything changes: a journal edited by hand is refused as a malformed op, whole
  const at = (op as { at?: unknown }).at;
  if (at !== undefined && !(Number.isSafeInteger(at) && (at as number) >= 0)) throw new TypeError('"at" must be milliseconds since the epoch');
  // one applier per op name: the index and the argument always agree
  return (APPLY[op.op] as unknown as (state: State, op: O) => ResultOf<O>)(state, op);
}

/** The snapshot file an op changes. */
export function partOf(op: Op): Part {
  return op.op === 'patchConfig' ? 'configuration' : 'sessions';
}
