/** What the proxy keeps of bodies for the record: bounded per body and across bodies, and given back. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { capture, type CaptureBudget } from '../../src/proxy/capture.ts';

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
