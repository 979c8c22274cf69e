/**
 * Faults of the storage itself — a full disk, a read-only file system or standby, a lost connection —
 * as opposed to bugs or refused input. Each store says which of its driver's errors are such faults;
 * this turns them into `StorageUnavailableError` (503 with Retry-After) and tells the store's
 * `StorageHealth` of every write's outcome, so readiness and the logs follow the storage.
 */
import { StorageUnavailableError } from '../domain/shared/errors.js';

/**
 * The database named by DATABASE_URL cannot be opened as a ledger: a file that cannot be opened or is
 * not SQLite, a read-only one, another application's database, a PostgreSQL server out of reach. An
 * operator's problem, not a bug: start-up ends with its message alone (run-service.ts), no stack.
 */
export class StorageOpenError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StorageOpenError';
  }
}

/** Told of every write's outcome (implemented by service/storage-health.ts). */
export type StorageHealthReporter = {
  writeFailed(operation: string, error: unknown): void;
  writeSucceeded(): void;
};

/** Node's own codes for a file system that cannot take a write, and for a connection that broke. */
const SYSTEM_FAULT_CODES = new Set([
  'ENOSPC', 'EDQUOT', 'EROFS', 'EIO',
  'ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN',
]);

export function isSystemFault(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && SYSTEM_FAULT_CODES.has(code);
}

/**
 * Runs one write; a storage fault becomes StorageUnavailableError and is reported, success is
 * reported too. Anything else (a constraint refusing a bad block, a bug) passes through unchanged.
 */
export async function guardWrite<T>(
  operation: string, health: StorageHealthReporter | null, is_fault: (error: unknown) => boolean, write: () => Promise<T>,
): Promise<T> {
  let result: T;
  try {
    result = await write();
  } catch (error) {
    throw translateFault(operation, health, is_fault, error);
  }
  health?.writeSucceeded();
  return result;
}

/** The error to throw for `error`: a StorageUnavailableError when it is a storage fault (reported), else itself. */
export function translateFault(operation: string, health: StorageHealthReporter | null, is_fault: (error: unknown) => boolean, error: unknown): unknown {
  if (!(error instanceof StorageUnavailableError) && !is_fault(error)) return error;
  health?.writeFailed(operation, error);
  if (error instanceof StorageUnavailableError) return error;
  return new StorageUnavailableError(`the store cannot ${operation} now: ${describe(error)}`, { cause: error });
}

function describe(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : 'storage fault';
}
