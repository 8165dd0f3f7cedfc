/** The in-memory state, and its JSON form on disk (one file per part, each with a `version`). */
import { IdMap, StringMap } from './sharded-map.js';

export interface Session {
  id: number;
  name: string;
  active: boolean;
}

export interface Target {
  id: number;
  target_url: string;
  host_name: string;
  host_ip: string;
  port_number: string;
  url_scheme: string;
  host_path: string;
  ip_url: string;
  top_domain: string;
  top_url: string;
  alternative_ips: string[];
  scope: boolean;
  max_user_rank: number;
  max_owtf_rank: number;
}

export interface ConfigItem {
  key: string;
  value: string;
  section: string;
  descrip: string;
  dirty: boolean;
}

export interface SessionRow {
  id: number;
  name: string;
  /** Milliseconds since the epoch; absent for sessions made before creation times were recorded. */
  createdAt?: number;
  /** Created with the first target: most sessions of a large store have none. */
  targets?: Set<number>;
}

export interface TargetRow {
  target: Target;
  sessions: Set<number>;
}

/** A queued run of a plugin (by key) on a target; `active` is false while paused. */
export interface WorkRow {
  id: number;
  target: number;
  plugin: string;
  active: boolean;
  /** How many of its runs a server's crash cut short, in a row (absent: none). */
  crashes?: number;
  /**
   * Put back by a stop or a crash: the id of the output its run had (works are taken in queue
   * order, so output ids say in which order they left the worklist). Cleared when a run starts.
   */
  taken?: number;
}

/** Transaction ids a finding lists at most (the oldest); `transactions_total` says how many there were. */
export const MAX_FINDING_TRANSACTIONS = 100;

export interface Finding {
  rank: number;
  title: string;
  detail: string;
  /** Extension: the ids of the target's transactions that show it (a grep plugin's matches, a built-in check's requests), at most 100. */
  transactions?: number[];
  /** Extension: how many transactions show it, when more than `transactions` lists. */
  transactions_total?: number;
}

export type OutputStatus = 'Running' | 'Successful' | 'Aborted' | 'Crashed' | 'Skipped';

/** One plugin's output on one target (a rerun replaces it). Times in ms since the epoch. */
export interface OutputRow {
  id: number;
  target_id: number;
  plugin_key: string;
  plugin_code: string;
  plugin_group: string;
  plugin_type: string;
  status: OutputStatus;
  owtf_rank: number;
  user_rank: number;
  user_notes: string;
  /** The run's directory under DATA_DIR/outputs, or '' when it has none. */
  output_path: string;
  started_at: number;
  ended_at: number | null;
  error: string | null;
  findings: Finding[];
  exit_code: number | null;
  /** The output's text when the store keeps it (a check's summary, an imported output). */
  summary?: string;
  /** While it runs: its work (to requeue it) and its program's process group, once started. */
  run?: { work: number; active: boolean; pid: number | null; pidStart: string | null; crashes?: number };
}

/** A run that crashed or could not start, as the upstream error list shows it. */
export interface ErrorRow {
  id: number;
  owtf_message: string;
  traceback: string;
  user_message: string;
  reported: boolean;
  github_issue_url: string | null;
}

/**
 * A durable file of a target's transactions (DATA_DIR/transactions/<n>.seg): ids `base` to
 * `base + span - 1` in its order, but for the deleted ones (`gone`: their places, ascending).
 */
export interface SegmentRow {
  n: number;
  target: number;
  base: number;
  span: number;
  gone: number[];
  /** How many of `gone` its file no longer holds (it was rewritten without them). */
  purged: number;
}

/** The indexes that grow with the store are sharded maps: growing one never stalls a write. */
export interface State {
  sessions: IdMap<SessionRow>;
  sessionIdByName: StringMap<number>;
  activeSessionId: number;
  nextSessionId: number;
  targets: IdMap<TargetRow>;
  targetIdByUrl: StringMap<number>;
  nextTargetId: number;
  /** Kept ordered by key. */
  config: Map<string, ConfigItem>;
  /** The worklist, in queue order. */
  works: Map<number, WorkRow>;
  /** `<target id> <plugin key>` of every queued work: a pair is never queued twice. */
  queued: Set<string>;
  nextWorkId: number;
  outputs: Map<number, OutputRow>;
  /** Each target's outputs by plugin key. */
  outputsByTarget: Map<number, Map<string, number>>;
  nextOutputId: number;
  errors: Map<number, ErrorRow>;
  nextErrorId: number;
  /** The live transaction segments, by number. */
  segments: Map<number, SegmentRow>;
  /** Segments no longer live whose files may still be on disk: forgotten once they are deleted. */
  retiredSegments: Set<number>;
  nextTransactionId: number;
}

/** Sessions and targets share a file: deleting a session can delete targets, in one atomic write. */
export type Part = 'sessions' | 'configuration';

export const PART_FILES: Record<Part, string> = {
  sessions: 'sessions.json',
  configuration: 'configuration.json',
};

/** The newest on-disk format this build reads and writes. */
export const FORMAT_VERSION = 1;

export const DEFAULT_SESSION_NAME = 'default session';

export function emptyState(): State {
  return {
    sessions: new IdMap(),
    sessionIdByName: new StringMap(),
    activeSessionId: 0,
    nextSessionId: 1,
    targets: new IdMap(),
    targetIdByUrl: new StringMap(),
    nextTargetId: 1,
    config: new Map(),
    works: new Map(),
    queued: new Set(),
    nextWorkId: 1,
    outputs: new Map(),
    outputsByTarget: new Map(),
    nextOutputId: 1,
    errors: new Map(),
    nextErrorId: 1,
    segments: new Map(),
    retiredSegments: new Set(),
    nextTransactionId: 1,
  };
}

/** A data file that cannot be used: the message names the file and the problem. */
export class DataFileError extends Error {
  readonly code = 'ERR_DATA_FILE';
  constructor(
    readonly file: string,
    /** What is wrong with it (the message without the file's name). */
    readonly problem: string,
  ) {
    super(`${file}: ${problem}`);
  }
}

/** A part's snapshot; `seq` is the last journal record it includes. */
export function serializePart(state: State, part: Part, seq: number): string {
  return [...serializePartInPieces(state, part, seq)].join('');
}

/** Characters per piece of a snapshot: enough to write efficiently, and its bytes under malloc's mmap threshold (128 KiB) or near. */
const PIECE = 64 * 1024;

/**
 * A part's snapshot in pieces of about 64 K characters, row by row: writing a large store never
 * builds its whole text, nor a copy of its rows, at once.
 */
export function* serializePartInPieces(state: State, part: Part, seq: number): Generator<string> {
  if (part === 'configuration') {
    yield JSON.stringify({ version: FORMAT_VERSION, seq, items: [...state.config.values()] });
    return;
  }
  const { nextSessionId, activeSessionId, nextTargetId, nextWorkId, nextOutputId, nextErrorId, nextTransactionId } = state;
  // a store that never held a transaction writes what earlier builds wrote
  const transactions = nextTransactionId > 1 || state.retiredSegments.size > 0;
  const head = JSON.stringify({ version: FORMAT_VERSION, seq, nextSessionId, activeSessionId, nextTargetId, nextWorkId, nextOutputId, nextErrorId, ...(transactions ? { nextTransactionId } : {}) });
  let piece = `${head.slice(0, -1)},"sessions":[`;
  let first = true;
  for (const s of state.sessions.values()) {
    piece += `${first ? '' : ','}${JSON.stringify({ id: s.id, name: s.name, created_at: s.createdAt, targets: s.targets ? [...s.targets] : [] })}`;
    first = false;
    if (piece.length >= PIECE) {
      yield piece;
      piece = '';
    }
  }
  piece += '],"targets":[';
  first = true;
  for (const t of state.targets.values()) {
    piece += `${first ? '' : ','}${JSON.stringify(t.target)}`;
    first = false;
    if (piece.length >= PIECE) {
      yield piece;
      piece = '';
    }
  }
  // the engine's rows: works as [id, target, plugin, active(, crashes or 0(, taken))], in queue order
  const work = (w: WorkRow) =>
    w.taken !== undefined ? [w.id, w.target, w.plugin, w.active, w.crashes ?? 0, w.taken] : w.crashes ? [w.id, w.target, w.plugin, w.active, w.crashes] : [w.id, w.target, w.plugin, w.active];
  const lists: [string, Iterable<unknown>, (row: never) => unknown][] = [
    ['works', state.works.values(), work],
    ['outputs', state.outputs.values(), (o: OutputRow) => o],
    ['errors', state.errors.values(), (e: ErrorRow) => e],
  ];
  if (transactions) {
    lists.push(
      // transaction segments as [n, target, base, span, gone, purged]
      ['segments', state.segments.values(), (r: SegmentRow) => [r.n, r.target, r.base, r.span, r.gone, r.purged]],
      ['retiredSegments', state.retiredSegments.values(), (n: number) => n],
    );
  }
  for (const [name, rows, shape] of lists) {
    piece += `],"${name}":[`;
    first = true;
    for (const row of rows) {
      piece += `${first ? '' : ','}${JSON.stringify(shape(row as never))}`;
      first = false;
      if (piece.length >= PIECE) {
        yield piece;
        piece = '';
      }
    }
  }
  yield `${piece}]}`;
}

/**
 * Reads one part's snapshot into `state`, replacing that part; returns the last journal record it
 * includes. Throws DataFileError.
 */
export function loadPart(state: State, part: Part, file: string, text: string): number {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new DataFileError(file, `not valid JSON (${(err as Error).message})`);
  }
  return loadParsedPart(state, part, file, doc);
}

/** loadPart of a document already parsed (a snapshot too large for one string is read row by row). */
export function loadParsedPart(state: State, part: Part, file: string, doc: unknown): number {
  const check: Check = shapeChecker(file);
  check(isObject(doc), 'expected a JSON object');
  const data = doc as Record<string, unknown>;
  check(Number.isSafeInteger(data.version) && (data.version as number) >= 1, 'missing or invalid "version"');
  if ((data.version as number) > FORMAT_VERSION) {
    throw new DataFileError(file, `format version ${data.version} is newer than this build reads (${FORMAT_VERSION})`);
  }
  const seq = data.seq ?? 0;
  check(Number.isSafeInteger(seq) && (seq as number) >= 0, '"seq" must be a non-negative integer');
  if (part === 'configuration') loadConfiguration(state, data, check);
  else loadSessions(state, data, check);
  return seq as number;
}

type Check = (ok: boolean, problem: string) => asserts ok;

function shapeChecker(file: string): Check {
  return (ok, problem) => {
    if (!ok) throw new DataFileError(file, `unexpected shape: ${problem}`);
  };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const isId = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) > 0;
const isTime = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;

function loadConfiguration(state: State, data: Record<string, unknown>, check: Check): void {
  check(Array.isArray(data.items), '"items" must be an array');
  const items: ConfigItem[] = [];
  for (const item of data.items as unknown[]) {
    check(isObject(item), 'each configuration item must be an object');
    const { key, value, section, descrip, dirty } = item;
    check(
      typeof key === 'string' && typeof value === 'string' && typeof section === 'string' &&
        typeof descrip === 'string' && typeof dirty === 'boolean',
      `configuration item ${JSON.stringify(key)} must have string key/value/section/descrip and boolean dirty`,
    );
    items.push({ key, value, section, descrip, dirty });
  }
  state.config = sortedConfig(items);
}

export function sortedConfig(items: Iterable<ConfigItem>): Map<string, ConfigItem> {
  const sorted = [...items].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return new Map(sorted.map((item) => [item.key, item]));
}

const TARGET_STRING_FIELDS = [
  'target_url', 'host_name', 'host_ip', 'port_number', 'url_scheme', 'host_path', 'ip_url', 'top_domain', 'top_url',
] as const;

function isTarget(t: Record<string, unknown>): t is Record<string, unknown> & Target {
  for (const field of TARGET_STRING_FIELDS) if (typeof t[field] !== 'string') return false;
  return (
    Array.isArray(t.alternative_ips) && t.alternative_ips.every((ip) => typeof ip === 'string') &&
    typeof t.scope === 'boolean' && Number.isInteger(t.max_user_rank) && Number.isInteger(t.max_owtf_rank)
  );
}

function allListed(targets: State['targets'], ids: unknown[]): boolean {
  for (let i = 0; i < ids.length; i++) if (!targets.has(ids[i] as number)) return false;
  return true;
}

function loadSessions(state: State, data: Record<string, unknown>, check: Check): void {
  const { nextSessionId, activeSessionId, nextTargetId, sessions, targets } = data;
  check(isId(nextSessionId) && isId(nextTargetId), '"nextSessionId" and "nextTargetId" must be positive integers');
  check(Array.isArray(sessions) && Array.isArray(targets), '"sessions" and "targets" must be arrays');
  const fresh = emptyState();
  fresh.nextSessionId = nextSessionId;
  fresh.nextTargetId = nextTargetId;

  // Messages are built only on failure: this loop runs once per row of a large store.
  for (const t of targets as unknown[]) {
    check(isObject(t) && isId(t.id) && t.id < nextTargetId, 'each target needs an id below "nextTargetId"');
    if (!isTarget(t)) check(false, `target ${t.id} needs string fields, an "alternative_ips" array, boolean scope and integer ranks`);
    if (fresh.targets.has(t.id) || fresh.targetIdByUrl.has(t.target_url)) check(false, `target ${t.id} is listed twice`);
    fresh.targets.set(t.id, { target: t, sessions: new Set() });
    fresh.targetIdByUrl.set(t.target_url, t.id);
  }
  let previousId = 0;
  // indexed loops, no iterator or closure per row: this runs once per start, before V8 compiles it
  const rows = sessions as unknown[];
  for (let i = 0; i < rows.length; i++) {
    const s = rows[i];
    check(isObject(s) && isId(s.id) && s.id < nextSessionId && s.id > previousId, 'sessions need increasing ids below "nextSessionId"');
    previousId = s.id;
    if (typeof s.name !== 'string' || s.name.length === 0) check(false, `session ${s.id}: "name" must be a non-empty string`);
    // one lookup of the name, not two (a has() then a set())
    const named = fresh.sessionIdByName.size;
    fresh.sessionIdByName.set(s.name, s.id);
    if (fresh.sessionIdByName.size === named) check(false, `session ${s.id}: its name is listed twice`);
    const ids = s.targets;
    if (!Array.isArray(ids) || !allListed(fresh.targets, ids)) check(false, `session ${s.id}: "targets" must list known target ids`);
    const row: SessionRow = { id: s.id, name: s.name };
    if (s.created_at !== undefined) {
      if (!isTime(s.created_at)) check(false, `session ${s.id}: "created_at" must be milliseconds since the epoch`);
      row.createdAt = s.created_at;
    }
    if (ids.length > 0) {
      row.targets = new Set(ids as number[]);
      for (let j = 0; j < ids.length; j++) fresh.targets.get(ids[j] as number)!.sessions.add(row.id);
    }
    fresh.sessions.set(row.id, row);
  }
  check(
    fresh.sessions.size === 0 ? activeSessionId === 0 : fresh.sessions.has(activeSessionId as number),
    '"activeSessionId" must name a listed session',
  );
  fresh.activeSessionId = activeSessionId as number;
  loadEngine(fresh, data, check);

  const { config } = state;
  Object.assign(state, fresh, { config });
}

const OUTPUT_STATUSES = new Set(['Running', 'Successful', 'Aborted', 'Crashed', 'Skipped']);
const isRank = (v: unknown) => Number.isInteger(v) && (v as number) >= -1 && (v as number) <= 5;
const isStringOrNull = (v: unknown) => v === null || typeof v === 'string';

function isFinding(f: unknown): f is Finding {
  return (
    isObject(f) && Number.isInteger(f.rank) && typeof f.title === 'string' && typeof f.detail === 'string' &&
    (f.transactions === undefined || (Array.isArray(f.transactions) && f.transactions.every(isId))) &&
    (f.transactions_total === undefined || isId(f.transactions_total))
  );
}

function isOutput(o: Record<string, unknown>): boolean {
  const run = o.run as Record<string, unknown> | undefined;
  return (
    typeof o.plugin_key === 'string' && typeof o.plugin_code === 'string' && typeof o.plugin_group === 'string' &&
    typeof o.plugin_type === 'string' && OUTPUT_STATUSES.has(o.status as string) && isRank(o.owtf_rank) && isRank(o.user_rank) &&
    typeof o.user_notes === 'string' && typeof o.output_path === 'string' && isTime(o.started_at) &&
    (o.ended_at === null || isTime(o.ended_at)) && isStringOrNull(o.error) && Array.isArray(o.findings) && o.findings.every(isFinding) &&
    (o.exit_code === null || Number.isInteger(o.exit_code)) && (o.summary === undefined || typeof o.summary === 'string') &&
    (run === undefined ||
      (isObject(run) && isId(run.work) && typeof run.active === 'boolean' && (run.pid === null || isId(run.pid)) && isStringOrNull(run.pidStart) &&
        (run.crashes === undefined || isId(run.crashes))))
  );
}

/** The engine's rows (absent from the files of earlier builds: then empty). */
function loadEngine(fresh: State, data: Record<string, unknown>, check: Check): void {
  const { nextWorkId = 1, nextOutputId = 1, nextErrorId = 1, works = [], outputs = [], errors = [] } = data;
  check(isId(nextWorkId) && isId(nextOutputId) && isId(nextErrorId), '"nextWorkId", "nextOutputId" and "nextErrorId" must be positive integers');
  check(Array.isArray(works) && Array.isArray(outputs) && Array.isArray(errors), '"works", "outputs" and "errors" must be arrays');
  fresh.nextWorkId = nextWorkId;
  fresh.nextOutputId = nextOutputId;
  fresh.nextErrorId = nextErrorId;
  for (const w of works as unknown[]) {
    const [id, target, plugin, active, crashes, taken] = Array.isArray(w) ? w : [];
    const ok =
      isId(id) && id < nextWorkId && !fresh.works.has(id) && isId(target) && fresh.targets.has(target) && typeof plugin === 'string' &&
      typeof active === 'boolean' && (crashes === undefined || crashes === 0 || isId(crashes)) && (taken === undefined || isId(taken));
    if (!ok) check(false, `work ${JSON.stringify(w)} must be [id below "nextWorkId", a listed target, plugin key, active, optional crash count, optional output id]`);
    const key = `${target} ${plugin}`;
    if (fresh.queued.has(key)) check(false, `work ${id}: its target and plugin are queued twice`);
    const row: WorkRow = { id, target, plugin, active };
    if (crashes) row.crashes = crashes;
    if (taken !== undefined) row.taken = taken;
    fresh.works.set(id, row);
    fresh.queued.add(key);
  }
  for (const o of outputs as unknown[]) {
    check(isObject(o) && isId(o.id) && o.id < nextOutputId && !fresh.outputs.has(o.id), 'each output needs an id below "nextOutputId", listed once');
    if (!isId(o.target_id) || !fresh.targets.has(o.target_id)) check(false, `output ${o.id}: "target_id" must name a listed target`);
    if (!isOutput(o)) check(false, `output ${o.id} has a field of the wrong type`);
    const row = o as unknown as OutputRow;
    const byKey = fresh.outputsByTarget.get(row.target_id) ?? new Map<string, number>();
    if (byKey.has(row.plugin_key)) check(false, `output ${o.id}: its target has another output of ${row.plugin_key}`);
    fresh.outputs.set(row.id, row);
    byKey.set(row.plugin_key, row.id);
    fresh.outputsByTarget.set(row.target_id, byKey);
  }
  for (const e of errors as unknown[]) {
    const ok =
      isObject(e) && isId(e.id) && e.id < nextErrorId && !fresh.errors.has(e.id) && typeof e.owtf_message === 'string' &&
      typeof e.traceback === 'string' && typeof e.user_message === 'string' && typeof e.reported === 'boolean' && isStringOrNull(e.github_issue_url);
    if (!ok) check(false, 'each error needs an id below "nextErrorId" and the upstream fields');
    const row = e as unknown as ErrorRow;
    fresh.errors.set(row.id, row);
  }
  loadSegments(fresh, data, check);
}

/** The transaction segments (absent from the files of earlier builds: then none). */
function loadSegments(fresh: State, data: Record<string, unknown>, check: Check): void {
  const { nextTransactionId = 1, segments = [], retiredSegments = [] } = data;
  check(isId(nextTransactionId), '"nextTransactionId" must be a positive integer');
  check(Array.isArray(segments) && Array.isArray(retiredSegments), '"segments" and "retiredSegments" must be arrays');
  fresh.nextTransactionId = nextTransactionId;
  for (const n of retiredSegments as unknown[]) {
    if (!isId(n) || fresh.retiredSegments.has(n)) check(false, 'each retired segment must be a positive integer, listed once');
    fresh.retiredSegments.add(n);
  }
  for (const s of segments as unknown[]) {
    const [n, target, base, span, gone, purged] = Array.isArray(s) ? s : [];
    const ok =
      isId(n) && !fresh.segments.has(n) && !fresh.retiredSegments.has(n) && isId(target) && fresh.targets.has(target) && isId(base) &&
      isId(span) && base + span <= nextTransactionId && Array.isArray(gone) && gone.length < span &&
      gone.every((g, i) => Number.isSafeInteger(g) && g >= 0 && g < span && (i === 0 || g > gone[i - 1])) &&
      Number.isSafeInteger(purged) && purged >= 0 && purged <= gone.length;
    if (!ok) check(false, `segment ${JSON.stringify(s)} must be [number, a listed target, base, span, ascending deleted places, purged] with ids below "nextTransactionId"`);
    fresh.segments.set(n, { n, target, base, span, gone, purged });
  }
}
