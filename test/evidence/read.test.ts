/** Reading records back: a list's row reads no more of a big request body than it shows. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readStored, viewsOf } from '../../src/evidence/read.ts';
import { encodeRecord, LIST_BODY_CAP, type Exchange, type Transaction } from '../../src/evidence/record.ts';
import type { Evidence, LoadedTarget } from '../../src/evidence/store.ts';

const MiB = 1024 * 1024;

function exchange(requestBody: Buffer, responseBody: Buffer): Exchange {
  return {
    url: 'https://upload.example/up', method: 'POST', httpVersion: 'HTTP/1.1', requestHeaders: [['Content-Type', 'application/octet-stream']], requestBody,
    status: 200, statusText: 'OK', responseHttpVersion: 'HTTP/1.1', responseHeaders: [['Content-Type', 'text/plain']], responseBody,
    responseSize: responseBody.length, truncated: false, mimeType: 'text/plain', startedAt: Date.UTC(2026, 10, 27), time: 5, source: 'proxy',
  };
}

/** One record in a segment of its own, and a store that counts the bytes it is asked for. */
function storeOf(record: Buffer): { ev: Evidence; loaded: LoadedTarget; read: () => number; reads: () => number } {
  let read = 0;
  let reads = 0;
  const ev = {
    read: async (_segment: number, position: number, length: number) => {
      read += length;
      reads++;
      return Buffer.from(record.subarray(position, position + length));
    },
  } as unknown as Evidence;
  const index = { n: 1, ids: Uint32Array.of(1), seg: Uint32Array.of(1), off: Float64Array.of(0), len: Uint32Array.of(record.length), flags: Uint8Array.of(0) };
  return { ev, loaded: { index } as unknown as LoadedTarget, read: () => read, reads: () => reads };
}

test('a list row reads 64 KiB of a 16 MiB upload, not all of it, and shows the same as a whole read cut', async () => {
  const upload = Buffer.alloc(16 * MiB, 'u');
  const answer = Buffer.from('the answer '.repeat(10_000));
  const { ev, loaded, read } = storeOf(encodeRecord(exchange(upload, answer)));
  for (const raw of [false, true]) {
    const before = read();
    const [row] = (await viewsOf(ev, loaded, 1, [1], raw, raw ? LIST_BODY_CAP : 0)).json.map((row) => JSON.parse(row)) as Transaction[];
    assert.ok(read() - before < 1 * MiB, `${read() - before} bytes read for one row`);
    assert.equal(row!.data, 'u'.repeat(LIST_BODY_CAP));
    assert.equal(row!.request_body_truncated, true);
    if (raw) {
      assert.ok(row!.raw_request.endsWith(`\r\n\r\n${'u'.repeat(LIST_BODY_CAP)}`));
      assert.equal(row!.response_body, answer.subarray(0, LIST_BODY_CAP).toString());
      assert.equal(row!.response_body_truncated, true);
      assert.match(row!.response_headers, /^Content-Type: text\/plain/);
    }
  }
  const whole = await readStored(ev, loaded, 1, 1);
  assert.equal(whole!.record.exchange.requestBody.length, 16 * MiB, 'a whole read still has it all');
  assert.equal(whole!.record.exchange.responseBody.toString(), answer.toString());
});

test('a request body under the cap is read and shown whole, in one read', async () => {
  const { ev, loaded, reads } = storeOf(encodeRecord(exchange(Buffer.from('small'), Buffer.from('ok'))));
  const [row] = (await viewsOf(ev, loaded, 1, [1], true, LIST_BODY_CAP)).json.map((row) => JSON.parse(row)) as Transaction[];
  assert.equal(reads(), 1);
  assert.equal(row!.data, 'small');
  assert.equal(row!.request_body_truncated, undefined);
  assert.equal(row!.response_body, 'ok');
});
