/** Arguments: the query string followed by the urlencoded body, as one multi-map (like Tornado's). */
import type { IncomingMessage } from 'node:http';
import { HttpError, HTTP_MESSAGES } from './jsend.js';

export type Args = URLSearchParams;

const FORM_TYPE = 'application/x-www-form-urlencoded';

/** Query arguments first, then body arguments: `args.get(x)` is the first value from either place. */
export function parseFormArgs(query: string, body: string): Args {
  const args = new URLSearchParams(query);
  if (body.length > 0) {
    for (const [name, value] of new URLSearchParams(body)) args.append(name, value);
  }
  return args;
}

/** A body is read as a form when it says so, or says nothing; anything else is refused (415). */
export function isFormContentType(contentType: string | undefined): boolean {
  if (contentType === undefined) return true;
  const mediaType = contentType.split(';', 1)[0].trim().toLowerCase();
  return mediaType === FORM_TYPE || mediaType === '';
}

/** Whether a body follows the headers (most GETs have none, and are answered without waiting). */
export function hasBody(req: IncomingMessage): boolean {
  const declared = req.headers['content-length'];
  return declared === undefined ? req.headers['transfer-encoding'] !== undefined : declared !== '0';
}

/**
 * Reads a whole request body, refusing (413) one over `limit` bytes without buffering the rest:
 * a declared Content-Length over the limit is refused before a byte is read.
 */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  if (Number(req.headers['content-length']) > limit) return Promise.reject(tooLarge());
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        req.pause();
        reject(tooLarge());
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size));
    };
    const onError = (err: Error) => {
      cleanup();
      reject(err);
    };
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('aborted', onAborted);
    };
    const onAborted = () => onError(new Error('request aborted'));
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('aborted', onAborted);
  });
}

function tooLarge(): HttpError {
  // The connection closes after the answer, once the rest of the body has been read and dropped (linger.ts).
  return new HttpError(413, HTTP_MESSAGES.payloadTooLarge, undefined, { Connection: 'close' });
}
