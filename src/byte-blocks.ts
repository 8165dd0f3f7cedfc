/**
 * Bytes kept by copying them into blocks of their own, up to a cap. A chunk kept as it came holds
 * its whole socket read (64 KiB) and an object of its own: a million 1-byte chunks held gigabytes
 * where a megabyte was counted (the proxy's captures), ~300 bytes of memory per byte (a check's
 * answer).
 */

/** Bytes the blocks grow to (a part longer than that gets a block of its length). */
const BLOCK = 64 * 1024;

export class ByteBlocks {
  private readonly blocks: Buffer[] = [];
  /** Bytes used of the last block. */
  private used = 0;
  /** Bytes kept. */
  length = 0;

  /** `cap`: the most bytes ever kept (no block reaches past it). */
  constructor(private readonly cap: number) {}

  /** Keeps `part`; the caller keeps the total within the cap. */
  push(part: Buffer): void {
    for (let at = 0; at < part.length; ) {
      let block = this.blocks.at(-1);
      if (!block || this.used === block.length) {
        // small bodies small blocks (4 KiB, doubling to BLOCK), the rest of this part at least, never past the cap
        const grown = Math.min(BLOCK, 4096 << Math.min(this.blocks.length, 4));
        block = Buffer.allocUnsafe(Math.min(this.cap - this.length - at, Math.max(part.length - at, grown)));
        this.blocks.push(block);
        this.used = 0;
      }
      const n = part.copy(block, this.used, at);
      this.used += n;
      at += n;
    }
    this.length += part.length;
  }

  /** The bytes kept, as one buffer. */
  bytes(): Buffer {
    return this.blocks.length === 1 ? this.blocks[0]!.subarray(0, this.length) : Buffer.concat(this.blocks, this.length);
  }

  /** Lets the blocks go. */
  clear(): void {
    this.blocks.length = 0;
    this.used = 0;
    this.length = 0;
  }
}
