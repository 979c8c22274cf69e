/**
 * Two in-process instances of Tabula on one PostgreSQL schema of their own, a "writer" and a "reader",
 * whose event hubs do not poll: the reader hears of the writer's commits only by notification. For
 * tests of what one instance sees of another's writes.
 */
import pino from 'pino';
import { loadConfig, type Config } from '../../src/config.js';
import { startTabula, type Tabula } from '../../src/compose.js';
import { TEST_SECRET } from './in-process-tabula.js';
import { createTestDatabase, type TestDatabase } from './test-database.js';

/** The event hub's backstop poll, out of the way of any test. */
const NO_POLL_MS = 3_600_000;

export type TwoInstances = { database: TestDatabase; config: Config; writer: Tabula; reader: Tabula; stop(): Promise<void> };

export async function startTwoInstances(): Promise<TwoInstances> {
  const database = await createTestDatabase('postgres');
  const config = loadConfig({ DATABASE_URL: database.url, JWT_SECRET: TEST_SECRET, BLOCK_INTERVAL_MS: '3600000', LOG_LEVEL: 'silent' });
  const options = { logger: pino({ level: 'silent' }), event_hub: { poll_interval_ms: NO_POLL_MS } };
  const started: Tabula[] = [];
  const stop = async () => {
    for (const instance of started.reverse()) await instance.stop();
    await database.drop();
  };
  try {
    started.push(await startTabula(config, options));
    started.push(await startTabula(config, options));
  } catch (error) {
    await stop();
    throw error;
  }
  const [writer, reader] = started as [Tabula, Tabula];
  return { database, config, writer, reader, stop };
}
