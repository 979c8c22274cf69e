/**
 * A real OpenID identity provider for end-to-end tests, on loopback (127.0.0.1, a free port):
 * `/.well-known/openid-configuration` names `jwks_uri`, `/jwks.json` publishes the public keys (an
 * ES256 and an RS256 key to begin with, each with a `kid`), and `sign()` issues tokens with either
 * key. Keys can be rotated in (published) or made rogue (never published), and every JWKS fetch is
 * counted, so tests can see how often the service asks for the keys.
 */
import { createHmac, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, exportSPKI, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';

export type SigningAlgorithm = 'ES256' | 'RS256';

export type SigningKey = {
  alg: SigningAlgorithm;
  kid: string;
  privateKey: CryptoKey;
  publicKey: CryptoKey;
  /** The public key as the JWKS publishes it (with kid, alg and use). */
  publicJwk: JWK;
};

/**
 * Claims of a token. A claim left out gets the provider's default (iss = the issuer, aud = the
 * provider's audience, iat = nbf = now, exp = now + 5 min); a claim set to `undefined` is omitted.
 */
export type TokenClaims = {
  sub?: string | undefined;
  scope?: string | undefined;
  scp?: string[] | undefined;
  iss?: string | undefined;
  aud?: string | string[] | undefined;
  exp?: number | undefined;
  nbf?: number | undefined;
  iat?: number | undefined;
  [claim: string]: unknown;
};

export type SignOptions = {
  /** The key to sign with: one of the provider's (by algorithm) or any key pair (e.g. a rogue one). */
  key?: SigningAlgorithm | SigningKey;
  /** Overrides the `kid` in the header (`null` leaves it out). */
  kid?: string | null;
  /** Extra protected-header parameters (e.g. `jku`, `jwk`). */
  header?: Record<string, unknown>;
};

export type IdentityProviderOptions = {
  /** The default `aud` of issued tokens. */
  audience?: string;
  /** Write the issuer with a trailing slash (`http://127.0.0.1:port/`), as e.g. Auth0 does. */
  issuerTrailingSlash?: boolean;
  /** Listen on this loopback port instead of a free one (e.g. one a service was told of before the provider started). */
  port?: number;
  /** Overrides of what the discovery document says (e.g. another issuer, an http `jwks_uri` off loopback). */
  discovery?: { issuer?: string; jwks_uri?: string };
};

export function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

export function base64url(input: string | Uint8Array): string {
  return Buffer.from(input).toString('base64url');
}

/** A compact JWS with an HMAC-SHA256 signature over `header.payload`, made by hand (no library checks). */
export function signHs256(header: Record<string, unknown>, payload: Record<string, unknown>, secret: Uint8Array | string): string {
  const signing_input = `${base64url(JSON.stringify(header))}.${base64url(JSON.stringify(payload))}`;
  const signature = createHmac('sha256', secret).update(signing_input).digest('base64url');
  return `${signing_input}.${signature}`;
}

/** An unsecured JWS (`alg: none`): header and payload, empty signature. */
export function unsignedToken(payload: Record<string, unknown>, alg = 'none'): string {
  return `${base64url(JSON.stringify({ alg, typ: 'JWT' }))}.${base64url(JSON.stringify(payload))}.`;
}

/** Decodes the payload segment of a compact JWS (no verification). */
export function decodePayload(token: string): Record<string, unknown> {
  const segment = token.split('.')[1];
  if (segment === undefined) throw new Error('not a compact JWS');
  return JSON.parse(Buffer.from(segment, 'base64url').toString('utf8')) as Record<string, unknown>;
}

/** Replaces the payload of a signed token, keeping its header and signature (a tampered token). */
export function withPayload(token: string, payload: Record<string, unknown>): string {
  const [header, , signature] = token.split('.');
  if (header === undefined || signature === undefined) throw new Error('not a compact JWS');
  return `${header}.${base64url(JSON.stringify(payload))}.${signature}`;
}

export async function createSigningKey(alg: SigningAlgorithm, kid: string = `${alg.toLowerCase()}-${randomUUID()}`): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const publicJwk: JWK = { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' };
  return { alg, kid, privateKey, publicKey, publicJwk };
}

export class IdentityProvider {
  readonly issuer: string;
  readonly jwksUrl: string;
  readonly audience: string;
  /** The keys published in the JWKS, oldest first. */
  private published: SigningKey[];
  /** The current signing key per algorithm (the newest published one). */
  private current: Record<SigningAlgorithm, SigningKey>;
  private readonly server: http.Server;
  private jwks_fetches = 0;
  private discovery_fetches = 0;
  private discovery_overrides: { issuer?: string; jwks_uri?: string } = {};

  private constructor(server: http.Server, base: string, issuer: string, audience: string, keys: SigningKey[]) {
    this.server = server;
    this.issuer = issuer;
    this.jwksUrl = `${base}/jwks.json`;
    this.audience = audience;
    this.published = keys;
    const es = keys.find((key) => key.alg === 'ES256');
    const rs = keys.find((key) => key.alg === 'RS256');
    if (es === undefined || rs === undefined) throw new Error('the provider needs an ES256 and an RS256 key');
    this.current = { ES256: es, RS256: rs };
  }

  static async start(options: IdentityProviderOptions = {}): Promise<IdentityProvider> {
    const keys = [await createSigningKey('ES256'), await createSigningKey('RS256')];
    let provider: IdentityProvider | undefined;
    const server = http.createServer((request, response) => {
      if (provider === undefined) {
        response.writeHead(503).end();
        return;
      }
      provider.handle(request, response);
    });
    server.keepAliveTimeout = 1000;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
    });
    const { port } = server.address() as AddressInfo;
    const base = `http://127.0.0.1:${port}`;
    const issuer = options.issuerTrailingSlash === true ? `${base}/` : base;
    provider = new IdentityProvider(server, base, issuer, options.audience ?? 'tabula-e2e', keys);
    provider.discovery_overrides = options.discovery ?? {};
    return provider;
  }

  /** How many times `/jwks.json` was fetched. */
  get jwksFetchCount(): number {
    return this.jwks_fetches;
  }

  get discoveryFetchCount(): number {
    return this.discovery_fetches;
  }

  /** The provider's current key for an algorithm. */
  key(alg: SigningAlgorithm): SigningKey {
    return this.current[alg];
  }

  get publishedKeys(): readonly SigningKey[] {
    return this.published;
  }

  /**
   * Rotates in a new key for `alg`: it is published at once and becomes the signing key for `alg`.
   * The previous keys stay published unless `retirePrevious` is set.
   */
  async rotate(alg: SigningAlgorithm, options: { retirePrevious?: boolean } = {}): Promise<SigningKey> {
    const key = await createSigningKey(alg, `${alg.toLowerCase()}-rotated-${randomUUID()}`);
    this.published = options.retirePrevious === true ? [...this.published.filter((item) => item.alg !== alg), key] : [...this.published, key];
    this.current = { ...this.current, [alg]: key };
    return key;
  }

  /** Signs a token; see `TokenClaims` for the defaults. */
  async sign(claims: TokenClaims = {}, options: SignOptions = {}): Promise<string> {
    const key = typeof options.key === 'object' ? options.key : this.current[options.key ?? 'ES256'];
    const now = nowSeconds();
    const defaults: TokenClaims = { iss: this.issuer, aud: this.audience, iat: now, nbf: now, exp: now + 300 };
    const merged: Record<string, unknown> = { ...defaults, ...claims };
    const payload = Object.fromEntries(Object.entries(merged).filter(([, value]) => value !== undefined));
    const kid = options.kid === undefined ? key.kid : options.kid;
    const header = { alg: key.alg, typ: 'JWT', ...(kid === null ? {} : { kid }), ...options.header };
    return new SignJWT(payload).setProtectedHeader(header).sign(key.privateKey);
  }

  /** A token for `sub`, optionally with the admin scope. */
  async token(sub: string, options: { admin?: boolean; alg?: SigningAlgorithm; adminScope?: string } = {}): Promise<string> {
    const scope = options.admin === true ? `openid ${options.adminScope ?? 'ledger:admin'}` : 'openid';
    return this.sign({ sub, scope }, { key: options.alg ?? 'ES256' });
  }

  /** The RS256 public key as PEM (SPKI), e.g. to try it as an HMAC secret. */
  async rsaPublicKeyPem(): Promise<string> {
    return exportSPKI(this.current.RS256.publicKey);
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }

  private handle(request: http.IncomingMessage, response: http.ServerResponse): void {
    const path = (request.url ?? '/').split('?')[0];
    if (request.method !== 'GET') {
      response.writeHead(405).end();
      return;
    }
    if (path === '/.well-known/openid-configuration') {
      this.discovery_fetches += 1;
      this.json(response, {
        issuer: this.issuer,
        jwks_uri: this.jwksUrl,
        id_token_signing_alg_values_supported: ['ES256', 'RS256'],
        response_types_supported: ['token'],
        subject_types_supported: ['public'],
        ...this.discovery_overrides,
      });
      return;
    }
    if (path === '/jwks.json') {
      this.jwks_fetches += 1;
      this.json(response, { keys: this.published.map((key) => key.publicJwk) });
      return;
    }
    response.writeHead(404).end();
  }

  private json(response: http.ServerResponse, body: unknown): void {
    const text = JSON.stringify(body);
    response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store' });
    response.end(text);
  }
}
