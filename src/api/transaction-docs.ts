/** The transaction and URL objects, as the OpenAPI document describes them. */
import { URL_KINDS, type PastBudget } from '../evidence/read.js';
import { SOURCES } from '../evidence/record.js';

type Schema = Record<string, unknown>;

/** Most transactions, or URLs, one list answer carries (page on with offset). */
export const MAX_LIST = 10_000;

/** A search's answer: the counts and a page of `row`s, with `extensions` (fields some answers add). */
export function searchPage(row: Schema, extensions: Record<string, Schema> = {}): Schema {
  return {
    type: 'object',
    required: ['records_total', 'records_filtered', 'data'],
    properties: {
      records_total: { type: 'integer' },
      records_filtered: { type: 'integer' },
      data: { type: 'array', items: row },
      ...extensions,
      truncated: { type: 'boolean', description: 'Extension: the page stopped at 32 MiB of JSON before limit (its rows are the first of the page)' },
    },
  };
}

/** A list's `X-Truncated` header, as the OpenAPI document describes it. */
export const TRUNCATED_HEADER = 'Extension: the page stopped at 32 MiB of JSON before limit; it says where the next page starts';

/**
 * What a page does past ANSWER_BUDGET: cut, for a request that gives one of `extensions`; for an
 * upstream one, goes on, streamed (an upstream client pages on by its limit: rows left out would be
 * passed over unsaid).
 */
export const pastBudgetOf = (args: URLSearchParams, extensions: readonly string[]): PastBudget => (usesExtension(args, extensions) ? 'cut' : 'stream');

/** Whether a request gives one of the route's extension arguments (an upstream request gives none). */
export const usesExtension = (args: URLSearchParams, extensions: readonly string[]) => extensions.some((name) => args.get(name) !== null);

/** A list's `X-Truncated`: its page stopped at the answer's budget (ANSWER_BUDGET) before `limit`. */
export const truncatedPage = (rows: number, offset: number) => `${rows} rows: the answer stops at 32 MiB of JSON; the next page starts at offset=${offset + rows}`;

const STRING = { type: 'string' };
const BOOLEAN = { type: 'boolean' };

const SUMMARY_FIELDS: Record<string, Schema> = {
  id: { type: 'integer', minimum: 1 },
  target_id: { type: 'integer', minimum: 1 },
  url: STRING,
  method: STRING,
  data: { type: 'string', description: 'The request body as text' },
  response_status: { type: 'string', description: 'e.g. "200 OK"' },
  response_size: { type: 'integer', description: 'Bytes of the body as received' },
  binary_response: { type: 'boolean', description: 'The body is not UTF-8 text: response_body is base64' },
  time: { type: 'number', description: 'Seconds' },
  time_human: { type: 'string', description: 'e.g. "0s, 255ms"' },
  local_timestamp: { type: 'string', description: '%d-%m %H:%M:%S, local time, day first (as upstream)' },
  scope: { type: 'boolean', description: "Its host and port are the target's" },
  session_tokens: { type: 'string', description: 'A JSON array of the cookies the response set' },
  login: BOOLEAN,
  logout: BOOLEAN,
  source: { type: 'string', enum: [...SOURCES], description: 'Extension: where it came from' },
  started_at: { type: 'string', format: 'date-time', description: 'Extension: when the request was sent, ISO 8601' },
  response_body_truncated: { type: 'boolean', description: 'Extension: the body was cut (at the storage cap, or at 64 KiB in a list)' },
  request_body_truncated: { type: 'boolean', description: 'Extension: data (and the body in raw_request) cut: at the storage cap, at 64 KiB in a list or a search, at max_body' },
  request_size: { type: 'integer', description: 'Extension, with max_body and request_body_truncated: the bytes of the request body as sent, when known' },
  resent: { type: 'integer', minimum: 1, description: 'Extension: the proxy sent the request this many times more (a kept-alive connection closed under it, an answer read again leniently): the target may have received it each time' },
  headers_truncated: { type: 'boolean', description: "Extension: in a list or a search, session_tokens cut at 8 KiB (the cookies that fit whole), raw_request's head or response_headers at 64 KiB" },
};

const OPTIONAL = new Set(['response_body_truncated', 'request_body_truncated', 'request_size', 'headers_truncated', 'resent']);
const REQUIRED = Object.keys(SUMMARY_FIELDS).filter((name) => !OPTIONAL.has(name));

/** A transaction in a list: no raw fields. */
export const TRANSACTION_SUMMARY: Schema = { type: 'object', required: REQUIRED, properties: SUMMARY_FIELDS };

/** A transaction with its raw fields. */
export const TRANSACTION: Schema = {
  type: 'object',
  required: [...REQUIRED, 'raw_request', 'response_headers', 'response_body'],
  properties: {
    ...SUMMARY_FIELDS,
    raw_request: { type: 'string', description: 'The request line, header lines, a blank line, the body' },
    response_headers: { type: 'string', description: 'The header lines joined by CRLF' },
    response_body: { type: 'string', description: 'The body as text, base64 when binary_response' },
  },
};

export const URL_ROW: Schema = {
  type: 'object',
  required: ['target_id', 'url', 'visited', 'scope', 'kind'],
  properties: {
    target_id: { type: 'integer', minimum: 1 },
    url: STRING,
    visited: { type: 'boolean', description: 'A transaction fetched it' },
    scope: BOOLEAN,
    kind: { type: 'string', enum: [...URL_KINDS], description: 'Extension: external (out of scope), error (last answered 4xx/5xx), image, file, fuzzable (a query or a form), page' },
  },
};
