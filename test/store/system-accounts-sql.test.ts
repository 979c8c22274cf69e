import { describe, expect, it } from 'vitest';
import { POOL_ACCOUNT } from '../../src/domain/system-accounts.js';
import { POOL_ACCOUNT_SQL, sqlStringLiteral } from '../../src/store/system-accounts-sql.js';

describe('system accounts in SQL', () => {
  it('spells the pool account as the domain names it, quotes doubled', () => {
    expect(POOL_ACCOUNT_SQL).toBe(`'${POOL_ACCOUNT}'`);
    expect(sqlStringLiteral("it's")).toBe("'it''s'");
  });
});
