// SHA-1 and SHA-256 of a string's UTF-8 bytes in plain TypeScript: the same digests as node:crypto on runtimes without it (a Worker without nodejs_compat).

/*
 * Synchronous on purpose: keys are named per request inside synchronous code (base/keys.ts,
 * identity/api-key.ts), where WebCrypto's promise-returning digest cannot go. Both hashes share
 * one padded message buffer, reused while small (a key or an identity), so a digest allocates
 * only its answer.
 */

const K256 = new Int32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be,
  0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa,
  0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85,
  0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3,
  0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f,
  0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);
const H256 = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];
const H1 = [0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0];

const W = new Int32Array(80);
const STATE = new Int32Array(8);
/** Reused for inputs up to this many bytes once padded; a longer one gets its own buffer, not kept. */
const REUSE_MAX = 4096;
let shared = new Uint8Array(256);

/**
 * `text` as UTF-8 (a lone surrogate as U+FFFD, as Node and TextEncoder write it), padded for
 * SHA-1/SHA-2: 0x80, zeros, the bit length big-endian in the last 8 bytes. Returns the buffer and
 * the padded length (a multiple of 64).
 */
function padded(text: string): { bytes: Uint8Array; length: number } {
  const need = ((text.length * 3 + 72) | 63) + 1;
  let bytes = shared;
  if (need > bytes.length) bytes = need > REUSE_MAX ? new Uint8Array(need) : (shared = new Uint8Array(Math.max(need, bytes.length * 2)));
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    let c = text.charCodeAt(i);
    if (c < 0x80) {
      bytes[n++] = c;
      continue;
    }
    if (c < 0x800) {
      bytes[n++] = 0xc0 | (c >> 6);
      bytes[n++] = 0x80 | (c & 63);
      continue;
    }
    if (c >= 0xd800 && c <= 0xdfff) {
      const next = i + 1 < text.length ? text.charCodeAt(i + 1) : 0;
      if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
        c = 0x10000 + ((c - 0xd800) << 10) + (next - 0xdc00);
        i++;
        bytes[n++] = 0xf0 | (c >> 18);
        bytes[n++] = 0x80 | ((c >> 12) & 63);
        bytes[n++] = 0x80 | ((c >> 6) & 63);
        bytes[n++] = 0x80 | (c & 63);
        continue;
      }
      c = 0xfffd;
    }
    bytes[n++] = 0xe0 | (c >> 12);
    bytes[n++] = 0x80 | ((c >> 6) & 63);
    bytes[n++] = 0x80 | (c & 63);
  }
  const length = ((n + 8) | 63) + 1;
  bytes[n] = 0x80;
  bytes.fill(0, n + 1, length - 4);
  const bits = n * 8;
  // Inputs stay far below 2^32 bits (512 MB): the high word of the length is zero.
  bytes[length - 4] = bits >>> 24;
  bytes[length - 3] = (bits >>> 16) & 255;
  bytes[length - 2] = (bits >>> 8) & 255;
  bytes[length - 1] = bits & 255;
  return { bytes, length };
}

function loadBlock(bytes: Uint8Array, at: number): void {
  for (let t = 0; t < 16; t++, at += 4) W[t] = (bytes[at] << 24) | (bytes[at + 1] << 16) | (bytes[at + 2] << 8) | bytes[at + 3];
}

function sha256Words(text: string): Int32Array {
  const { bytes, length } = padded(text);
  const s = STATE;
  for (let i = 0; i < 8; i++) s[i] = H256[i];
  for (let block = 0; block < length; block += 64) {
    loadBlock(bytes, block);
    for (let t = 16; t < 64; t++) {
      const w15 = W[t - 15];
      const w2 = W[t - 2];
      const s0 = ((w15 >>> 7) | (w15 << 25)) ^ ((w15 >>> 18) | (w15 << 14)) ^ (w15 >>> 3);
      const s1 = ((w2 >>> 17) | (w2 << 15)) ^ ((w2 >>> 19) | (w2 << 13)) ^ (w2 >>> 10);
      W[t] = (W[t - 16] + s0 + W[t - 7] + s1) | 0;
    }
    let a = s[0], b = s[1], c = s[2], d = s[3], e = s[4], f = s[5], g = s[6], h = s[7];
    for (let t = 0; t < 64; t++) {
      const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      const t1 = (h + S1 + ((e & f) ^ (~e & g)) + K256[t] + W[t]) | 0;
      const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
      const t2 = (S0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
      h = g; g = f; f = e; e = (d + t1) | 0;
      d = c; c = b; b = a; a = (t1 + t2) | 0;
    }
    s[0] = (s[0] + a) | 0; s[1] = (s[1] + b) | 0; s[2] = (s[2] + c) | 0; s[3] = (s[3] + d) | 0;
    s[4] = (s[4] + e) | 0; s[5] = (s[5] + f) | 0; s[6] = (s[6] + g) | 0; s[7] = (s[7] + h) | 0;
  }
  return s;
}

function sha1Words(text: string): Int32Array {
  const { bytes, length } = padded(text);
  const s = STATE;
  for (let i = 0; i < 5; i++) s[i] = H1[i];
  for (let block = 0; block < length; block += 64) {
    loadBlock(bytes, block);
    for (let t = 16; t < 80; t++) {
      const x = W[t - 3] ^ W[t - 8] ^ W[t - 14] ^ W[t - 16];
      W[t] = (x << 1) | (x >>> 31);
    }
    let a = s[0], b = s[1], c = s[2], d = s[3], e = s[4];
    for (let t = 0; t < 80; t++) {
      const f = t < 20 ? ((b & c) | (~b & d)) + 0x5a827999 : t < 40 ? (b ^ c ^ d) + 0x6ed9eba1 : t < 60 ? ((b & c) | (b & d) | (c & d)) + 0x8f1bbcdc : (b ^ c ^ d) + 0xca62c1d6;
      const next = (((a << 5) | (a >>> 27)) + f + e + W[t]) | 0;
      e = d; d = c; c = (b << 30) | (b >>> 2); b = a; a = next;
    }
    s[0] = (s[0] + a) | 0; s[1] = (s[1] + b) | 0; s[2] = (s[2] + c) | 0; s[3] = (s[3] + d) | 0; s[4] = (s[4] + e) | 0;
  }
  return s;
}

function hex(words: Int32Array, count: number): string {
  let out = '';
  for (let i = 0; i < count; i++) out += (words[i] >>> 0).toString(16).padStart(8, '0');
  return out;
}

const B64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/** Bytes as unpadded base64url, as Node's `digest('base64url')` and `toString('base64url')` write them. */
export function base64url(bytes: ArrayLike<number>): string {
  let out = '';
  let i = 0;
  for (; i + 2 < bytes.length; i += 3) {
    const n = (bytes[i] << 16) | (bytes[i + 1] << 8) | bytes[i + 2];
    out += B64URL[n >> 18] + B64URL[(n >> 12) & 63] + B64URL[(n >> 6) & 63] + B64URL[n & 63];
  }
  if (i + 1 === bytes.length) {
    const n = bytes[i] << 16;
    out += B64URL[n >> 18] + B64URL[(n >> 12) & 63];
  } else if (i + 2 === bytes.length) {
    const n = (bytes[i] << 16) | (bytes[i + 1] << 8);
    out += B64URL[n >> 18] + B64URL[(n >> 12) & 63] + B64URL[(n >> 6) & 63];
  }
  return out;
}

const DIGEST_BYTES = new Uint8Array(32);

/** SHA-256 of `text`'s UTF-8 bytes, base64url without padding (43 characters), in plain TypeScript. */
export function portableSha256Base64url(text: string): string {
  const words = sha256Words(text);
  for (let i = 0; i < 8; i++) {
    const w = words[i];
    DIGEST_BYTES[i * 4] = w >>> 24;
    DIGEST_BYTES[i * 4 + 1] = (w >>> 16) & 255;
    DIGEST_BYTES[i * 4 + 2] = (w >>> 8) & 255;
    DIGEST_BYTES[i * 4 + 3] = w & 255;
  }
  return base64url(DIGEST_BYTES);
}

/** SHA-256 of `text`'s UTF-8 bytes, lowercase hex (64 characters), in plain TypeScript. */
export function portableSha256Hex(text: string): string {
  return hex(sha256Words(text), 8);
}

/** SHA-1 of `text`'s UTF-8 bytes, lowercase hex (40 characters): what Redis names a script by. Once per script, at load. */
export function sha1Hex(text: string): string {
  return hex(sha1Words(text), 5);
}

type OneShot = (algorithm: string, data: string, encoding: 'base64url' | 'hex') => string;

/**
 * node:crypto's one-shot `hash` where the runtime offers it without an import (Node 20.16+, Bun, Deno:
 * `process.getBuiltinModule`), else undefined. Reached through `process`, never imported, so a
 * bundle for a Worker holds no `node:` import; on Node it keeps a per-request digest native (about
 * 2.5x cheaper than the portable one: `pnpm --filter @floodgate/bench run digest`).
 */
function nativeHash(): OneShot | undefined {
  const proc = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process;
  const crypto = typeof proc?.getBuiltinModule === 'function' ? (proc.getBuiltinModule('node:crypto') as { hash?: unknown } | undefined) : undefined;
  return typeof crypto?.hash === 'function' ? (crypto.hash as OneShot) : undefined;
}

const native = nativeHash();

/** SHA-256 of `text`'s UTF-8 bytes, base64url without padding (43 characters): native where the runtime has it, else portable; the same bytes. */
export const sha256Base64url: (text: string) => string = native ? (text) => native('sha256', text, 'base64url') : portableSha256Base64url;

/** SHA-256 of `text`'s UTF-8 bytes, lowercase hex (64 characters): native where the runtime has it, else portable. */
export const sha256Hex: (text: string) => string = native ? (text) => native('sha256', text, 'hex') : portableSha256Hex;
