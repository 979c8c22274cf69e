/**
 * Development tokens the running service accepts: HS256 with JWT_SECRET, or with the development
 * secret in the data folder. Used by `npm run token` and `tabula token`; the signing itself is
 * src/auth/dev-token-signer.ts, shared with the explorer's `POST /dev/token`.
 */
import type { Config } from '../config.js';
import { readOrCreateDevSecret } from '../auth/dev-secret.js';
import { createDevTokenSigner, DEV_TOKEN_TTL_S_DEFAULT, DEV_TOKEN_TTL_S_MAX } from '../auth/dev-token-signer.js';
import { parseUserId } from '../domain/user-id.js';
import { UsageError } from './cli-config.js';
import { parseCommandLine } from './command-line.js';

export const TOKEN_USAGE = '<user> [--admin] [--ttl <seconds>]';

export async function mintDevToken(args: string[], config: Config): Promise<string> {
  const { values, positionals } = parseCommandLine(args, { admin: { type: 'boolean', default: false }, ttl: { type: 'string' } });
  const [user] = positionals;
  if (user === undefined || positionals.length > 1) throw new UsageError(`usage: token ${TOKEN_USAGE}`);
  const user_id = userIdArgument(user);
  const ttl_s = values.ttl === undefined ? DEV_TOKEN_TTL_S_DEFAULT : Number(values.ttl);
  if (!Number.isInteger(ttl_s) || ttl_s < 1 || ttl_s > DEV_TOKEN_TTL_S_MAX) throw new UsageError(`--ttl must be an integer from 1 to ${DEV_TOKEN_TTL_S_MAX}`);
  const signer = createDevTokenSigner({
    secret: config.jwt.secret ?? readOrCreateDevSecret(config.data_dir),
    admin_scope: config.admin_scope,
    issuer: config.jwt.issuer,
    audience: config.jwt.audience,
  });
  return signer.sign(user_id, { admin: values.admin, ttl_s });
}

function userIdArgument(user: string): string {
  try {
    return parseUserId(user, 'user');
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}
