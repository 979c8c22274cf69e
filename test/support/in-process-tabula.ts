/**
 * An in-process Tabula (the composition root's `startTabula`) on a fresh database of the project's
 * store kind (a temporary SQLite file, or a PostgreSQL schema of its own: see test-database.ts), with a
 * development HS256 secret, for tests that drive the HTTP API through `app.inject()`. Nothing is
 * shared between instances.
 */
import { SignJWT } from 'jose';
import pino, { type Logger } from 'pino';
import { loadConfig, type Config } from '../../src/config.js';
import { TEST_CHECKPOINT_KEY } from './service-process.js';
import { startTabula, type Tabula } from '../../src/compose.js';
import type { EventStreamLimits } from '../../src/http/routes/events.js';
import type { Clock } from '../../src/service/clock.js';
import { createTestDatabase, type StoreKind } from './test-database.js';

export const TEST_SECRET = 'test-secret-that-is-at-least-32-bytes-long!!';

export type TestTabula = Tabula & {
  config: Config;
  dir: string;
  /** A token for `sub`, signed with the test secret. */
  token(sub: string, options?: { admin?: boolean; expires_in_s?: number }): Promise<string>;
  close(): Promise<void>;
};

/** `env` overrides the test defaults (an empty value unsets one, e.g. `JWT_SECRET: ''` for the development secret). */
export async function startTestTabula(
  env: Record<string, string> = {},
  options: { clock?: Clock; store?: StoreKind; explorer_root?: string; event_stream_limits?: Partial<EventStreamLimits>; logger?: Logger } = {},
): Promise<TestTabula> {
  const database = await createTestDatabase(options.store);
  const dir = database.dir;
  const config = loadConfig({
    DATABASE_URL: database.url,
    JWT_SECRET: TEST_SECRET,
    CHECKPOINT_SIGNING_KEY: TEST_CHECKPOINT_KEY,
    BLOCK_INTERVAL_MS: '3600000',
    LOG_LEVEL: 'silent',
    ...env,
  });
  const ledger = await startTabula(config, {
    logger: options.logger ?? pino({ level: 'silent' }),
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.explorer_root === undefined ? {} : { explorer_root: options.explorer_root }),
    ...(options.event_stream_limits === undefined ? {} : { event_stream_limits: options.event_stream_limits }),
  });
  // Tests seal explicitly with `producer.sealNext()` / `producer.drain()`; the timer is not needed.
  await ledger.producer.stop();
  return {
    ...ledger,
    config,
    dir,
    token: (sub, token_options = {}) => signTestToken(sub, config, token_options),
    async close() {
      await ledger.stop();
      await database.drop();
    },
  };
}

export async function signTestToken(sub: string, config: Config, options: { admin?: boolean; expires_in_s?: number } = {}): Promise<string> {
  const jwt = new SignJWT({ scope: options.admin === true ? config.admin_scope : 'openid' })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(sub)
    .setIssuedAt()
    .setExpirationTime(Math.floor(Date.now() / 1000) + (options.expires_in_s ?? 600));
  if (config.jwt.issuer !== undefined) jwt.setIssuer(config.jwt.issuer);
  if (config.jwt.audience !== undefined) jwt.setAudience(config.jwt.audience);
  return jwt.sign(new TextEncoder().encode(config.jwt.secret ?? TEST_SECRET));
}
