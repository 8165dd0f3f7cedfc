/** The web application: its page for every client-side path, its assets under /static/, all in memory. */
import { extname } from 'node:path';
import { HttpError, HTTP_MESSAGES, type Reply } from '../http/jsend.js';
import { prepared, type PreparedReply } from '../http/respond.js';
import { splitPath } from '../http/router.js';
import type { ApiRouter } from './openapi.js';

/** A file of the application, its answers made once: plain, and gzipped (on the thread pool). */
interface Asset {
  plain: PreparedReply;
  compress(): Promise<PreparedReply>;
  /** Set once the compression is done. */
  gzip?: PreparedReply;
}

export interface WebAssets {
  page: Asset;
  files: Map<string, Asset>;
  /**
   * Compresses every file, once (main calls it as soon as the server listens, so that start-up
   * does not wait for it); a gzip request that comes first starts its own file's compression.
   */
  compress(): void;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=UTF-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
};

/** No script but our own files, no request to another origin, no framing by other sites. */
export const PAGE_SECURITY_HEADERS = {
  'Content-Security-Policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
    "font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'self'",
  'X-Frame-Options': 'SAMEORIGIN',
};

/** zlib is loaded on first use: nothing at start-up needs it. */
async function compressGzip(data: Buffer): Promise<Buffer> {
  const { gzip } = await import('node:zlib');
  return new Promise((resolve, reject) => gzip(data, { level: 9 }, (err, bytes) => (err ? reject(err) : resolve(bytes))));
}

/** The page is never cached without asking, nor framed elsewhere; its assets are only revalidated. */
const PAGE_HEADERS = { 'Cache-Control': 'no-cache', ...PAGE_SECURITY_HEADERS };
const ASSET_HEADERS = { 'Cache-Control': 'no-cache' };

function asset(name: string, content: Buffer, headers: Record<string, string>): Asset {
  const reply = (body: Buffer, compressed: boolean) =>
    prepared({
      status: 200,
      body,
      headers: { 'Content-Type': TYPES[extname(name)] ?? 'application/octet-stream', Vary: 'Accept-Encoding', ...(compressed ? { 'Content-Encoding': 'gzip' } : {}), ...headers },
    });
  let compressing: Promise<PreparedReply> | undefined;
  const file: Asset = {
    plain: reply(content, false),
    compress: () => (compressing ??= compressGzip(content).then((bytes) => (file.gzip = reply(bytes, true)))),
  };
  return file;
}

/** The built web application (index.html and its assets, by name), kept in memory. */
export function loadWebAssets(files: Map<string, Buffer>): WebAssets {
  const index = files.get('index.html');
  if (!index) throw new Error('the web application is not built: index.html is missing (run npm run build)');
  const page = asset('index.html', index, PAGE_HEADERS);
  const others = new Map([...files].filter(([name]) => name !== 'index.html').map(([name, content]) => [name, asset(name, content, ASSET_HEADERS)]));
  return {
    page,
    files: others,
    compress() {
      for (const file of [page, ...others.values()]) file.compress().catch(() => {});
    },
  };
}

/**
 * The web application read when first needed: a page or asset request, or the compression the start
 * begins once the server listens. A start needs none of it before its first answer (~2 ms: the reads,
 * and the memory they fill). A read that fails is tried again by the next request (which answers
 * 500 meanwhile): the files may be rebuilt under a running server.
 */
export function lazyWebAssets(read: () => Map<string, Buffer>): WebAssets {
  let loaded: WebAssets | undefined;
  const assets = () => (loaded ??= loadWebAssets(read()));
  return {
    get page() {
      return assets().page;
    },
    get files() {
      return assets().files;
    },
    compress: () => assets().compress(),
  };
}

/** Whether Accept-Encoding takes gzip: named (or as `x-gzip`, RFC 9110 8.4.1.3) with q > 0, or through `*` when gzip is not named. */
export function acceptsGzip(header: string | undefined): boolean {
  if (!header) return false;
  let gzip: number | undefined;
  let any: number | undefined;
  for (const part of header.split(',')) {
    const [coding, ...params] = part.toLowerCase().split(';');
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    const weight = q === undefined ? 1 : Number(q.slice(2));
    if (coding.trim() === 'gzip' || coding.trim() === 'x-gzip') gzip = Math.max(gzip ?? 0, weight);
    else if (coding.trim() === '*') any = weight;
  }
  return (gzip ?? any ?? 0) > 0;
}

function assetReply(file: Asset, acceptEncoding: string | undefined): Reply | Promise<Reply> {
  if (!acceptsGzip(acceptEncoding)) return file.plain;
  return file.gzip ?? file.compress();
}

/** Paths the page never answers: unknown ones there are JSON 404s. */
const RESERVED = new Set(['api', 'debug', 'static', 'output_files', 'logs']);

/** Whether a path is the page's or its files' (outside the API's reserved prefixes, or under /static/). */
export function isPagePath(path: string): boolean {
  const first = splitPath(path)[0];
  return first === 'static' || !RESERVED.has(first);
}

/**
 * The answer to a path no route knows: the page for GET and HEAD of any path outside the reserved
 * ones (every client-side route of the application), else a JSON 404 or 405.
 */
export function pageFallback(web: WebAssets, method: string, path: string, acceptEncoding: string | undefined): Reply | Promise<Reply> {
  if (RESERVED.has(splitPath(path)[0])) throw new HttpError(404, HTTP_MESSAGES.notFound);
  if (method !== 'GET' && method !== 'HEAD') {
    throw new HttpError(405, HTTP_MESSAGES.methodNotAllowed, undefined, { Allow: 'GET, HEAD' });
  }
  return assetReply(web.page, acceptEncoding);
}

/** /static/<name>: only the application's files, read once, by exact name, so no path can leave the folder. */
export function registerStatic(router: ApiRouter, web: WebAssets): void {
  router.add('GET', '/static/*', (ctx) => {
    const file = web.files.get(ctx.rest.join('/'));
    if (!file) throw new HttpError(404, HTTP_MESSAGES.notFound);
    return assetReply(file, ctx.headers['accept-encoding']);
  }, {
    summary: "The web application's files (needs no token)",
    open: true,
    ok: { status: 200, description: 'The file, gzipped when accepted', type: '*/*', schema: { type: 'string' } },
    fails: { 404: [HTTP_MESSAGES.notFound] },
  });
}
