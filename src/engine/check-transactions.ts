/**
 * A built-in check's requests stored as its target's transactions (`source: "check"`), all in one
 * import (one segment, one durable op), before its output is recorded: its findings then name the
 * transactions that show them, as a grep plugin's do.
 */
import { BODY_CAP } from '../evidence/har.js';
import { mediaTypeOf, type Exchange, type Header } from '../evidence/record.js';
import type { Evidence } from '../evidence/store.js';
import { MAX_FINDING_TRANSACTIONS, type Finding } from '../store/state.js';
import type { Sent } from './checks/client.js';
import type { CheckFinding } from './types.js';

const NO_BYTES = Buffer.alloc(0);

/** A request of a check and its answer (or why none came) as the transaction store takes it. */
export function checkExchange(sent: Sent): Exchange {
  const answer = sent.response;
  const headers: Header[] = answer?.headers ?? [];
  const body = answer?.body ?? NO_BYTES;
  return {
    url: sent.url,
    method: sent.method,
    httpVersion: 'HTTP/1.1',
    requestHeaders: sent.requestHeaders,
    // the checks send no body (a PUT probe sends Content-Length: 0)
    requestBody: NO_BYTES,
    status: answer?.status ?? 0,
    statusText: answer?.statusText ?? '',
    responseHttpVersion: answer?.httpVersion ?? '',
    responseHeaders: headers,
    responseBody: body.length > BODY_CAP ? body.subarray(0, BODY_CAP) : body,
    responseSize: answer?.size ?? 0,
    truncated: (answer?.truncated ?? false) || body.length > BODY_CAP,
    mimeType: mediaTypeOf(headers),
    startedAt: sent.startedAt,
    time: sent.time,
    source: 'check',
    ...(sent.tlsProblem ? { tlsProblem: sent.tlsProblem } : {}),
    ...(sent.error ? { error: sent.error } : {}),
  };
}

/**
 * The findings as the output records them: each one's `sent` (indices in the transcript) turned
 * into the ids of the transactions stored from it (`first` + index: one import numbers them in
 * order), or dropped when none were stored.
 */
export function withTransactions(findings: readonly CheckFinding[], first: number | undefined): Finding[] {
  return findings.map(({ sent, ...finding }) => {
    if (first === undefined || !sent || sent.length === 0) return finding;
    const ids = [...sent].sort((a, b) => a - b).slice(0, MAX_FINDING_TRANSACTIONS).map((i) => first + i);
    return { ...finding, transactions: ids, ...(sent.length > ids.length ? { transactions_total: sent.length } : {}) };
  });
}

export interface CheckRequests {
  evidence: Evidence;
  target: number;
  transcript: readonly Sent[];
  /** Says a store that failed, once per run. */
  log: (line: string) => void;
  /** The run, as the log names it: `semi_passive@OWTF-WGP-002 on http://...`. */
  run: string;
}

/**
 * Stores the check's requests and answers the findings naming them, and the summary. A store that
 * fails (a full disk) or a target deleted meanwhile loses the ids, never the output: its findings
 * are recorded without them, and the summary and the log say why.
 */
export async function recordCheckRequests(requests: CheckRequests, result: { findings: readonly CheckFinding[]; summary: string }): Promise<{ findings: Finding[]; summary: string }> {
  const { evidence, target, transcript, log, run } = requests;
  if (transcript.length === 0) return { findings: withTransactions(result.findings, undefined), summary: result.summary };
  let why: string;
  try {
    const stored = await evidence.importExchanges(target, exchanges(transcript));
    if (stored.ok && stored.first !== undefined) return { findings: withTransactions(result.findings, stored.first), summary: result.summary };
    why = stored.ok ? 'nothing was stored' : 'the target was deleted';
  } catch (err) {
    why = (err as Error).message;
    log(`could not store the ${transcript.length} requests of ${run} as transactions: ${why}`);
  }
  const note = `Its ${transcript.length} request${transcript.length === 1 ? '' : 's'} could not be stored as transactions (${why}).`;
  return { findings: withTransactions(result.findings, undefined), summary: `${result.summary}\n${note}` };
}

async function* exchanges(transcript: readonly Sent[]): AsyncGenerator<Exchange> {
  for (const sent of transcript) yield checkExchange(sent);
}
