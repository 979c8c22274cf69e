/**
 * Mints a development token the running service accepts: `npm run token -- <user> [--admin] [--ttl <seconds>]`
 * (the same as `tabula token`).
 */
import { loadConfig } from '../config.js';
import { mintDevToken } from './dev-token.js';

mintDevToken(process.argv.slice(2), loadConfig()).then(
  (token) => process.stdout.write(`${token}\n`),
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
