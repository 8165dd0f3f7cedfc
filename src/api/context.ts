/** What every API handler receives, and what it returns. */
import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import type { Args } from '../http/args.js';
import type { Reply } from '../http/jsend.js';
import type { Params } from '../http/router.js';

export interface RequestContext {
  method: string;
  params: Params;
  /** The decoded path segments a final `*` of the route took (see `Router.match`). */
  rest: string[];
  /** Query then body arguments, parsed when first read (415 then for a body that is no form). */
  args: Args;
  /** The query string's arguments alone: what a handler taking a body of another type reads. */
  query: Args;
  /** The whole request body, as it came (empty without one). */
  body: Buffer;
  headers: IncomingHttpHeaders;
  /** The client's address, for log lines. */
  remoteAddress: string | undefined;
  /** For a handler that `streamsBody`: the body as it comes (`body` is then empty, `args` the query's). */
  stream?: Readable;
}

export type Handler = ((ctx: RequestContext) => Reply | Promise<Reply>) & {
  /** This route's own body limit, in bytes, instead of the server's. */
  maxBody?: number;
  /** The handler reads the body itself, as it comes (`ctx.stream`), under its own limit. */
  streamsBody?: boolean;
};
