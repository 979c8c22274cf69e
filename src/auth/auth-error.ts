/** Why a caller was not authenticated; the HTTP edge (src/http/error-mapping.ts) turns it into 401 or 503. */
export class AuthError extends Error {
  readonly code: 'missing_token' | 'invalid_token' | 'invalid_api_key' | 'identity_provider_unavailable';
  constructor(code: AuthError['code'], message: string) {
    super(message);
    this.name = 'AuthError';
    this.code = code;
  }
}
