/**
 * Password hashing with scrypt from node:crypto, at OWASP's recommended cost (N = 2^17, r = 8, p = 1). The
 * stored text names its parameters, so a later rise in cost still verifies the hashes already stored.
 */
import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

export interface ScryptCost {
  N: number;
  r: number;
  p: number;
}

const COST: ScryptCost = { N: 2 ** 17, r: 8, p: 1 };
const KEY_BYTES = 32;
/** scrypt needs 128 · N · r bytes; Node's default ceiling (32 MiB) is below that. */
const maxmemFor = (N: number, r: number) => 256 * N * r;

/** Shorter than this is refused: a console password guards company money. */
export const MIN_PASSWORD_LENGTH = 12;

export class PasswordError extends Error {
  override readonly name = 'PasswordError';
  readonly code = 'PASSWORD_TOO_SHORT';
}

function derive(password: string, salt: Buffer, N: number, r: number, p: number): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(password.normalize('NFC'), salt, KEY_BYTES, { N, r, p, maxmem: maxmemFor(N, r) }, (error, key) =>
      error ? reject(error) : resolve(key),
    ),
  );
}

/** `cost` is for tests only: verification reads the cost from the stored hash, whatever it was. */
export async function hashPassword(password: string, cost: ScryptCost = COST): Promise<string> {
  if ([...password].length < MIN_PASSWORD_LENGTH) {
    throw new PasswordError(`a password needs at least ${MIN_PASSWORD_LENGTH} characters`);
  }
  const salt = randomBytes(16);
  const key = await derive(password, salt, cost.N, cost.r, cost.p);
  return ['scrypt', cost.N, cost.r, cost.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, N, r, p, salt, key] = stored.split('$');
  if (scheme !== 'scrypt' || !N || !r || !p || salt === undefined || key === undefined) return false;
  const expected = Buffer.from(key, 'base64url');
  const actual = await derive(password, Buffer.from(salt, 'base64url'), Number(N), Number(r), Number(p));
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

/** Checked against when the name is unknown, so a login takes as long for a stranger as for a person. */
export const DECOY_HASH = `scrypt$${COST.N}$${COST.r}$${COST.p}$${Buffer.alloc(16).toString('base64url')}$${Buffer.alloc(KEY_BYTES).toString('base64url')}`;

/** A password to print once (demo admin): 24 characters from 18 random bytes. */
export function generatePassword(): string {
  return randomBytes(18).toString('base64url');
}
