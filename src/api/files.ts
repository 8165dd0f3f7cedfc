/** /output_files/<file_url>: a redirect to the output file server, on the host the request named. */
import { HttpError, HTTP_MESSAGES } from '../http/jsend.js';
import type { ApiRouter } from './openapi.js';

/** A host name, an IPv4 address or a bracketed IPv6 address, with an optional port. */
const HOST_HEADER = /^([A-Za-z0-9](?:[A-Za-z0-9.-]{0,252})|\[[0-9A-Fa-f:.]{2,45}\])(?::[0-9]{1,5})?$/;

export function registerFiles(router: ApiRouter, fileServerPort: number): void {
  router.add('GET', '/output_files/*', (ctx) => {
    const host = HOST_HEADER.exec(ctx.headers.host ?? '')?.[1];
    if (!host) throw new HttpError(400, HTTP_MESSAGES.badRequest, { host: 'missing or invalid Host header' });
    const segments = ctx.rest;
    if (segments.join('') === '') throw new HttpError(404, HTTP_MESSAGES.notFound);
    if (segments.some((s) => s.split(/[/\\]/).some((part) => part === '..') || s.includes('\0'))) {
      throw new HttpError(400, HTTP_MESSAGES.badRequest, { file_url: 'must not contain ..' });
    }
    const path = segments.map(encodeURIComponent).join('/');
    return { status: 301, body: '', headers: { Location: `http://${host}:${fileServerPort}/${path}`, 'Content-Type': 'text/plain; charset=utf-8' } };
  }, {
    summary: 'Redirect to the output file server: same host, port --file-server-port, the path URL-escaped',
    ok: { status: 301, description: 'The redirect', headers: { Location: 'http://HOST:FILE_SERVER_PORT/<file_url>' } },
    fails: { 400: [HTTP_MESSAGES.badRequest], 404: [HTTP_MESSAGES.notFound] },
  });
}
