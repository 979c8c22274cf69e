/**
 * Ed25519 signature verification in plain BigInt arithmetic, for runtimes whose WebCrypto lacks
 * Ed25519 (older browsers). A transcription of the reference verification of RFC 8032 section 6,
 * whose code components are licensed under the Simplified BSD License:
 *
 *   Copyright (c) 2017 IETF Trust and the persons identified as authors of the code. All rights reserved.
 *   Redistribution and use in source and binary forms, with or without modification, are permitted
 *   provided that the following conditions are met: (1) redistributions of source code must retain
 *   this notice, this list of conditions and the following disclaimer; (2) redistributions in binary
 *   form must reproduce them in the documentation and/or other materials provided with the
 *   distribution; (3) neither the name of Internet Society, IETF or IETF Trust, nor the names of
 *   specific contributors, may be used to endorse or promote products derived from this software
 *   without specific prior written permission. THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND
 *   CONTRIBUTORS "AS IS" AND ANY EXPRESS OR IMPLIED WARRANTIES ARE DISCLAIMED.
 *
 * Verification only (public data, so constant time does not matter). SHA-512 comes from the caller.
 */
type Point = readonly [bigint, bigint, bigint, bigint];

const P = 2n ** 255n - 19n;
const Q = 2n ** 252n + 27742317777372353535851937790883648493n;

function mod(a: bigint, m: bigint = P): bigint {
  const r = a % m;
  return r < 0n ? r + m : r;
}

function power(base: bigint, exponent: bigint, m: bigint = P): bigint {
  let result = 1n;
  let b = mod(base, m);
  let e = exponent;
  while (e > 0n) {
    if ((e & 1n) === 1n) result = (result * b) % m;
    b = (b * b) % m;
    e >>= 1n;
  }
  return result;
}

function inverse(a: bigint): bigint {
  return power(a, P - 2n);
}

const D = mod(-121665n * inverse(121666n));
const SQRT_M1 = power(2n, (P - 1n) / 4n);

function add(a: Point, b: Point): Point {
  const A = mod((a[1] - a[0]) * (b[1] - b[0]));
  const B = mod((a[1] + a[0]) * (b[1] + b[0]));
  const C = mod(2n * a[3] * b[3] * D);
  const Dd = mod(2n * a[2] * b[2]);
  const E = B - A;
  const F = Dd - C;
  const G = Dd + C;
  const H = B + A;
  return [mod(E * F), mod(G * H), mod(F * G), mod(E * H)];
}

function multiply(scalar: bigint, point: Point): Point {
  let result: Point = [0n, 1n, 1n, 0n];
  let addend = point;
  let s = scalar;
  while (s > 0n) {
    if ((s & 1n) === 1n) result = add(result, addend);
    addend = add(addend, addend);
    s >>= 1n;
  }
  return result;
}

function equal(a: Point, b: Point): boolean {
  return mod(a[0] * b[2] - b[0] * a[2]) === 0n && mod(a[1] * b[2] - b[1] * a[2]) === 0n;
}

function recoverX(y: bigint, sign: bigint): bigint | null {
  if (y >= P) return null;
  const x2 = mod((y * y - 1n) * inverse(D * y * y + 1n));
  if (x2 === 0n) return sign === 1n ? null : 0n;
  let x = power(x2, (P + 3n) / 8n);
  if (mod(x * x - x2) !== 0n) x = mod(x * SQRT_M1);
  if (mod(x * x - x2) !== 0n) return null;
  if ((x & 1n) !== sign) x = P - x;
  return x;
}

const G_Y = mod(4n * inverse(5n));
const G_X = recoverX(G_Y, 0n) as bigint;
const BASE: Point = [G_X, G_Y, 1n, mod(G_X * G_Y)];

function littleEndian(bytes: Uint8Array): bigint {
  let value = 0n;
  for (let index = bytes.length - 1; index >= 0; index -= 1) value = (value << 8n) | BigInt(bytes[index] as number);
  return value;
}

function decompress(bytes: Uint8Array): Point | null {
  if (bytes.length !== 32) return null;
  let y = littleEndian(bytes);
  const sign = y >> 255n;
  y &= (1n << 255n) - 1n;
  const x = recoverX(y, sign);
  return x === null ? null : [x, y, 1n, mod(x * y)];
}

/** RFC 8032 Ed25519 verification; `sha512` hashes the concatenation R || A || message. */
export async function ed25519Verify(
  public_key: Uint8Array, message: Uint8Array, signature: Uint8Array, sha512: (bytes: Uint8Array) => Promise<Uint8Array>,
): Promise<boolean> {
  if (public_key.length !== 32 || signature.length !== 64) return false;
  const A = decompress(public_key);
  const r_bytes = signature.subarray(0, 32);
  const R = decompress(r_bytes);
  if (A === null || R === null) return false;
  const s = littleEndian(signature.subarray(32));
  if (s >= Q) return false;
  const input = new Uint8Array(64 + message.length);
  input.set(r_bytes, 0);
  input.set(public_key, 32);
  input.set(message, 64);
  const h = mod(littleEndian(await sha512(input)), Q);
  return equal(multiply(s, BASE), add(R, multiply(h, A)));
}
