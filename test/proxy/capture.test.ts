/** What the proxy keeps of bodies for the record: bounded per body and across bodies, and given back. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { capture, type CaptureBudget } from '../../src/proxy/capture.ts';
import { exposedGc } from '../helpers/gc.ts';

const flowing = () => {
  const stream = new PassThrough();
  stream.resume();
  return stream;
};

test('bodies share one budget: one past it is kept cut where the room ran out, then not at all; released, the room comes back', () => {
  const budget: CaptureBudget = { limit: 100, used: 0 };
  const [a, b] = [flowing(), flowing()];
  const first = capture(a, 80, budget);
  const second = capture(b, 80, budget);
  a.write(Buffer.alloc(70, 'a'));
  b.write(Buffer.alloc(50, 'b'));
  // cut: a body with a hole in it is no record
  b.write(Buffer.alloc(10, 'c'));
  assert.equal(budget.used, 100);
  assert.equal(first.bytes().length, 70);
  assert.equal(second.bytes().toString(), 'b'.repeat(30));
  assert.equal(second.size, 60);
  assert.equal(second.truncated, true);
  first.release();
  second.release();
  assert.equal(budget.used, 0);
});

test('a body that goes on after its exchange was recorded (a target that answered before reading an upload) takes nothing more from the budget', () => {
  const budget: CaptureBudget = { limit: 1000, used: 0 };
  const stream = flowing();
  const upload = capture(stream, 500, budget);
  stream.write(Buffer.alloc(64, 'u'));
  upload.release();
  for (let i = 0; i < 5; i++) stream.write(Buffer.alloc(64, 'u'));
  assert.equal(budget.used, 0);
  // released twice: given back once
  upload.release();
  assert.equal(budget.used, 0);
});

test('tiny chunks are copied, not kept as they came: a kept 1-byte chunk no longer holds its 64 KiB socket read (a target sending 1-byte chunks held gigabytes)', async () => {
  const gc = exposedGc();
  const budget: CaptureBudget = { limit: 64 * 1024 * 1024, used: 0 };
  const stream = flowing();
  const body = capture(stream, 16 * 1024 * 1024, budget);
  gc();
  const before = process.memoryUsage().arrayBuffers;
  // each byte of the body a slice of a read of its own, as a parser hands a chunked body over
  for (let i = 0; i < 2000; i++) stream.write(Buffer.alloc(64 * 1024, i % 256).subarray(7, 8));
  // the reads are freed once collected (their memory given back on a collector's thread: twice, with a turn between)
  for (let i = 0; i < 3; i++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    gc();
  }
  const grown = process.memoryUsage().arrayBuffers - before;
  assert.equal(body.bytes().length, 2000);
  assert.equal(body.bytes()[1999], 1999 % 256);
  assert.equal(budget.used, 2000);
  assert.ok(grown < 48 * 1024 * 1024, `kept ${(grown / 1048576).toFixed(1)} MiB for 2,000 bytes (the reads held: 125 MiB)`);
  body.release();
});

test('bodies decoded for the record take turns: never more than two at once, each whole (200 small gzip bombs at once held 6 GiB)', async () => {
  const { gzipSync } = await import('node:zlib');
  const { decodedBody, decodesAtOncePeak } = await import('../../src/evidence/record.ts');
  // 4 MiB that compresses 60-fold: within MAX_DECODED_RATIO
  const text = Buffer.from(Array.from({ length: 4 * 1024 * 1024 / 64 }, (_, i) => `line ${String(i * 7919 % 100_000).padStart(6, '0')} ${'-'.repeat(51)}\n`).join(''));
  const compressed = gzipSync(text);
  assert.ok(text.length === 4 * 1024 * 1024 && compressed.length * 100 > text.length, `${compressed.length} bytes`);
  const out = await Promise.all(Array.from({ length: 12 }, () => decodedBody(compressed, 'gzip', 16 * 1024 * 1024)));
  assert.ok(out.every((b) => b.equals(text)));
  assert.equal(decodesAtOncePeak(), 2);
  // a body that is not what it says is kept as it came, and its turn ends
  assert.deepEqual(await decodedBody(Buffer.from('not gzip'), 'gzip', 1024), Buffer.from('not gzip'));
  assert.ok((await decodedBody(compressed, 'gzip', 16 * 1024 * 1024)).equals(text));
});

test('a body that decodes to more than 100 times its size (past 64 KiB) is stored as received: 27 bytes of br decode to 16 MiB, and 200 such answers wrote 290 MB in 10 s', async () => {
  const { brotliCompressSync, gzipSync } = await import('node:zlib');
  const { decodedBody, DECODED_FLOOR, MAX_DECODED_RATIO } = await import('../../src/evidence/record.ts');
  const cap = 16 * 1024 * 1024;
  const br = brotliCompressSync(Buffer.alloc(cap));
  assert.ok(br.length < 100, `${br.length} bytes`);
  assert.deepEqual(await decodedBody(br, 'br', cap), br);
  const gzip = gzipSync(Buffer.alloc(4 * 1024 * 1024, 'a'));
  assert.deepEqual(await decodedBody(gzip, 'gzip', cap), gzip);
  // up to the floor whatever the ratio, and up to the ratio past it
  assert.equal((await decodedBody(gzipSync(Buffer.alloc(DECODED_FLOOR, 'a')), 'gzip', cap)).length, DECODED_FLOOR);
  assert.equal((await decodedBody(gzipSync(Buffer.alloc(DECODED_FLOOR + 1, 'a')), 'gzip', cap)).length < 1024, true);
  const mixed = Buffer.from(Array.from({ length: 20_000 }, (_, i) => `<li>${i}</li>`).join(''));
  const page = gzipSync(mixed);
  assert.ok(page.length * MAX_DECODED_RATIO > mixed.length);
  assert.ok((await decodedBody(page, 'gzip', cap)).equals(mixed));
});
