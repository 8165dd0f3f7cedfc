/**
 * The segment reader keeps at most MAX_OPEN descriptors open, the least recently read closed
 * first: a target of thousands of segments (one per bundle entry, one every 250 ms of proxy
 * recording) used up the process's descriptors, and every later open failed (EMFILE) until restart.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { createReader, MAX_OPEN } from '../../src/evidence/reader.ts';
import { segmentPath } from '../../src/evidence/segment.ts';
import { tempDir } from '../helpers/server.ts';

const openDescriptors = () => readdirSync('/proc/self/fd').length;

test('reading 1,000 segments keeps at most MAX_OPEN of them open; each still reads right, an evicted one again too', { skip: process.platform !== 'linux' && 'reads /proc' }, async () => {
  const dataDir = await tempDir();
  try {
    mkdirSync(segmentPath(dataDir, 1).replace(/[^/]+$/, ''), { recursive: true });
    for (let n = 1; n <= 1000; n++) writeFileSync(segmentPath(dataDir, n), `segment ${n}`);
    const before = openDescriptors();
    const reader = createReader(dataDir);
    for (let n = 1; n <= 1000; n++) assert.equal((await reader.read(n, 0, 64)).toString(), `segment ${n}`);
    // an evicted descriptor is closed asynchronously (fs.close): counted once those closes are done
    // (counted at once, a fresh-clone CI run saw 129, the last one still closing)
    await new Promise((resolve) => setTimeout(resolve, 100));
    const kept = openDescriptors() - before;
    assert.ok(kept <= MAX_OPEN, `${kept} descriptors left open`);
    // the first was closed long ago: opened again, read again
    assert.equal((await reader.read(1, 8, 1)).toString(), '1');
    // reads in flight at once beyond the bound all complete
    const all = await Promise.all(Array.from({ length: 300 }, (_, i) => reader.read(i + 1, 0, 64)));
    all.forEach((bytes, i) => assert.equal(bytes.toString(), `segment ${i + 1}`));
    reader.closeAll();
    assert.ok(openDescriptors() - before <= 1, 'closeAll closes them');
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
});
