/**
 * Runs the service as a process: configuration, listen, and a clean stop on SIGTERM/SIGINT. Shared by
 * `main.ts` (`npm start`, `node dist/main.js`) and the CLI's `tabula serve`.
 */
import { fileURLToPath } from 'node:url';
import { ConfigError, hasJwtKeys, type Config } from './config.js';
import { createLogger, startTabula } from './compose.js';
import { applyHeapGrowth } from './runtime/heap-growth.js';

async function serve(config: Config): Promise<void> {
  const logger = createLogger(config);
  applyHeapGrowth(config.heap_growing_percent);
  // The explorer is built next to dist/ (explorer/dist) by `npm run build`.
  const explorer_root = fileURLToPath(new URL('../explorer/dist/', import.meta.url));
  const ledger = await startTabula(config, { logger, explorer_root });
  const address = await ledger.app.listen({ port: config.port, host: config.host });
  logger.info({ address, database: config.database.kind, native_symbol: config.native_symbol, heap_growing_percent: config.heap_growing_percent, node_flags: process.execArgv }, 'tabula is listening');
  if (!config.production && !hasJwtKeys(config.jwt) && !isLoopbackHost(config.host)) {
    logger.warn(
      { host: config.host },
      'DEVELOPMENT MODE IS LISTENING BEYOND LOOPBACK: tokens are signed with a development secret and anyone who can read it, '
      + 'or reach this machine through a local proxy that forgets forwarding headers, can become an admin. '
      + 'Configure an identity provider (JWT_ISSUER or JWT_JWKS_URL) or unset HOST to listen on 127.0.0.1 only.',
    );
  }
  if (ledger.metrics_app !== null) {
    const metrics_address = await ledger.metrics_app.listen({ port: config.metrics_port, host: config.host });
    logger.info({ address: metrics_address }, 'metrics are served');
  }

  const shutdown = (signal: string): void => {
    logger.info({ signal }, 'shutting down: sealing what is pending');
    ledger.stop().then(
      () => {
        logger.info('stopped');
        process.exit(0);
      },
      (error: unknown) => {
        logger.fatal({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
}

function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** Loads the configuration and serves until a signal; a bad configuration exits 1 naming the variable. */
export function runService(load: () => Config): void {
  Promise.resolve().then(() => serve(load())).catch((error: unknown) => {
    const message = error instanceof ConfigError ? `invalid configuration: ${error.message}` : `failed to start: ${error instanceof Error ? error.stack : String(error)}`;
    process.stderr.write(`${message}\n`);
    process.exit(1);
  });
}
