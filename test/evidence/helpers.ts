/** HAR documents made in tests, and their import through the API. */
import { isUtf8 } from 'node:buffer';
import { request, type Response } from '../helpers/server.ts';

export interface EntrySpec {
  url: string;
  method?: string;
  headers?: [string, string][];
  /** The request body (base64 in the HAR when it is not UTF-8). */
  body?: Buffer | string;
  status?: number;
  statusText?: string;
  responseHeaders?: [string, string][];
  responseBody?: Buffer | string;
  mimeType?: string;
  startedDateTime?: string;
  time?: number;
}

const text = (bytes: Buffer) => (isUtf8(bytes) ? { text: bytes.toString('utf8') } : { text: bytes.toString('base64'), encoding: 'base64' });

/** One HAR 1.2 entry. */
export function entryOf(spec: EntrySpec): Record<string, unknown> {
  const body = spec.body === undefined ? undefined : Buffer.from(spec.body);
  const responseBody = Buffer.from(spec.responseBody ?? '');
  const type = spec.headers?.find(([n]) => n.toLowerCase() === 'content-type')?.[1] ?? '';
  return {
    startedDateTime: spec.startedDateTime ?? '2024-05-06T07:08:09.123Z',
    time: spec.time ?? 42,
    request: {
      method: spec.method ?? 'GET',
      url: spec.url,
      httpVersion: 'HTTP/1.1',
      cookies: [],
      headers: (spec.headers ?? []).map(([name, value]) => ({ name, value })),
      queryString: [],
      ...(body ? { postData: { mimeType: type, ...text(body) } } : {}),
      headersSize: -1,
      bodySize: body?.length ?? 0,
    },
    response: {
      status: spec.status ?? 200,
      statusText: spec.statusText ?? 'OK',
      httpVersion: 'HTTP/1.1',
      cookies: [],
      headers: (spec.responseHeaders ?? [['Content-Type', spec.mimeType ?? 'text/html']]).map(([name, value]) => ({ name, value })),
      content: { size: responseBody.length, mimeType: spec.mimeType ?? 'text/html', ...(responseBody.length ? text(responseBody) : {}) },
      redirectURL: '',
      headersSize: -1,
      bodySize: responseBody.length,
    },
    cache: {},
    timings: { send: 0, wait: spec.time ?? 42, receive: 0 },
  };
}

/** A HAR document of these entries. */
export function harOf(entries: EntrySpec[]): string {
  return JSON.stringify({ log: { version: '1.2', creator: { name: 'test', version: '1' }, pages: [], entries: entries.map(entryOf) } });
}

/** POST .../transactions/ with a HAR body. */
export function importHar(base: string, target: number, har: string | Buffer, query = ''): Promise<Response> {
  return request(base, `/api/v1/targets/${target}/transactions/${query}`, { method: 'POST', body: har, headers: { 'content-type': 'application/json' } });
}
