/** createServer(options) -> http.Server: routing, arguments, errors and headers; no listen() inside. */
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { hostname } from 'node:os';
import { AUTH_PATH, registerAuth } from './api/auth.js';
import { registerBundles } from './api/bundles.js';
import { registerBulk } from './api/bulk.js';
import { registerConfiguration } from './api/configuration.js';
import type { Handler } from './api/context.js';
import { registerFiles } from './api/files.js';
import { registerProxy, type ProxyView } from './api/proxy.js';
import { registerHealth } from './api/health.js';
import { registerOpenApi, type ApiRouter, type RouteDoc } from './api/openapi.js';
import { registerOverview } from './api/overview.js';
import { isPagePath, pageFallback, registerStatic, type WebAssets } from './api/page.js';
import { registerReports } from './api/reports.js';
import { createAccessCheck, loggedUrl, type Logins } from './http/access.js';
import { registerSessions } from './api/sessions.js';
import { registerMisc } from './api/misc.js';
import { registerPlugins } from './api/plugins.js';
import { registerPoutput } from './api/poutput.js';
import { registerWorkers } from './api/workers.js';
import { registerWorklist } from './api/worklist.js';
import type { Engine } from './engine/index.js';
import type { Evidence } from './evidence/store.js';
import { registerTransactions } from './api/transactions.js';
import { registerTargets } from './api/targets.js';
import { hasBody, isFormContentType, parseFormArgs, readBody, type Args } from './http/args.js';
import { errorReply, HttpError, HTTP_MESSAGES, type Reply } from './http/jsend.js';
import { answerHalfClosed, answerThenDrain, answerThenLinger, continueWhenRead, stillLingering } from './http/linger.js';
import { answerConnect, ignoreUnknownExpectations } from './http/node-answers.js';
import { endsWithConnection, timeRequest, whileStreaming } from './http/request-timeout.js';
import { rawResponse, send } from './http/respond.js';
import { createRouter, type RouteEntry } from './http/router.js';
import { DEFAULT_MAX_BODY, DEFAULT_MAX_HAR_BODY, DEFAULT_MAX_IMPORT_BODY } from './options.js';
import type { DefaultItem } from './store/configuration.js';
import type { Store } from './store/store.js';
import { memoryLogins } from './store/logins.js';

export interface ServerOptions {
  store: Store;
  /** The assessment engine: its routes (plugins, worklist, workers, outputs, misc) are served with it. */
  engine?: Engine;
  /** The intercepting proxy, when one runs: GET /api/v1/proxy says where, and serves its CA. */
  proxy?: ProxyView;
  web: WebAssets;
  /** Port of the output file server that /output_files/ redirects to. */
  fileServerPort?: number;
  /** Largest request body accepted, in bytes. */
  maxBody?: number;
  /** Host names allowed beside IP literals, localhost and the machine's name; `'*'`: no Host check. */
  allowedHosts?: string[] | '*';
  /** With a token, every request but health and the page's files needs it. */
  token?: string;
  /** Where the web application's logins are kept (start() keeps them in the data directory); in memory by default. */
  logins?: Logins;
  /** The version the OpenAPI document names. */
  version?: string;
  /** Largest session bundle an import accepts, in bytes (default 64 MiB). */
  maxImportBody?: number;
  /** The transaction store: its routes (transactions, URLs) are served with it. */
  evidence?: Evidence;
  /** Largest HAR a transactions import accepts, in bytes (default 1 GiB). */
  maxHarBody?: number;
  /** Stored bytes of transactions a session's bundle may carry (default 256 MiB): past them its export is refused. */
  maxBundledTransactions?: number;
  /** A replay's time limit (connect to last byte), in milliseconds: the checks' (default 10 s). */
  replayTimeoutMs?: number;
  /** How long a transactions list or search may read records, in milliseconds (default 10 s). */
  searchBudgetMs?: number;
  /** The embedded default configuration: reports show what differs from it. */
  defaults?: DefaultItem[];
  /** Milliseconds a client may take to send its headers, and its whole request. */
  headersTimeout?: number;
  requestTimeout?: number;
  log?: (line: string) => void;
}

export { DEFAULT_MAX_BODY } from './options.js';
/** The arguments of a request with neither query nor body; handlers only read arguments. */
const NO_ARGS: Args = new URLSearchParams();
const NO_BODY = Buffer.alloc(0);
const MAX_URL = 8 * 1024;
/** Requests answered 408 while their handler still read them. */
const timedOut = new WeakSet<IncomingMessage>();

/** The parser's errors with an answer of their own; any other is a 400. */
const PARSER_ERRORS: Record<string, [number, string]> = {
  HPE_HEADER_OVERFLOW: [431, HTTP_MESSAGES.headersTooLarge],
  ERR_HTTP_REQUEST_TIMEOUT: [408, HTTP_MESSAGES.timeout],
};

/**
 * A head past node's limit (16 KiB, the request line included) is 431, unless what overflowed is
 * the request line itself, past 8 KiB: that is the 414 a shorter one over 8 KiB gets. The bytes the
 * parser was reading tell: they begin with the request line (a method, a space), and its end is
 * past 8 KiB or not in them yet. (A request line sent in pieces, the limit passed in a later one,
 * is still 431: those bytes no longer show where it began.)
 */
function parserRefusal(err: NodeJS.ErrnoException & { rawPacket?: Buffer }): [number, string] {
  const packet = err.rawPacket;
  if (err.code === 'HPE_HEADER_OVERFLOW' && Buffer.isBuffer(packet) && /^[A-Z]+ /.test(packet.subarray(0, 24).toString('latin1'))) {
    const end = packet.indexOf(0x0a);
    if (end === -1 || end > MAX_URL) return [414, HTTP_MESSAGES.uriTooLong];
  }
  return PARSER_ERRORS[err.code ?? ''] ?? [400, HTTP_MESSAGES.badRequest];
}

/** How many Host headers came (req.headers keeps only the first; headersDistinct copies them all). */
function hostCount(req: IncomingMessage): number {
  let count = 0;
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i];
    if (name.length === 4 && name.toLowerCase() === 'host') count++;
  }
  return count;
}

const HEALTH_PATHS = new Set(['/debug/health', '/debug/health/']);

/** Requests that need no token: health and the page's files hold no data; the login brings the token. */
export function exemptFromToken(method: string, path: string): boolean {
  if (method === 'GET' || method === 'HEAD') return HEALTH_PATHS.has(path) || isPagePath(path);
  return method === 'POST' && (path === AUTH_PATH || path === `${AUTH_PATH}/`);
}

/** The origin-form target of a request (`GET http://host/path` counts as `/path`). */
function originForm(url: string): string {
  if (url.startsWith('/')) return url;
  try {
    const parsed = new URL(url);
    return parsed.pathname + parsed.search;
  } catch {
    throw new HttpError(400, HTTP_MESSAGES.badRequest);
  }
}

/** A request with two Host headers, or an HTTP/1.1 one with none (RFC 9112 3.2). */
const oneHostRequired = () => new HttpError(400, HTTP_MESSAGES.badRequest, { host: 'exactly one Host header is required' }, { Connection: 'close' });

/** The HTTP server, and its route table (for the API's documents and their tests). */
export type AssessdHttpServer = Server & { routes(): RouteEntry<RouteDoc>[] };

export function createServer(options: ServerOptions): AssessdHttpServer {
  const { store, web } = options;
  const maxBody = options.maxBody ?? DEFAULT_MAX_BODY;
  const log = options.log ?? (() => {});
  // one login cookie per server port (cookies ignore ports), known once the server listens
  let cookieName = 'assessd';
  const access = createAccessCheck({
    allowedHosts: options.allowedHosts ?? [],
    hostname: hostname(),
    token: options.token,
    exempt: exemptFromToken,
    cookieName: () => cookieName,
    logins: options.logins ?? memoryLogins(),
    log,
  });
  const router: ApiRouter = createRouter<Handler, RouteDoc>();
  registerAuth(router, access);
  registerHealth(router, store);
  registerSessions(router, store);
  registerTargets(router, store);
  registerBulk(router, store);
  registerOverview(router, store);
  registerConfiguration(router, store);
  registerBundles(router, store, options.maxImportBody ?? DEFAULT_MAX_IMPORT_BODY, options.engine, options.evidence, options.maxBundledTransactions);
  registerReports(router, store, options.defaults ?? [], options.engine?.catalogue, options.evidence);
  if (options.engine) {
    registerMisc(router, store);
    registerPlugins(router, options.engine.catalogue);
    registerWorklist(router, store, options.engine);
    registerWorkers(router, options.engine);
    registerPoutput(router, store, options.engine);
  }
  registerProxy(router, options.proxy);
  if (options.evidence) {
    registerTransactions(router, store, options.evidence, { maxHarBody: options.maxHarBody ?? DEFAULT_MAX_HAR_BODY, version: options.version ?? '0.0.0', replayTimeoutMs: options.replayTimeoutMs, searchBudgetMs: options.searchBudgetMs });
  }
  registerFiles(router, options.fileServerPort ?? 8010);
  registerStatic(router, web);
  registerOpenApi(router, options.version ?? '0.0.0');

  /** Answers at once when it can: only a body to read, or a write to wait for, makes it a promise. */
  function route(req: IncomingMessage): Reply | Promise<Reply> {
    // the data directory gone from under the server: the state may hold a write that failed (its
    // log line says why), so nothing is answered from it, the health check included
    if (store.lost) throw new HttpError(500, HTTP_MESSAGES.internal);
    const method = req.method ?? 'GET';
    const url = req.url ?? '/';
    // one Host (RFC 9112): two, and a redirect could name a host the client did not mean; none is
    // refused by the Host check (403), or here when that check is off
    const hosts = hostCount(req);
    if (hosts > 1) throw oneHostRequired();
    if (url.length > MAX_URL) throw new HttpError(414, HTTP_MESSAGES.uriTooLong);
    const target = originForm(url);
    const q = target.indexOf('?');
    const path = q === -1 ? target : target.slice(0, q);
    const query = q === -1 ? '' : target.slice(q + 1);
    const refused = access.refusal(req, method, path);
    if (refused) throw refused;
    if (hosts === 0 && req.httpVersionMinor === 1) throw oneHostRequired();
    const match = router.match(method, path);
    if (match.kind === 'method-not-allowed') {
      throw new HttpError(405, HTTP_MESSAGES.methodNotAllowed, undefined, { Allow: match.allow.join(', ') });
    }
    if (match.kind === 'not-found') return pageFallback(web, method, path, req.headers['accept-encoding']);
    const { handler, params, rest } = match;
    const headers = req.headers;
    // a coded body (gzip...) would be read as the body itself: a form's bytes taken for arguments, a
    // bundle's or a HAR's for JSON (RFC 9110 8.4: 415)
    const coding = headers['content-encoding']?.trim().toLowerCase();
    if (coding !== undefined && coding !== '' && coding !== 'identity' && hasBody(req)) throw new HttpError(415, HTTP_MESSAGES.unsupportedContentCoding);
    if (handler.streamsBody) {
      // as long as it keeps coming (the request's time without a byte ends it): the handler reads it at its own pace
      whileStreaming(req, requestTimeout);
      const args = query ? parseFormArgs(query, '') : NO_ARGS;
      return handler({ method, params, rest, headers, args, query: args, body: NO_BODY, stream: req, remoteAddress: req.socket.remoteAddress });
    }
    if (!hasBody(req)) {
      const args = query ? parseFormArgs(query, '') : NO_ARGS;
      return handler({
        method,
        params,
        rest,
        headers,
        args,
        query: args,
        body: NO_BODY,
        // read only by the rare handler that logs it: no getpeername on the way of every request
        get remoteAddress() {
          return req.socket.remoteAddress;
        },
      });
    }
    // The whole body first: a request joins the write queue only once it is complete.
    return readBody(req, handler.maxBody ?? maxBody).then((body) => {
      let args: Args | undefined;
      let queryArgs: Args | undefined;
      return handler({
        method,
        params,
        rest,
        headers,
        get remoteAddress() {
          return req.socket.remoteAddress;
        },
        body,
        get query() {
          return (queryArgs ??= query ? parseFormArgs(query, '') : NO_ARGS);
        },
        // Parsed when a handler first reads them, so a non-form body is refused at that point of
        // the handler's order of checks, and never where no argument is read.
        get args() {
          if (args) return args;
          if (body.length > 0 && !isFormContentType(headers['content-type'])) {
            throw new HttpError(415, HTTP_MESSAGES.unsupportedMediaType);
          }
          return (args = parseFormArgs(query, body.toString('utf8')));
        },
      });
    });
  }

  function failure(req: IncomingMessage, err: unknown): Reply {
    if (err instanceof HttpError) return errorReply(err);
    log(`${req.method} ${loggedUrl(req.url)}: ${(err as Error)?.stack ?? err}`);
    return errorReply(new HttpError(500, HTTP_MESSAGES.internal));
  }

  const requestTimeout = options.requestTimeout ?? 30_000;
  const headersTimeout = Math.min(options.headersTimeout ?? 10_000, requestTimeout);
  const httpOptions = {
    headersTimeout,
    // the request's own time is kept by timeRequest(): a streamed body may take longer
    requestTimeout: 0,
    keepAliveTimeout: 5_000,
    // how often Node looks for connections past the headers' time (its default is 30 s)
    connectionsCheckingInterval: Math.min(1_000, headersTimeout / 2),
    // Node's own answer to a missing Host is an empty 400: route() answers it as JSON instead
    requireHostHeader: false,
  };
  const server = createHttpServer(httpOptions, (req, res) => {
    // answered as node answers its own request timeout: 408, then the connection closes
    timeRequest(req, requestTimeout, () => {
      timedOut.add(req);
      server.emit('clientError', Object.assign(new Error('Request timeout'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' }), req.socket);
    });
    let reply: Reply | Promise<Reply>;
    try {
      reply = route(req);
    } catch (err) {
      reply = failure(req, err);
    }
    if (!(reply instanceof Promise)) return answer(req, res, reply);
    reply.then(
      (r) => answer(req, res, r),
      (err: unknown) => answer(req, res, failure(req, err)),
    );
  });

  /** Sends the reply; one that closes the connection before the body has come lingers for it first. */
  function answer(req: IncomingMessage, res: ServerResponse, reply: Reply): void {
    // the 408 went instead (the handler saw its body cut)
    if (timedOut.has(req)) return;
    if (!hasBody(req) || req.complete) return send(res, reply);
    // answered before its body came: its time limit ends with the connection too
    endsWithConnection(req);
    if (reply.headers?.Connection !== 'close') return send(res, reply);
    answerThenDrain(req, res, () => send(res, reply, false));
  }

  // Errors the HTTP parser meets before a request exists still get a JSON answer.
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
    // answered already: the parser reports each later chunk again, while the socket lingers
    if (stillLingering(socket)) return;
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const [status, message] = parserRefusal(err);
    answerThenLinger(socket, rawResponse(errorReply(new HttpError(status, message, undefined, { Connection: 'close' }))));
  });

  answerHalfClosed(server);
  continueWhenRead(server);
  ignoreUnknownExpectations(server);
  answerConnect(server);
  server.on('listening', () => (cookieName = `assessd-${(server.address() as AddressInfo).port}`));
  return Object.assign(server, { routes: () => router.routes() });
}
