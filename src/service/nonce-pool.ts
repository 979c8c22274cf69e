/**
 * Random nonces drawn from a buffer the CSPRNG refills a few thousand at a time: one call into
 * OpenSSL per refill instead of one per submission. Every byte still comes from `randomFillSync`
 * and is handed out once.
 */
import { randomFillSync } from 'node:crypto';

const NONCES_PER_REFILL = 4096;

export class NoncePool {
  private readonly nonce_bytes: number;
  private readonly buffer: Buffer;
  private offset: number;

  constructor(nonce_bytes: number) {
    this.nonce_bytes = nonce_bytes;
    this.buffer = Buffer.alloc(nonce_bytes * NONCES_PER_REFILL);
    this.offset = this.buffer.length;
  }

  /** `nonce_bytes` fresh random bytes as lowercase hex. */
  next(): string {
    if (this.offset + this.nonce_bytes > this.buffer.length) {
      randomFillSync(this.buffer);
      this.offset = 0;
    }
    const nonce = this.buffer.toString('hex', this.offset, this.offset + this.nonce_bytes);
    this.offset += this.nonce_bytes;
    return nonce;
  }
}
