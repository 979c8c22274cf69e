/**
 * Mints a development token the running service accepts: `npm run token -- <user> [--admin] [--ttl <seconds>]`
 * (the same as `tabula token`).
 */
import { loadConfig } from '../config.js';
import { UsageError } from './cli-config.js';
import { mintDevToken } from './dev-token.js';

mintDevToken(process.argv.slice(2), loadConfig()).then(
  (token) => process.stdout.write(`${token}\n`),
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    // As `tabula token`: 2 for bad usage, 1 for anything else.
    process.exit(error instanceof UsageError ? 2 : 1);
  },
);
