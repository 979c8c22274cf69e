/**
 * The benchmark's load generator (bench/load.ts, a process of its own) against a loopback server that
 * records what it is sent: the pool's requests in turn, and a new `Idempotency-Key` on each send of a
 * request marked for it (the keyed submit scenario), none on the others.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PooledRequest } from '../../bench/load-types.js';
import { startLoadGenerator, type LoadGenerator } from '../../bench/processes.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('the load generator', () => {
  const received: Array<{ path: string; key: string | undefined }> = [];
  let server: http.Server;
  let url: string;
  let load: LoadGenerator;

  beforeAll(async () => {
    server = http.createServer((request, response) => {
      request.resume();
      request.on('end', () => {
        const key = request.headers['idempotency-key'];
        received.push({ path: request.url ?? '', key: typeof key === 'string' ? key : undefined });
        response.writeHead(202, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    load = startLoadGenerator(ROOT);
  });
  afterAll(async () => {
    load.stop();
    await new Promise((resolve) => server.close(resolve));
  });

  it('sends a new Idempotency-Key with each send of a marked request, and none with the others', async () => {
    const request = (name: string, keyed: boolean): PooledRequest => ({
      method: 'POST', path: `/${name}`, headers: { 'content-type': 'application/json' }, body: '{}', ...(keyed ? { new_idempotency_key: true } : {}),
    });
    const result = await load.run({ url, connections: 4, duration_s: 1, warmup_s: 0, requests: [request('keyed', true), request('plain', false)], count_batch_items: false });

    expect(result.errors).toBe(0);
    expect(result.acknowledged).toBeGreaterThan(10);
    const keyed = received.filter((item) => item.path === '/keyed');
    const plain = received.filter((item) => item.path === '/plain');
    expect(keyed.length).toBeGreaterThan(5);
    expect(plain.length).toBeGreaterThan(5);
    for (const item of keyed) expect(item.key).toMatch(UUID);
    expect(new Set(keyed.map((item) => item.key)).size).toBe(keyed.length);
    expect(plain.every((item) => item.key === undefined)).toBe(true);
  }, 30_000);
});
