/**
 * Pure functions over the engine's part of the state: the worklist (queued works), the runs and
 * their plugin outputs, and the errors of runs that crashed. Every change here is an op: queued,
 * journaled, replayed exactly.
 */
import { OK, refuse, type Result } from './result.js';
import type { ErrorRow, Finding, OutputRow, OutputStatus, State, WorkRow } from './state.js';

/** The longest note a tester may keep on an output, in characters. */
export const MAX_NOTES = 64 * 1024;
/** The longest stored output text (an import's, a check's summary), in characters. */
export const MAX_SUMMARY = 1024 * 1024;
/** Findings kept per output: a scan of a large range cannot grow the store without bound. */
export const MAX_FINDINGS = 1000;

/** A plugin as an output records it: enough to show and filter it without the catalogue. */
export interface PluginRef {
  key: string;
  code: string;
  group: string;
  type: string;
}

function outputOf(state: State, targetId: number, key: string): OutputRow | undefined {
  const id = state.outputsByTarget.get(targetId)?.get(key);
  return id === undefined ? undefined : state.outputs.get(id);
}

/** Whether a work for this target and plugin is queued now. */
function queuedKey(targetId: number, key: string): string {
  return `${targetId} ${key}`;
}

/**
 * Queues every plugin for every target, targets outer: a pair already queued, or (without `force`)
 * already run, is skipped. Refused, with nothing queued, when a target is unknown.
 */
export function queueWorks(
  state: State,
  targets: number[],
  plugins: string[],
  force: boolean,
): Result<'unknown-target', { queued: number; skipped: number; ran: number }> {
  for (const id of targets) if (!state.targets.has(id)) return refuse('unknown-target');
  let queued = 0;
  let skipped = 0;
  // of the skipped: those that ran already (force queues them again)
  let ran = 0;
  for (const target of new Set(targets)) {
    for (const plugin of new Set(plugins)) {
      const key = queuedKey(target, plugin);
      const output = outputOf(state, target, plugin);
      // a run in progress counts as queued: its pair is not queued twice
      if (state.queued.has(key) || output?.status === 'Running' || (!force && output !== undefined)) {
        skipped++;
        if (!state.queued.has(key) && output?.status !== 'Running') ran++;
        continue;
      }
      const id = state.nextWorkId++;
      state.works.set(id, { id, target, plugin, active: true });
      state.queued.add(key);
      queued++;
    }
  }
  return { ok: true, queued, skipped, ran };
}

/** Pauses (`active` false) or resumes one work, or every work with id 0. */
export function setWorkActive(state: State, id: number, active: boolean): Result<'unknown-work'> {
  if (id === 0) {
    for (const work of state.works.values()) work.active = active;
    return OK;
  }
  const work = state.works.get(id);
  if (!work) return refuse('unknown-work');
  work.active = active;
  return OK;
}

/** Deletes one queued work, or every queued work with id 0. */
export function deleteWork(state: State, id: number): Result<'unknown-work'> {
  if (id === 0) {
    state.works.clear();
    state.queued.clear();
    return OK;
  }
  const work = state.works.get(id);
  if (!work) return refuse('unknown-work');
  removeWork(state, work);
  return OK;
}

function removeWork(state: State, work: WorkRow): void {
  state.works.delete(work.id);
  state.queued.delete(queuedKey(work.target, work.plugin));
}

/**
 * A worker takes a work: it leaves the worklist, and its output (a new one, or the one it
 * replaces) says `Running` until the run ends. Refused when the work is no longer queued.
 */
export function startRun(
  state: State,
  op: { work: number; plugin: PluginRef; outputPath: string; at: number },
): Result<'unknown-work' | 'unknown-target', { output: number }> {
  const work = state.works.get(op.work);
  if (!work) return refuse('unknown-work');
  if (!state.targets.has(work.target)) return refuse('unknown-target');
  if (work.plugin !== op.plugin.key) return refuse('unknown-work');
  removeWork(state, work);
  // a run starts: the works a stop put back are ordinary queued works again (they lead the worklist)
  for (const w of state.works.values()) {
    if (w.taken === undefined) break;
    delete w.taken;
  }
  const previous = outputOf(state, work.target, work.plugin);
  if (previous) deleteOutputRow(state, previous);
  const id = state.nextOutputId++;
  const row: OutputRow = {
    id,
    target_id: work.target,
    plugin_key: op.plugin.key,
    plugin_code: op.plugin.code,
    plugin_group: op.plugin.group,
    plugin_type: op.plugin.type,
    status: 'Running',
    owtf_rank: -1,
    user_rank: previous?.user_rank ?? -1,
    user_notes: previous?.user_notes ?? '',
    output_path: op.outputPath,
    started_at: op.at,
    ended_at: null,
    error: null,
    findings: [],
    exit_code: null,
    run: { work: work.id, active: work.active, pid: null, pidStart: null, ...(work.crashes ? { crashes: work.crashes } : {}) },
  };
  insertOutput(state, row);
  return { ok: true, output: id };
}

/** The program of a run has started: its process group, recorded so a later start can end it. */
export function runStarted(state: State, op: { output: number; pid: number; pidStart: string }): Result<'unknown-output'> {
  const row = state.outputs.get(op.output);
  if (!row?.run) return refuse('unknown-output');
  row.run.pid = op.pid;
  row.run.pidStart = op.pidStart;
  return OK;
}

export interface RunEnd {
  output: number;
  at: number;
  status: Exclude<OutputStatus, 'Running'>;
  owtfRank: number;
  findings: Finding[];
  exitCode: number | null;
  error: string | null;
  summary?: string;
  /** For a crash: what the error list shows. */
  crash?: { message: string; traceback: string };
}

/** A run has ended: its output says how; a crash is listed among the errors. */
export function endRun(state: State, op: RunEnd): Result<'unknown-output'> {
  const row = state.outputs.get(op.output);
  if (!row?.run) return refuse('unknown-output');
  delete row.run;
  row.status = op.status;
  row.owtf_rank = op.owtfRank;
  row.findings = op.findings.slice(0, MAX_FINDINGS);
  row.exit_code = op.exitCode;
  row.error = op.error;
  row.ended_at = Math.max(op.at, row.started_at);
  if (op.summary !== undefined) row.summary = op.summary.slice(0, MAX_SUMMARY);
  if (op.crash) {
    const id = state.nextErrorId++;
    state.errors.set(id, { id, owtf_message: op.crash.message, traceback: op.crash.traceback, user_message: '', reported: false, github_issue_url: null });
  }
  updateTargetRanks(state, row.target_id);
  return OK;
}

/**
 * A run cut short by a stop (or found running by a start after a crash, `crashed`): its output
 * says `Aborted` and why, and its work goes back to the head of the worklist, as it was, counting
 * the crash (a run that a crash cut short twice in a row is not requeued again: recovery.ts).
 * Several put back by one stop keep the order they were taken in, whatever order their runs end.
 */
export function requeueRun(state: State, op: { output: number; at: number; reason: string; crashed?: boolean }): Result<'unknown-output'> {
  const row = state.outputs.get(op.output);
  if (!row?.run) return refuse('unknown-output');
  const { work, active } = row.run;
  // a stop in between neither counts nor forgets a crash
  const crashes = (row.run.crashes ?? 0) + (op.crashed === true ? 1 : 0);
  endRun(state, { output: op.output, at: op.at, status: 'Aborted', owtfRank: -1, findings: [], exitCode: null, error: op.reason });
  // the head of the worklist, after the works this stop put back that were taken before it (they
  // lead the queue, marked): a Map keeps insertion order, so the queue is rebuilt
  const requeued: WorkRow = { id: work, target: row.target_id, plugin: row.plugin_key, active, ...(crashes > 0 ? { crashes } : {}), taken: row.id };
  const rows = [...state.works.values()];
  let at = 0;
  while (at < rows.length && rows[at]!.taken !== undefined && rows[at]!.taken! < row.id) at++;
  rows.splice(at, 0, requeued);
  state.works.clear();
  for (const w of rows) state.works.set(w.id, w);
  state.queued.add(queuedKey(row.target_id, row.plugin_key));
  return OK;
}

/** The tester's rank (-1..5) and notes on one output. */
export function rankOutput(
  state: State,
  op: { target: number; key: string; userRank?: number; notes?: string },
): Result<'unknown-output' | 'invalid-rank'> {
  const row = outputOf(state, op.target, op.key);
  if (!row) return refuse('unknown-output');
  if (op.userRank !== undefined && !(Number.isInteger(op.userRank) && op.userRank >= -1 && op.userRank <= 5)) return refuse('invalid-rank');
  if (op.userRank !== undefined) row.user_rank = op.userRank;
  if (op.notes !== undefined) row.user_notes = op.notes.slice(0, MAX_NOTES);
  updateTargetRanks(state, op.target);
  return OK;
}

/** Deletes a target's outputs, all or those of one group, type or code. Returns their output paths. */
export function deleteOutputs(
  state: State,
  op: { target: number; group?: string; type?: string; code?: string },
): Result<'unknown-target', { paths: string[] }> {
  return deleteMatching(state, op.target, { group: op.group, type: op.type, code: op.code });
}

/**
 * Which of a target's outputs a request names: the path's group, type and code, and the filters
 * (each any of its values; absent, no condition). GET reads with it; a DELETE's op carries it, so
 * that what is deleted is chosen when the op applies, on the state it applies to (a replay too).
 */
export interface OutputFilter {
  group?: string;
  type?: string;
  code?: string;
  keys?: string[];
  types?: string[];
  groups?: string[];
  codes?: string[];
  statuses?: string[];
  userRanks?: number[];
  owtfRanks?: number[];
}

const TEXT_FILTERS = ['keys', 'types', 'groups', 'codes', 'statuses'] as const;
const RANK_FILTERS = ['userRanks', 'owtfRanks'] as const;
const FILTER_FIELDS = new Set<string>(['group', 'type', 'code', ...TEXT_FILTERS, ...RANK_FILTERS]);

export function outputMatches(o: OutputRow, f: OutputFilter): boolean {
  return (
    (f.group === undefined || o.plugin_group === f.group) &&
    (f.type === undefined || o.plugin_type === f.type) &&
    (f.code === undefined || o.plugin_code === f.code) &&
    (!f.keys || f.keys.includes(o.plugin_key)) &&
    (!f.types || f.types.includes(o.plugin_type)) &&
    (!f.groups || f.groups.includes(o.plugin_group)) &&
    (!f.codes || f.codes.includes(o.plugin_code)) &&
    (!f.statuses || f.statuses.includes(o.status)) &&
    (!f.userRanks || f.userRanks.includes(o.user_rank)) &&
    (!f.owtfRanks || f.owtfRanks.includes(o.owtf_rank))
  );
}

/** Deletes the outputs of a target that `op` selects (outputMatches). Returns their output paths. */
export function deleteOutputsWhere(state: State, op: { target: number } & OutputFilter): Result<'unknown-target', { paths: string[] }> {
  // a journal edited by hand is refused whole, before anything changes: a field misspelled, or
  // none at all, would read as no filter (every output of the target: the server writes none such)
  const fields = Object.keys(op).filter((key) => key !== 'op' && key !== 'target');
  if (fields.length === 0 || fields.some((key) => !FILTER_FIELDS.has(key))) throw new TypeError(`a filter of ${[...FILTER_FIELDS].join(', ')} is needed`);
  for (const field of ['group', 'type', 'code'] as const) {
    if (op[field] !== undefined && typeof op[field] !== 'string') throw new TypeError(`"${field}" must be a string`);
  }
  for (const field of TEXT_FILTERS) {
    const values: unknown = op[field];
    if (values !== undefined && !(Array.isArray(values) && values.every((v) => typeof v === 'string'))) throw new TypeError(`"${field}" must be an array of strings`);
  }
  for (const field of RANK_FILTERS) {
    const values: unknown = op[field];
    if (values !== undefined && !(Array.isArray(values) && values.every((v) => Number.isInteger(v)))) throw new TypeError(`"${field}" must be an array of integers`);
  }
  return deleteMatching(state, op.target, op);
}

/** Deletes the outputs of `target` that `filter` selects; their output paths, for their files. */
function deleteMatching(state: State, target: number, filter: OutputFilter): Result<'unknown-target', { paths: string[] }> {
  if (!state.targets.has(target)) return refuse('unknown-target');
  const paths: string[] = [];
  for (const row of targetOutputs(state, target)) {
    if (!outputMatches(row, filter)) continue;
    if (row.output_path) paths.push(row.output_path);
    deleteOutputRow(state, row);
  }
  updateTargetRanks(state, target);
  return { ok: true, paths };
}

/** Everything of the engine's about a target that is being deleted: its works and outputs. */
export function forgetTarget(state: State, targetId: number): void {
  for (const work of [...state.works.values()]) if (work.target === targetId) removeWork(state, work);
  for (const row of targetOutputs(state, targetId)) deleteOutputRow(state, row);
  state.outputsByTarget.delete(targetId);
}

export function patchError(state: State, op: { id: number; message: string }): Result<'unknown-error'> {
  const row = state.errors.get(op.id);
  if (!row) return refuse('unknown-error');
  row.user_message = op.message.slice(0, MAX_NOTES);
  return OK;
}

export function deleteError(state: State, op: { id: number }): Result<'unknown-error'> {
  if (!state.errors.delete(op.id)) return refuse('unknown-error');
  return OK;
}

/** A target's outputs, oldest first. */
export function targetOutputs(state: State, targetId: number): OutputRow[] {
  const ids = state.outputsByTarget.get(targetId);
  if (!ids) return [];
  const rows: OutputRow[] = [];
  for (const id of ids.values()) rows.push(state.outputs.get(id)!);
  return rows.sort((a, b) => a.id - b.id);
}

export function insertOutput(state: State, row: OutputRow): void {
  state.outputs.set(row.id, row);
  let byKey = state.outputsByTarget.get(row.target_id);
  if (!byKey) state.outputsByTarget.set(row.target_id, (byKey = new Map()));
  byKey.set(row.plugin_key, row.id);
}

function deleteOutputRow(state: State, row: OutputRow): void {
  state.outputs.delete(row.id);
  const byKey = state.outputsByTarget.get(row.target_id);
  byKey?.delete(row.plugin_key);
  if (byKey?.size === 0) state.outputsByTarget.delete(row.target_id);
}

/** An output's effective rank: the tester's when set, else the engine's. */
export function effectiveRank(row: Pick<OutputRow, 'user_rank' | 'owtf_rank'>): number {
  return row.user_rank !== -1 ? row.user_rank : row.owtf_rank;
}

/** A target's `max_owtf_rank` and `max_user_rank` follow its outputs (-1 with none). */
export function updateTargetRanks(state: State, targetId: number): void {
  const target = state.targets.get(targetId)?.target;
  if (!target) return;
  let owtf = -1;
  let user = -1;
  for (const row of targetOutputs(state, targetId)) {
    owtf = Math.max(owtf, row.owtf_rank);
    user = Math.max(user, row.user_rank);
  }
  target.max_owtf_rank = owtf;
  target.max_user_rank = user;
}

export type { ErrorRow };
