import { createHash } from 'node:crypto';

/**
 * A stable signed 64-bit advisory lock key for a name, as decimal text (bigint parameters travel as text).
 * Derived from a hash rather than a registry of numbers so that every replica, of any version, agrees.
 */
export function advisoryLockKey(name: string): string {
  return createHash('sha256').update(name).digest().readBigInt64BE(0).toString();
}
