/** Assertions on the JSend envelope, shared by the API suites. */
import assert from 'node:assert/strict';
import type { Response } from './server.ts';

export const JSON_TYPE = 'application/json; charset=utf-8';

/** A success envelope with exactly `status` and `data`; returns the data. */
export function assertSuccess(res: Response, status = 200, what = ''): any {
  assert.equal(res.status, status, `${what} ${res.text}`);
  assert.equal(res.headers['content-type'], JSON_TYPE, what);
  const body = res.json;
  assert.deepEqual(Object.keys(body).sort(), ['data', 'status'], what);
  assert.equal(body.status, 'success', what);
  return body.data;
}

/** A fail envelope: the status, the message (when given), the code, and `data` only as an object. */
export function assertFail(res: Response, status: number, message?: string, what = ''): any {
  assert.equal(res.status, status, `${what} ${res.text}`);
  assert.equal(res.headers['content-type'], JSON_TYPE, what);
  const body = res.json;
  assert.equal(body.status, 'fail', what);
  if (message !== undefined) assert.equal(body.message, message, what);
  assert.equal(typeof body.message, 'string', what);
  assert.equal(body.code, status, what);
  for (const key of Object.keys(body)) assert.ok(['status', 'message', 'code', 'data'].includes(key), `${what}: unexpected key ${key}`);
  if ('data' in body) assert.ok(body.data !== null && typeof body.data === 'object' && !Array.isArray(body.data), what);
  return body;
}
