/** The in-memory state, and its JSON form on disk (one file per part, each with a `version`). */

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
  targets: Set<number>;
}

export interface TargetRow {
  target: Target;
  sessions: Set<number>;
}

export interface State {
  sessions: Map<number, SessionRow>;
  sessionIdByName: Map<string, number>;
  activeSessionId: number;
  nextSessionId: number;
  targets: Map<number, TargetRow>;
  targetIdByUrl: Map<string, number>;
  nextTargetId: number;
  /** Kept ordered by key. */
  config: Map<string, ConfigItem>;
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
    sessions: new Map(),
    sessionIdByName: new Map(),
    activeSessionId: 0,
    nextSessionId: 1,
    targets: new Map(),
    targetIdByUrl: new Map(),
    nextTargetId: 1,
    config: new Map(),
  };
}

/** A data file that cannot be used: the message names the file and the problem. */
export class DataFileError extends Error {
  constructor(
    readonly file: string,
    problem: string,
  ) {
    super(`${file}: ${problem}`);
  }
}

/** A part's snapshot; `seq` is the last journal record it includes. */
export function serializePart(state: State, part: Part, seq: number): string {
  if (part === 'configuration') {
    return JSON.stringify({ version: FORMAT_VERSION, seq, items: [...state.config.values()] });
  }
  return JSON.stringify({
    version: FORMAT_VERSION,
    seq,
    nextSessionId: state.nextSessionId,
    activeSessionId: state.activeSessionId,
    nextTargetId: state.nextTargetId,
    sessions: [...state.sessions.values()].map((s) => ({ id: s.id, name: s.name, targets: [...s.targets] })),
    targets: [...state.targets.values()].map((t) => t.target),
  });
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

function loadSessions(state: State, data: Record<string, unknown>, check: Check): void {
  const { nextSessionId, activeSessionId, nextTargetId, sessions, targets } = data;
  check(isId(nextSessionId) && isId(nextTargetId), '"nextSessionId" and "nextTargetId" must be positive integers');
  check(Array.isArray(sessions) && Array.isArray(targets), '"sessions" and "targets" must be arrays');
  const fresh = emptyState();
  fresh.nextSessionId = nextSessionId;
  fresh.nextTargetId = nextTargetId;

  for (const t of targets as unknown[]) {
    check(isObject(t) && isId(t.id) && t.id < nextTargetId, 'each target needs an id below "nextTargetId"');
    for (const field of TARGET_STRING_FIELDS) check(typeof t[field] === 'string', `target ${t.id}: "${field}" must be a string`);
    check(Array.isArray(t.alternative_ips) && t.alternative_ips.every((ip) => typeof ip === 'string'), `target ${t.id}: "alternative_ips" must be an array of strings`);
    check(typeof t.scope === 'boolean' && Number.isInteger(t.max_user_rank) && Number.isInteger(t.max_owtf_rank), `target ${t.id}: bad scope or ranks`);
    check(!fresh.targets.has(t.id) && !fresh.targetIdByUrl.has(t.target_url as string), `target ${t.id} is listed twice`);
    fresh.targets.set(t.id, { target: t as unknown as Target, sessions: new Set() });
    fresh.targetIdByUrl.set(t.target_url as string, t.id);
  }
  const sorted = [...(sessions as unknown[])].sort((a, b) => (isObject(a) && isObject(b) ? Number(a.id) - Number(b.id) : 0));
  for (const s of sorted) {
    check(isObject(s) && isId(s.id) && s.id < nextSessionId, 'each session needs an id below "nextSessionId"');
    check(typeof s.name === 'string' && s.name.length > 0, `session ${s.id}: "name" must be a non-empty string`);
    check(!fresh.sessions.has(s.id) && !fresh.sessionIdByName.has(s.name), `session ${s.id} or its name is listed twice`);
    check(Array.isArray(s.targets) && s.targets.every((id) => fresh.targets.has(id as number)), `session ${s.id}: "targets" must list known target ids`);
    const row: SessionRow = { id: s.id, name: s.name, targets: new Set(s.targets as number[]) };
    fresh.sessions.set(row.id, row);
    fresh.sessionIdByName.set(row.name, row.id);
    for (const targetId of row.targets) fresh.targets.get(targetId)!.sessions.add(row.id);
  }
  check(
    fresh.sessions.size === 0 ? activeSessionId === 0 : fresh.sessions.has(activeSessionId as number),
    '"activeSessionId" must name a listed session',
  );
  fresh.activeSessionId = activeSessionId as number;

  const { config } = state;
  Object.assign(state, fresh, { config });
}
