/**
 * Runs the service as a process: configuration, listen, and a clean stop on SIGTERM/SIGINT. Shared by
 * `main.ts` (`npm start`, `node dist/main.js`) and the CLI's `tabula serve`.
 */
import { fileURLToPath } from 'node:url';
import { ConfigError, hasJwtKeys, type Config } from './config.js';
import { createLogger, startTabula } from './compose.js';
import { applyHeapGrowth } from './runtime/heap-growth.js';
import { StorageOpenError } from './store/storage-faults.js';

async function serve(config: Config): Promise<void> {
  const logger = createLogger(config);
  applyHeapGrowth(config.heap_growing_percent);
  // The explorer is built next to dist/ (explorer/dist) by `npm run build`.
  const explorer_root = fileURLToPath(new URL('../explorer/dist/', import.meta.url));
  const ledger = await startTabula(config, { logger, explorer_root });
  const address = await listen(ledger.app, config.port, config.host, 'PORT');
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
    const metrics_address = await listen(ledger.metrics_app, config.metrics_port ?? 0, config.host, 'METRICS_PORT');
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

/**
 * An address the settings ask for that cannot be had: a port taken or not allowed, a host this machine
 * cannot listen on. Like a database that cannot be opened (StorageOpenError), start-up ends with the
 * message, naming the variable, and no stack (a stack is for bugs).
 */
class StartupError extends Error {}

/** Listens, or says which setting is at fault when the address cannot be had. */
async function listen(app: { listen(options: { port: number; host: string }): Promise<string> }, port: number, host: string, port_variable: string): Promise<string> {
  try {
    return await app.listen({ port, host });
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    if (code === 'EADDRINUSE') throw new StartupError(`${port_variable}: port ${port} on ${host} is in use by another process`);
    if (code === 'EACCES') throw new StartupError(`${port_variable}: port ${port} needs privileges this process does not have`);
    if (code === 'EADDRNOTAVAIL') throw new StartupError(`HOST: ${host} is not an address of this machine`);
    if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_NONAME') throw new StartupError(`HOST: ${host} does not resolve to an address to listen on`);
    throw error;
  }
}

function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** The one line start-up ends with: the setting at fault, or, for a bug, the stack. */
function startFailure(error: unknown): string {
  if (error instanceof ConfigError) return `invalid configuration: ${error.message}`;
  if (error instanceof StartupError) return `failed to start: ${error.message}`;
  if (error instanceof StorageOpenError) return `failed to start: DATABASE_URL: ${error.message}`;
  return `failed to start: ${error instanceof Error ? error.stack : String(error)}`;
}

/** Loads the configuration and serves until a signal; a bad configuration exits 1 naming the variable. */
export function runService(load: () => Config): void {
  Promise.resolve().then(() => serve(load())).catch((error: unknown) => {
    process.stderr.write(`${startFailure(error)}\n`);
    process.exit(1);
  });
}
