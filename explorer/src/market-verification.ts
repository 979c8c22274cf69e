/**
 * The overview's check of the price: the pool replayed from the chain with the SDK's `MarketReplay`
 * (every swap's amount_out by the constant-product formula, every failure reason the pool decides,
 * every block's native_price against the replayed reserves), up to the block `GET /api/market` names,
 * whose reserves must then be the replayed ones. Incremental: each call goes on from the last block
 * checked, so a new block costs its own transactions only. A mismatch is final (the chain the tab
 * reads is not one the pool can have produced); a failed read is not (the next call tries again).
 */
import { MarketMismatchError, MarketReplay, formatPriceUnits, tokenUnits, type Block, type MarketInfo, type Transaction } from '@tabula/client';

/** What the verifier reads (a `TabulaClient` is one). */
export type MarketSource = {
  getMarket(options?: { signal?: AbortSignal }): Promise<MarketInfo>;
  getBlock(number: number, options?: { signal?: AbortSignal }): Promise<Block>;
  getTransaction(hash: string, options?: { signal?: AbortSignal }): Promise<Transaction>;
};

export type PriceVerification =
  | { state: 'verified'; to: number; price: string | null; swaps_checked: number; prices_checked: number }
  | { state: 'mismatch'; block_number: number | null; tx_hash: string | null; reason: string };

/** Transactions of one block fetched at once. */
const TRANSACTIONS_AT_ONCE = 8;

export class PoolVerifier {
  private replay: MarketReplay | null = null;
  private next_block = 0;
  private failure: PriceVerification | null = null;
  private running: Promise<PriceVerification> = Promise.resolve({ state: 'verified', to: -1, price: null, swaps_checked: 0, prices_checked: 0 });

  constructor(private readonly source: MarketSource) {}

  /** Replays the blocks sealed since the last call, up to the newest; rejects only when a read fails. */
  advance(signal?: AbortSignal): Promise<PriceVerification> {
    this.running = this.running.catch(() => undefined).then(() => this.walk(signal));
    return this.running;
  }

  private async walk(signal?: AbortSignal): Promise<PriceVerification> {
    if (this.failure !== null) return this.failure;
    const options = signal === undefined ? {} : { signal };
    const market = await this.source.getMarket(options);
    this.replay ??= new MarketReplay(market.fee_bps);
    const replay = this.replay;
    try {
      if (market.fee_bps !== replay.fee_bps) {
        throw new MarketMismatchError('malformed_record', `GET /api/market states fee_bps ${market.fee_bps}, earlier ${replay.fee_bps}: the fee is fixed when the ledger is created`, { block_number: market.block_number });
      }
      while (this.next_block <= market.block_number) {
        const number = this.next_block;
        const block = await this.source.getBlock(number, options);
        const transactions: Transaction[] = [];
        for (let start = 0; start < block.transactions.length; start += TRANSACTIONS_AT_ONCE) {
          const hashes = block.transactions.slice(start, start + TRANSACTIONS_AT_ONCE);
          transactions.push(...await Promise.all(hashes.map((hash) => this.source.getTransaction(hash, options))));
        }
        // Everything of the block is read before any of it is applied: an abort never leaves half a block replayed.
        for (const [position, tx] of transactions.entries()) {
          if (tx.block_number !== number || tx.position !== position) {
            throw new MarketMismatchError('malformed_record', `the block lists the transaction at position ${position}, its record says block ${String(tx.block_number)} position ${String(tx.position)}`, { block_number: number, tx_hash: tx.tx_hash });
          }
          replay.transaction(tx, number);
        }
        replay.endBlock(block);
        this.next_block = number + 1;
      }
      const stated = { native: tokenUnits(market.reserves.native_text, 'native'), usdg: tokenUnits(market.reserves.usdg_text, 'USDG') };
      if (this.next_block === market.block_number + 1 && (stated.native !== replay.reserves.native_units || stated.usdg !== replay.reserves.usdg_units)) {
        throw new MarketMismatchError('reserves_mismatch', `the service states reserves ${market.reserves.native_text} and ${market.reserves.usdg_text} USDG, which the chain does not give`, { block_number: market.block_number });
      }
    } catch (error) {
      if (!(error instanceof MarketMismatchError)) throw error;
      this.failure = { state: 'mismatch', block_number: error.block_number, tx_hash: error.tx_hash, reason: error.message };
      return this.failure;
    }
    const price = replay.last_price_units === null ? null : formatPriceUnits(replay.last_price_units);
    return { state: 'verified', to: this.next_block - 1, price, swaps_checked: replay.swaps_checked, prices_checked: replay.prices_checked };
  }
}

