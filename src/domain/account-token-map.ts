/**
 * Values by (account, token) without building a key string for every look-up: one map per token (a
 * ledger has two). The failure budget looks up every debit of every group commit here, and the balance
 * book every balance of every block it seals, so the key strings they no longer make were garbage on the
 * submit and seal paths.
 */
export class AccountTokenMap<Value> {
  private readonly by_token = new Map<string, Map<string, Value>>();
  private count = 0;

  get(user_id: string, token: string): Value | undefined {
    return this.by_token.get(token)?.get(user_id);
  }

  set(user_id: string, token: string, value: Value): void {
    let accounts = this.by_token.get(token);
    if (accounts === undefined) {
      accounts = new Map();
      this.by_token.set(token, accounts);
    }
    const size_before = accounts.size;
    accounts.set(user_id, value);
    this.count += accounts.size - size_before;
  }

  delete(user_id: string, token: string): void {
    if (this.by_token.get(token)?.delete(user_id) === true) this.count -= 1;
  }

  clear(): void {
    this.by_token.clear();
    this.count = 0;
  }

  get size(): number {
    return this.count;
  }

  /** Every value, token by token. */
  *values(): IterableIterator<Value> {
    for (const accounts of this.by_token.values()) yield* accounts.values();
  }
}
