/**
 * The CLI's commands that work on a database itself, with no service involved: `tabula backup <file>`
 * (an online backup of an SQLite ledger) and `tabula audit` (the offline audit of either store). The
 * database is found as the service finds it: `--database-url`, else DATABASE_URL, else the default
 * SQLite file; a plain file path is taken as an SQLite file. Loaded only when one of them runs.
 */
import path from 'node:path';
import type { AuditReader } from '../audit/audit-reader.js';
import { auditLedger, type AuditSummary } from '../audit/ledger-audit.js';
import { ConfigError, DATABASE_URL_DEFAULT, parseDatabaseUrl, type DatabaseConfig } from '../config.js';
import { PostgresAuditReader } from '../store/postgres/postgres-audit-reader.js';
import { backupSqlite, BackupRefused } from '../store/sqlite/sqlite-backup.js';
import { SqliteAuditReader } from '../store/sqlite/sqlite-audit-reader.js';
import { UsageError, type Environment } from './cli-config.js';
import { parseCommandLine } from './command-line.js';
import { print, type Output } from './output.js';
import { ProgressBar } from './progress-bar.js';
import { reportFailure } from './verify-command.js';

export type DatabaseCommandIo = { stdout: Output['stdout']; stderr: Output['stderr']; env: Environment };

export const DATABASE_COMMANDS = ['backup', 'audit'] as const;

const EXIT_USAGE = 2;

const OPTIONS = {
  backup: { 'database-url': { type: 'string' }, json: { type: 'boolean', default: false } },
  audit: { 'database-url': { type: 'string' }, json: { type: 'boolean', default: false }, progress: { type: 'boolean', default: false } },
} as const;

export async function runDatabaseCommand(command: (typeof DATABASE_COMMANDS)[number], args: string[], io: DatabaseCommandIo): Promise<number> {
  const { values, positionals } = parseCommandLine(args, OPTIONS[command]);
  const database = databaseOf(values['database-url'], io.env);
  const out: Output = { json: values.json === true, stdout: io.stdout, stderr: io.stderr };
  if (command === 'backup') return backupCommand(database, positionals, out);
  if (positionals.length > 0) throw new UsageError('audit takes no arguments; name the database with --database-url');
  return auditCommand(database, out, 'progress' in values && values.progress === true);
}

/** `--database-url`, DATABASE_URL or the default, as the service reads it; a bare path is an SQLite file. */
export function databaseOf(flag: string | undefined, env: Environment): DatabaseConfig {
  const given = flag?.trim() || env.DATABASE_URL?.trim() || DATABASE_URL_DEFAULT;
  // A URL of another scheme is refused by the parser below, never taken for a file name.
  const url = /^(sqlite:|[a-z][a-z0-9+.-]*:\/\/)/i.test(given) ? given : `sqlite:${given}`;
  try {
    return parseDatabaseUrl(url);
  } catch (error) {
    if (error instanceof ConfigError) throw new UsageError(`--database-url / ${error.message}`);
    throw error;
  }
}

async function backupCommand(database: DatabaseConfig, positionals: string[], out: Output): Promise<number> {
  const [file] = positionals;
  if (file === undefined || positionals.length !== 1) throw new UsageError('expected exactly one backup file, e.g. tabula backup backups/ledger.db');
  if (database.kind === 'postgres') {
    out.stderr.write(postgresBackupGuidance(database, file));
    return EXIT_USAGE;
  }
  if (database.path === ':memory:') throw new UsageError('an in-memory database cannot be backed up');
  let report;
  try {
    report = await backupSqlite(database.path, path.resolve(file));
  } catch (error) {
    if (error instanceof BackupRefused) throw new UsageError(error.message);
    throw error;
  }
  const head = report.latest_block === null ? 'no block' : `block ${report.latest_block.number} (${report.latest_block.hash})`;
  print(out, { backed_up: true, integrity_check: 'ok', ...report }, () => [
    `backed up ${database.path} to ${report.file} (${report.bytes} bytes, ${Math.round(report.duration_ms)} ms)`,
    `integrity_check  ok`,
    `last block       ${head}`,
    `transactions     ${report.sealed_transactions} sealed, ${report.pending_transactions} pending`,
    `check it with:   tabula audit --database-url ${report.file}`,
  ].join('\n'));
  return 0;
}

/**
 * PostgreSQL is backed up with pg_dump: the exact commands, with the URL's password left out. A ledger
 * in a schema of its own (`?schema=`) is dumped alone; one in the default schema with its whole
 * database (a dump of `public` alone cannot be restored: every new database already has it).
 */
function postgresBackupGuidance(database: Extract<DatabaseConfig, { kind: 'postgres' }>, file: string): string {
  const url = new URL(database.url);
  url.password = '';
  const dump = file.endsWith('.dump') ? file : `${file}.dump`;
  const schema = database.schema === null ? '' : ` --schema=${database.schema}`;
  const restored = database.schema === null ? '<url of the restored database>' : `<url of the restored database>?schema=${database.schema}`;
  return [
    'tabula backup copies SQLite ledgers only. Back up PostgreSQL with pg_dump, which takes one consistent',
    'snapshot while every instance keeps running:',
    '',
    `  pg_dump --format=custom${schema} --file=${dump} '${url.toString()}'`,
    '',
    'Restore it into an empty database (createdb), then audit the restored copy before using it:',
    '',
    `  pg_restore --exit-on-error --dbname='<url of the empty database>' ${dump}`,
    `  tabula audit --database-url '${restored}'`,
    '',
    'See docs/operations.md, "Backup and restore".',
    '',
  ].join('\n');
}

async function auditCommand(database: DatabaseConfig, out: Output, progress_flag: boolean): Promise<number> {
  const reader = await openReader(database);
  const show_progress = progress_flag || out.stderr.isTTY === true;
  // Made at the first page, when the total is known.
  const progress: { bar: ProgressBar | null } = { bar: null };
  const on_progress = (done: number, total: number): void => {
    progress.bar ??= new ProgressBar(out.stderr, total, 'transactions replayed');
    progress.bar.update(done);
  };
  const started_ms = performance.now();
  let result;
  try {
    result = await auditLedger(reader, show_progress ? { on_progress } : {});
  } finally {
    progress.bar?.finish();
    await reader.close();
  }
  const duration_ms = Math.round(performance.now() - started_ms);
  if (!result.ok) {
    const { discrepancy } = result;
    const detail = discrepancy.tx_hash === null ? discrepancy.reason : `transaction ${discrepancy.tx_hash}: ${discrepancy.reason}`;
    return reportFailure(out, 'audit', discrepancy, `${detail} [${discrepancy.code}]`);
  }
  print(out, { audited: true, location: reader.location, duration_ms, ...result.summary }, () => auditLines(reader.location, result.summary, duration_ms));
  return 0;
}

async function openReader(database: DatabaseConfig): Promise<AuditReader> {
  if (database.kind === 'postgres') return PostgresAuditReader.open({ url: database.url, schema: database.schema });
  if (database.path === ':memory:') throw new UsageError('an in-memory database has nothing to audit');
  try {
    return SqliteAuditReader.open(database.path);
  } catch (error) {
    throw new Error(`cannot open the SQLite ledger ${database.path}: ${(error as Error).message}`, { cause: error });
  }
}

function auditLines(location: string, summary: AuditSummary, duration_ms: number): string {
  const head = summary.head as NonNullable<AuditSummary['head']>;
  return [
    `audited ${location}: blocks 0..${head.number} (${summary.blocks} blocks), ${summary.transactions_replayed} transactions replayed from genesis, ${summary.unsealed_transactions} pending, in ${(duration_ms / 1000).toFixed(1)} s`,
    'every transaction hash, Merkle root, block hash and parent link recomputed; every outcome and running total replayed;',
    `the ${summary.balances} stored balances and ${summary.accounts} accounts are exactly the replayed ones`,
    `the ${summary.balance_roots} stored balance roots are those of the replayed balances${summary.balance_roots < summary.blocks ? ` (${summary.blocks - summary.balance_roots} blocks sealed before balance commitments have none)` : ''}`,
    `head  block ${head.number}  ${head.hash}`,
  ].join('\n');
}
