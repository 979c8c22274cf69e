/**
 * `tabula verify`: walks the chain through the HTTP API with the SDK, recomputing every root, hash and
 * link, then checks the walked blocks against the signed history (the history root recomputed over
 * their hashes, or the head's inclusion proof, against the signed checkpoint of that size), and exits
 * non-zero naming the first bad block. `tabula verify <tx_hash>` recomputes one
 * transaction's hash and checks its inclusion proof against its block's recomputed header. Also how a
 * failed check is reported, for `verify` and `tabula audit` alike.
 */
import { LightClient, VerificationError, type BlockHeader, type SignedCheckpoint, type TabulaClient } from '@tabula/client';
import { hexToBytes } from '../domain/shared/hex.js';
import { sha256 } from '../domain/hashing.js';
import { toHashHex } from '../domain/shared/hex.js';
import { merkleRoot } from '../domain/shared/merkle.js';
import type { Context } from './commands.js';
import { UsageError } from './cli-config.js';
import { transactionHashArgument } from './command-line.js';
import { print, type Output } from './output.js';
import { ProgressBar } from './progress-bar.js';

/** Exit status of a verification that found a mismatch (errors are 1, usage 2). */
export const EXIT_VERIFICATION_FAILED = 3;

function blockNumber(value: Context['values'][string], name: string): number | undefined {
  if (typeof value !== 'string') return undefined;
  if (!/^[0-9]{1,15}$/.test(value)) throw new UsageError(`${name} must be a non-negative integer`);
  return Number(value);
}

export async function verifyCommand(context: Context): Promise<number> {
  if (context.positionals.length > 1) throw new UsageError('expected at most one transaction hash');
  try {
    const [tx_hash] = context.positionals;
    if (typeof context.values.balance === 'string') await verifyBalance(context, context.values.balance);
    else if (tx_hash !== undefined) await verifyTransaction(context, transactionHashArgument(tx_hash));
    else await verifyChain(context);
    return 0;
  } catch (error) {
    if (error instanceof HistoryMismatchError) return reportFailure(context.out, 'verification', error.report);
    if (!(error instanceof VerificationError)) throw error;
    return reportFailure(context.out, 'verification', { code: error.code, block_number: error.block_number, tx_hash: error.tx_hash, reason: error.message });
  }
}

/** The walked chain is not the history the service signed. */
class HistoryMismatchError extends Error {
  constructor(readonly report: CheckFailureReport) {
    super(report.reason);
  }
}

/** A mismatch a check found: what, in which block and transaction (null: none in particular), and why. */
export type CheckFailureReport = { code: string; block_number: number | null; tx_hash: string | null; reason: string };

/**
 * How `verify` and `audit` report the first mismatch: a line on stderr (`<check> FAILED at block n: <detail>`),
 * with `--json` also a record on stdout (`{"verified"|"audited": false, code, block_number, tx_hash, reason}`).
 */
export function reportFailure(out: Output, check: 'verification' | 'audit', failure: CheckFailureReport, detail = failure.reason): number {
  const where = failure.block_number === null ? '' : ` at block ${failure.block_number}`;
  if (out.json) {
    const flag = check === 'verification' ? 'verified' : 'audited';
    out.stdout.write(`${JSON.stringify({ [flag]: false, code: failure.code, block_number: failure.block_number, tx_hash: failure.tx_hash, reason: failure.reason })}\n`);
  }
  out.stderr.write(`${check} FAILED${where}: ${detail}\n`);
  return EXIT_VERIFICATION_FAILED;
}

async function verifyTransaction(context: Context, tx_hash: string): Promise<void> {
  const { client, out } = context;
  const transaction = await client.getTransaction(tx_hash);
  await client.verifyTransaction(transaction);
  const proof = await client.getProof(transaction.tx_hash);
  const { header } = await client.verifyInclusion(proof);
  const result = { verified: true, tx_hash: transaction.tx_hash, status: transaction.status, block_number: header.number, block_hash: header.hash, leaf_index: proof.leaf_index, tree_size: proof.tree_size };
  print(out, result, () => [
    `verified transaction ${transaction.tx_hash} (${transaction.status})`,
    '  its hash recomputed from the record',
    `  included at position ${proof.leaf_index} of ${proof.tree_size} in block ${header.number} (${header.hash}):`,
    '  the RFC 6962 root from its audit path equals the transactions_root of the recomputed block header',
  ].join('\n'));
}

async function verifyBalance(context: Context, user_id: string): Promise<void> {
  const { client, out } = context;
  const balance = await client.getBalanceVerified(user_id);
  const { verified } = balance;
  const units = Object.fromEntries(Object.entries(verified.units).map(([token, value]) => [token, value.toString()]));
  const result = { verified: true, user_id, block_number: verified.block_number, balance_root: verified.balance_root, against: verified.against, units };
  print(out, result, () => [
    `verified the balances of ${user_id} after block ${verified.block_number}: ${balance.native_text} native, ${balance.usdg_text} USDG`,
    `  each proven (a zero one by absence) under balance root ${verified.balance_root}`,
    `  which is the root ${verified.against === 'checkpoint' ? 'of the signed checkpoint' : 'the server stores for the block'}`,
  ].join('\n'));
}

async function verifyChain(context: Context): Promise<void> {
  const { client, out, values } = context;
  const from = blockNumber(values.from, '--from') ?? 0;
  const to = blockNumber(values.to, '--to') ?? (await client.getStats()).latest_block_number;
  if (to < from) throw new UsageError(`--to (${to}) is before --from (${from})`);
  const show_progress = values.progress === true || out.stderr.isTTY === true;
  const bar = show_progress ? new ProgressBar(out.stderr, to - from + 1, 'blocks verified') : null;
  let done = 0;
  const block_hashes: Uint8Array[] = [];
  try {
    const result = await client.verifyChain(from, to, {
      concurrency: 8,
      onBlock: (header) => {
        if (from === 0) block_hashes.push(hexToBytes(header.hash));
        done += 1;
        bar?.update(done);
      },
    });
    bar?.finish();
    const checkpoint = await checkSignedHistory(context, result.head, from === 0 ? block_hashes : null);
    const history = { size: checkpoint.size, history_root: checkpoint.history_root, key_id: checkpoint.key_id, checked: from === 0 ? 'history_root' : 'head_inclusion' };
    const summary = { verified: true, from: result.from, to: result.to, blocks_verified: result.blocks_verified, head: result.head, history };
    print(out, summary, () => [
      `verified blocks ${result.from}..${result.to} (${result.blocks_verified} blocks): every transactions_root, block hash and parent link recomputed`,
      from === 0
        ? `history root recomputed over the ${checkpoint.size} block hashes equals the signed checkpoint ${checkpoint.size} (key ${checkpoint.key_id})`
        : `block ${result.head.number} (and through its parent links every walked block) is in the signed checkpoint ${checkpoint.size} (key ${checkpoint.key_id})`,
      `head  block ${result.head.number}  ${result.head.hash}`,
    ].join('\n'));
  } catch (error) {
    if (bar !== null) bar.finish();
    throw error;
  }
}

/**
 * Compares the walked chain with the history the service signed: the checkpoint of size head + 1
 * (`GET /api/checkpoint?size=`), its signature checked with `--public-key` or else the service's own key
 * (trust on first use). From genesis, the history root is recomputed over the walked block hashes; from
 * a later block, the head's inclusion proof is checked (its hash commits to every walked block through
 * the parent links). Throws a `HistoryMismatchError` (or the light client's `VerificationError`).
 */
async function checkSignedHistory(context: Context, head: BlockHeader, block_hashes: Uint8Array[] | null): Promise<SignedCheckpoint> {
  const { client, values } = context;
  const public_key = typeof values['public-key'] === 'string' ? values['public-key'] : (await client.getCheckpointKey()).public_key;
  const checkpoint = await client.getCheckpoint(head.number + 1);
  const light = new LightClient(historyFetcher(client), { publicKey: public_key, checkpoint });
  await light.trusted(); // verifies the checkpoint's signature and that its fields are the note's
  if (checkpoint.size !== head.number + 1) {
    throw new HistoryMismatchError({ code: 'history_root_mismatch', block_number: head.number, tx_hash: null, reason: `asked for the checkpoint of size ${head.number + 1}, got size ${checkpoint.size}` });
  }
  if (block_hashes === null) {
    await light.verifyBlockHash(head.number, head.hash);
    return checkpoint;
  }
  const root = toHashHex(merkleRoot(sha256, block_hashes));
  if (root !== checkpoint.history_root) {
    throw new HistoryMismatchError({
      code: 'history_root_mismatch', block_number: head.number, tx_hash: null,
      reason: `the history root recomputed over the ${block_hashes.length} walked block hashes is ${root}, but the checkpoint of size ${checkpoint.size} signed by key ${checkpoint.key_id} says ${checkpoint.history_root}`,
    });
  }
  return checkpoint;
}

function historyFetcher(client: TabulaClient): ConstructorParameters<typeof LightClient>[0] {
  return {
    checkpoint: (size) => client.getCheckpoint(size),
    consistency: (from, to) => client.getConsistencyProof(from, to),
    blockProof: (number, size) => client.getBlockProof(number, size),
  };
}
