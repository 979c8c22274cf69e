/**
 * One end-to-end environment: a test identity provider and the service process trusting it
 * (JWT_ISSUER → OpenID discovery → JWKS, JWT_AUDIENCE set), plus an API client and tokens.
 */
import { IdentityProvider, type IdentityProviderOptions, type SigningAlgorithm } from './identity-provider.js';
import { ApiClient } from './http.js';
import { ServiceProcess } from '../../support/service-process.js';

export const AUDIENCE = 'tabula-e2e';
export const ADMIN_SCOPE = 'ledger:admin';
export const ADMIN = 'issuer';

export type E2eEnvironment = {
  idp: IdentityProvider;
  service: ServiceProcess;
  /** A client without credentials, following the service across restarts. */
  anonymous: ApiClient;
  /** A client with an admin token (sub `issuer`). */
  admin: ApiClient;
  /** A client for `sub` (a fresh token, ES256 unless asked otherwise). */
  as(sub: string, options?: { admin?: boolean; alg?: SigningAlgorithm }): Promise<ApiClient>;
  close(): Promise<void>;
};

export type EnvironmentOptions = {
  env?: Record<string, string>;
  idp?: IdentityProviderOptions;
};

export async function startEnvironment(options: EnvironmentOptions = {}): Promise<E2eEnvironment> {
  const idp = await IdentityProvider.start({ audience: AUDIENCE, ...options.idp });
  let service: ServiceProcess;
  try {
    service = await ServiceProcess.start({
      env: {
        JWT_ISSUER: idp.issuer,
        JWT_AUDIENCE: AUDIENCE,
        LEDGER_ADMIN_SCOPE: ADMIN_SCOPE,
        RATE_LIMIT_MAX: '1000000',
        // The attack matrix sends hundreds of bad tokens from one address: it tests verification, not the flood cap.
        AUTH_FAILURES_MAX: '1000000',
        // Load and crash scenarios overdraw on purpose, far past a failure budget (test/security covers it).
        FAILURE_BUDGET_PER_HOUR: '1000000',
        BLOCK_INTERVAL_MS: '100',
        ...options.env,
      },
    });
  } catch (error) {
    await idp.close();
    throw error;
  }
  const anonymous = new ApiClient(() => service.url);
  const as = async (sub: string, token_options: { admin?: boolean; alg?: SigningAlgorithm } = {}): Promise<ApiClient> =>
    anonymous.as(await idp.token(sub, { ...token_options, adminScope: ADMIN_SCOPE }));
  const admin = await as(ADMIN, { admin: true });
  return {
    idp,
    service,
    anonymous,
    admin,
    as,
    async close() {
      await service.close();
      await idp.close();
    },
  };
}
