/** What every API handler receives, and what it returns. */
import type { IncomingHttpHeaders } from 'node:http';
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
  headers: IncomingHttpHeaders;
  /** The client's address, for log lines. */
  remoteAddress: string | undefined;
}

export type Handler = (ctx: RequestContext) => Reply | Promise<Reply>;
