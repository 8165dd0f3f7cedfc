/** Writing a Reply: the headers every answer carries, JSON's by default, and replies made once. */
import { STATUS_CODES, type ServerResponse } from 'node:http';
import { pipeline, Readable } from 'node:stream';
import type { Reply } from './jsend.js';

export const COMMON_HEADERS = {
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
};

export const JSON_HEADERS = {
  'Content-Type': 'application/json; charset=utf-8',
  'Cache-Control': 'no-store',
};

/** A reply with its whole header list (as writeHead takes it) computed: sent without building anything. */
export interface PreparedReply extends Reply {
  head: string[];
}

/** Every header of a reply, flat: the common ones, JSON's unless it has a type of its own, its own, the length. */
function headList(reply: Reply): string[] {
  const json = reply.headers?.['Content-Type'] === undefined;
  // a streamed body's length is not known: it goes chunked
  const length = reply.stream ? {} : { 'Content-Length': String(Buffer.byteLength(reply.body)) };
  const headers = { ...COMMON_HEADERS, ...(json ? JSON_HEADERS : {}), ...reply.headers, ...length };
  return Object.entries(headers).flat();
}

/** For a reply sent many times (a page, a constant answer): its headers are worked out once, here. */
export function prepared(reply: Reply): PreparedReply {
  return { ...reply, head: headList(reply) };
}

const JSON_HEAD = Object.entries({ ...COMMON_HEADERS, ...JSON_HEADERS }).flat();

/** Writes the reply; with `end: false` the response stays open (its body is whole: Content-Length says it). */
export function send(res: ServerResponse, reply: Reply | PreparedReply, end = true): void {
  if (reply.stream) return sendStream(res, reply, reply.stream);
  if (res.destroyed) return;
  if ('head' in reply) res.writeHead(reply.status, reply.head);
  else if (reply.headers === undefined) res.writeHead(reply.status, [...JSON_HEAD, 'Content-Length', String(Buffer.byteLength(reply.body))]);
  else res.writeHead(reply.status, headList(reply));
  if (end) res.end(reply.body);
  else res.write(reply.body);
}

/**
 * A body sent as it comes (a file's bytes, an export), with backpressure; its source (a file's
 * descriptor, a generator) is closed however the response ends: a client gone midway ends the
 * read, a read that fails ends the response short (chunked, or shorter than its Content-Length).
 */
function sendStream(res: ServerResponse, reply: Reply, body: AsyncIterable<string | Buffer>): void {
  const source = body instanceof Readable ? body : Readable.from(body, { objectMode: false });
  if (res.destroyed || res.req.method === 'HEAD') {
    if (!res.destroyed) res.writeHead(reply.status, headList(reply)).end();
    source.destroy();
    return;
  }
  res.writeHead(reply.status, headList(reply));
  pipeline(source, res, () => {});
}

/** The whole HTTP/1.1 response as text, for a socket no ServerResponse owns (a parser error). */
export function rawResponse(reply: Reply): string {
  const head = headList(reply);
  let lines = `HTTP/1.1 ${reply.status} ${STATUS_CODES[reply.status]}\r\n`;
  for (let i = 0; i < head.length; i += 2) lines += `${head[i]}: ${head[i + 1]}\r\n`;
  return `${lines}\r\n${reply.body}`;
}
