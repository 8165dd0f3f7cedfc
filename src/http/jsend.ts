/** The JSend envelope, written from one place. */

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

/**
 * success(), its JSON sent as it is written, a long string a piece at a time (`pieces`: jsonPieces
 * of the data): the event loop turns between pieces while the client reads them.
 */
export function successPieces(pieces: Iterable<string> | AsyncIterable<string>, status = 200): Reply {
  return {
    status,
    body: '',
    stream: (async function* () {
      yield '{"status":"success","data":';
      yield* pieces;
      yield '}';
    })(),
  };
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
