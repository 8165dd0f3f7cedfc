/** What every API handler receives, and what it returns. */
import type { IncomingHttpHeaders } from 'node:http';
import type { Args } from '../http/args.js';
import type { Reply } from '../http/jsend.js';
import type { Params } from '../http/router.js';

export interface RequestContext {
  method: string;
  params: Params;
  args: Args;
  headers: IncomingHttpHeaders;
}

export type Handler = (ctx: RequestContext) => Reply | Promise<Reply>;
