/** System accounts: ids beginning with `@`, held by the ledger itself (the market's pool is `@pool`). */
export const SYSTEM_ACCOUNT_PREFIX = '@';
/** The constant-product pool's account: its two balances are the market's reserves. */
export const POOL_ACCOUNT = '@pool';

export function isSystemAccount(user_id: string): boolean {
  return user_id.startsWith(SYSTEM_ACCOUNT_PREFIX);
}
