/**
 * A full disk under PostgreSQL: a PostgreSQL server of the test's own (initdb on a small tmpfs, on a
 * free loopback port; CI runs as root) that the test fills. Writes the server cannot make fail with
 * class 53 (`could not extend file`): those submissions get 503 `storage_unavailable` with
 * Retry-After — never a 500 —, and when space comes back the service takes writes again by itself:
 * every acknowledged transaction is sealed, and the chain audits from genesis. The server is stopped
 * and the tmpfs unmounted whatever happens.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { expectAcknowledgedInChain } from '../support/store-chain-audit.js';
import { TEST_SECRET } from '../support/in-process-tabula.js';
import { waitUntilAllSealed } from '../support/sealed.js';
import { ServiceProcess } from '../support/service-process.js';

const TMPFS_SIZE = '100m';
/** Debian's layout: /usr/lib/postgresql/<major>/bin, the newest major installed. */
const POSTGRES_BIN = postgresBin();

function postgresBin(): string {
  const root = '/usr/lib/postgresql';
  const majors = fs.existsSync(root) ? fs.readdirSync(root).filter((name) => /^\d+$/.test(name)).sort((a, b) => Number(b) - Number(a)) : [];
  return path.join(root, majors[0] ?? 'none', 'bin');
}
const SUBMISSIONS_MAX = 600;
const REFUSALS_WANTED = 3;
/** Metadata that makes each row big enough to need new pages soon. */
const PADDING = 'x'.repeat(3000);

function asPostgres(command: string, args: string[]): void {
  execFileSync('su', ['postgres', '-s', '/bin/sh', '-c', [path.join(POSTGRES_BIN, command), ...args.map((arg) => `'${arg}'`)].join(' ')], { stdio: 'pipe' });
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('a full disk under PostgreSQL', () => {
  const mount_point = fs.mkdtempSync(path.join(os.tmpdir(), 'tabula-pg-full-'));
  const data_dir = path.join(mount_point, 'data');
  const filler = path.join(mount_point, 'filler');
  let mounted = false;
  let started = false;
  let port = 0;
  let service: ServiceProcess | null = null;

  beforeAll(async () => {
    if (process.getuid?.() !== 0) throw new Error('this test mounts a tmpfs and runs a PostgreSQL server: run it as root (CI does)');
    if (!fs.existsSync(path.join(POSTGRES_BIN, 'initdb'))) throw new Error(`PostgreSQL's server programs are not in ${POSTGRES_BIN}`);
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${TMPFS_SIZE}`, 'tmpfs', mount_point]);
    mounted = true;
    execFileSync('chown', ['postgres', mount_point]);
    asPostgres('initdb', ['-D', data_dir, '-A', 'trust', '-U', 'postgres', '--no-sync']);
    port = await freePort();
    asPostgres('pg_ctl', ['-D', data_dir, '-l', path.join(mount_point, 'server.log'), '-w', '-o', `-p ${port} -k ${mount_point} -c listen_addresses=127.0.0.1`, 'start']);
    started = true;
    service = await ServiceProcess.start({
      env: { DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/postgres`, JWT_SECRET: TEST_SECRET, BLOCK_INTERVAL_MS: '200', RATE_LIMIT_MAX: '10000000' },
    });
  }, 60_000);
  afterAll(async () => {
    await service?.close();
    if (started) asPostgres('pg_ctl', ['-D', data_dir, '-m', 'immediate', 'stop']);
    if (mounted) execFileSync('umount', ['-l', mount_point]);
    fs.rmSync(mount_point, { recursive: true, force: true });
  });

  it('answers 503 storage_unavailable while the disk is full, and recovers when space is freed', async () => {
    const running = service as ServiceProcess;
    const admin = await running.token('treasury', { admin: true });
    const acknowledged = new Set<string>();
    const submit = async (index: number) => {
      const response = await fetch(`${running.url}/api/transactions/submit`, {
        method: 'POST',
        headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
        body: JSON.stringify({ from: 'treasury', to: `user-${index % 10}`, amount: 1, token: 'USDG', type: 'mint', metadata: { padding: PADDING } }),
        signal: AbortSignal.timeout(20_000),
      });
      const body = (await response.json()) as Record<string, unknown>;
      expect(response.status, JSON.stringify(body)).not.toBe(500);
      if (response.status === 202) acknowledged.add(body.tx_hash as string);
      return { status: response.status, body, retry_after: response.headers.get('retry-after') };
    };
    for (let index = 0; index < 10; index += 1) expect((await submit(index)).status).toBe(202);

    // Fill the disk: the server can no longer extend its tables.
    try {
      execFileSync('dd', ['if=/dev/zero', `of=${filler}`, 'bs=1M'], { stdio: 'pipe' });
    } catch {
      // dd stops with ENOSPC: the disk is full, as wanted.
    }
    let refused = 0;
    let readiness_refused = false;
    for (let index = 0; index < SUBMISSIONS_MAX && refused < REFUSALS_WANTED; index += 1) {
      const answer = await submit(index);
      if (answer.status === 202) continue; // a page with room left
      expect(answer.status).toBe(503);
      expect(answer.body).toMatchObject({ code: 'storage_unavailable', status: 503 });
      expect(Number(answer.retry_after)).toBeGreaterThanOrEqual(1);
      refused += 1;
      readiness_refused ||= (await fetch(`${running.url}/readyz`)).status === 503;
    }
    expect(refused).toBe(REFUSALS_WANTED);
    expect(readiness_refused).toBe(true);
    expect(running.logs().some((line) => String(line.msg).includes('the store refuses writes'))).toBe(true);

    fs.rmSync(filler);
    let recovered = false;
    for (let attempt = 0; attempt < 100 && !recovered; attempt += 1) {
      recovered = (await submit(attempt)).status === 202;
      if (!recovered) await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(recovered).toBe(true);

    await waitUntilAllSealed(running.url, admin, acknowledged);
    expect((await fetch(`${running.url}/readyz`)).status).toBe(200);
    await running.stop();
    await expectAcknowledgedInChain(await PostgresStore.open({ url: `postgres://postgres@127.0.0.1:${port}/postgres`, schema: null }), acknowledged);
  }, 180_000);
});
