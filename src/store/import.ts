/** One op for a whole imported session: the session, its new targets and their links, and their outputs, all or nothing. */
import { insertOutput, updateTargetRanks } from './engine.js';
import { refuse, type Result } from './result.js';
import { checkNewSessionName, insertSession } from './sessions.js';
import type { Finding, OutputRow, OutputStatus, State, Target } from './state.js';
import { attachUrl, deriveTarget } from './targets.js';
import { addTransactions, MAX_SEGMENT_TRANSACTIONS, segmentKnown } from './transactions.js';

export type ImportRefusal = 'invalid-name' | 'duplicate-name' | 'invalid-url';

/**
 * An output carried by a bundle, checked, as the op records it: times in ms since the epoch (a
 * missing start is the import's time), its text kept as the output's summary (files do not travel).
 */
export interface ImportedOutput {
  /** Its target's URL, as `urls` holds it. */
  url: string;
  plugin_key: string;
  plugin_code: string;
  plugin_group: string;
  plugin_type: string;
  status: Exclude<OutputStatus, 'Running'>;
  owtf_rank: number;
  user_rank: number;
  user_notes: string;
  findings: Finding[];
  exit_code: number | null;
  error: string | null;
  started_at: number | null;
  ended_at: number | null;
  output: string;
}

/** A durable segment of transactions a bundle carried for its target (by URL, as `urls` holds it). */
export interface ImportedSegment {
  url: string;
  segment: number;
  count: number;
  /** `[id on the exporting box, place in the segment]` of the transactions findings name. */
  positions?: [number, number][];
}

/**
 * Creates a session named `name` (without activating it), creates each URL not yet a target, in
 * the order given, and attaches every one of them to it. A URL repeated in `urls` is attached once.
 * Then each output becomes its target's, unless the target already has one of that plugin (this
 * box's own, or one earlier in `outputs`, is kept); the targets' ranks follow.
 * Refused, with nothing changed, for a name that is invalid or in use, or one invalid URL.
 * Returns the new session's id and how many distinct targets it holds.
 */
export function importSession(
  state: State,
  name: string,
  urls: string[],
  at?: number,
  outputs: readonly ImportedOutput[] = [],
  segments: readonly ImportedSegment[] = [],
): Result<ImportRefusal | 'duplicate-segment', { id: number; targets: number }> {
  const checked = checkNewSessionName(state, name);
  if (!checked.ok) return checked;
  const derived = new Map<string, Target>();
  for (const raw of urls) {
    const target = deriveTarget(0, raw);
    if (!target) return refuse('invalid-url');
    if (!derived.has(target.target_url)) derived.set(target.target_url, target);
  }
  // an output of a URL the op does not attach is a malformed op: refused before anything changes
  for (const output of outputs) if (!derived.has(output.url)) return refuse('invalid-url');
  for (const s of segments) {
    if (!(Number.isSafeInteger(s.count) && s.count > 0 && s.count <= MAX_SEGMENT_TRANSACTIONS)) throw new TypeError('"count" must be a positive integer');
    if (!derived.has(s.url)) return refuse('invalid-url');
    if (segmentKnown(state, s.segment) || segments.some((other) => other !== s && other.segment === s.segment)) return refuse('duplicate-segment');
  }
  const sessionId = insertSession(state, checked.name, at, false);
  const ids = new Map<string, number>();
  for (const target of derived.values()) ids.set(target.target_url, attachUrl(state, sessionId, target).id);
  // the segments' files are durable before the op: they become their targets' now, their ids new
  const renamed = new Map<string, Map<number, number>>();
  for (const s of segments) {
    const added = addTransactions(state, { target: ids.get(s.url)!, segment: s.segment, count: s.count });
    if (!added.ok) continue;
    let map = renamed.get(s.url);
    if (!map) renamed.set(s.url, (map = new Map()));
    for (const [old, place] of s.positions ?? []) if (Number.isSafeInteger(place) && place >= 0 && place < s.count) map.set(old, added.base + place);
  }
  const touched = new Set<number>();
  for (const output of outputs) {
    const targetId = ids.get(output.url)!;
    if (state.outputsByTarget.get(targetId)?.has(output.plugin_key)) continue;
    insertOutput(state, importedRow(state, targetId, output, at ?? 0, renamed.get(output.url)));
    touched.add(targetId);
  }
  for (const targetId of touched) updateTargetRanks(state, targetId);
  return { ok: true, id: sessionId, targets: state.sessions.get(sessionId)!.targets?.size ?? 0 };
}

/** A finding as imported: the transactions it names by their new ids (those the bundle did not carry are left out). */
function importedFinding(f: Finding, renamed: ReadonlyMap<number, number> | undefined): Finding {
  const finding: Finding = { rank: f.rank, title: f.title, detail: f.detail };
  const transactions = (f.transactions ?? []).map((id) => renamed?.get(id)).filter((id): id is number => id !== undefined);
  if (transactions.length > 0) {
    finding.transactions = transactions;
    if (f.transactions_total !== undefined && f.transactions_total > transactions.length) finding.transactions_total = f.transactions_total;
  }
  return finding;
}

function importedRow(state: State, targetId: number, o: ImportedOutput, at: number, renamed?: ReadonlyMap<number, number>): OutputRow {
  const startedAt = o.started_at ?? o.ended_at ?? at;
  return {
    id: state.nextOutputId++,
    target_id: targetId,
    plugin_key: o.plugin_key,
    plugin_code: o.plugin_code,
    plugin_group: o.plugin_group,
    plugin_type: o.plugin_type,
    status: o.status,
    owtf_rank: o.owtf_rank,
    user_rank: o.user_rank,
    user_notes: o.user_notes,
    output_path: '',
    started_at: startedAt,
    ended_at: o.ended_at === null ? startedAt : Math.max(o.ended_at, startedAt),
    error: o.error,
    findings: o.findings.map((f) => importedFinding(f, renamed)),
    exit_code: o.exit_code,
    summary: o.output,
  };
}
