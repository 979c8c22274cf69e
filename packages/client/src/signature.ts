/** Ed25519 verification of checkpoint notes: WebCrypto where the runtime has Ed25519, else the RFC 8032 fallback. */
import { ed25519Verify } from './ed25519-fallback.js';

function buffer(bytes: Uint8Array): Uint8Array<ArrayBuffer> {
  return bytes.buffer instanceof ArrayBuffer ? (bytes as Uint8Array<ArrayBuffer>) : new Uint8Array(bytes);
}

async function sha512(bytes: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await globalThis.crypto.subtle.digest('SHA-512', buffer(bytes)));
}

/** Verifies with the RFC 8032 fallback only (what a browser without WebCrypto Ed25519 runs). */
export function verifyEd25519Fallback(public_key: Uint8Array, message: Uint8Array, signature: Uint8Array): Promise<boolean> {
  return ed25519Verify(public_key, message, signature, sha512);
}

/** True when `signature` is a valid Ed25519 signature of `message` by `public_key` (raw 32 bytes). */
export async function verifyEd25519(public_key: Uint8Array, message: Uint8Array, signature: Uint8Array): Promise<boolean> {
  if (public_key.length !== 32 || signature.length !== 64) return false;
  const key = await globalThis.crypto.subtle.importKey('raw', buffer(public_key), { name: 'Ed25519' }, false, ['verify']).catch(() => null);
  if (key === null) return verifyEd25519Fallback(public_key, message, signature);
  return globalThis.crypto.subtle.verify({ name: 'Ed25519' }, key, buffer(signature), buffer(message));
}
