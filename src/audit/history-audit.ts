/**
 * The history tree's part of the audit: recomputes every node of the RFC 6962 tree over the block
 * hashes (keeping only the open left siblings, O(log n)) and compares each with the stored one, a
 * page of blocks at a time. A ledger whose tree was never built (older than it, not started since) is skipped.
 */
import { runHashSteps } from '../domain/shared/hash-steps.js';
import { sha256 } from '../domain/hashing.js';
import { bytesToHex, hexToBytes } from '../domain/shared/hex.js';
import { appendSiblings, appendSteps, nodeKeyId, type HistoryNode } from '../domain/shared/history-tree.js';
import type { StoredBlockHeader } from '../service/ledger-store.js';
import type { AuditReader } from './audit-reader.js';
import { discrepancy, type Discrepancy } from './chain-replay.js';

export class HistoryAudit {
  /** The open left siblings, by node key: what appending the next block needs. */
  private readonly open = new Map<string, Uint8Array>();
  private present: boolean | null = null;

  constructor(private readonly reader: AuditReader) {}

  /** Recomputes the nodes that `headers` (the next blocks, in order) create and compares them with the stored ones. */
  async page(headers: readonly StoredBlockHeader[]): Promise<Discrepancy | null> {
    const first = headers[0];
    const last = headers.at(-1);
    if (first === undefined || last === undefined) return null;
    this.present ??= (await this.reader.historyNodes(0, 0, 0)).length > 0;
    if (!this.present) return null;
    const expected = new Map<string, { node: HistoryNode; block: number }>();
    for (const header of headers) {
      const siblings = appendSiblings(header.number).map((key) => this.open.get(nodeKeyId(key)) as Uint8Array);
      const created = runHashSteps(appendSteps(header.number, hexToBytes(header.hash), siblings), sha256);
      for (const key of appendSiblings(header.number)) this.open.delete(nodeKeyId(key));
      const top = created.at(-1) as HistoryNode;
      this.open.set(nodeKeyId(top), top.hash);
      for (const node of created) expected.set(nodeKeyId(node), { node, block: header.number });
    }
    const stored = new Map<string, Uint8Array>();
    for (let level = 0; 2 ** level <= last.number + 1; level += 1) {
      const width = 2 ** level;
      const from_index = Math.max(0, Math.ceil((first.number + 1) / width) - 1);
      const to_index = Math.floor((last.number + 1) / width) - 1;
      if (to_index < from_index) continue;
      for (const node of await this.reader.historyNodes(level, from_index, to_index)) stored.set(nodeKeyId(node), node.hash);
    }
    for (const [id, { node, block }] of expected) {
      const found = stored.get(id);
      if (found === undefined || bytesToHex(found) !== bytesToHex(node.hash)) {
        const what = found === undefined ? 'is missing' : `is stored as 0x${bytesToHex(found)}, but the blocks give 0x${bytesToHex(node.hash)}`;
        return discrepancy('history_tree_mismatch', block, null, `history node ${id} (level:index) ${what}`);
      }
    }
    if (stored.size !== expected.size) return discrepancy('history_tree_mismatch', last.number, null, 'the history tree holds nodes no block creates');
    return null;
  }
}
