import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { crc32 } from 'node:zlib';

/**
 * The format of an API key value: `sdx_` + 43 base62 characters carrying 256 random bits + 6 base62
 * characters of CRC-32 over them. The prefix lets secret scanners find leaked keys; the checksum
 * refuses a mistyped key without a database look-up. Only the SHA-256 fingerprint is stored.
 */
export const KEY_PREFIX = 'sdx_';
const SECRET_LENGTH = 43; // ceil(256 / log2(62))
const CHECKSUM_LENGTH = 6; // ceil(32 / log2(62))
const KEY_PATTERN = new RegExp(`^${KEY_PREFIX}[0-9A-Za-z]{${SECRET_LENGTH + CHECKSUM_LENGTH}}$`);
const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

function base62(value: bigint, length: number): string {
  let out = '';
  for (let rest = value; rest > 0n; rest /= 62n) out = ALPHABET[Number(rest % 62n)] + out;
  return out.padStart(length, '0');
}

function checksumOf(secret: string): string {
  return base62(BigInt(crc32(secret)), CHECKSUM_LENGTH);
}

/** A new key value with 256 bits of randomness. */
export function generateKeyValue(): string {
  const secret = base62(BigInt(`0x${randomBytes(32).toString('hex')}`), SECRET_LENGTH);
  return `${KEY_PREFIX}${secret}${checksumOf(secret)}`;
}

/** Whether a string has the key format and a matching checksum. */
export function isWellFormedKey(value: string): boolean {
  if (!KEY_PATTERN.test(value)) return false;
  const body = value.slice(KEY_PREFIX.length);
  return checksumOf(body.slice(0, SECRET_LENGTH)) === body.slice(SECRET_LENGTH);
}

export function fingerprintOf(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/** Compares two fingerprints in constant time. */
export function sameFingerprint(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The part of a key shown in the keys table so people can tell keys apart. */
export function hintOf(value: string): string {
  return `${value.slice(0, KEY_PREFIX.length + 6)}…`;
}
