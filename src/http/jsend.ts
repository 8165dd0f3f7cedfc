/** The JSend envelope, written from one place. */
import { upTo } from '../json-pieces.js';

/** A client-facing failure: handlers throw it, the server writes it as a JSend body. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly data?: Record<string, string>,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
  }
}

/** Messages of the web layer itself (the API's own live in `api/messages.ts`). */
export const HTTP_MESSAGES = {
  notFound: 'Not found',
  methodNotAllowed: 'Method not allowed',
  internal: 'Internal server error',
  badRequest: 'Bad request',
  payloadTooLarge: 'Request body too large',
  unsupportedMediaType: 'Unsupported media type: send application/x-www-form-urlencoded',
  unsupportedContentCoding: 'Unsupported content coding: send the body without Content-Encoding',
  uriTooLong: 'Request URI too long',
  headersTooLarge: 'Request header fields too large',
  timeout: 'Request timeout',
  hostNotAllowed: 'Host not allowed',
  crossOrigin: 'Cross-origin request refused',
  authenticationRequired: 'Authentication required',
  invalidToken: 'Invalid token provided',
} as const;

/** What a handler answers: a status and a ready JSON body, or (a file, a download) a body sent as it comes. */
export interface Reply {
  status: number;
  body: string | Buffer;
  headers?: Record<string, string>;
  /**
   * Sent in place of `body` (then empty) as fast as the client reads it: chunked, unless the
   * handler's headers give its Content-Length; closed unsent on HEAD.
   */
  stream?: AsyncIterable<string | Buffer>;
}

/** `{"status":"success","data":...}` */
export function successBody(data: unknown = {}): string {
  return `{"status":"success","data":${JSON.stringify(data)}}`;
}

export function success(data: unknown = {}, status = 200): Reply {
  return { status, body: successBody(data) };
}

/** Characters of a streamed answer written between two turns of the event loop. */
const TURN_EVERY = 1024 * 1024;

/**
 * success(), its JSON sent as it is written, a long string a piece at a time (`pieces`: jsonPieces
 * of the data): the event loop turns between pieces while the client reads them, and at least
 * every MiB written (a client that reads as fast as it is written makes no backpressure, and the
 * pieces followed one another in microtasks: 47 MB of outputs held the server 220 ms).
 */
export function successPieces(pieces: Iterable<string> | AsyncIterable<string>, status = 200): Reply {
  return {
    status,
    body: '',
    stream: (async function* () {
      yield '{"status":"success","data":';
      let written = 0;
      for await (const piece of pieces) {
        yield piece;
        written += piece.length;
        if (written >= TURN_EVERY) {
          written = 0;
          await new Promise<void>((resolve) => setImmediate(resolve));
        }
      }
      yield '}';
    })(),
  };
}

/** Characters of an answer written in pieces that are still sent as one body, with its length. */
const WHOLE_ANSWER = 1024 * 1024;

/**
 * success() of JSON written a piece at a time (`pieces` join to the data's JSON): one body when it
 * comes to at most WHOLE_ANSWER characters, else sent as it is written, each further piece made
 * once the client has taken those before. A view of many outputs or errors (a tool's thousand
 * findings each) was one string of hundreds of MB: seconds held, GBs of memory, past 512 MB a 500.
 */
export async function successWritten(pieces: Iterable<string> | AsyncIterable<string>): Promise<Reply> {
  const { taken, rest } = await upTo(pieces, WHOLE_ANSWER);
  if (!rest) return successJson(taken.join(''));
  return successPieces(
    (async function* () {
      yield taken.join('');
      yield* rest;
    })(),
  );
}

/**
 * `{"status":"success","data":<json>}`, `json` already written (a list's rows, each serialized
 * once, as it was measured): one string, or pieces sent as the client reads them.
 */
export function successJson(json: string | AsyncIterable<string>, status = 200): Reply {
  if (typeof json !== 'string') return successPieces(json, status);
  return { status, body: `{"status":"success","data":${json}}` };
}

/** 4xx: `fail` with the message; 5xx: `error` with a generic message (details belong in the log). */
function errorBody(status: number, message: string, data?: Record<string, string>): string {
  if (status >= 500) {
    return JSON.stringify({ status: 'error', message: HTTP_MESSAGES.internal, code: status });
  }
  return JSON.stringify(data ? { status: 'fail', message, code: status, data } : { status: 'fail', message, code: status });
}

export function errorReply(err: HttpError): Reply {
  return { status: err.status, body: errorBody(err.status, err.message, err.data), headers: err.headers };
}
