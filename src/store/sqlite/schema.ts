/**
 * SQLite schema, applied in order at start-up. Constraints and triggers enforce the chain's
 * invariants in the database too: consecutive block numbers, parent links, no negative balance, and
 * a transaction is pending exactly while it has no block.
 */
export const MIGRATIONS: ReadonlyArray<{ version: number; sql: string }> = [
  {
    version: 1,
    sql: `
CREATE TABLE settings (
  name TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE blocks (
  number INTEGER PRIMARY KEY CHECK (number >= 0),
  hash TEXT NOT NULL UNIQUE,
  parent_hash TEXT NOT NULL,
  timestamp INTEGER NOT NULL,
  transactions_count INTEGER NOT NULL CHECK (transactions_count >= 0),
  transactions_root TEXT NOT NULL,
  total_transactions INTEGER NOT NULL,
  total_users INTEGER NOT NULL,
  transfer_volume_totals TEXT NOT NULL
);
CREATE INDEX blocks_by_timestamp ON blocks(timestamp);

CREATE TRIGGER blocks_link BEFORE INSERT ON blocks
WHEN NEW.number <> COALESCE((SELECT MAX(number) FROM blocks) + 1, 0)
  OR (NEW.number > 0 AND NEW.parent_hash <> (SELECT hash FROM blocks WHERE number = NEW.number - 1))
  OR (NEW.number = 0 AND NEW.parent_hash <> '0x0000000000000000000000000000000000000000000000000000000000000000')
BEGIN
  SELECT RAISE(ABORT, 'block does not extend the chain');
END;
CREATE TRIGGER blocks_immutable BEFORE UPDATE ON blocks
BEGIN
  SELECT RAISE(ABORT, 'blocks are immutable');
END;

CREATE TABLE transactions (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  tx_hash TEXT NOT NULL UNIQUE,
  from_id TEXT NOT NULL,
  to_id TEXT NOT NULL,
  amount INTEGER NOT NULL CHECK (amount > 0),
  token TEXT NOT NULL,
  type TEXT NOT NULL CHECK (type IN ('transfer', 'mint', 'burn')),
  metadata TEXT NOT NULL,
  nonce TEXT NOT NULL,
  timestamp INTEGER NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('pending', 'confirmed', 'failed')),
  block_number INTEGER REFERENCES blocks(number),
  position INTEGER,
  error TEXT,
  CHECK ((status = 'pending') = (block_number IS NULL)),
  CHECK ((block_number IS NULL) = (position IS NULL)),
  CHECK ((status = 'failed') = (error IS NOT NULL))
);
CREATE INDEX transactions_pending ON transactions(seq) WHERE status = 'pending';
CREATE UNIQUE INDEX transactions_by_block ON transactions(block_number, position) WHERE block_number IS NOT NULL;

CREATE TRIGGER transactions_sealed_once BEFORE UPDATE ON transactions
WHEN OLD.status <> 'pending'
BEGIN
  SELECT RAISE(ABORT, 'a sealed transaction never changes');
END;

CREATE TABLE balances (
  user_id TEXT NOT NULL,
  token TEXT NOT NULL,
  units INTEGER NOT NULL CHECK (units >= 0),
  PRIMARY KEY (user_id, token)
) WITHOUT ROWID;

CREATE TABLE accounts (
  user_id TEXT PRIMARY KEY,
  last_transfer_at INTEGER
) WITHOUT ROWID;
CREATE INDEX accounts_by_last_transfer ON accounts(last_transfer_at) WHERE last_transfer_at IS NOT NULL;

CREATE TABLE idempotency_keys (
  caller TEXT NOT NULL,
  key TEXT NOT NULL,
  request_hash TEXT NOT NULL,
  tx_hash TEXT NOT NULL,
  timestamp INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (caller, key)
) WITHOUT ROWID;
CREATE INDEX idempotency_keys_by_age ON idempotency_keys(created_at);
`,
  },
  {
    version: 2,
    sql: `
CREATE TRIGGER blocks_in_order BEFORE INSERT ON blocks
WHEN NEW.number > 0 AND (
  NEW.transactions_count = 0
  OR NEW.timestamp < (SELECT timestamp FROM blocks WHERE number = NEW.number - 1)
)
BEGIN
  SELECT RAISE(ABORT, 'blocks after genesis are never empty and never go back in time');
END;
CREATE TRIGGER blocks_not_deleted BEFORE DELETE ON blocks
BEGIN
  SELECT RAISE(ABORT, 'blocks are append-only');
END;
CREATE TRIGGER transactions_not_deleted BEFORE DELETE ON transactions
BEGIN
  SELECT RAISE(ABORT, 'transactions are never deleted');
END;
CREATE TRIGGER transactions_sealed_into_newest BEFORE UPDATE ON transactions
WHEN NEW.block_number IS NOT (SELECT MAX(number) FROM blocks)
  OR NEW.tx_hash <> OLD.tx_hash OR NEW.amount <> OLD.amount OR NEW.from_id <> OLD.from_id OR NEW.to_id <> OLD.to_id
  OR NEW.token <> OLD.token OR NEW.type <> OLD.type OR NEW.metadata <> OLD.metadata OR NEW.nonce <> OLD.nonce
  OR NEW.timestamp <> OLD.timestamp
BEGIN
  SELECT RAISE(ABORT, 'a pending transaction may only be sealed, unchanged, into the newest block');
END;
`,
  },
  {
    // An account's history: the transactions it sent and received, each side an index range read
    // newest first from a position (seq is the rowid, so both indexes cover the query's seeks).
    version: 3,
    sql: `
CREATE INDEX IF NOT EXISTS transactions_by_from ON transactions(from_id, seq);
CREATE INDEX IF NOT EXISTS transactions_by_to ON transactions(to_id, seq);
`,
  },
  {
    // The event log (src/events/event.ts), derived from what the write transactions store: each
    // transaction's accepted event is its event_seq; each block's events start at its first_sequence
    // (outcomes in position order, then block.sealed). One counter row numbers them in commit order,
    // so the log has no gap. Ledgers older than this version have no events before it.
    version: 4,
    sql: `
ALTER TABLE transactions ADD COLUMN event_seq INTEGER;
CREATE UNIQUE INDEX transactions_by_event ON transactions(event_seq) WHERE event_seq IS NOT NULL;

CREATE TABLE block_events (
  number INTEGER PRIMARY KEY REFERENCES blocks(number),
  first_sequence INTEGER NOT NULL UNIQUE CHECK (first_sequence > 0)
);
CREATE TRIGGER block_events_immutable BEFORE UPDATE ON block_events
BEGIN
  SELECT RAISE(ABORT, 'block events are immutable');
END;
CREATE TRIGGER block_events_not_deleted BEFORE DELETE ON block_events
BEGIN
  SELECT RAISE(ABORT, 'block events are append-only');
END;

CREATE TABLE event_counter (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  last_sequence INTEGER NOT NULL CHECK (last_sequence >= 0)
);
INSERT INTO event_counter (id, last_sequence) VALUES (1, 0);
CREATE TRIGGER event_counter_forward BEFORE UPDATE ON event_counter
WHEN NEW.last_sequence < OLD.last_sequence
BEGIN
  SELECT RAISE(ABORT, 'the event counter never goes back');
END;

DROP TRIGGER transactions_sealed_into_newest;
CREATE TRIGGER transactions_sealed_into_newest BEFORE UPDATE ON transactions
WHEN NEW.block_number IS NOT (SELECT MAX(number) FROM blocks)
  OR NEW.tx_hash <> OLD.tx_hash OR NEW.amount <> OLD.amount OR NEW.from_id <> OLD.from_id OR NEW.to_id <> OLD.to_id
  OR NEW.token <> OLD.token OR NEW.type <> OLD.type OR NEW.metadata <> OLD.metadata OR NEW.nonce <> OLD.nonce
  OR NEW.timestamp <> OLD.timestamp OR NEW.event_seq IS NOT OLD.event_seq
BEGIN
  SELECT RAISE(ABORT, 'a pending transaction may only be sealed, unchanged, into the newest block');
END;
`,
  },
  {
    // Webhooks (src/webhooks/webhook-store.ts): the endpoints, each with its cursor in the event log and
    // its delivery lease, and the attempts made (the newest 1000 per endpoint are kept).
    version: 5,
    sql: `
CREATE TABLE webhook_endpoints (
  id TEXT PRIMARY KEY,
  url TEXT NOT NULL,
  description TEXT NOT NULL,
  types TEXT,
  accounts TEXT,
  secret TEXT NOT NULL,
  previous_secret TEXT,
  previous_secret_expires_at_ms INTEGER,
  status TEXT NOT NULL CHECK (status IN ('active', 'disabled')),
  disabled_reason TEXT,
  last_sequence INTEGER NOT NULL CHECK (last_sequence >= 0),
  failing_since_ms INTEGER,
  failed_attempts INTEGER NOT NULL CHECK (failed_attempts >= 0),
  next_attempt_at_ms INTEGER NOT NULL,
  lease_owner TEXT,
  lease_expires_at_ms INTEGER,
  created_at_ms INTEGER NOT NULL,
  updated_at_ms INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX webhook_endpoints_due ON webhook_endpoints(next_attempt_at_ms) WHERE status = 'active';

CREATE TABLE webhook_attempts (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  endpoint_id TEXT NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
  event_id TEXT NOT NULL,
  sequence INTEGER NOT NULL,
  outcome TEXT NOT NULL CHECK (outcome IN ('delivered', 'failed', 'refused')),
  response_status INTEGER,
  latency_ms INTEGER NOT NULL,
  error TEXT,
  attempted_at_ms INTEGER NOT NULL,
  next_attempt_at_ms INTEGER,
  origin TEXT NOT NULL CHECK (origin IN ('scheduled', 'manual'))
);
CREATE INDEX webhook_attempts_by_endpoint ON webhook_attempts(endpoint_id, id);
`,
  },
  {
    // The failure budget (src/failure-budget): running totals of each account's debits, appended and
    // sealed, so that whether a new debit is covered is read in O(1); and what each subject has been
    // charged in the current hour. Totals are decimal text (they may pass 2^63); the submitted totals
    // start from the debits pending now, so that submitted − settled is always what is pending.
    version: 6,
    sql: `
CREATE TABLE outgoing_submitted (
  user_id TEXT NOT NULL,
  token TEXT NOT NULL,
  units TEXT NOT NULL,
  PRIMARY KEY (user_id, token)
) WITHOUT ROWID;
CREATE TABLE outgoing_settled (
  user_id TEXT NOT NULL,
  token TEXT NOT NULL,
  units TEXT NOT NULL,
  PRIMARY KEY (user_id, token)
) WITHOUT ROWID;
CREATE TABLE failure_budgets (
  subject TEXT NOT NULL,
  window_start_s INTEGER NOT NULL,
  charged INTEGER NOT NULL CHECK (charged >= 0),
  PRIMARY KEY (subject, window_start_s)
) WITHOUT ROWID;
INSERT INTO outgoing_submitted (user_id, token, units)
  SELECT from_id, token, CAST(SUM(amount) AS TEXT) FROM transactions
  WHERE status = 'pending' AND type IN ('transfer', 'burn') GROUP BY from_id, token;
`,
  },
  {
    // The history tree (src/domain/shared/history-tree.ts): every perfect subtree of the RFC 6962 tree over the
    // block hashes, written with its block; ledgers older than this version are filled in at start.
    version: 7,
    sql: `
CREATE TABLE history_nodes (
  level INTEGER NOT NULL CHECK (level >= 0 AND level <= 52),
  idx BIGINT NOT NULL CHECK (idx >= 0),
  hash BLOB NOT NULL,
  PRIMARY KEY (level, idx)
) WITHOUT ROWID;
`,
  },
  {
    // The market (src/domain/market): swaps, their minimum and payout, each block's price and the running
    // USD volume of swaps, and the price candles kept as blocks are sealed. SQLite cannot widen a CHECK
    // in place, so the transactions table is rebuilt (one copy of it, once, at start-up; see
    // docs/operations.md) with the `swap` type and the three new columns, and its indexes and triggers
    // are made again as migrations 1 to 4 left them.
    version: 8,
    sql: `
CREATE TABLE transactions_market (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  tx_hash TEXT NOT NULL UNIQUE,
  from_id TEXT NOT NULL,
  to_id TEXT NOT NULL,
  amount INTEGER NOT NULL CHECK (amount > 0),
  token TEXT NOT NULL,
  type TEXT NOT NULL CHECK (type IN ('transfer', 'mint', 'burn', 'swap')),
  metadata TEXT NOT NULL,
  nonce TEXT NOT NULL,
  timestamp INTEGER NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('pending', 'confirmed', 'failed')),
  block_number INTEGER REFERENCES blocks(number),
  position INTEGER,
  error TEXT,
  event_seq INTEGER,
  min_receive INTEGER CHECK (min_receive IS NULL OR (type = 'swap' AND min_receive > 0)),
  amount_out INTEGER CHECK (amount_out IS NULL OR (type = 'swap' AND status = 'confirmed' AND amount_out > 0)),
  token_out TEXT CHECK ((type = 'swap') = (token_out IS NOT NULL)),
  CHECK ((status = 'pending') = (block_number IS NULL)),
  CHECK ((block_number IS NULL) = (position IS NULL)),
  CHECK ((status = 'failed') = (error IS NOT NULL))
);
INSERT INTO transactions_market (seq, tx_hash, from_id, to_id, amount, token, type, metadata, nonce, timestamp, status, block_number, position, error, event_seq)
  SELECT seq, tx_hash, from_id, to_id, amount, token, type, metadata, nonce, timestamp, status, block_number, position, error, event_seq FROM transactions;
DROP TABLE transactions;
ALTER TABLE transactions_market RENAME TO transactions;
CREATE INDEX transactions_pending ON transactions(seq) WHERE status = 'pending';
CREATE UNIQUE INDEX transactions_by_block ON transactions(block_number, position) WHERE block_number IS NOT NULL;
CREATE INDEX transactions_by_from ON transactions(from_id, seq);
CREATE INDEX transactions_by_to ON transactions(to_id, seq);
CREATE UNIQUE INDEX transactions_by_event ON transactions(event_seq) WHERE event_seq IS NOT NULL;
CREATE TRIGGER transactions_sealed_once BEFORE UPDATE ON transactions
WHEN OLD.status <> 'pending'
BEGIN
  SELECT RAISE(ABORT, 'a sealed transaction never changes');
END;
CREATE TRIGGER transactions_not_deleted BEFORE DELETE ON transactions
BEGIN
  SELECT RAISE(ABORT, 'transactions are never deleted');
END;
CREATE TRIGGER transactions_sealed_into_newest BEFORE UPDATE ON transactions
WHEN NEW.block_number IS NOT (SELECT MAX(number) FROM blocks)
  OR NEW.tx_hash <> OLD.tx_hash OR NEW.amount <> OLD.amount OR NEW.from_id <> OLD.from_id OR NEW.to_id <> OLD.to_id
  OR NEW.token <> OLD.token OR NEW.type <> OLD.type OR NEW.metadata <> OLD.metadata OR NEW.nonce <> OLD.nonce
  OR NEW.timestamp <> OLD.timestamp OR NEW.event_seq IS NOT OLD.event_seq
  OR NEW.min_receive IS NOT OLD.min_receive OR NEW.token_out IS NOT OLD.token_out
BEGIN
  SELECT RAISE(ABORT, 'a pending transaction may only be sealed, unchanged, into the newest block');
END;

ALTER TABLE blocks ADD COLUMN native_price TEXT;
ALTER TABLE blocks ADD COLUMN swap_volume_usd TEXT NOT NULL DEFAULT '0';

CREATE TABLE price_candles (
  interval TEXT NOT NULL CHECK (interval IN ('1m', '1h', '1d')),
  start INTEGER NOT NULL,
  open TEXT NOT NULL,
  high TEXT NOT NULL,
  low TEXT NOT NULL,
  close TEXT NOT NULL,
  volume_usd TEXT NOT NULL,
  PRIMARY KEY (interval, start)
) WITHOUT ROWID;
`,
  },
  {
    // Balance commitments (src/balance-commitments/): the root of the balance tree after each block.
    // Blocks sealed before this version have none; at start the service stores the root of the newest block.
    version: 10,
    sql: `
CREATE TABLE balance_roots (
  number INTEGER PRIMARY KEY REFERENCES blocks(number),
  root TEXT NOT NULL CHECK (length(root) = 66)
);
CREATE TRIGGER balance_roots_immutable BEFORE UPDATE ON balance_roots
BEGIN
  SELECT RAISE(ABORT, 'balance roots are immutable');
END;
CREATE TRIGGER balance_roots_not_deleted BEFORE DELETE ON balance_roots
BEGIN
  SELECT RAISE(ABORT, 'balance roots are append-only');
END;
`,
  },
  {
    // The failure budget's pending debits are kept in memory on SQLite (sqlite-failure-budget.ts:
    // this store is the only writer, and the figure is rebuilt from the pending rows at open), so the
    // running totals of version 6 are no longer written or read: dropped, so that nobody reads stale ones.
    version: 11,
    sql: `
DROP TABLE outgoing_submitted;
DROP TABLE outgoing_settled;
`,
  },
  {
    // An account's history in two parts: sealed transactions in partial indexes that a block's commit
    // writes (one block's rows at a time, so each account's last page is written once a block), pending
    // ones in memory (sqlite-pending-history.ts). Indexes over every row, written on accept, were half of
    // what accepting a transaction cost SQLite: each group commit wrote one page of each for every account
    // it touched (docs/performance.md, "What accepting a transaction costs SQLite, index by index").
    // block_number is in each key only so that the indexes cover the history's queries, whose terms name
    // it to choose them.
    version: 12,
    sql: `
DROP INDEX transactions_by_from;
DROP INDEX transactions_by_to;
CREATE INDEX transactions_sealed_by_from ON transactions(from_id, seq, block_number) WHERE block_number IS NOT NULL;
CREATE INDEX transactions_sealed_by_to ON transactions(to_id, seq, block_number) WHERE block_number IS NOT NULL;
`,
  },
  {
    // A transaction's hash found through the first 16 hex digits of the hash (64 bits) instead of all 64:
    // a hash is a random key, so every accepted transaction wrote a page of its index at a random place,
    // and an index of whole hashes has about four times as many pages as one of their prefixes (each
    // group commit of 2,000 wrote about 2,000 pages of it; docs/performance.md, "The transaction hash's
    // index on SQLite"). A prefix is not unique, so each look-up also compares the whole hash, and a trigger keeps a
    // hash unique, as the UNIQUE constraint did. SQLite cannot drop a column's UNIQUE constraint in
    // place, so the table is rebuilt (one copy, once, at start-up; docs/operations.md) with its indexes
    // and triggers as migrations 8 and 12 left them.
    version: 13,
    sql: `
CREATE TABLE transactions_by_prefix (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  tx_hash TEXT NOT NULL,
  from_id TEXT NOT NULL,
  to_id TEXT NOT NULL,
  amount INTEGER NOT NULL CHECK (amount > 0),
  token TEXT NOT NULL,
  type TEXT NOT NULL CHECK (type IN ('transfer', 'mint', 'burn', 'swap')),
  metadata TEXT NOT NULL,
  nonce TEXT NOT NULL,
  timestamp INTEGER NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('pending', 'confirmed', 'failed')),
  block_number INTEGER REFERENCES blocks(number),
  position INTEGER,
  error TEXT,
  event_seq INTEGER,
  min_receive INTEGER CHECK (min_receive IS NULL OR (type = 'swap' AND min_receive > 0)),
  amount_out INTEGER CHECK (amount_out IS NULL OR (type = 'swap' AND status = 'confirmed' AND amount_out > 0)),
  token_out TEXT CHECK ((type = 'swap') = (token_out IS NOT NULL)),
  CHECK ((status = 'pending') = (block_number IS NULL)),
  CHECK ((block_number IS NULL) = (position IS NULL)),
  CHECK ((status = 'failed') = (error IS NOT NULL))
);
INSERT INTO transactions_by_prefix (seq, tx_hash, from_id, to_id, amount, token, type, metadata, nonce, timestamp, status, block_number, position, error, event_seq, min_receive, amount_out, token_out)
  SELECT seq, tx_hash, from_id, to_id, amount, token, type, metadata, nonce, timestamp, status, block_number, position, error, event_seq, min_receive, amount_out, token_out FROM transactions ORDER BY seq;
DROP TABLE transactions;
ALTER TABLE transactions_by_prefix RENAME TO transactions;
CREATE INDEX transactions_by_hash_prefix ON transactions(substr(tx_hash, 3, 16));
CREATE INDEX transactions_pending ON transactions(seq) WHERE status = 'pending';
CREATE UNIQUE INDEX transactions_by_block ON transactions(block_number, position) WHERE block_number IS NOT NULL;
CREATE INDEX transactions_sealed_by_from ON transactions(from_id, seq, block_number) WHERE block_number IS NOT NULL;
CREATE INDEX transactions_sealed_by_to ON transactions(to_id, seq, block_number) WHERE block_number IS NOT NULL;
CREATE UNIQUE INDEX transactions_by_event ON transactions(event_seq) WHERE event_seq IS NOT NULL;
CREATE TRIGGER transactions_hash_unique BEFORE INSERT ON transactions
WHEN EXISTS (SELECT 1 FROM transactions WHERE substr(tx_hash, 3, 16) = substr(NEW.tx_hash, 3, 16) AND tx_hash = NEW.tx_hash)
BEGIN
  SELECT RAISE(ABORT, 'a transaction hash is stored once');
END;
CREATE TRIGGER transactions_sealed_once BEFORE UPDATE ON transactions
WHEN OLD.status <> 'pending'
BEGIN
  SELECT RAISE(ABORT, 'a sealed transaction never changes');
END;
CREATE TRIGGER transactions_not_deleted BEFORE DELETE ON transactions
BEGIN
  SELECT RAISE(ABORT, 'transactions are never deleted');
END;
CREATE TRIGGER transactions_sealed_into_newest BEFORE UPDATE ON transactions
WHEN NEW.block_number IS NOT (SELECT MAX(number) FROM blocks)
  OR NEW.tx_hash <> OLD.tx_hash OR NEW.amount <> OLD.amount OR NEW.from_id <> OLD.from_id OR NEW.to_id <> OLD.to_id
  OR NEW.token <> OLD.token OR NEW.type <> OLD.type OR NEW.metadata <> OLD.metadata OR NEW.nonce <> OLD.nonce
  OR NEW.timestamp <> OLD.timestamp OR NEW.event_seq IS NOT OLD.event_seq
  OR NEW.min_receive IS NOT OLD.min_receive OR NEW.token_out IS NOT OLD.token_out
BEGIN
  SELECT RAISE(ABORT, 'a pending transaction may only be sealed, unchanged, into the newest block');
END;
`,
  },
  {
    // Idempotency keys in a table whose rows are appended in order, found through a unique index of
    // (caller, key) alone: the table was ordered by (caller, key) itself (WITHOUT ROWID), so each keyed
    // submission wrote its whole row (about 200 bytes) at a random place, four times the pages of an
    // index of the keys (docs/performance.md, "Idempotency keys on SQLite"). The statements, the
    // uniqueness and ON CONFLICT (caller, key) are unchanged; the table is copied once at start-up.
    version: 14,
    sql: `
CREATE TABLE idempotency_keys_in_order (
  caller TEXT NOT NULL,
  key TEXT NOT NULL,
  request_hash TEXT NOT NULL,
  tx_hash TEXT NOT NULL,
  timestamp INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  UNIQUE (caller, key)
);
INSERT INTO idempotency_keys_in_order (caller, key, request_hash, tx_hash, timestamp, created_at)
  SELECT caller, key, request_hash, tx_hash, timestamp, created_at FROM idempotency_keys ORDER BY created_at;
DROP TABLE idempotency_keys;
ALTER TABLE idempotency_keys_in_order RENAME TO idempotency_keys;
CREATE INDEX idempotency_keys_by_age ON idempotency_keys(created_at);
`,
  },
  {
    // The transaction hash's index written in merges (sqlite-hash-index.ts): a table of prefixes and row
    // numbers holding every row up to a mark, the rows after it found in memory until a merge writes
    // them in sorted ranges. The index over every row, written on accept, put nearly every transaction of
    // a group commit on a page of its own (docs/performance.md, "The transaction hash's index written in
    // merges"). A hash is still stored once: the store checks before it appends, and the table's trigger
    // refuses an entry for a second row with the same hash. Filled once, at start-up, from the rows held.
    version: 15,
    sql: `
CREATE TABLE transaction_hashes (
  prefix TEXT NOT NULL,
  seq INTEGER NOT NULL,
  PRIMARY KEY (prefix, seq)
) WITHOUT ROWID;
CREATE TABLE transaction_hashes_merged (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  through_seq INTEGER NOT NULL CHECK (through_seq >= 0)
);
INSERT INTO transaction_hashes (prefix, seq) SELECT substr(tx_hash, 3, 16), seq FROM transactions ORDER BY 1, 2;
INSERT INTO transaction_hashes_merged (id, through_seq) VALUES (1, coalesce((SELECT max(seq) FROM transactions), 0));
DROP TRIGGER transactions_hash_unique;
DROP INDEX transactions_by_hash_prefix;
CREATE TRIGGER transaction_hashes_unique BEFORE INSERT ON transaction_hashes
WHEN EXISTS (SELECT 1 FROM transaction_hashes h JOIN transactions t ON t.seq = h.seq
  WHERE h.prefix = NEW.prefix AND h.seq <> NEW.seq AND t.tx_hash = (SELECT tx_hash FROM transactions WHERE seq = NEW.seq))
BEGIN
  SELECT RAISE(ABORT, 'a transaction hash is stored once');
END;
CREATE TRIGGER transaction_hashes_kept BEFORE DELETE ON transaction_hashes
BEGIN
  SELECT RAISE(ABORT, 'the transaction hash index is never deleted from');
END;
CREATE TRIGGER transaction_hashes_unchanged BEFORE UPDATE ON transaction_hashes
BEGIN
  SELECT RAISE(ABORT, 'the transaction hash index is never changed');
END;
CREATE TRIGGER transaction_hashes_merged_forward BEFORE UPDATE ON transaction_hashes_merged
WHEN NEW.through_seq < OLD.through_seq OR NEW.id <> OLD.id
BEGIN
  SELECT RAISE(ABORT, 'the hash index mark only moves forward');
END;
CREATE TRIGGER transaction_hashes_merged_kept BEFORE DELETE ON transaction_hashes_merged
BEGIN
  SELECT RAISE(ABORT, 'the hash index mark is never deleted');
END;
`,
  },
];
