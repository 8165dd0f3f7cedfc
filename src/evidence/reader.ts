/**
 * Reads of records from segment files: a descriptor per segment, opened on first use and kept for
 * the next reads, at most MAX_OPEN of them (the least recently read closed first: a target may have
 * thousands of segments, the proxy writing one every 250 ms, and the process has a few thousand
 * descriptors in all); a retired segment's is closed once no read uses it. A read takes its
 * descriptor at once, so a file deleted meanwhile (after a rewrite) is still read whole.
 */
import { close, closeSync, openSync, read } from 'node:fs';
import { segmentPath } from './segment.js';

/** Descriptors kept open at most (more only while that many reads are in flight). */
export const MAX_OPEN = 128;

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
  /** In the order last read, oldest first. */
  const open = new Map<number, Open>();
  const release = (entry: Open) => {
    entry.reads--;
    if (entry.forgotten && entry.reads === 0) close(entry.fd, () => {});
  };
  /** Closes the least recently read descriptors no read uses, down to MAX_OPEN. */
  const evict = () => {
    for (const [n, entry] of open) {
      if (open.size <= MAX_OPEN) return;
      if (entry.reads > 0) continue;
      open.delete(n);
      close(entry.fd, () => {});
    }
  };
  return {
    read(n, position, length) {
      let entry = open.get(n);
      if (entry) {
        // read last: kept longest
        open.delete(n);
        open.set(n, entry);
      } else {
        // synchronous: the descriptor is taken before anything can delete the file
        entry = { fd: openSync(segmentPath(dataDir, n), 'r'), reads: 0, forgotten: false };
        open.set(n, entry);
      }
      const taken = entry;
      taken.reads++;
      if (open.size > MAX_OPEN) evict();
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
