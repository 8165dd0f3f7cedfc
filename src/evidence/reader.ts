/**
 * Reads of records from segment files: one descriptor per segment, opened on first use and kept;
 * a retired segment's is closed once no read uses it. A read takes its descriptor at once, so a
 * file deleted meanwhile (after a rewrite) is still read whole.
 */
import { close, closeSync, openSync, read } from 'node:fs';
import { segmentPath } from './segment.js';

export interface SegmentReader {
  /** Reads `length` bytes at `position` of segment `n` (fewer at the file's end). */
  read(n: number, position: number, length: number): Promise<Buffer>;
  /** Segment `n`'s file is going: its descriptor closes once its reads are done. */
  forget(n: number): void;
  closeAll(): void;
}

interface Open {
  fd: number;
  reads: number;
  forgotten: boolean;
}

export function createReader(dataDir: string): SegmentReader {
  const open = new Map<number, Open>();
  const release = (entry: Open) => {
    entry.reads--;
    if (entry.forgotten && entry.reads === 0) close(entry.fd, () => {});
  };
  return {
    read(n, position, length) {
      let entry = open.get(n);
      if (!entry) {
        // synchronous: the descriptor is taken before anything can delete the file
        entry = { fd: openSync(segmentPath(dataDir, n), 'r'), reads: 0, forgotten: false };
        open.set(n, entry);
      }
      const taken = entry;
      taken.reads++;
      const buffer = Buffer.allocUnsafe(length);
      return new Promise<Buffer>((resolve, reject) => {
        const more = (done: number) => {
          read(taken.fd, buffer, done, length - done, position + done, (err, bytes) => {
            if (err) {
              release(taken);
              reject(err);
            } else if (bytes === 0 || done + bytes === length) {
              release(taken);
              resolve(done + bytes === length ? buffer : buffer.subarray(0, done + bytes));
            } else more(done + bytes);
          });
        };
        more(0);
      });
    },
    forget(n) {
      const entry = open.get(n);
      if (!entry) return;
      open.delete(n);
      entry.forgotten = true;
      if (entry.reads === 0) close(entry.fd, () => {});
    },
    closeAll() {
      for (const entry of open.values()) {
        entry.forgotten = true;
        if (entry.reads === 0) closeSync(entry.fd);
      }
      open.clear();
    },
  };
}
