/**
 * The two documents an identity provider serves us: its OpenID discovery document (which names
 * `jwks_uri` and must repeat our issuer exactly) and its JWKS. Each fetch has a timeout, a size limit
 * and follows no redirect; every address must be https unless it is on a loopback host.
 */
import type { JSONWebKeySet } from 'jose';
import { isLoopbackHost } from '../config.js';

export const FETCH_TIMEOUT_MS = 5000;
/** A JWKS or discovery document larger than this is refused (real ones are a few KB). */
const DOCUMENT_BYTES_MAX = 512 * 1024;

/** https, or http on a loopback host (127.0.0.0/8, ::1, localhost); null when acceptable, else why not. */
export function insecureUrlReason(address: string): string | null {
  let parsed: URL;
  try {
    parsed = new URL(address);
  } catch {
    return `"${address}" is not a URL`;
  }
  if (parsed.protocol === 'https:') return null;
  if (parsed.protocol === 'http:' && isLoopbackHost(parsed.hostname)) return null;
  return `"${address}" must be https (plain http is accepted only on a loopback host)`;
}

/**
 * OpenID Connect discovery: `{issuer}/.well-known/openid-configuration`. The document's `issuer` must
 * equal the configured one exactly (OpenID Connect Discovery 1.0, section 4.3), and its `jwks_uri`
 * must be https unless on loopback. The issuer is kept exactly as configured for the `iss` check
 * (Auth0's ends in a slash); only the discovery address drops a trailing slash.
 */
export async function discoverJwksUrl(issuer: string, signal: AbortSignal): Promise<string> {
  const document = await fetchJson(`${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`, signal) as { issuer?: unknown; jwks_uri?: unknown };
  if (document.issuer !== issuer) {
    throw new Error(`the discovery document names issuer ${JSON.stringify(document.issuer)}, not the configured ${JSON.stringify(issuer)}`);
  }
  if (typeof document.jwks_uri !== 'string') throw new Error('no jwks_uri in the discovery document');
  const reason = insecureUrlReason(document.jwks_uri);
  if (reason !== null) throw new Error(`the discovered jwks_uri ${reason}`);
  return document.jwks_uri;
}

export async function fetchJwks(jwks_url: string, signal: AbortSignal): Promise<JSONWebKeySet> {
  const document = await fetchJson(jwks_url, signal) as { keys?: unknown };
  if (!Array.isArray(document.keys)) throw new Error('the JWKS has no "keys" array');
  return document as JSONWebKeySet;
}

async function fetchJson(address: string, signal: AbortSignal): Promise<unknown> {
  const response = await fetch(address, {
    signal: AbortSignal.any([signal, AbortSignal.timeout(FETCH_TIMEOUT_MS)]),
    redirect: 'error',
    headers: { accept: 'application/json' },
  });
  if (!response.ok) throw new Error(`${address} answered ${response.status}`);
  const declared = Number(response.headers.get('content-length') ?? '0');
  if (declared > DOCUMENT_BYTES_MAX) throw new Error(`${address} sent ${declared} bytes, more than ${DOCUMENT_BYTES_MAX}`);
  const text = await response.text();
  if (Buffer.byteLength(text) > DOCUMENT_BYTES_MAX) throw new Error(`${address} sent more than ${DOCUMENT_BYTES_MAX} bytes`);
  const parsed: unknown = JSON.parse(text);
  if (typeof parsed !== 'object' || parsed === null) throw new Error(`${address} did not send a JSON object`);
  return parsed;
}
