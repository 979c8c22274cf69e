/**
 * An online backup of an SQLite ledger file with SQLite's backup API, safe while a service keeps
 * writing it: the source is opened read-only and copied in one backup step, which reads one snapshot
 * (in WAL mode it blocks no writer, and sees every commit made before it began). The copy is written
 * under a temporary name beside the target, turned into a self-contained file (rollback journal, no
 * -wal beside it), checked with `PRAGMA integrity_check`, made durable, and only then linked into
 * place: a target that exists is a complete, checked backup.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from './sqlite-driver.js';

export type SqliteBackupReport = {
  file: string;
  bytes: number;
  duration_ms: number;
  /** The newest block in the copy (null: it holds no chain). */
  latest_block: { number: number; hash: string } | null;
  /** Sealed transactions, as the newest block's running total states them. */
  sealed_transactions: number;
  /** Transactions still pending when the backup was taken. */
  pending_transactions: number;
};

/** Pages copied per backup step: all of them, so the copy is one snapshot and never restarts. */
const ALL_PAGES = 0x7fffffff;

export class BackupRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BackupRefused';
  }
}

export async function backupSqlite(source_path: string, target_path: string): Promise<SqliteBackupReport> {
  if (!fs.existsSync(source_path)) throw new BackupRefused(`no database file at ${source_path}`);
  if (fs.existsSync(target_path)) throw new BackupRefused(`${target_path} exists: a backup never overwrites a file`);
  if (!fs.existsSync(path.dirname(target_path))) throw new BackupRefused(`the folder ${path.dirname(target_path)} does not exist`);
  const started_ms = performance.now();
  const partial = `${target_path}.partial-${process.pid}`;
  try {
    await copySnapshot(source_path, partial);
    const report = checkCopy(partial);
    syncFile(partial);
    // A hard link, unlike a rename, fails if the target appeared meanwhile: never overwrite.
    fs.linkSync(partial, target_path);
    syncFolder(path.dirname(target_path));
    return { file: target_path, bytes: fs.statSync(target_path).size, duration_ms: performance.now() - started_ms, ...report };
  } finally {
    for (const leftover of [partial, `${partial}-journal`, `${partial}-wal`, `${partial}-shm`]) fs.rmSync(leftover, { force: true });
  }
}

async function copySnapshot(source_path: string, target_path: string): Promise<void> {
  const source = new Database(source_path, { readonly: true, fileMustExist: true });
  try {
    source.pragma('busy_timeout = 5000');
    await source.backup(target_path, { progress: () => ALL_PAGES });
  } finally {
    source.close();
  }
}

/** Makes the copy one self-contained file, checks it, and reads what it holds. */
function checkCopy(file: string): Omit<SqliteBackupReport, 'file' | 'bytes' | 'duration_ms'> {
  const db = new Database(file, { fileMustExist: true });
  try {
    db.pragma('journal_mode = DELETE');
    const integrity = db.pragma('integrity_check', { simple: true });
    if (integrity !== 'ok') throw new Error(`the copy fails PRAGMA integrity_check: ${String(integrity)}`);
    const latest = db.prepare('SELECT number, hash, total_transactions FROM blocks ORDER BY number DESC LIMIT 1').get() as
      { number: number; hash: string; total_transactions: number } | undefined;
    const pending = db.prepare('SELECT COUNT(*) FROM transactions WHERE block_number IS NULL').pluck().get() as number;
    return {
      latest_block: latest === undefined ? null : { number: latest.number, hash: latest.hash },
      sealed_transactions: latest?.total_transactions ?? 0,
      pending_transactions: pending,
    };
  } finally {
    db.close();
  }
}

function syncFile(file: string): void {
  const handle = fs.openSync(file, 'r');
  try {
    fs.fsyncSync(handle);
  } finally {
    fs.closeSync(handle);
  }
}

/** Makes the rename durable. */
function syncFolder(folder: string): void {
  syncFile(folder);
}
