/**
 * The explorer end to end, in real headless Chromium: the real service process (`node dist/main.js`,
 * production mode) trusting a real OpenID identity provider on loopback, and the explorer it serves.
 * A person signs in with a token from the IdP, reads the live statistics, opens a block and a
 * transaction whose proof the browser verifies (into the history of a signed checkpoint the tab keeps),
 * sees a tampered proof, a rewritten transaction, a bad history proof, a checkpoint signed by another
 * key and a forked history (from a test double of the API) each shown as not verified with the reason, sends a transfer and watches it confirm, looks up a balance, pages through
 * an account's history and watches a new transaction in it go from pending to confirmed, reads the
 * pool's price chart, swaps through the quoting swap form and reads the swap's two sides — on a
 * desktop and on a phone, with every page screenshotted and checked by axe-core. The live pages
 * follow the event stream (GET /api/events) and poll only when it cannot be had: a pending
 * transaction flips to confirmed without a poll, and with the stream refused it still does, by polling.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, startEnvironment, type E2eEnvironment } from '../e2e/support/fixture.js';
import { groupDigits, shortHash } from '../../explorer/src/format.js';
import { effectivePrice, minReceive } from '../../explorer/src/market.js';
import { REFRESH_INTERVAL_MS } from '../../explorer/src/refresher.js';
import { rawMembers, serverErrors, sleep, waitUntilSealed, type SubmitBody, type TransactionRecord } from '../e2e/support/http.js';
import { createSigningKey, nowSeconds } from '../e2e/support/identity-provider.js';
import { ServiceProcess } from '../support/service-process.js';
import { DESKTOP_VIEWPORT, expectAccessible, launchBrowser, PHONE_VIEWPORT, screenshot, screenshotOf, type Browser } from './support/browser.js';
import { startTamperingProxy, type TamperingProxy } from './support/tampering-proxy.js';

const RATE_LIMIT_MAX = 300;
const SEED_ROUNDS_MAX = 5;
const WAIT_MS = 10_000;

let env: E2eEnvironment;
let service_url: string;
let proxy: TamperingProxy;
let browser: Browser;
let alice_token: string;
/** A sealed transaction in a block of several (so its audit path is not empty). */
let seeded_tx: string;
const page_errors: string[] = [];

/** GET (or POST with a body) as the holder of `token`, through the e2e suite's client. */
async function api(path: string, token: string, body?: unknown): Promise<{ status: number; json: any; headers: Headers }> {
  const response = await env.anonymous.as(token).request(path, body === undefined ? {} : { body });
  return { status: response.status, json: response.body, headers: response.headers };
}

/** A token signed with a key the identity provider never published, under its current key id. */
async function forgedToken(sub: string): Promise<string> {
  return env.idp.sign({ sub }, { key: await createSigningKey('ES256', env.idp.key('ES256').kid) });
}

/** A new tab at `url`; `expected_console` names the console errors a test provokes on purpose. */
async function openPage(url: string, expected_console?: RegExp): Promise<Page> {
  const page = await browser.context.newPage();
  page.on('pageerror', (error) => page_errors.push(`${url}: ${error.message}`));
  page.on('console', (message) => {
    // The explorer logs nothing; an error here is a CSP refusal, a failed asset or a crash.
    if (message.type() !== 'error' || /the server responded with a status of (400|401|404|429)/.test(message.text())) return;
    if (expected_console?.test(message.text()) !== true) page_errors.push(`${url}: ${message.text()}`);
  });
  await page.goto(url);
  return page;
}

/** The header's note on how the page stays current: `live`, `polling`, `connecting`, `paused` or `idle`. */
function liveMode(page: Page): Promise<string | null> {
  return page.locator('.live-mode').getAttribute('data-mode');
}

async function signIn(page: Page, token: string): Promise<void> {
  await page.getByLabel('Your token (JWT)').fill(token);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await expect.poll(() => page.getByRole('button', { name: 'Sign out' }).isVisible(), { timeout: WAIT_MS }).toBe(true);
}

beforeAll(async () => {
  // Production mode: the identity provider is the only way in, and /dev/token does not exist.
  env = await startEnvironment({
    env: { NODE_ENV: 'production', BLOCK_INTERVAL_MS: '500', RATE_LIMIT_MAX: String(RATE_LIMIT_MAX), RATE_LIMIT_WINDOW_MS: '86400000' },
  });
  service_url = env.service.url;
  proxy = await startTamperingProxy(service_url);
  browser = await launchBrowser();
  alice_token = await env.idp.token('alice');
  // Three transactions at once land in one block of several (so proofs have audit paths) unless a
  // seal falls between them; then a second round does (the balances below count one round).
  const receipts = await Promise.all([
    env.admin.submit({ from: ADMIN, to: 'alice', amount: '1000', token: 'TAB', type: 'mint' }),
    env.admin.submit({ from: ADMIN, to: 'alice', amount: '250.5', token: 'USDG', type: 'mint' }),
    env.admin.submit({ from: ADMIN, to: 'carol', amount: '10', token: 'TAB', type: 'mint', metadata: { memo: 'welcome' } }),
  ]);
  for (const receipt of receipts) expect(receipt.status, receipt.text).toBe(202);
  const records = [...(await waitUntilSealed(env.admin, receipts.map((receipt) => receipt.body.tx_hash))).values()];
  seeded_tx = records.find((record) => (record.position ?? 0) > 0)?.tx_hash ?? '';
  for (let round = 1; seeded_tx === '' && round <= SEED_ROUNDS_MAX; round += 1) {
    const extra = await Promise.all([0, 1, 2].map((index) => env.admin.submit({ from: ADMIN, to: `seed-${round}-${index}`, amount: 1, token: 'TAB', type: 'mint' })));
    const sealed = await waitUntilSealed(env.admin, extra.map((receipt) => receipt.body.tx_hash));
    seeded_tx = [...sealed.values()].find((record) => (record.position ?? 0) > 0)?.tx_hash ?? '';
  }
  expect(seeded_tx, 'no block of several transactions').not.toBe('');
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await proxy?.close();
  await env?.close();
});

describe('the explorer, end to end in Chromium', () => {
  it('is served at / by the service; sign-in takes a token from the identity provider (no development button in production)', async () => {
    const page = await openPage(service_url);
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Sign in');
    expect(await page.getByRole('button', { name: /development token/i }).count()).toBe(0);
    await expectAccessible(page, 'sign-in');
    await screenshot(page, 'sign-in');

    // An expired token is refused before it is used, with a clear message.
    await page.getByLabel('Your token (JWT)').fill(await env.idp.sign({ sub: 'alice', exp: nowSeconds() - 120 }));
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await expect.poll(() => page.locator('#token-problem').textContent()).toMatch(/expired at .* UTC/);
    // A token the service rejects (not signed by the IdP's key) is refused with the service's reason.
    await page.getByLabel('Your token (JWT)').fill(await forgedToken('alice'));
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await expect.poll(() => page.locator('#token-problem').textContent()).toMatch(/refused this token: token signature or format is not valid/);
    expect(await page.evaluate(() => window.sessionStorage.length)).toBe(0);
    await page.close();
  });

  it('shows the six statistics live: the latest block matches /api/stats, and follows a new block', async () => {
    const page = await openPage(service_url);
    await signIn(page, alice_token);
    expect(page.url()).not.toContain(alice_token);
    expect(await page.evaluate(() => window.sessionStorage.getItem('tabula.explorer.token'))).toBe(alice_token);
    const tile = (name: string) => page.locator(`[data-stat="${name}"] .tile-value`);
    const stats = (await api('/api/stats', alice_token)).json;
    await expect.poll(() => tile('latest-block').textContent()).toBe(String(stats.latest_block_number));
    await expect.poll(() => tile('total-transactions').textContent()).toBe(String(stats.total_transactions));
    expect(await tile('total-users').textContent()).toBe(String(stats.total_users));
    expect(await tile('native-price').textContent()).toBe('$1');
    expect(await tile('volume-24h').textContent()).toBe(`$${stats.trading_volume_24h}`);
    expect(await tile('active-users-24h').textContent()).toBe(String(stats.active_users_24h));
    expect(await page.locator('.blocks-table tbody tr').first().getAttribute('data-block')).toBe(String(stats.latest_block_number));
    // The page follows the event stream, and says so.
    await expect.poll(() => liveMode(page), { timeout: WAIT_MS }).toBe('live');
    expect(await page.getByRole('status').filter({ hasText: 'Updates: Live' }).count()).toBe(1);

    // A new block appears on the open page without a reload.
    const receipt = await env.admin.submit({ from: ADMIN, to: 'dave', amount: 5, token: 'TAB', type: 'mint' });
    const record = (await waitUntilSealed(env.admin, [receipt.body.tx_hash])).get(receipt.body.tx_hash);
    if (record?.block_number == null) throw new Error('the mint was not sealed');
    await expect.poll(() => tile('latest-block').textContent(), { timeout: WAIT_MS }).toBe(String(record.block_number));
    await expect.poll(() => page.locator('.blocks-table tbody tr').first().getAttribute('data-block'), { timeout: WAIT_MS }).toBe(String(record.block_number));
    expect((await api('/api/stats', alice_token)).json.latest_block_number).toBe(record.block_number);
    await expectAccessible(page, 'overview');
    await screenshot(page, 'overview');
    await page.close();
  });

  it('opens a block from the list: header, parent link, transactions, and the block verified in the browser', async () => {
    const page = await openPage(service_url);
    await signIn(page, alice_token);
    const record = (await api(`/api/transactions/${seeded_tx}`, alice_token)).json;
    const block = (await api(`/api/blocks/${record.block_number}`, alice_token)).json;
    await page.getByRole('link', { name: `#${block.number}`, exact: true }).click();
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe(`Block #${block.number}`);
    const fields = page.locator('.fields');
    await expect.poll(() => fields.textContent()).toContain(block.hash);
    expect(await fields.textContent()).toContain(block.transactions_root);
    expect(await page.getByRole('link', { name: new RegExp(`Parent: block ${block.number - 1}`) }).getAttribute('href')).toBe(`#/block/${block.number - 1}`);
    await expect.poll(() => page.locator('.verification').getAttribute('data-verified'), { timeout: WAIT_MS }).toBe('true');
    expect(await page.locator('.transaction-list li').count()).toBe(block.transactions.length);
    expect(block.transactions.length).toBeGreaterThan(1);
    await expectAccessible(page, 'block');
    await screenshot(page, 'block');

    // The parent link leads to the parent block.
    await page.getByRole('link', { name: new RegExp(`Parent: block ${block.number - 1}`) }).click();
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe(`Block #${block.number - 1}`);
    await page.goBack();
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe(`Block #${block.number}`);

    // A transaction of the block opens its page, and its proof verifies.
    await page.getByRole('link', { name: seeded_tx }).click();
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Transaction');
    await expect.poll(() => page.locator('.verification').getAttribute('data-verified'), { timeout: WAIT_MS }).toBe('true');
    expect(await page.locator('.verdict').textContent()).toContain('Verified in your browser');
    expect(await page.locator('.check-ok').count()).toBe(6);
    const key_id = (await api('/.well-known/tabula-checkpoint-key', alice_token)).json.key_id as string;
    expect(await page.locator('.anchor').textContent()).toMatch(new RegExp(`^Verified against checkpoint \\d+, signed by key ${key_id}$`));
    expect(await page.locator('[data-field="status"]').textContent()).toContain('confirmed');
    expect(await page.locator('[data-final-status="confirmed"]').textContent()).toContain(`#${block.number}`);
    await page.locator('.proof summary').click();
    expect(await page.locator('.audit-path li').count()).toBeGreaterThan(0);
    await expectAccessible(page, 'transaction');
    await screenshot(page, 'transaction');
    await page.close();
  });

  it('pages through all blocks, newest first', async () => {
    // Two blocks a page (the ledger holds genesis, the seed and one more by now).
    const page = await openPage(`${service_url}/#/blocks?limit=2`);
    await signIn(page, alice_token);
    const latest = (await api('/api/stats', alice_token)).json.latest_block_number as number;
    expect(latest).toBeGreaterThanOrEqual(2);
    const shown = () => page.locator('.blocks-table tbody tr').evaluateAll((rows) => rows.map((row) => Number(row.getAttribute('data-block'))));
    await expect.poll(shown).toEqual([latest, latest - 1]);
    expect(await page.getByRole('link', { name: '← Newer' }).count()).toBe(0);
    await expectAccessible(page, 'blocks');
    await screenshot(page, 'blocks');
    await page.getByRole('link', { name: 'Older →' }).click();
    await expect.poll(shown).toEqual([latest - 2, latest - 3].filter((number) => number >= 0));
    expect(page.url()).toContain(`#/blocks?from=${latest - 2}&limit=2`);
    await page.getByRole('link', { name: '← Newer' }).click();
    await expect.poll(shown).toEqual([latest, latest - 1]);
    expect(page.url()).toMatch(/#\/blocks\?limit=2$/);
    await page.close();
  });

  it('shows a tampered proof, served by a test double of the API, as NOT verified', async () => {
    const page = await openPage(`${proxy.url}/#/tx/${seeded_tx}`);
    await signIn(page, alice_token);
    await expect.poll(() => page.locator('.verification').getAttribute('data-verified'), { timeout: WAIT_MS }).toBe('false');
    expect(proxy.tampered()).toBeGreaterThan(0);
    expect(await page.locator('.verdict').textContent()).toContain('NOT verified');
    const failed = page.locator('.check-bad');
    expect(await failed.count()).toBe(1);
    expect(await failed.textContent()).toMatch(/Merkle root recomputed/);
    // The untouched parts still check out: the transaction's own hash, the block it names, and the
    // block's place in the signed history.
    expect(await page.locator('.check-ok').count()).toBe(5);
    expect(await page.locator('.anchor').count()).toBe(0);
    await expectAccessible(page, 'tampered transaction');
    await screenshot(page, 'transaction-tampered');
    await page.close();
  });

  it("checks the transaction and account pages against the tab's signed checkpoint; a lying server's answers show NOT verified, with the reason", { timeout: 60_000 }, async () => {
    const ivan_token = await env.idp.token('ivan');
    const key_id = (await api('/.well-known/tabula-checkpoint-key', ivan_token)).json.key_id as string;
    const verdict = (page: Page) => page.locator('.verification').getAttribute('data-verified');
    const reason = (page: Page) => page.locator('.check-bad .check-detail').first().textContent();
    try {
      // Honest: the first page pins the service's key and a checkpoint in the tab; the next page uses them.
      proxy.lie('none');
      const page = await openPage(`${proxy.url}/#/tx/${seeded_tx}`);
      await signIn(page, ivan_token);
      await expect.poll(() => verdict(page), { timeout: WAIT_MS }).toBe('true');
      expect(await page.locator('.anchor').textContent()).toMatch(new RegExp(`^Verified against checkpoint \\d+, signed by key ${key_id}$`));
      const trusted = await page.evaluate(() => JSON.parse(window.sessionStorage.getItem('tabula.explorer.checkpoint') ?? 'null') as { size: number; key_id: string } | null);
      expect(trusted?.key_id).toBe(key_id);
      await page.goto(`${proxy.url}/#/account/alice`);
      await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Account alice');
      await expect.poll(() => verdict(page), { timeout: WAIT_MS }).toBe('true');
      expect(await page.locator('.anchor').textContent()).toBe(`Verified against checkpoint ${trusted?.size}, signed by key ${key_id}`);
      await expectAccessible(page, 'account verified against the checkpoint');

      // A block's history proof that does not lead to the signed root.
      proxy.lie('block-proof');
      await page.reload();
      await expect.poll(() => verdict(page), { timeout: WAIT_MS }).toBe('false');
      expect(await page.locator('.verdict').textContent()).toContain('NOT verified');
      expect(await reason(page)).toMatch(/block \d+ \(0x[0-9a-f]{64}\) is not in the history signed at size \d+/);
      await expectAccessible(page, 'account with a bad history proof');

      // A rewritten transaction.
      proxy.lie('transaction');
      await page.goto(`${proxy.url}/#/tx/${seeded_tx}`);
      await expect.poll(() => verdict(page), { timeout: WAIT_MS }).toBe('false');
      expect(await reason(page)).toMatch(/the record hashes to 0x[0-9a-f]{64}/);

      // A newer block makes the tab advance its checkpoint: one signed by another key (the proxy serves
      // that key at the well-known address too: the tab's pinned key is what catches it), then a fork.
      const fresh = await env.admin.submit({ from: ADMIN, to: 'ivan', amount: 1, token: 'TAB', type: 'mint' });
      await waitUntilSealed(env.admin, [fresh.body.tx_hash]);
      proxy.lie('foreign-key');
      await page.goto(`${proxy.url}/#/tx/${fresh.body.tx_hash}`);
      await expect.poll(() => verdict(page), { timeout: WAIT_MS }).toBe('false');
      expect(await reason(page)).toContain(`the checkpoint is signed by key ${proxy.foreign_key_id}, not the trusted key ${key_id}`);
      proxy.lie('consistency');
      await page.reload();
      await expect.poll(() => verdict(page), { timeout: WAIT_MS }).toBe('false');
      expect(await reason(page)).toMatch(/fork detected: history \d+ does not extend history \d+/);
      await expectAccessible(page, 'transaction on a forked history');
      await screenshot(page, 'transaction-forked');

      // None of the lies moved the tab's checkpoint; the honest service's newer one extends it.
      expect(await page.evaluate(() => JSON.parse(window.sessionStorage.getItem('tabula.explorer.checkpoint') ?? 'null').size)).toBe(trusted?.size);
      proxy.lie('none');
      await page.reload();
      await expect.poll(() => verdict(page), { timeout: WAIT_MS }).toBe('true');
      expect(await page.evaluate(() => JSON.parse(window.sessionStorage.getItem('tabula.explorer.checkpoint') ?? 'null').size)).toBeGreaterThan(trusted?.size ?? 0);
      await page.close();
    } finally {
      proxy.lie('transaction-proof');
    }
  });

  it('sends a transfer as the signed-in user and watches it confirm', async () => {
    const page = await openPage(`${service_url}/#/transfer`);
    await signIn(page, alice_token);
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Send a transfer');
    expect(await page.getByLabel('From').inputValue()).toBe('alice');
    // A mistake is explained next to its field, and nothing is sent.
    await page.getByLabel('To (user id)').fill('bob');
    await page.getByLabel('Amount').fill('1.123456789');
    await page.getByRole('button', { name: 'Send transfer' }).click();
    await expect.poll(() => page.locator('#amount-problem').textContent()).toMatch(/decimals/);
    await page.getByLabel('Amount').fill('12.5');
    await page.getByLabel('Memo (optional)').fill('lunch');
    await expectAccessible(page, 'transfer');
    await screenshot(page, 'transfer');
    await page.getByRole('button', { name: 'Send transfer' }).click();

    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent(), { timeout: WAIT_MS }).toBe('Transaction');
    const hash = /#\/tx\/(0x[0-9a-f]{64})$/.exec(page.url())?.[1];
    expect(hash).toBeDefined();
    const history = page.locator('.timeline');
    expect(await history.textContent()).toContain('submitted');
    await expect.poll(() => page.locator('[data-field="status"]').textContent(), { timeout: WAIT_MS }).toContain('confirmed');
    await expect.poll(() => page.locator('.verification').getAttribute('data-verified'), { timeout: WAIT_MS }).toBe('true');
    const record = (await api(`/api/transactions/${hash}`, alice_token)).json;
    expect(record).toMatchObject({ from: 'alice', to: 'bob', amount: 12.5, token: 'TAB', type: 'transfer', status: 'confirmed', metadata: { memo: 'lunch' } });
    expect(await page.locator('[data-final-status="confirmed"]').textContent()).toContain(`#${record.block_number}`);
    expect(await history.locator('li').count()).toBe(2);
    expect(await page.locator('[data-field="amount"]').textContent()).toBe('12.5 TAB');
    await screenshot(page, 'transaction-confirmed');
    await page.close();
  });

  it('looks up a balance, a block and a transaction through the search box', async () => {
    const page = await openPage(service_url);
    await signIn(page, alice_token);
    const search = page.getByRole('searchbox', { name: /Search by transaction hash, block number or user id/ });
    await search.fill('bob');
    await search.press('Enter');
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Account bob');
    const balance = (await api('/api/balance/bob', alice_token)).json;
    expect(balance).toEqual({ user_id: 'bob', native: 12.5, usdg: 0, total_usd: 12.5 });
    await expect.poll(() => page.locator('[data-balance="native"] dd').textContent()).toBe('12.5');
    expect(await page.locator('[data-balance="usdg"] dd').textContent()).toBe('0');
    expect(await page.locator('[data-balance="total_usd"] dd').textContent()).toBe('$12.5');

    await search.fill('alice');
    await search.press('Enter');
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Account alice');
    await expect.poll(() => page.locator('[data-balance="native"] dd').textContent()).toBe('987.5');
    expect(await page.locator('[data-balance="usdg"] dd').textContent()).toBe('250.5');
    expect(await page.locator('[data-balance="total_usd"] dd').textContent()).toBe('$1,238');
    // Under the balances, alice's history, newest first: the transfer to bob, then the two mints.
    const history_rows = page.locator('.history-table tbody tr');
    await expect.poll(() => history_rows.count()).toBe(3);
    expect(await history_rows.first().locator('[data-field="direction"]').textContent()).toBe('sent');
    expect(await history_rows.first().locator('[data-field="counterparty"]').textContent()).toBe('to bob');
    expect(await history_rows.first().locator('[data-field="amount"]').textContent()).toBe('12.5 TAB');
    expect(await history_rows.locator('[data-field="direction"]').allTextContents()).toEqual(['sent', 'mint', 'mint']);
    await expectAccessible(page, 'account');

    await search.fill('1');
    await search.press('Enter');
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Block #1');
    await search.fill(seeded_tx.toUpperCase().replace('0X', '0x'));
    await search.press('Enter');
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Transaction');
    expect(page.url()).toContain(`#/tx/${seeded_tx}`);
    await search.fill('0x1234');
    await search.press('Enter');
    await expect.poll(() => page.locator('#search-problem').textContent()).toContain('64 hexadecimal digits');
    await page.close();
  });

  it('leads back to sign-in with a clear message when the token is rejected or expires', async () => {
    const page = await openPage(service_url);
    await signIn(page, alice_token);
    // A token the service no longer accepts (here: signed by a key the IdP does not publish).
    await page.evaluate((token) => window.sessionStorage.setItem('tabula.explorer.token', token), await forgedToken('alice'));
    await page.reload();
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Sign in');
    expect(await page.getByRole('alert').first().textContent()).toMatch(/refused your token \(token signature or format is not valid\)\. Sign in again/);
    expect(await page.evaluate(() => window.sessionStorage.length)).toBe(0);

    // A token that expires while the page is open.
    const short_lived = await env.idp.sign({ sub: 'alice', exp: nowSeconds() + 5 });
    await signIn(page, short_lived);
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent(), { timeout: WAIT_MS }).toBe('Sign in');
    expect(await page.getByRole('alert').first().textContent()).toMatch(/Your token expired at .* UTC\. Sign in again/);
    await page.close();
  });

  it('shows a 429 with its Retry-After instead of swallowing it, and pauses its refreshes', { timeout: 60_000 }, async () => {
    const hasty_token = await env.idp.token('hasty');
    const page = await openPage(service_url);
    await signIn(page, hasty_token);
    await expect.poll(() => liveMode(page), { timeout: WAIT_MS }).toBe('live');
    // Use up hasty's whole limit from outside the page (a request refills only every 288 s: a day's
    // window over RATE_LIMIT_MAX); then a new block makes the page load its statistics again, refused.
    let last = await api('/api/stats', hasty_token);
    for (let request = 0; request < RATE_LIMIT_MAX && last.status !== 429; request += 1) last = await api('/api/stats', hasty_token);
    expect(last.status).toBe(429);
    const mint = await env.admin.submit({ from: ADMIN, to: 'hasty', amount: 1, token: 'TAB', type: 'mint' });
    expect(mint.status, mint.text).toBe(202);
    const retry_after_s = Number(last.headers.get('retry-after'));
    expect(retry_after_s).toBeGreaterThan(0);
    const banner = page.locator('.banner');
    await expect.poll(() => banner.textContent(), { timeout: WAIT_MS }).toMatch(/Rate limited \(429\).*\(Retry-After: \d+ s\)/);
    const shown_s = Number(/Retry-After: (\d+) s/.exec((await banner.textContent()) ?? '')?.[1]);
    expect(Math.abs(shown_s - retry_after_s)).toBeLessThanOrEqual(5);
    expect(await page.locator('.stats .notice').textContent()).toContain('paused by the rate limit');
    // Still signed in: a 429 is not a 401.
    expect(await page.getByRole('button', { name: 'Sign out' }).isVisible()).toBe(true);
    await screenshot(page, 'rate-limited');
    await page.close();
  });

  it('is readable on a phone', async () => {
    const page = await openPage(service_url);
    await page.setViewportSize(PHONE_VIEWPORT);
    await signIn(page, alice_token);
    await expect.poll(() => page.locator('[data-stat="latest-block"] .tile-value').textContent()).toMatch(/^\d+$/);
    await expect.poll(() => page.locator('.blocks-table tbody tr').count()).toBeGreaterThan(0);
    const overflow = () => page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    expect(await overflow()).toBeLessThanOrEqual(0);
    await expectAccessible(page, 'overview on a phone');
    await screenshot(page, 'overview-phone');
    await page.goto(`${service_url}/#/tx/${seeded_tx}`);
    await expect.poll(() => page.locator('.verification').getAttribute('data-verified'), { timeout: WAIT_MS }).toBe('true');
    expect(await overflow()).toBeLessThanOrEqual(0);
    await screenshot(page, 'transaction-phone');
    await page.close();
  });

  it('works from the keyboard: a skip link first, then a visible focus ring', async () => {
    const page = await openPage(service_url);
    await signIn(page, alice_token);
    await page.reload();
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Ledger overview');
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Skip to content');
    const ring = await page.evaluate(() => getComputedStyle(document.activeElement as Element).outlineStyle);
    expect(ring).toBe('solid');
    await page.keyboard.press('Enter');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('main');
    // The search box is reachable by keyboard and a search changes the page.
    await page.getByRole('searchbox').focus();
    await page.keyboard.type('carol');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Account carol');
    // Focus moves to the new page's heading.
    expect(await page.evaluate(() => document.activeElement?.tagName)).toBe('H1');
    await page.close();
  });

  it('left no script error or CSP refusal on any page, and the service answered no 5xx', () => {
    expect(page_errors).toEqual([]);
    expect(serverErrors()).toEqual([]);
  });
});

describe("an account's history and a pending transaction, live, end to end in Chromium", () => {
  // Blocks every 8 s: a transaction submitted just after a seal stays pending long enough for the
  // page to show it pending (and for the test to read the row, count the page's requests and take
  // its screenshot) before it shows it confirmed, with room to spare on a loaded machine.
  const BLOCK_INTERVAL_MS = 8000;
  const LONG_USER = 'auth0|5f7c8ec7c33c6c004bbafe82';
  const TABLET_VIEWPORT = { width: 768, height: 1024 };
  let slow: E2eEnvironment;
  let grace_token: string;
  /** The seeded transactions of grace, in submission order (oldest first). */
  let seeded: string[] = [];

  type HistoryRecord = { user_id: string; transactions: TransactionRecord[]; next_cursor: string | null };
  const history = async (query: string): Promise<HistoryRecord> => {
    const response = await slow.admin.get<HistoryRecord>(`/api/accounts/grace/transactions?${query}`);
    expect(response.status, response.text).toBe(200);
    return response.body;
  };

  beforeAll(async () => {
    // waitUntilSealed polls every pending hash every 50 ms: far beyond the default rate limit over a block interval.
    slow = await startEnvironment({ env: { NODE_ENV: 'production', BLOCK_INTERVAL_MS: String(BLOCK_INTERVAL_MS), RATE_LIMIT_MAX: '1000000' } });
    grace_token = await slow.idp.token('grace');
    // 25 transactions of grace in one batch (sealed in this order): mints, transfers both ways, a
    // burn, a transfer that fails, and one to a long IdP subject. The first page shows the newest 20.
    const items: SubmitBody[] = [
      { from: ADMIN, to: 'grace', amount: '1000000.12345678', token: 'TAB', type: 'mint' },
      { from: ADMIN, to: 'grace', amount: '500', token: 'USDG', type: 'mint' },
      { from: 'grace', to: 'heidi', amount: '100', token: 'TAB', type: 'transfer' },
      ...Array.from({ length: 18 }, (_, index): SubmitBody => (index % 2 === 0
        ? { from: 'heidi', to: 'grace', amount: `${index + 1}.5`, token: 'TAB', type: 'transfer' }
        : { from: 'grace', to: 'heidi', amount: String(index + 1), token: 'USDG', type: 'transfer' })),
      { from: 'grace', to: ADMIN, amount: '0.5', token: 'TAB', type: 'burn' },
      { from: 'grace', to: 'heidi', amount: '1000000', token: 'USDG', type: 'transfer' },
      { from: 'grace', to: LONG_USER, amount: '12.5', token: 'TAB', type: 'transfer' },
      { from: ADMIN, to: 'grace', amount: '1234567.5', token: 'TAB', type: 'mint' },
    ];
    const batch = await slow.admin.post<{ results: { status: number; tx_hash: string }[] }>('/api/transactions/batch', { transactions: items });
    expect(batch.status, batch.text).toBe(200);
    expect(batch.body.results.map((result) => result.status)).toEqual(items.map(() => 202));
    seeded = batch.body.results.map((result) => result.tx_hash);
    await waitUntilSealed(slow.admin, seeded, 3 * BLOCK_INTERVAL_MS);
  }, 60_000);

  afterAll(() => slow?.close());

  it('lists them newest first, 20 a page, links each to its transaction and counterparty, and follows a new one from pending to confirmed', { timeout: 90_000 }, async () => {
    const page = await openPage(`${slow.service.url}/#/account/grace`);
    await signIn(page, grace_token);
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Account grace');
    const shown = () => page.locator('.history-table tbody tr').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-tx')));
    const row = (tx_hash: string) => page.locator(`.history-table tbody tr[data-tx="${tx_hash}"]`);
    const cell = (tx_hash: string, field: string) => row(tx_hash).locator(`[data-field="${field}"]`).textContent();
    const heading_focused = () => page.evaluate(() => document.activeElement?.id === 'account-history-heading');

    // The first page: the newest 20, as the API lists them.
    const first = await history('limit=20');
    expect(first.transactions.map((tx) => tx.tx_hash)).toEqual(seeded.slice(-20).reverse());
    expect(first.next_cursor).not.toBeNull();
    await expect.poll(shown).toEqual(first.transactions.map((tx) => tx.tx_hash));
    expect(await page.getByRole('table', { name: 'Transactions of grace, newest first, page 1' }).isVisible()).toBe(true);
    expect(await page.locator('.account-history [role="status"]').textContent()).toMatch(/^Transactions 1 to 20, newest first/);

    // Each row as grace sees it, amounts exact and grouped as on the transaction page.
    const [, , , received, sent] = seeded.slice(2, 7);
    const [burn, failed, to_long_user, mint] = seeded.slice(-4);
    if (received === undefined || sent === undefined || burn === undefined || failed === undefined || to_long_user === undefined || mint === undefined) throw new Error('seeding went wrong');
    expect(await cell(mint, 'direction')).toBe('mint');
    expect(await cell(mint, 'counterparty')).toBe(`from ${ADMIN}`);
    expect(await cell(mint, 'amount')).toBe('1,234,567.5 TAB');
    expect(await cell(mint, 'status')).toBe('confirmed');
    const mint_record = first.transactions[0];
    expect(await cell(mint, 'block')).toBe(`#${mint_record?.block_number}`);
    expect(await cell(to_long_user, 'counterparty')).toBe(`to ${LONG_USER}`);
    expect(await cell(failed, 'direction')).toBe('sent');
    expect(await cell(failed, 'amount')).toBe('1,000,000 USDG');
    expect(await cell(failed, 'status')).toBe('failed (insufficient_funds)');
    expect(await row(failed).getAttribute('data-status')).toBe('failed');
    expect(await cell(burn, 'direction')).toBe('burn');
    expect(await cell(burn, 'counterparty')).toBe(`to ${ADMIN}`);
    expect(await cell(received, 'direction')).toBe('received');
    expect(await cell(received, 'counterparty')).toBe('from heidi');
    expect(await cell(received, 'amount')).toBe('3.5 TAB');
    expect(await cell(sent, 'direction')).toBe('sent');
    expect(await cell(sent, 'amount')).toBe('4 USDG');
    expect(await page.getByRole('button', { name: /Newest/ }).count()).toBe(0);
    await expectAccessible(page, 'account history');

    // Older: the next page through next_cursor, no overlap; it is the last, so focus goes to the
    // section's heading, and it is not polled.
    const history_requests: string[] = [];
    page.on('request', (request) => {
      if (request.url().includes('/api/accounts/grace/transactions')) history_requests.push(request.url());
    });
    await page.getByRole('button', { name: 'Older transactions' }).click();
    const second = await history(`limit=20&cursor=${encodeURIComponent(first.next_cursor ?? '')}`);
    expect(second.next_cursor).toBeNull();
    await expect.poll(shown).toEqual(second.transactions.map((tx) => tx.tx_hash));
    expect(await shown()).toEqual(seeded.slice(0, 5).reverse());
    expect((await shown()).filter((hash) => first.transactions.some((tx) => tx.tx_hash === hash))).toEqual([]);
    expect(history_requests.at(-1)).toContain(`cursor=${encodeURIComponent(first.next_cursor ?? '')}`);
    expect(await page.locator('.account-history [role="status"]').textContent()).toMatch(/^Transactions 21 to 25, newest first/);
    expect(await page.getByRole('button', { name: 'Older transactions' }).count()).toBe(0);
    expect(await heading_focused()).toBe(true);
    const requests_on_older_page = history_requests.length;
    await new Promise((resolve) => setTimeout(resolve, 2 * 2000 + 500));
    expect(history_requests.length).toBe(requests_on_older_page);
    await expectAccessible(page, 'account history, older page');

    // Newest: back to the first page, which is loaded and followed again (see the new transfer below).
    await page.getByRole('button', { name: 'Newest transactions' }).click();
    await expect.poll(shown).toEqual(first.transactions.map((tx) => tx.tx_hash));
    expect(await heading_focused()).toBe(true);
    expect(history_requests.length).toBeGreaterThan(requests_on_older_page);
    expect(await liveMode(page)).toBe('live');

    // The links: the transaction, then the counterparty.
    await row(mint).getByRole('link', { name: `Transaction ${shortHash(mint)}` }).click();
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Transaction');
    expect(page.url()).toContain(`#/tx/${mint}`);
    await page.goBack();
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Account grace');
    await row(received).getByRole('link', { name: 'heidi' }).click();
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Account heidi');
    await expect.poll(() => cell(received, 'direction')).toBe('sent');
    await page.goBack();
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Account grace');
    await expect.poll(shown).toEqual(first.transactions.map((tx) => tx.tx_hash));

    // A new transfer, submitted right after a seal, shows up pending at the top, then confirmed.
    const marker = await slow.admin.submit({ from: ADMIN, to: 'marker', amount: 1, token: 'TAB', type: 'mint' });
    await waitUntilSealed(slow.admin, [marker.body.tx_hash], 3 * BLOCK_INTERVAL_MS);
    const receipt = await slow.anonymous.as(grace_token).submit({ from: 'grace', to: 'heidi', amount: '7.77', token: 'TAB', type: 'transfer' });
    expect(receipt.status, receipt.text).toBe(202);
    const fresh = receipt.body.tx_hash;
    await expect.poll(() => row(fresh).getAttribute('data-status'), { timeout: BLOCK_INTERVAL_MS }).toBe('pending');
    expect((await shown())[0]).toBe(fresh);
    expect(await cell(fresh, 'status')).toBe('pending');
    expect(await cell(fresh, 'block')).toBe('not yet');
    expect(await cell(fresh, 'counterparty')).toBe('to heidi');
    expect((await shown()).length).toBe(20);
    await screenshot(page, 'account');
    await expect.poll(() => cell(fresh, 'status'), { timeout: 3 * BLOCK_INTERVAL_MS }).toBe('confirmed');
    const sealed = (await slow.admin.transaction(fresh)).body;
    expect(await cell(fresh, 'block')).toBe(`#${sealed.block_number}`);

    // On a tablet and on a phone the rows become cards, with nothing wider than the screen.
    const overflow = () => page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    await page.setViewportSize(TABLET_VIEWPORT);
    expect(await overflow()).toBeLessThanOrEqual(0);
    await page.setViewportSize(PHONE_VIEWPORT);
    expect(await overflow()).toBeLessThanOrEqual(0);
    await expectAccessible(page, 'account history on a phone');
    await screenshot(page, 'account-phone');
    await page.setViewportSize(DESKTOP_VIEWPORT);

    // An account that never transacted says so.
    await page.goto(`${slow.service.url}/#/account/nobody`);
    await expect.poll(() => page.locator('.account-history [role="status"]').textContent()).toBe('nobody has no transactions yet.');
    expect(await page.locator('.history-table').count()).toBe(0);
    await page.close();
    expect(page_errors).toEqual([]);
  });

  /** A transfer of grace's submitted just after a seal, so that it stays pending for most of a block interval. */
  const submitAfterSeal = async (amount: string): Promise<string> => {
    const marker = await slow.admin.submit({ from: ADMIN, to: 'marker', amount: 1, token: 'TAB', type: 'mint' });
    await waitUntilSealed(slow.admin, [marker.body.tx_hash], 3 * BLOCK_INTERVAL_MS);
    const receipt = await slow.anonymous.as(grace_token).submit({ from: 'grace', to: 'heidi', amount, token: 'TAB', type: 'transfer' });
    expect(receipt.status, receipt.text).toBe(202);
    return receipt.body.tx_hash;
  };

  /** Opens the transaction's page from the search box (the tab, and its event stream, stay), counting the page's requests for it. */
  const openTransaction = async (page: Page, hash: string): Promise<string[]> => {
    const requests: string[] = [];
    page.on('request', (request) => {
      const path = new URL(request.url()).pathname;
      if (path === `/api/transactions/${hash}`) requests.push(path);
    });
    await page.getByRole('searchbox').fill(hash);
    await page.getByRole('searchbox').press('Enter');
    await expect.poll(() => page.locator('[data-field="status"]').textContent(), { timeout: WAIT_MS }).toContain('pending');
    return requests;
  };

  it('flips a pending transaction to confirmed when its event arrives, without polling', { timeout: 60_000 }, async () => {
    const page = await openPage(slow.service.url);
    await signIn(page, grace_token);
    await expect.poll(() => liveMode(page), { timeout: WAIT_MS }).toBe('live');
    const hash = await submitAfterSeal('0.25');
    const requests = await openTransaction(page, hash);
    // Polling asked every second; now the page waits for the stream (after at most one load for the
    // transaction's own `transaction.accepted`, which may come just after the page opened).
    await sleep(REFRESH_INTERVAL_MS + 200);
    const before = requests.length;
    await sleep(3000);
    expect((await slow.admin.transaction(hash)).body.status, 'sealed too early for this check').toBe('pending');
    expect(requests.length - before).toBe(0);
    expect(await liveMode(page)).toBe('live');

    // Its `transaction.confirmed` flips the page, which loads it once more, then the block and the proof.
    await expect.poll(() => page.locator('[data-field="status"]').textContent(), { timeout: 2 * BLOCK_INTERVAL_MS }).toContain('confirmed');
    await expect.poll(() => page.locator('.verification').getAttribute('data-verified'), { timeout: WAIT_MS }).toBe('true');
    expect(requests.length - before).toBe(1);
    expect(await page.locator('[data-final-status="confirmed"]').count()).toBe(1);
    // Confirmed is final: nothing more is asked about it.
    await sleep(2500); // the page polled a pending transaction every second
    expect(requests.length - before).toBe(1);
    await expectAccessible(page, 'transaction confirmed from the event stream');
    await page.close();
    expect(page_errors).toEqual([]);
  });

  it('falls back to polling when the event stream is refused, says so, and still flips a pending transaction', { timeout: 60_000 }, async () => {
    const page = await openPage(slow.service.url, /net::ERR_CONNECTION_REFUSED/);
    let refused = 0;
    await page.route((url) => url.pathname === '/api/events', (route) => {
      refused += 1;
      return route.abort('connectionrefused');
    });
    await signIn(page, grace_token);
    await expect.poll(() => liveMode(page), { timeout: WAIT_MS }).toBe('polling');
    expect(refused).toBeGreaterThanOrEqual(3);
    expect(await page.getByRole('status').filter({ hasText: 'Updates: Polling' }).count()).toBe(1);

    const hash = await submitAfterSeal('0.5');
    const requests = await openTransaction(page, hash);
    const before = requests.length;
    await sleep(3000);
    // Polled about every second while pending.
    expect(requests.length - before).toBeGreaterThanOrEqual(2);
    await expect.poll(() => page.locator('[data-field="status"]').textContent(), { timeout: 2 * BLOCK_INTERVAL_MS }).toContain('confirmed');
    await expect.poll(() => page.locator('.verification').getAttribute('data-verified'), { timeout: WAIT_MS }).toBe('true');
    expect(await liveMode(page)).toBe('polling');
    await expectAccessible(page, 'transaction, polling');
    await page.close();
    expect(page_errors).toEqual([]);
  });
});

describe('the market in the explorer, end to end in Chromium', () => {
  // The pool gets 1000 TAB and 2000 USDG (a price of 2); trader swaps both ways, on both sides of a
  // minute boundary so that the chart has more than one 1-minute candle.
  let market: E2eEnvironment;
  let trader_token: string;
  let swap_hashes: string[] = [];
  let failed_swap: string;

  /** GET as the trader, with the exact text of each top-level member (numbers as the service wrote them). */
  const exact = async (path: string): Promise<Map<string, string>> => {
    const response = await market.anonymous.as(trader_token).request(path);
    expect(response.status, response.text).toBe(200);
    return rawMembers(response.text);
  };
  const swap = async (amount: string, token: string, min_receive?: string): Promise<string> => {
    const receipt = await market.anonymous.as(trader_token).submit({ from: 'trader', to: 'trader', amount, token, type: 'swap', ...(min_receive === undefined ? {} : { min_receive }) });
    expect(receipt.status, receipt.text).toBe(202);
    return receipt.body.tx_hash;
  };

  beforeAll(async () => {
    market = await startEnvironment({ env: { NODE_ENV: 'production', BLOCK_INTERVAL_MS: '500' } });
    trader_token = await market.idp.token('trader');
    const seed = await Promise.all([
      market.admin.submit({ from: ADMIN, to: '@pool', amount: '1000', token: 'TAB', type: 'mint' }),
      market.admin.submit({ from: ADMIN, to: '@pool', amount: '2000', token: 'USDG', type: 'mint' }),
      market.admin.submit({ from: ADMIN, to: 'trader', amount: '500', token: 'TAB', type: 'mint' }),
      market.admin.submit({ from: ADMIN, to: 'trader', amount: '5000', token: 'USDG', type: 'mint' }),
    ]);
    for (const receipt of seed) expect(receipt.status, receipt.text).toBe(202);
    await waitUntilSealed(market.admin, seed.map((receipt) => receipt.body.tx_hash));
    const trade = async (amounts: [string, string][]) => {
      for (const [amount, token] of amounts) {
        const hash = await swap(amount, token);
        await waitUntilSealed(market.admin, [hash]);
        swap_hashes.push(hash);
      }
    };
    await trade([['40', 'TAB'], ['30', 'USDG']]);
    // Into the next minute: a second 1-minute candle.
    await sleep(61_000 - (Date.now() % 60_000));
    await trade([['120', 'USDG'], ['15', 'TAB']]);
    // A swap that asks for more than the pool gives fails, moving nothing.
    failed_swap = await swap('1', 'TAB', '1000');
    await waitUntilSealed(market.admin, [failed_swap]);
  }, 120_000);

  afterAll(() => market?.close());

  it('draws the price chart on the overview: the candles of each interval, the last close and the 24 h change in words', async () => {
    const page = await openPage(market.service.url);
    await signIn(page, trader_token);
    const chart = page.locator('[data-chart="candles"]');
    await expect.poll(() => chart.count(), { timeout: WAIT_MS }).toBe(1);
    const price = (await exact('/api/stats')).get('native_price') ?? '';
    expect(price).not.toBe('1');
    await expect.poll(() => page.locator('[data-field="last-close"]').textContent(), { timeout: WAIT_MS }).toBe(`$${groupDigits(price)}`);
    // Hourly candles first; each interval shows as many candles as the API has.
    expect(await page.getByRole('button', { name: '1h' }).getAttribute('aria-pressed')).toBe('true');
    const candles = async (interval: string) => ((await market.anonymous.as(trader_token).request<{ candles: unknown[] }>(`/api/price/history?interval=${interval}&limit=60`)).body.candles.length);
    await expect.poll(async () => Number(await chart.getAttribute('data-candles'))).toBe(await candles('1h'));
    await page.getByRole('button', { name: '1m' }).click();
    expect(await page.getByRole('button', { name: '1m' }).getAttribute('aria-pressed')).toBe('true');
    await expect.poll(async () => Number(await chart.getAttribute('data-candles')), { timeout: WAIT_MS }).toBe(await candles('1m'));
    expect(await candles('1m')).toBeGreaterThanOrEqual(2);
    expect(await page.locator('.price-chart .candle').count()).toBe(await candles('1m'));
    // Named for assistive technology, with a description of the range, and summed up in text.
    expect(await chart.getAttribute('role')).toBe('img');
    expect(await page.locator('#price-chart-title').textContent()).toBe('TAB price in USD, 1 minute candles');
    expect(await page.locator('#price-chart-desc').textContent()).toContain(`last close $${price}`);
    expect(await page.locator('[data-field="day-change"]').textContent()).toMatch(/^[+-]?\d+(\.\d+)? %$/);
    // The price verified in the browser by replaying the pool from the chain (SDK's MarketReplay), past the last swap.
    const verified = page.locator('[data-price-verified]');
    await expect.poll(() => verified.getAttribute('data-price-verified'), { timeout: WAIT_MS }).toBe('yes');
    const last_swap = await market.anonymous.as(trader_token).request<{ block_number: number }>(`/api/transactions/${failed_swap}`);
    await expect.poll(async () => Number(await verified.getAttribute('data-verified-to')), { timeout: WAIT_MS }).toBeGreaterThanOrEqual(last_swap.body.block_number);
    expect(await verified.textContent()).toMatch(/Price verified by replaying the pool up to block \d+ \(\$[0-9.,]+\): 5 swaps and \d+ block prices recomputed/);
    await expectAccessible(page, 'price chart');
    await screenshotOf(page, page.locator('section.price'), 'price-chart');
    await page.close();
  });

  it('quotes a swap as it is typed, with the minimum it accepts, and sends it with min_receive; the transaction shows paid, received and price', { timeout: 60_000 }, async () => {
    // A quote the pool cannot give is a 409 (the browser logs the status).
    const page = await openPage(`${market.service.url}/#/transfer`, /status of 409/);
    await signIn(page, trader_token);
    await page.getByRole('link', { name: 'Swap', exact: true }).click();
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Swap');
    const quote = page.locator('.quote');

    // Too little to receive one base unit: the market says so.
    await page.getByLabel('You pay').fill('0.00000001');
    await expect.poll(() => quote.getAttribute('data-quote'), { timeout: WAIT_MS }).toBe('unavailable');
    expect(await quote.textContent()).toContain('The market is not available');

    await page.getByLabel('You pay').fill('12.5');
    await expect.poll(() => quote.getAttribute('data-quote'), { timeout: WAIT_MS }).toBe('ready');
    const expected = await exact('/api/price/quote?token=TAB&amount=12.5');
    const amount_out = expected.get('amount_out') ?? '';
    expect(await quote.locator('[data-field="amount-out"]').textContent()).toBe(`${groupDigits(amount_out)} USDG`);
    expect(await quote.locator('[data-field="price"]').textContent()).toBe(groupDigits(expected.get('price') ?? ''));
    expect(await quote.locator('[data-field="price-after"]').textContent()).toBe(groupDigits(expected.get('price_after') ?? ''));
    expect(await quote.locator('[data-field="fee"]').textContent()).toBe(`${expected.get('fee')} TAB`);
    const minimum = minReceive(amount_out, 'USDG', 50n).text;
    expect(await quote.locator('[data-field="minimum"]').textContent()).toBe(`${groupDigits(minimum)} USDG`);
    // A wider tolerance accepts less; a nonsensical one is refused.
    await page.getByLabel('Slippage tolerance (%)').fill('1');
    await expect.poll(() => quote.locator('[data-field="minimum"]').textContent()).toBe(`${groupDigits(minReceive(amount_out, 'USDG', 100n).text)} USDG`);
    await page.getByLabel('Slippage tolerance (%)').fill('0.125');
    await expect.poll(() => page.locator('#slippage-problem').textContent()).toBe('Use at most 2 decimals, like 0.25.');
    await page.getByLabel('Slippage tolerance (%)').fill('0.5');
    await expect.poll(() => quote.locator('[data-field="minimum"]').textContent()).toBe(`${groupDigits(minimum)} USDG`);
    await expectAccessible(page, 'swap');
    await page.getByLabel('Slippage tolerance (%)').blur();
    await screenshot(page, 'swap');

    await page.getByRole('button', { name: 'Swap', exact: true }).click();
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent(), { timeout: WAIT_MS }).toBe('Transaction');
    await expect.poll(() => page.locator('[data-final-status="confirmed"]').count(), { timeout: WAIT_MS }).toBe(1);
    const hash = /#\/tx\/(0x[0-9a-f]{64})/.exec(page.url())?.[1] ?? '';
    const record = await exact(`/api/transactions/${hash}`);
    expect(record.get('type')).toBe('"swap"');
    expect(record.get('min_receive')).toBe(minimum);
    const received = record.get('amount_out') ?? '';
    expect(await page.locator('[data-field="paid"]').textContent()).toBe('12.5 TAB');
    await expect.poll(() => page.locator('[data-field="received"]').textContent()).toBe(`${groupDigits(received)} USDG`);
    expect(await page.locator('[data-field="swap-price"]').textContent()).toBe(effectivePrice({ amount_text: '12.5', token: 'TAB' }, { amount_text: received, token: 'USDG' }));
    expect(await page.locator('[data-field="min-receive"]').textContent()).toBe(`${groupDigits(minimum)} USDG`);
    // The browser recomputes the swap's hash, min_receive included, and proves it into its block.
    await expect.poll(() => page.locator('.verification').getAttribute('data-verified'), { timeout: WAIT_MS }).toBe('true');
    await expectAccessible(page, 'swap transaction');
    await screenshot(page, 'transaction-swap');
    await page.close();
  });

  it("shows a failed swap as receiving nothing, and each swap's two sides in the account's history", async () => {
    const page = await openPage(`${market.service.url}/#/tx/${failed_swap}`);
    await signIn(page, trader_token);
    await expect.poll(() => page.locator('[data-final-status="failed"]').count(), { timeout: WAIT_MS }).toBe(1);
    expect(await page.locator('[data-field="received"]').textContent()).toBe('nothing: the swap failed (slippage_exceeded)');
    expect(await page.locator('[data-field="swap-price"]').textContent()).toBe('none');
    expect(await page.locator('[data-field="min-receive"]').textContent()).toBe('1,000 USDG');

    await page.goto(`${market.service.url}/#/account/trader`);
    const row = (hash: string) => page.locator(`.history-table tr[data-tx="${hash}"]`);
    await expect.poll(() => row(swap_hashes[0] ?? '').count(), { timeout: WAIT_MS }).toBe(1);
    for (const hash of swap_hashes) {
      const record = await exact(`/api/transactions/${hash}`);
      const token = JSON.parse(record.get('token') ?? '""') as string;
      const token_out = JSON.parse(record.get('token_out') ?? '""') as string;
      expect(await row(hash).locator('[data-field="direction"]').textContent()).toBe('swap');
      expect(await row(hash).locator('[data-field="paid"]').textContent()).toBe(`paid ${groupDigits(record.get('amount') ?? '')} ${token}`);
      expect(await row(hash).locator('[data-field="received"]').textContent()).toBe(`received ${groupDigits(record.get('amount_out') ?? '')} ${token_out}`);
    }
    expect(await row(failed_swap).locator('[data-field="received"]').textContent()).toBe('received nothing');
    await expectAccessible(page, 'account with swaps');
    await page.close();
  });

  it('fits the chart and the swap form on a phone', async () => {
    const page = await openPage(market.service.url);
    await page.setViewportSize(PHONE_VIEWPORT);
    await signIn(page, trader_token);
    await expect.poll(() => page.locator('[data-chart="candles"]').count(), { timeout: WAIT_MS }).toBe(1);
    const overflow = () => page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    expect(await overflow()).toBeLessThanOrEqual(0);
    await expectAccessible(page, 'price chart on a phone');
    await screenshotOf(page, page.locator('section.price'), 'price-chart-phone', 8);
    await page.goto(`${market.service.url}/#/swap`);
    await page.getByLabel('You pay').fill('100');
    await page.getByLabel('Token paid').selectOption('USDG');
    await expect.poll(() => page.locator('.quote').getAttribute('data-quote'), { timeout: WAIT_MS }).toBe('ready');
    expect(await page.locator('[data-field="amount-out"]').textContent()).toMatch(/ TAB$/);
    expect(await overflow()).toBeLessThanOrEqual(0);
    await expectAccessible(page, 'swap on a phone');
    await screenshot(page, 'swap-phone');
    await page.close();
  });

  it('left no script error or CSP refusal on the market pages', () => {
    expect(page_errors).toEqual([]);
  });
});

describe('the explorer on a development server', () => {
  let dev: ServiceProcess;
  beforeAll(async () => {
    // No JWT configuration and not production: the development secret, and the button.
    dev = await ServiceProcess.start({ env: { NODE_ENV: 'development', BLOCK_INTERVAL_MS: '500' } });
  });
  afterAll(() => dev?.close());

  it('signs in with a development token minted by the button', async () => {
    const page = await openPage(dev.url);
    await expect.poll(() => page.getByRole('heading', { level: 2, name: 'Development server' }).isVisible()).toBe(true);
    await page.getByLabel('User id').fill('erin');
    await expectAccessible(page, 'development sign-in');
    await screenshot(page, 'sign-in-development');
    await page.getByRole('button', { name: 'Mint a development token and sign in' }).click();
    await expect.poll(() => page.getByRole('button', { name: 'Sign out' }).isVisible(), { timeout: WAIT_MS }).toBe(true);
    expect(await page.locator('.who').textContent()).toContain('erin');
    await expect.poll(() => page.locator('[data-stat="latest-block"] .tile-value').textContent()).toBe('0');
    await page.close();
  });
});
