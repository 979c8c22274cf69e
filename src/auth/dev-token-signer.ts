/**
 * Development tokens: HS256 JWTs signed with the development secret (or JWT_SECRET), for the
 * `npm run token` command and, when the service runs with the development secret, the explorer's
 * "development token" button (`POST /dev/token`).
 */
import { SignJWT } from 'jose';

export const DEV_TOKEN_TTL_S_DEFAULT = 3600;
export const DEV_TOKEN_TTL_S_MAX = 30 * 24 * 3600;

export type DevTokenSigner = {
  /** The token lifetime `sign` uses unless told otherwise. */
  readonly ttl_s: number;
  sign(sub: string, options: { admin: boolean; ttl_s?: number }): Promise<string>;
};

export type DevTokenSettings = {
  secret: string;
  admin_scope: string;
  issuer?: string | undefined;
  audience?: string | undefined;
};

export function createDevTokenSigner(settings: DevTokenSettings): DevTokenSigner {
  const key = new TextEncoder().encode(settings.secret);
  return {
    ttl_s: DEV_TOKEN_TTL_S_DEFAULT,
    async sign(sub, options) {
      const ttl_s = options.ttl_s ?? DEV_TOKEN_TTL_S_DEFAULT;
      if (!Number.isInteger(ttl_s) || ttl_s < 1 || ttl_s > DEV_TOKEN_TTL_S_MAX) {
        throw new RangeError(`the token lifetime must be an integer from 1 to ${DEV_TOKEN_TTL_S_MAX} seconds`);
      }
      const jwt = new SignJWT({ scope: options.admin ? settings.admin_scope : '' })
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setSubject(sub)
        .setIssuedAt()
        .setExpirationTime(`${ttl_s}s`);
      if (settings.issuer !== undefined) jwt.setIssuer(settings.issuer);
      if (settings.audience !== undefined) jwt.setAudience(settings.audience);
      return jwt.sign(key);
    },
  };
}
