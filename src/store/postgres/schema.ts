/**
 * PostgreSQL schema, applied in order at start-up under an advisory lock (see `migrate` in
 * postgres-store.ts). Names are unqualified: the connection's search_path picks the schema. The
 * database enforces the chain's invariants whatever the writers do, which is what lets several
 * instances share it:
 * - blocks: one at a time per chain (an advisory lock taken by the insert trigger), each number the
 *   previous plus one, each parent_hash the previous block's hash, timestamps never going back;
 *   a block's sealed transactions are exactly its positions 0..count−1 (checked at commit); blocks
 *   never change or go away;
 * - transactions: written once and never changed or deleted; pending exactly while they have no
 *   outcome (and are queued in pending_transactions); an outcome is written only into the newest block,
 *   once, and never changes;
 * - balances never go below zero; amounts are 64-bit integers of base units.
 */

/** Advisory lock classes (the first key of the two-key form); the second key is hashtext(schema). */
export const LOCK_CLASS = { migrations: 0x7461_6201, chain: 0x7461_6202, sealer: 0x7461_6203, publisher: 0x7461_6204, history: 0x7461_6205 } as const;

/** A transaction's status, from its outcome read as `o` (none while pending; see version 11). */
export const OUTCOME_STATUS_SQL = "CASE WHEN o.seq IS NULL THEN 'pending' WHEN o.error IS NULL THEN 'confirmed' ELSE 'failed' END";

export const MIGRATIONS: ReadonlyArray<{ version: number; sql: string }> = [
  {
    version: 1,
    sql: `
CREATE TABLE settings (
  name TEXT PRIMARY KEY,
  value TEXT NOT NULL
);

CREATE TABLE blocks (
  number BIGINT PRIMARY KEY CHECK (number >= 0),
  hash TEXT NOT NULL UNIQUE CHECK (hash ~ '^0x[0-9a-f]{64}$'),
  parent_hash TEXT NOT NULL CHECK (parent_hash ~ '^0x[0-9a-f]{64}$'),
  timestamp BIGINT NOT NULL CHECK (timestamp >= 0),
  transactions_count INTEGER NOT NULL CHECK (transactions_count >= 0),
  transactions_root TEXT NOT NULL CHECK (transactions_root ~ '^0x[0-9a-f]{64}$'),
  total_transactions BIGINT NOT NULL CHECK (total_transactions >= 0),
  total_users BIGINT NOT NULL CHECK (total_users >= 0),
  transfer_volume_totals TEXT NOT NULL,
  CHECK (number = 0 OR transactions_count > 0)
);
CREATE INDEX blocks_by_timestamp ON blocks (timestamp, number);

CREATE FUNCTION blocks_link() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  parent RECORD;
BEGIN
  -- Block writers of this chain queue here; the query below then sees the block committed before.
  PERFORM pg_advisory_xact_lock(${LOCK_CLASS.chain}, hashtext(TG_TABLE_SCHEMA));
  SELECT number, hash, timestamp INTO parent FROM blocks ORDER BY number DESC LIMIT 1;
  IF NOT FOUND THEN
    IF NEW.number <> 0 OR NEW.parent_hash <> '0x0000000000000000000000000000000000000000000000000000000000000000' THEN
      RAISE EXCEPTION 'block % does not extend the chain: the chain is empty', NEW.number USING ERRCODE = 'integrity_constraint_violation';
    END IF;
  ELSIF NEW.number <> parent.number + 1 OR NEW.parent_hash <> parent.hash OR NEW.timestamp < parent.timestamp THEN
    RAISE EXCEPTION 'block % does not extend the chain at block %', NEW.number, parent.number USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER blocks_link BEFORE INSERT ON blocks FOR EACH ROW EXECUTE FUNCTION blocks_link();

CREATE FUNCTION append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP USING ERRCODE = 'integrity_constraint_violation';
END $$;
CREATE TRIGGER blocks_immutable BEFORE UPDATE OR DELETE ON blocks FOR EACH ROW EXECUTE FUNCTION append_only();
CREATE TRIGGER blocks_not_truncated BEFORE TRUNCATE ON blocks FOR EACH STATEMENT EXECUTE FUNCTION append_only();

CREATE TABLE transactions (
  seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  tx_hash TEXT NOT NULL UNIQUE CHECK (tx_hash ~ '^0x[0-9a-f]{64}$'),
  from_id TEXT NOT NULL,
  to_id TEXT NOT NULL,
  amount BIGINT NOT NULL CHECK (amount > 0),
  token TEXT NOT NULL,
  type TEXT NOT NULL CHECK (type IN ('transfer', 'mint', 'burn')),
  metadata TEXT NOT NULL,
  nonce TEXT NOT NULL,
  timestamp BIGINT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('pending', 'confirmed', 'failed')),
  block_number BIGINT REFERENCES blocks (number),
  position INTEGER CHECK (position >= 0),
  error TEXT,
  CHECK ((status = 'pending') = (block_number IS NULL)),
  CHECK ((block_number IS NULL) = (position IS NULL)),
  CHECK ((status = 'failed') = (error IS NOT NULL))
);
CREATE INDEX transactions_pending ON transactions (seq) WHERE status = 'pending';
CREATE UNIQUE INDEX transactions_by_block ON transactions (block_number, position) WHERE block_number IS NOT NULL;

CREATE FUNCTION transactions_sealed_once() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    RAISE EXCEPTION 'transactions are never deleted' USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  IF OLD.status <> 'pending' THEN
    RAISE EXCEPTION 'transaction % is sealed: it never changes', OLD.tx_hash USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  IF NEW.block_number IS DISTINCT FROM (SELECT MAX(number) FROM blocks) OR NEW.tx_hash <> OLD.tx_hash OR NEW.seq <> OLD.seq
     OR NEW.from_id <> OLD.from_id OR NEW.to_id <> OLD.to_id OR NEW.amount <> OLD.amount OR NEW.token <> OLD.token
     OR NEW.type <> OLD.type OR NEW.metadata <> OLD.metadata OR NEW.nonce <> OLD.nonce OR NEW.timestamp <> OLD.timestamp THEN
    RAISE EXCEPTION 'transaction % may only be sealed, unchanged, into the newest block', OLD.tx_hash USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER transactions_sealed_once BEFORE UPDATE OR DELETE ON transactions FOR EACH ROW EXECUTE FUNCTION transactions_sealed_once();
CREATE TRIGGER transactions_not_truncated BEFORE TRUNCATE ON transactions FOR EACH STATEMENT EXECUTE FUNCTION append_only();

CREATE FUNCTION blocks_complete() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  sealed RECORD;
BEGIN
  SELECT COUNT(*) AS count, MAX(position) AS last INTO sealed FROM transactions WHERE block_number = NEW.number;
  IF sealed.count <> NEW.transactions_count OR (sealed.count > 0 AND sealed.last <> sealed.count - 1) THEN
    RAISE EXCEPTION 'block % seals % transactions, not the % it declares', NEW.number, sealed.count, NEW.transactions_count
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER blocks_complete AFTER INSERT ON blocks DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION blocks_complete();

CREATE TABLE balances (
  user_id TEXT NOT NULL,
  token TEXT NOT NULL,
  units BIGINT NOT NULL CHECK (units >= 0),
  PRIMARY KEY (user_id, token)
);

CREATE TABLE accounts (
  user_id TEXT PRIMARY KEY,
  last_transfer_at BIGINT
);
CREATE INDEX accounts_by_last_transfer ON accounts (last_transfer_at) WHERE last_transfer_at IS NOT NULL;

CREATE TABLE idempotency_keys (
  caller TEXT NOT NULL,
  key TEXT NOT NULL,
  request_hash TEXT NOT NULL,
  tx_hash TEXT NOT NULL,
  timestamp BIGINT NOT NULL,
  created_at BIGINT NOT NULL,
  PRIMARY KEY (caller, key)
);
CREATE INDEX idempotency_keys_by_age ON idempotency_keys (created_at);
`,
  },
  {
    // An account's history: the transactions it sent and received, each side an index range read
    // newest first from a position. IF NOT EXISTS lets an operator build them beforehand on a large
    // ledger with CREATE INDEX CONCURRENTLY (docs/operations.md), so that this step finds them made.
    version: 2,
    sql: `
CREATE INDEX IF NOT EXISTS transactions_by_from ON transactions (from_id, seq);
CREATE INDEX IF NOT EXISTS transactions_by_to ON transactions (to_id, seq);
`,
  },
  {
    // The event log (src/events/event.ts), derived from what the write transactions store: each
    // transaction's accepted event is its event_seq; each block's events start at its first_sequence
    // (outcomes in position order, then block.sealed). Writers number events by updating the one
    // counter row last in their transaction: its row lock makes commit order the sequence order, and a
    // rolled-back writer gives its numbers back, so the log has no gap. Adding a nullable column is
    // instant; ledgers older than this version have no events before it.
    version: 3,
    sql: `
ALTER TABLE transactions ADD COLUMN event_seq BIGINT;
CREATE UNIQUE INDEX transactions_by_event ON transactions (event_seq) WHERE event_seq IS NOT NULL;

CREATE TABLE block_events (
  number BIGINT PRIMARY KEY REFERENCES blocks (number),
  first_sequence BIGINT NOT NULL UNIQUE CHECK (first_sequence > 0)
);
CREATE TRIGGER block_events_immutable BEFORE UPDATE OR DELETE ON block_events FOR EACH ROW EXECUTE FUNCTION append_only();
CREATE TRIGGER block_events_not_truncated BEFORE TRUNCATE ON block_events FOR EACH STATEMENT EXECUTE FUNCTION append_only();

CREATE TABLE event_counter (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  last_sequence BIGINT NOT NULL CHECK (last_sequence >= 0)
);
INSERT INTO event_counter (id, last_sequence) VALUES (1, 0);
CREATE FUNCTION event_counter_forward() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.last_sequence < OLD.last_sequence OR NEW.id <> OLD.id THEN
    RAISE EXCEPTION 'the event counter never goes back' USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER event_counter_forward BEFORE UPDATE ON event_counter FOR EACH ROW EXECUTE FUNCTION event_counter_forward();
CREATE TRIGGER event_counter_kept BEFORE DELETE ON event_counter FOR EACH ROW EXECUTE FUNCTION append_only();

CREATE OR REPLACE FUNCTION transactions_sealed_once() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    RAISE EXCEPTION 'transactions are never deleted' USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  IF OLD.status <> 'pending' THEN
    RAISE EXCEPTION 'transaction % is sealed: it never changes', OLD.tx_hash USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  IF NEW.block_number IS DISTINCT FROM (SELECT MAX(number) FROM blocks) OR NEW.tx_hash <> OLD.tx_hash OR NEW.seq <> OLD.seq
     OR NEW.from_id <> OLD.from_id OR NEW.to_id <> OLD.to_id OR NEW.amount <> OLD.amount OR NEW.token <> OLD.token
     OR NEW.type <> OLD.type OR NEW.metadata <> OLD.metadata OR NEW.nonce <> OLD.nonce OR NEW.timestamp <> OLD.timestamp
     OR NEW.event_seq IS DISTINCT FROM OLD.event_seq THEN
    RAISE EXCEPTION 'transaction % may only be sealed, unchanged, into the newest block', OLD.tx_hash USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RETURN NEW;
END $$;
`,
  },
  {
    // Webhooks (src/webhooks/webhook-store.ts): the endpoints, each with its cursor in the event log and
    // its delivery lease, and the attempts made (the newest 1000 per endpoint are kept).
    version: 4,
    sql: `
CREATE TABLE webhook_endpoints (
  id TEXT PRIMARY KEY,
  url TEXT NOT NULL,
  description TEXT NOT NULL,
  types TEXT,
  accounts TEXT,
  secret TEXT NOT NULL,
  previous_secret TEXT,
  previous_secret_expires_at_ms BIGINT,
  status TEXT NOT NULL CHECK (status IN ('active', 'disabled')),
  disabled_reason TEXT,
  last_sequence BIGINT NOT NULL CHECK (last_sequence >= 0),
  failing_since_ms BIGINT,
  failed_attempts INTEGER NOT NULL CHECK (failed_attempts >= 0),
  next_attempt_at_ms BIGINT NOT NULL,
  lease_owner TEXT,
  lease_expires_at_ms BIGINT,
  created_at_ms BIGINT NOT NULL,
  updated_at_ms BIGINT NOT NULL
);
CREATE INDEX webhook_endpoints_due ON webhook_endpoints (next_attempt_at_ms) WHERE status = 'active';

CREATE TABLE webhook_attempts (
  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  endpoint_id TEXT NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  event_id TEXT NOT NULL,
  sequence BIGINT NOT NULL,
  outcome TEXT NOT NULL CHECK (outcome IN ('delivered', 'failed', 'refused')),
  response_status INTEGER,
  latency_ms INTEGER NOT NULL,
  error TEXT,
  attempted_at_ms BIGINT NOT NULL,
  next_attempt_at_ms BIGINT,
  origin TEXT NOT NULL CHECK (origin IN ('scheduled', 'manual'))
);
CREATE INDEX webhook_attempts_by_endpoint ON webhook_attempts (endpoint_id, id);
`,
  },
  {
    // The failure budget (src/failure-budget): running totals of each account's debits, appended (by
    // submitters) and sealed (by the sealer; two tables, so the two never wait on each other's row
    // locks), read in O(1) to tell whether a new debit is covered; and what each subject has been
    // charged in the current hour. NUMERIC: totals may pass 2^63. Submitted totals start from the
    // debits pending now, so that submitted − settled is always what is pending.
    version: 5,
    sql: `
CREATE TABLE outgoing_submitted (
  user_id TEXT NOT NULL,
  token TEXT NOT NULL,
  units NUMERIC NOT NULL CHECK (units >= 0),
  PRIMARY KEY (user_id, token)
);
CREATE TABLE outgoing_settled (
  user_id TEXT NOT NULL,
  token TEXT NOT NULL,
  units NUMERIC NOT NULL CHECK (units >= 0),
  PRIMARY KEY (user_id, token)
);
CREATE TABLE failure_budgets (
  subject TEXT NOT NULL,
  window_start_s BIGINT NOT NULL,
  charged INTEGER NOT NULL CHECK (charged >= 0),
  PRIMARY KEY (subject, window_start_s)
);
INSERT INTO outgoing_submitted (user_id, token, units)
  SELECT from_id, token, SUM(amount) FROM transactions
  WHERE status = 'pending' AND type IN ('transfer', 'burn') GROUP BY from_id, token;
`,
  },
  {
    // The history tree (src/domain/shared/history-tree.ts): every perfect subtree of the RFC 6962 tree over the
    // block hashes, written with its block; ledgers older than this version are filled in at start.
    version: 6,
    sql: `
CREATE TABLE history_nodes (
  level INTEGER NOT NULL CHECK (level >= 0 AND level <= 52),
  idx BIGINT NOT NULL CHECK (idx >= 0),
  hash BYTEA NOT NULL,
  PRIMARY KEY (level, idx)
);
`,
  },
  {
    // The market (src/domain/market): swaps, their minimum and payout, each block's price and the running
    // USD volume of swaps, and the price candles kept as blocks are sealed. The widened CHECK is added
    // NOT VALID (every stored row already satisfies it), and nullable columns are instant to add.
    version: 7,
    sql: `
ALTER TABLE transactions DROP CONSTRAINT transactions_type_check;
ALTER TABLE transactions ADD CONSTRAINT transactions_type_check CHECK (type IN ('transfer', 'mint', 'burn', 'swap')) NOT VALID;
ALTER TABLE transactions ADD COLUMN min_receive BIGINT CHECK (min_receive IS NULL OR (type = 'swap' AND min_receive > 0));
ALTER TABLE transactions ADD COLUMN amount_out BIGINT CHECK (amount_out IS NULL OR (type = 'swap' AND status = 'confirmed' AND amount_out > 0));
ALTER TABLE transactions ADD COLUMN token_out TEXT CHECK ((type = 'swap') = (token_out IS NOT NULL));

ALTER TABLE blocks ADD COLUMN native_price TEXT;
ALTER TABLE blocks ADD COLUMN swap_volume_usd NUMERIC NOT NULL DEFAULT 0;

CREATE TABLE price_candles (
  interval TEXT NOT NULL CHECK (interval IN ('1m', '1h', '1d')),
  start BIGINT NOT NULL,
  open NUMERIC NOT NULL,
  high NUMERIC NOT NULL,
  low NUMERIC NOT NULL,
  close NUMERIC NOT NULL,
  volume_usd NUMERIC NOT NULL,
  PRIMARY KEY (interval, start)
);
`,
  },
  {
    // Sealing at set level: a block of 100,000 paid, per sealed row, a plpgsql guard (a function call
    // and a MAX(number) query) and a foreign-key check (a query on blocks). The same rules now hold
    // with no per-row query: a row-level WHEN condition (evaluated by the executor, no plpgsql) refuses
    // changing a sealed row or any column but the outcome; one statement-level check over the updated
    // rows refuses sealing into any block but the newest — which exists, and blocks are never deleted,
    // so the foreign key to blocks adds nothing. Deletes are refused per statement.
    version: 8,
    sql: `
ALTER TABLE transactions DROP CONSTRAINT transactions_block_number_fkey;
DROP TRIGGER transactions_sealed_once ON transactions;
CREATE FUNCTION transactions_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF OLD.status <> 'pending' THEN
    RAISE EXCEPTION 'transaction % is sealed: it never changes', OLD.tx_hash USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RAISE EXCEPTION 'transaction % may only be sealed, unchanged, into the newest block', OLD.tx_hash USING ERRCODE = 'integrity_constraint_violation';
END $$;
CREATE TRIGGER transactions_sealed_once BEFORE UPDATE ON transactions FOR EACH ROW
  WHEN (OLD.status <> 'pending' OR NEW.seq <> OLD.seq OR NEW.tx_hash <> OLD.tx_hash
     OR NEW.from_id <> OLD.from_id OR NEW.to_id <> OLD.to_id OR NEW.amount <> OLD.amount OR NEW.token <> OLD.token
     OR NEW.type <> OLD.type OR NEW.metadata <> OLD.metadata OR NEW.nonce <> OLD.nonce OR NEW.timestamp <> OLD.timestamp
     OR NEW.event_seq IS DISTINCT FROM OLD.event_seq
     OR NEW.min_receive IS DISTINCT FROM OLD.min_receive OR NEW.token_out IS DISTINCT FROM OLD.token_out)
  EXECUTE FUNCTION transactions_refuse_change();
CREATE TRIGGER transactions_not_deleted BEFORE DELETE ON transactions FOR EACH STATEMENT EXECUTE FUNCTION append_only();

CREATE FUNCTION transactions_sealed_into_newest() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  offender TEXT;
BEGIN
  SELECT tx_hash INTO offender FROM sealed_rows WHERE block_number IS DISTINCT FROM (SELECT MAX(number) FROM blocks) LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'transaction % may only be sealed, unchanged, into the newest block', offender USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER transactions_sealed_into_newest AFTER UPDATE ON transactions
  REFERENCING NEW TABLE AS sealed_rows
  FOR EACH STATEMENT EXECUTE FUNCTION transactions_sealed_into_newest();
`,
  },
  {
    // Balance commitments (src/balance-commitments/): the root of the balance tree after each block.
    // Blocks sealed before this version have none; at start the service stores the root of the newest block.
    version: 9,
    sql: `
CREATE TABLE balance_roots (
  number BIGINT PRIMARY KEY REFERENCES blocks (number),
  root TEXT NOT NULL CHECK (root ~ '^0x[0-9a-f]{64}$')
);
CREATE FUNCTION balance_roots_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'balance roots are immutable and append-only' USING ERRCODE = 'integrity_constraint_violation';
END $$;
CREATE TRIGGER balance_roots_immutable BEFORE UPDATE OR DELETE ON balance_roots FOR EACH ROW EXECUTE FUNCTION balance_roots_immutable();
`,
  },
  {
    // The failure budget's pending debits are kept in memory by each instance, exact at an event
    // sequence (postgres-failure-budget.ts), so the running totals of version 5 are no longer written
    // or read: dropped, so that nobody reads stale ones. (Instances of an older version must be stopped
    // before one of this version starts: they would fail their appends on the missing tables.)
    version: 10,
    sql: `
DROP TABLE outgoing_submitted;
DROP TABLE outgoing_settled;
`,
  },
  {
    // Outcomes in a table of their own. Sealing a block rewrote each of its transactions' rows: a new
    // row version with an entry in every index of the table (the status and block columns are indexed,
    // so no update was HOT), 24 µs a row of a block of 100,000 and three quarters of the sealer's time.
    // A transaction's row is now written once, when it is accepted, and never changes; sealing inserts
    // its outcome (block, position, error, amount paid out; the status follows: confirmed without an
    // error, failed with one, pending without an outcome) into transaction_outcomes, and takes it off
    // pending_transactions, the queue of rows without an outcome (its primary key is the sealer's
    // reading order; it replaces the partial index on status). Both keep the old guards at set level:
    // an outcome is never changed or deleted, is only written into the newest block, and pays out only
    // to a swap; a queued row is only ever deleted, by the statement that writes its outcome; a
    // transaction's row is never updated at all. Dropping columns rewrites nothing.
    version: 11,
    sql: `
CREATE TABLE transaction_outcomes (
  seq BIGINT PRIMARY KEY,
  block_number BIGINT NOT NULL,
  position INTEGER NOT NULL CHECK (position >= 0),
  error TEXT,
  amount_out BIGINT CHECK (amount_out IS NULL OR (error IS NULL AND amount_out > 0))
);
INSERT INTO transaction_outcomes (seq, block_number, position, error, amount_out)
  SELECT seq, block_number, position, error, amount_out FROM transactions WHERE block_number IS NOT NULL ORDER BY seq;
CREATE UNIQUE INDEX transaction_outcomes_by_block ON transaction_outcomes (block_number, position);
CREATE TABLE pending_transactions (
  seq BIGINT PRIMARY KEY
);
INSERT INTO pending_transactions (seq) SELECT seq FROM transactions WHERE status = 'pending' ORDER BY seq;

DROP TRIGGER transactions_sealed_once ON transactions;
DROP TRIGGER transactions_sealed_into_newest ON transactions;
DROP FUNCTION transactions_refuse_change();
DROP FUNCTION transactions_sealed_into_newest();
ALTER TABLE transactions DROP COLUMN status, DROP COLUMN block_number, DROP COLUMN position, DROP COLUMN error, DROP COLUMN amount_out;
CREATE TRIGGER transactions_immutable BEFORE UPDATE ON transactions FOR EACH STATEMENT EXECUTE FUNCTION append_only();

CREATE TRIGGER transaction_outcomes_immutable BEFORE UPDATE OR DELETE ON transaction_outcomes FOR EACH STATEMENT EXECUTE FUNCTION append_only();
CREATE TRIGGER transaction_outcomes_not_truncated BEFORE TRUNCATE ON transaction_outcomes FOR EACH STATEMENT EXECUTE FUNCTION append_only();
CREATE FUNCTION transaction_outcomes_sealed_into_newest() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  offender BIGINT;
BEGIN
  SELECT seq INTO offender FROM sealed_outcomes WHERE block_number IS DISTINCT FROM (SELECT MAX(number) FROM blocks) LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'transaction % may only be sealed into the newest block', offender USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  SELECT o.seq INTO offender FROM sealed_outcomes o LEFT JOIN transactions t ON t.seq = o.seq
    WHERE t.seq IS NULL OR (o.amount_out IS NOT NULL AND t.type <> 'swap') OR EXISTS (SELECT 1 FROM pending_transactions p WHERE p.seq = o.seq) LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'transaction % is not pending, or a payout to it is not a swap''s', offender USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER transaction_outcomes_sealed_into_newest AFTER INSERT ON transaction_outcomes
  REFERENCING NEW TABLE AS sealed_outcomes
  FOR EACH STATEMENT EXECUTE FUNCTION transaction_outcomes_sealed_into_newest();

CREATE TRIGGER pending_transactions_dequeued_only BEFORE UPDATE ON pending_transactions FOR EACH STATEMENT EXECUTE FUNCTION append_only();
CREATE FUNCTION pending_transactions_dequeued_sealed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  offender BIGINT;
BEGIN
  SELECT d.seq INTO offender FROM dequeued d WHERE NOT EXISTS (SELECT 1 FROM transaction_outcomes o WHERE o.seq = d.seq) LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'transaction % leaves the pending queue without an outcome', offender USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER pending_transactions_dequeued_sealed AFTER DELETE ON pending_transactions
  REFERENCING OLD TABLE AS dequeued
  FOR EACH STATEMENT EXECUTE FUNCTION pending_transactions_dequeued_sealed();
CREATE TRIGGER pending_transactions_not_truncated BEFORE TRUNCATE ON pending_transactions FOR EACH STATEMENT EXECUTE FUNCTION append_only();

CREATE OR REPLACE FUNCTION blocks_complete() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  sealed RECORD;
BEGIN
  SELECT COUNT(*) AS count, MAX(position) AS last INTO sealed FROM transaction_outcomes WHERE block_number = NEW.number;
  IF sealed.count <> NEW.transactions_count OR (sealed.count > 0 AND sealed.last <> sealed.count - 1) THEN
    RAISE EXCEPTION 'block % seals % transactions, not the % it declares', NEW.number, sealed.count, NEW.transactions_count
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RETURN NULL;
END $$;
-- Statistics from the start, so that the first plans take the new indexes (a table never analysed is guessed at ten pages).
ANALYZE transaction_outcomes;
ANALYZE pending_transactions;
`,
  },
];
