/** The ledger's system accounts as SQL string literals, for the statements of both stores that name them. */
import { POOL_ACCOUNT } from '../domain/system-accounts.js';

/** `'@pool'`: the market pool's account (domain/system-accounts.ts), spelt once. */
export const POOL_ACCOUNT_SQL = sqlStringLiteral(POOL_ACCOUNT);

/** A string literal of standard SQL (SQLite and PostgreSQL alike): quotes doubled. */
export function sqlStringLiteral(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}
