/**
 * The `tabula` command line end to end: the service started with `tabula serve`, tokens from
 * `tabula token`, every command in text and JSON, configuration from flags and environment, and
 * `verify` walking the chain, including catching a block altered directly in a copy of the database.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from '../../src/store/sqlite/sqlite-driver.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_SECRET } from '../support/in-process-tabula.js';
import { freePort, ROOT, ServiceProcess } from '../support/service-process.js';
import { ok, tabula } from './support/run-cli.js';

const BIN = path.join(ROOT, 'dist/cli/tabula.js');
const U63_MAX_TAB = '92233720368.54775807';
const API_KEY = 'cli-test-api-key-0123456789';

describe('tabula CLI', () => {
  let server: ServiceProcess;
  let env: Record<string, string>;
  let service_env: Record<string, string>;
  let minted: string;

  beforeAll(async () => {
    server = await ServiceProcess.start({ env: { JWT_SECRET: TEST_SECRET, API_KEYS: API_KEY }, command: [BIN, 'serve'] });
    service_env = { DATABASE_URL: server.env.DATABASE_URL as string, JWT_SECRET: TEST_SECRET, LOG_LEVEL: 'warn' };
    const token = ok(await tabula(['token', 'treasury', '--admin'], service_env)).stdout.trim();
    env = { TABULA_URL: server.url, TABULA_TOKEN: token, TABULA_API_KEY: API_KEY };
  });
  afterAll(async () => { await server?.close(); });

  it('tabula token mints a token the service accepts (admin scope included)', async () => {
    const user = ok(await tabula(['token', 'alice', '--ttl', '60'], service_env)).stdout.trim();
    expect(user.split('.')).toHaveLength(3);
    expect(ok(await tabula(['balance', 'alice', '--jwt', user], { TABULA_URL: server.url, TABULA_API_KEY: API_KEY })).stdout).toContain('user       alice');
    expect((await tabula(['token'], service_env)).status).toBe(2); // bad usage, as --help says
  });

  it('submit --wait prints the confirmed transaction; --json keeps the amount exact', async () => {
    const human = ok(await tabula(['submit', '--from', 'treasury', '--to', 'alice', '--amount', '100.5', '--token', 'TAB', '--type', 'mint', '--metadata', '{"memo":"hi"}', '--wait'], env));
    expect(human.stdout).toMatch(/^tx_hash +0x[0-9a-f]{64}$/m);
    expect(human.stdout).toMatch(/^status +confirmed$/m);
    expect(human.stdout).toMatch(/^amount +100\.5 TAB$/m);
    expect(human.stdout).toMatch(/^metadata +\{"memo":"hi"\}$/m);
    const json = ok(await tabula(['submit', '--from', 'treasury', '--to', 'whale', '--amount', U63_MAX_TAB, '--token', 'tab', '--type', 'mint', '--wait', '--json'], env));
    expect(json.stdout).toContain(`"amount":${U63_MAX_TAB},`);
    const record = JSON.parse(json.stdout) as { tx_hash: string; status: string; token: string; amount_text?: string };
    expect(record).toMatchObject({ status: 'confirmed', token: 'TAB' });
    expect(record.amount_text).toBeUndefined();
    minted = record.tx_hash;
  });

  it('submit without --wait prints the pending receipt', async () => {
    const run = ok(await tabula(['submit', '--from', 'treasury', '--to', 'bob', '--amount', '2', '--token', 'USDG', '--type', 'mint', '--idempotency-key', 'cli-key-1', '--json'], env));
    expect(JSON.parse(run.stdout)).toMatchObject({ status: 'pending', replayed: false, idempotency_key: 'cli-key-1' });
    const again = ok(await tabula(['submit', '--from', 'treasury', '--to', 'bob', '--amount', '2', '--token', 'USDG', '--type', 'mint', '--idempotency-key', 'cli-key-1'], env));
    expect(again.stdout).toMatch(/^replayed +true$/m);
  });

  it('tx, tx --proof, balance, blocks, block and stats, as text and as JSON', async () => {
    expect(ok(await tabula(['tx', minted], env)).stdout).toMatch(new RegExp(`^amount +${U63_MAX_TAB.replace('.', '\\.')} TAB$`, 'm'));
    const tx = JSON.parse(ok(await tabula(['tx', minted, '--json'], env)).stdout) as { block_number: number };
    const proof = JSON.parse(ok(await tabula(['tx', minted, '--proof', '--json'], env)).stdout) as { tx_hash: string; block_number: number };
    expect(proof).toMatchObject({ tx_hash: minted, block_number: tx.block_number });
    expect(ok(await tabula(['tx', minted, '--proof'], env)).stdout).toMatch(/^leaf_index +0 of 1$/m);
    expect(ok(await tabula(['balance', 'whale', '--json'], env)).stdout).toBe(`{"user_id":"whale","native":${U63_MAX_TAB},"usdg":0,"total_usd":92233720368.547758}\n`);
    expect(ok(await tabula(['balance', 'alice'], env)).stdout).toMatch(/^native +100\.5$/m);
    const page = JSON.parse(ok(await tabula(['blocks', '--limit', '2', '--json'], env)).stdout) as { blocks: { number: number }[]; total: number; limit: number };
    expect(page).toMatchObject({ limit: 2 });
    expect(page.blocks[0]?.number).toBe(page.total - 1);
    expect(ok(await tabula(['blocks'], env)).stdout).toContain(`of ${page.total} blocks (offset 0)`);
    const block = JSON.parse(ok(await tabula(['block', String(tx.block_number), '--json'], env)).stdout) as { transactions: string[] };
    expect(block.transactions).toContain(minted);
    expect(ok(await tabula(['block', 'latest'], env)).stdout).toMatch(new RegExp(`^number +${page.total - 1}$`, 'm'));
    const stats = JSON.parse(ok(await tabula(['stats', '--json'], env)).stdout) as { latest_block_number: number; native_price: number };
    expect(stats).toMatchObject({ latest_block_number: page.total - 1, native_price: 1 });
    expect(ok(await tabula(['stats'], env)).stdout).toMatch(/^native_price +1$/m);
  });

  it("history lists an account's transactions newest first, a page at a time, as text and as JSON", async () => {
    type Page = { user_id: string; transactions: Array<{ tx_hash: string; amount_text?: string }>; next_cursor: string | null };
    const first = JSON.parse(ok(await tabula(['history', 'treasury', '--limit', '2', '--json'], env)).stdout) as Page;
    expect(first).toMatchObject({ user_id: 'treasury', next_cursor: expect.any(String) });
    expect(first.transactions).toHaveLength(2);
    const rest = JSON.parse(ok(await tabula(['history', 'treasury', '--limit', '100', '--cursor', first.next_cursor as string, '--json'], env)).stdout) as Page;
    expect(rest.next_cursor).toBeNull();
    const hashes = [...first.transactions, ...rest.transactions].map((tx) => tx.tx_hash);
    expect(hashes).toContain(minted);
    expect(new Set(hashes).size).toBe(hashes.length);
    const whale = ok(await tabula(['history', 'whale', '--json'], env)).stdout;
    expect(whale).toContain(`"amount":${U63_MAX_TAB},`);
    expect((JSON.parse(whale) as Page).transactions[0]?.amount_text).toBeUndefined();

    const text = ok(await tabula(['history', 'whale'], env)).stdout;
    expect(text).toMatch(/^tx_hash +time +status +type +amount +from → to$/m);
    expect(text).toMatch(new RegExp(`^${minted}  \\S+Z +confirmed  mint +${U63_MAX_TAB.replace('.', '\\.')} TAB  treasury → whale$`, 'm'));
    expect(text).toMatch(/^1 transaction of whale, newest first; no older ones$/m);
    const paged = ok(await tabula(['history', 'treasury', '--limit', '1'], env)).stdout;
    expect(paged).toMatch(/^1 transaction of treasury, newest first; older ones: --cursor \S+$/m);
    expect(ok(await tabula(['history', 'nobody'], env)).stdout).toBe('no transactions of nobody\n');

    const bad_cursor = await tabula(['history', 'treasury', '--cursor', 'nope'], env);
    expect(bad_cursor.status).toBe(1);
    expect(bad_cursor.stderr).toContain('error 400 invalid_pagination');
    for (const args of [['history'], ['history', 'a', 'b'], ['history', 'a', '--limit', 'x'], ['history', 'a', '--offset', '1']]) {
      expect((await tabula(args, env)).status, args.join(' ')).toBe(2);
    }
  });

  it('flags win over the environment (TABULA_URL, TABULA_TOKEN, TABULA_API_KEY)', async () => {
    const closed = `http://127.0.0.1:${await freePort()}`;
    const wrong_env = { TABULA_URL: closed, TABULA_TOKEN: 'bad.token.here', TABULA_API_KEY: 'not-the-api-key-of-this-service' };
    expect((await tabula(['stats'], wrong_env)).status).toBe(1);
    const wrong_key = await tabula(['stats', '--url', server.url, '--jwt', env.TABULA_TOKEN as string], wrong_env);
    expect(wrong_key).toMatchObject({ status: 1 });
    expect(wrong_key.stderr).toContain('error 401 invalid_api_key');
    ok(await tabula(['stats', '--url', server.url, '--jwt', env.TABULA_TOKEN as string, '--api-key', API_KEY], wrong_env));
  });

  it('reports errors with their code (exit 1) and bad usage (exit 2)', async () => {
    const missing = await tabula(['stats'], { TABULA_URL: server.url, TABULA_API_KEY: API_KEY });
    expect(missing).toMatchObject({ status: 1, stdout: '' });
    expect(missing.stderr).toContain('error 401 missing_token');
    const precise = await tabula(['submit', '--from', 'treasury', '--to', 'x', '--amount', '0.000000001', '--token', 'TAB', '--type', 'mint'], env);
    expect(precise.status).toBe(1);
    expect(precise.stderr).toContain('error 400 amount_too_precise');
    expect(precise.stderr).toContain('amount: ');
    expect((await tabula(['tx', `0x${'ab'.repeat(32)}`], env)).stderr).toContain('error 404 transaction_not_found');
    const usage = [
      ['submit', '--from', 'a'], ['frobnicate'], ['stats', '--no-such-flag'], ['block', 'x'], ['verify', '--from', '3', '--to', '1'],
      // Caught before anything is sent: bad hashes and keys, a bad token request.
      ['tx', '0x123'], ['verify', '0xzz'], ['checkpoint', '--public-key', 'notbase64'],
      ['token'], ['token', 'a b'], ['token', 'alice', '--ttl', 'abc'], ['token', 'alice', '--admin', 'extra'],
      // An option given twice is refused rather than the last one taken.
      ['submit', '--from', 'treasury', '--to', 'twice', '--amount', '1', '--token', 'TAB', '--type', 'mint', '--amount', '2'],
      ['token', 'alice', '--ttl', '60', '--ttl', '120'], ['audit', '--json', '--json'],
    ];
    for (const args of usage) {
      const run = await tabula(args, env);
      expect(run.status, args.join(' ')).toBe(2);
      expect(run.stderr).toContain('see tabula --help');
    }
    expect(ok(await tabula(['--help'], {})).stdout).toContain('tabula verify');
    expect(ok(await tabula(['history', 'twice'], env)).stdout).toBe('no transactions of twice\n');
  });

  it('verify walks the chain from genesis; the progress bar goes to stderr with --progress only', async () => {
    const quiet = ok(await tabula(['verify'], env));
    expect(quiet.stdout).toMatch(/^verified blocks 0\.\.\d+ \(\d+ blocks\)/);
    expect(quiet.stderr).toBe('');
    const shown = ok(await tabula(['verify', '--progress'], env));
    expect(shown.stderr).toMatch(/\[#{30}\] 100% (\d+)\/\1 blocks verified\n$/);
    const json = JSON.parse(ok(await tabula(['verify', '--from', '1', '--json'], env)).stdout) as { verified: boolean; from: number };
    expect(json).toMatchObject({ verified: true, from: 1 });
  });

  it('verify <tx_hash> recomputes the hash and checks the inclusion proof', async () => {
    const run = ok(await tabula(['verify', minted], env));
    expect(run.stdout).toContain(`verified transaction ${minted} (confirmed)`);
    expect(JSON.parse(ok(await tabula(['verify', minted, '--json'], env)).stdout)).toMatchObject({ verified: true, tx_hash: minted, leaf_index: 0, tree_size: 1 });
  });

  it('verify --balance checks the balances against the newest block\'s balance root', async () => {
    const run = ok(await tabula(['verify', '--balance', 'alice'], env));
    expect(run.stdout).toMatch(/^verified the balances of alice after block \d+: [0-9.]+ native, 0 USDG$/m);
    const json = JSON.parse(ok(await tabula(['verify', '--balance', 'nobody', '--json'], env)).stdout);
    expect(json).toMatchObject({ verified: true, user_id: 'nobody', against: 'server_root', units: { TAB: '0', USDG: '0' } });
    expect(json.balance_root).toMatch(/^0x[0-9a-f]{64}$/);
  });
});

/** Three service processes and nine CLI runs, each a Node process of its own: 10 s alone, 16–30 s and more in CI's parallel run on Node 20. */
const TAMPERED_COPY_TIMEOUT_MS = 90_000;

describe('tabula verify on a tampered copy of the database', () => {
  it('exits 3 naming the first bad block, while the untouched original verifies', async () => {
    const original = await ServiceProcess.start({ env: { JWT_SECRET: TEST_SECRET } });
    const admin = { TABULA_URL: original.url, TABULA_TOKEN: await original.token('treasury', { admin: true }) };
    for (const to of ['a', 'b', 'c', 'd']) ok(await tabula(['submit', '--from', 'treasury', '--to', to, '--amount', '1', '--token', 'TAB', '--type', 'mint', '--wait'], admin));
    ok(await tabula(['verify'], admin));
    await original.stop(); // graceful: the WAL is checkpointed into the file

    const copy = path.join(original.data_dir, 'tampered.db');
    fs.copyFileSync(original.database_path, copy);
    const db = new Database(copy);
    db.exec('DROP TRIGGER blocks_immutable');
    expect(db.prepare('UPDATE blocks SET timestamp = timestamp + 1 WHERE number = 2').run().changes).toBe(1);
    db.close();

    const tampered = await ServiceProcess.start({ env: { JWT_SECRET: TEST_SECRET, DATABASE_URL: `sqlite:${copy}` } });
    try {
      const env = { TABULA_URL: tampered.url, TABULA_TOKEN: await tampered.token('auditor') };
      const run = await tabula(['verify'], env);
      expect(run.status).toBe(3);
      expect(run.stdout).toBe('');
      expect(run.stderr).toBe('verification FAILED at block 2: block 2: hash does not match the header\n');
      const json = await tabula(['verify', '--json'], env);
      expect(json.status).toBe(3);
      expect(JSON.parse(json.stdout)).toMatchObject({ verified: false, code: 'block_hash_mismatch', block_number: 2 });
      expect((await tabula(['verify', '--to', '1'], env)).status).toBe(0); // the blocks before it are intact
    } finally {
      await tampered.close();
    }
    const reopened = await ServiceProcess.start({ env: { JWT_SECRET: TEST_SECRET }, data_dir: original.data_dir });
    try {
      ok(await tabula(['verify'], { TABULA_URL: reopened.url, TABULA_TOKEN: await reopened.token('auditor') }));
    } finally {
      await reopened.stop();
      await original.close();
    }
  }, TAMPERED_COPY_TIMEOUT_MS);
});
