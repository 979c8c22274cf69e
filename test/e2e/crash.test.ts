/**
 * Durability of the built service: an acknowledged (202) submission is never lost. SIGKILL in the
 * middle of a burst of submissions, restart on the same database, and every acknowledged hash is
 * there and gets sealed; SIGTERM with transactions pending seals them all before exiting 0.
 *
 * Besides the HTTP API, the SQLite file is read directly (read-only, while no service runs) to see
 * what was on disk at the moment of the crash or the exit.
 */
import { once } from 'node:events';
import net from 'node:net';
import Database from '../../src/store/sqlite/sqlite-driver.js';
import { afterEach, describe, expect, it } from 'vitest';
import { auditChain } from './support/http-chain-audit.js';
import { ADMIN, ADMIN_SCOPE, startEnvironment, type E2eEnvironment } from './support/fixture.js';
import { type ApiClient, type Receipt, mapLimit, ServerError, serverErrors, sleep, waitUntilSealed } from './support/http.js';

type StoredStatus = { tx_hash: string; status: string };

/** Statuses of `tx_hashes` as stored on disk (missing hashes are absent from the map). */
function statusesOnDisk(database_path: string, tx_hashes: readonly string[]): { statuses: Map<string, string>; pending: number; total: number } {
  const db = new Database(database_path, { readonly: true, fileMustExist: true });
  try {
    const statuses = new Map<string, string>();
    const lookup = db.prepare('SELECT tx_hash, status FROM transactions WHERE tx_hash = ?');
    for (const tx_hash of tx_hashes) {
      const row = lookup.get(tx_hash) as StoredStatus | undefined;
      if (row !== undefined) statuses.set(row.tx_hash, row.status);
    }
    const pending = (db.prepare("SELECT COUNT(*) AS n FROM transactions WHERE status = 'pending'").get() as { n: number }).n;
    const total = (db.prepare('SELECT COUNT(*) AS n FROM transactions').get() as { n: number }).n;
    return { statuses, pending, total };
  } finally {
    db.close();
  }
}

type RawResponse = { status: number; headers: Map<string, string>; body: string };

/** Splits what a server sent on one connection into HTTP/1.1 responses (Content-Length bodies). */
function parseResponses(text: string): RawResponse[] {
  const responses: RawResponse[] = [];
  let rest = text;
  while (rest.length > 0) {
    const head_end = rest.indexOf('\r\n\r\n');
    if (head_end < 0) break;
    const [status_line, ...header_lines] = rest.slice(0, head_end).split('\r\n');
    const headers = new Map<string, string>();
    for (const line of header_lines) {
      const colon = line.indexOf(':');
      headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
    }
    const length = Number(headers.get('content-length') ?? '0');
    const body_start = head_end + 4;
    responses.push({ status: Number(status_line?.split(' ')[1]), headers, body: rest.slice(body_start, body_start + length) });
    rest = rest.slice(body_start + length);
  }
  return responses;
}

describe('e2e: durability across crashes and shutdowns', () => {
  const environments: E2eEnvironment[] = [];

  afterEach(async () => {
    await Promise.all(environments.splice(0).map((env) => env.close()));
    expect(serverErrors()).toEqual([]);
  });

  async function start(env: Record<string, string>): Promise<E2eEnvironment> {
    const environment = await startEnvironment({ env });
    environments.push(environment);
    return environment;
  }

  type BurstResult = { acknowledged: string[]; refused: string[]; cut_off: number };

  /**
   * Submits up to `planned` transactions, `in_flight` at a time (half admin mints, half transfers from
   * `payer`), and SIGKILLs the service as soon as `kill_after` of them have been acknowledged. The
   * workers keep submitting until the death is seen, so requests are in flight when it comes (one group
   * commit can acknowledge every request in flight at once, leaving none to cut off otherwise).
   */
  async function burstThenKill(env: E2eEnvironment, payer: ApiClient, tag: string, options: { planned: number; in_flight: number; kill_after: number }): Promise<BurstResult> {
    const result: BurstResult = { acknowledged: [], refused: [], cut_off: 0 };
    let killed = false;
    let dead = false;
    await mapLimit(Array.from({ length: options.planned }, (_, index) => index), options.in_flight, async (index) => {
      if (dead) return;
      const client: ApiClient = index % 2 === 0 ? env.admin : payer;
      const to = `crash-user-${index % 37}`;
      const body = index % 2 === 0
        ? { from: ADMIN, to, amount: 1, token: 'TAB', type: 'mint', metadata: { tag, index } }
        : { from: 'crash-payer', to, amount: 1, token: 'TAB', type: 'transfer', metadata: { tag, index } };
      try {
        const response = await client.submit(body, { timeout_ms: 10_000 });
        if (response.status === 202) result.acknowledged.push((response.body as Receipt).tx_hash);
        else result.refused.push(`${response.status} ${response.text}`);
      } catch (error) {
        if (error instanceof ServerError) throw error;
        result.cut_off += 1; // in flight when the process died: its outcome is unknown to the client
      }
      if (!killed && result.acknowledged.length >= options.kill_after) {
        killed = true;
        env.service.signal('SIGKILL');
        void env.service.exit().then(() => { dead = true; });
      }
    });
    expect(await env.service.exit()).toEqual({ code: null, signal: 'SIGKILL' });
    expect(result.refused).toEqual([]);
    expect(result.acknowledged.length).toBeGreaterThanOrEqual(options.kill_after);
    expect(result.acknowledged.length).toBeLessThan(options.planned);
    expect(result.cut_off, 'the kill should have cut off requests in flight').toBeGreaterThan(0);
    return result;
  }

  it('keeps every acknowledged submission when the process is SIGKILLed mid-burst, and resumes sealing', { timeout: 60_000 }, async () => {
    // First life: no block after start-up (10-minute interval), so everything acknowledged is pending at the crash.
    const env = await start({ BLOCK_INTERVAL_MS: '600000', BLOCK_TXS_MAX: '64' });
    const payer = await env.as('crash-payer');
    const funding = await env.admin.submit({ from: ADMIN, to: 'crash-payer', amount: 150, token: 'TAB', type: 'mint' });
    expect(funding.status).toBe(202);
    const first = await burstThenKill(env, payer, 'first', { planned: 1200, in_flight: 48, kill_after: 300 });
    const acknowledged = [funding.body.tx_hash, ...first.acknowledged];

    // On disk at the moment of the crash: every acknowledged submission, all of them still pending.
    const at_first_crash = statusesOnDisk(env.service.database_path, acknowledged);
    expect(acknowledged.filter((tx_hash) => !at_first_crash.statuses.has(tx_hash))).toEqual([]);
    expect(new Set(at_first_crash.statuses.values())).toEqual(new Set(['pending']));
    expect(at_first_crash.pending).toBe(at_first_crash.total);

    // Second life: blocks every 100 ms. Sealing resumes where the first life stopped, and the next
    // crash comes while blocks are being written.
    await env.service.restart({ BLOCK_INTERVAL_MS: '100' });
    const resumed = await waitUntilSealed(env.admin, acknowledged, 30_000);
    expect(resumed.get(funding.body.tx_hash)?.status).toBe('confirmed');
    const second = await burstThenKill(env, payer, 'second', { planned: 1200, in_flight: 48, kill_after: 300 });
    acknowledged.push(...second.acknowledged);
    const at_second_crash = statusesOnDisk(env.service.database_path, acknowledged);
    expect(acknowledged.filter((tx_hash) => !at_second_crash.statuses.has(tx_hash))).toEqual([]);

    // Third life: every acknowledged transaction is found and decided, and the chain audits clean.
    await env.service.restart();
    const sealed = await waitUntilSealed(env.admin, acknowledged, 30_000);
    expect(sealed.size).toBe(acknowledged.length);
    for (const record of sealed.values()) expect(['confirmed', 'failed']).toContain(record.status);
    const statuses = new Set([...sealed.values()].map((record) => record.error ?? record.status));
    expect(statuses).toEqual(new Set(['confirmed', 'insufficient_funds']));

    const audit = await auditChain(env.admin);
    expect(audit.problems).toEqual([]);
    expect(acknowledged.filter((tx_hash) => !audit.by_hash.has(tx_hash))).toEqual([]);
    // Everything the service ever stored ended in the chain, including submissions cut off before their 202.
    expect(audit.transactions.length).toBe(at_second_crash.total);
    expect((await env.admin.balance('crash-payer')).body.native).toBe(0);
  });

  it('seals every pending transaction on SIGTERM and exits 0', { timeout: 60_000 }, async () => {
    // Blocks every 10 minutes: whatever is submitted after start-up stays pending until shutdown.
    const env = await start({ BLOCK_INTERVAL_MS: '600000', BLOCK_TXS_MAX: '16' });
    const payer = await env.as('term-payer');
    const mint = await env.admin.submit({ from: ADMIN, to: 'term-payer', amount: 20, token: 'TAB', type: 'mint' });
    expect(mint.status).toBe(202);
    const transfers = await Promise.all(Array.from({ length: 40 }, (_, index) =>
      payer.submit({ from: 'term-payer', to: `term-user-${index % 5}`, amount: 1, token: 'TAB', type: 'transfer' })));
    for (const response of transfers) expect(response.status, response.text).toBe(202);
    const keyed_body = { from: ADMIN, to: 'term-keyed', amount: 1, token: 'USDG', type: 'mint' };
    const keyed = await env.admin.submit(keyed_body, { headers: { 'idempotency-key': 'term-key-1' } });
    expect(keyed.status).toBe(202);
    const hashes = [mint.body.tx_hash, ...transfers.map((response) => response.body.tx_hash), keyed.body.tx_hash];
    const pending = await mapLimit(hashes, 8, async (tx_hash) => (await env.admin.transaction(tx_hash)).body.status);
    expect(new Set(pending)).toEqual(new Set(['pending']));
    expect((await env.admin.stats()).body.total_transactions).toBe(0);

    const exit = await env.service.stop();
    expect(exit, env.service.tail()).toEqual({ code: 0, signal: null });
    expect(env.service.logs().some((line) => line.msg === 'stopped')).toBe(true);

    // Sealed before the exit: nothing pending on disk, every submission decided.
    const on_disk = statusesOnDisk(env.service.database_path, hashes);
    expect(on_disk.pending).toBe(0);
    expect(on_disk.total).toBe(hashes.length);
    expect(new Set(on_disk.statuses.values())).toEqual(new Set(['confirmed', 'failed']));

    await env.service.restart();
    const records = await mapLimit(hashes, 8, async (tx_hash) => (await env.admin.transaction(tx_hash)).body);
    expect(records.filter((record) => record.status === 'pending')).toEqual([]);
    expect(records[0]?.status).toBe('confirmed');
    expect(records.filter((record) => record.type === 'transfer' && record.status === 'confirmed')).toHaveLength(20);
    expect(records.filter((record) => record.status === 'failed').every((record) => record.error === 'insufficient_funds')).toBe(true);
    // Idempotency keys outlive the process: the replay gets the first receipt, and nothing new.
    const replay = await env.admin.submit(keyed_body, { headers: { 'idempotency-key': 'term-key-1' } });
    expect(replay.status).toBe(202);
    expect(replay.body.tx_hash).toBe(keyed.body.tx_hash);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    const stats = (await env.admin.stats()).body;
    expect(stats.total_transactions).toBe(hashes.length);
    expect(stats.latest_block_number).toBe(Math.ceil(hashes.length / 16));
    const audit = await auditChain(env.admin);
    expect(audit.problems).toEqual([]);
  });

  it('finishes a request in flight at SIGTERM, and answers one arriving during shutdown with problem+json', { timeout: 60_000 }, async () => {
    const env = await start({ BLOCK_INTERVAL_MS: '600000' });
    const token = await env.idp.token(ADMIN, { admin: true, adminScope: ADMIN_SCOPE });
    const head = (body: string): string => 'POST /api/transactions/submit HTTP/1.1\r\nHost: 127.0.0.1\r\n'
      + `Authorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`;
    const in_flight = JSON.stringify({ from: ADMIN, to: 'in-flight', amount: 7, token: 'TAB', type: 'mint' });
    const too_late = JSON.stringify({ from: ADMIN, to: 'too-late', amount: 1, token: 'TAB', type: 'mint' });

    const socket = net.connect(Number(new URL(env.service.url).port), '127.0.0.1');
    await once(socket, 'connect');
    let received = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      received += chunk;
    });
    const closed = once(socket, 'close');
    // A submission whose body is still arriving when the signal comes...
    socket.write(head(in_flight) + in_flight.slice(0, 5));
    await sleep(300);
    env.service.signal('SIGTERM');
    await env.service.waitForLog((line) => typeof line.msg === 'string' && line.msg.startsWith('shutting down'));
    await sleep(200);
    // ...completes during the shutdown, and another request follows on the same connection.
    socket.write(in_flight.slice(5) + head(too_late) + too_late);
    await Promise.race([closed, sleep(10_000)]);
    socket.destroy();
    const exit = await env.service.exit();
    expect(exit, env.service.tail()).toEqual({ code: 0, signal: null });

    const [first, second] = parseResponses(received);
    expect(first?.status, received).toBe(202);
    const receipt = JSON.parse(first?.body ?? '{}') as Receipt;
    expect(statusesOnDisk(env.service.database_path, [receipt.tx_hash]).statuses.get(receipt.tx_hash)).toBe('confirmed');
    expect(statusesOnDisk(env.service.database_path, []).pending).toBe(0);

    // The later request may be served (then it must be sealed too) or refused as unavailable, but
    // like every error of the contract the refusal is problem+json with a code.
    expect(second, received).toBeDefined();
    if (second === undefined) return;
    if (second.status === 202) {
      const late = JSON.parse(second.body) as Receipt;
      expect(statusesOnDisk(env.service.database_path, [late.tx_hash]).statuses.get(late.tx_hash)).toBe('confirmed');
      return;
    }
    expect(second.status).toBe(503);
    expect({ content_type: second.headers.get('content-type'), body: second.body }).toMatchObject({
      content_type: expect.stringMatching(/^application\/problem\+json/) as unknown,
      body: expect.stringMatching(/"code":"[a-z_]+"/) as unknown,
    });
  });
});
