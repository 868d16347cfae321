import { describe, expect, it } from 'vitest';
import { DECOY_HASH, hashPassword, verifyPassword } from '../../src/console/passwords.js';

describe('console passwords', () => {
  it('hashes at the recommended scrypt cost with a fresh salt, and verifies only the same password', async () => {
    const first = await hashPassword('twelve chars or more');
    const second = await hashPassword('twelve chars or more');
    expect(first).toMatch(/^scrypt\$131072\$8\$1\$[\w-]{22}\$[\w-]{43}$/);
    expect(second).not.toBe(first);
    await expect(verifyPassword('twelve chars or more', first)).resolves.toBe(true);
    await expect(verifyPassword('twelve chars or more!', first)).resolves.toBe(false);
  });

  it('refuses a short password, and never matches the decoy or a malformed hash', async () => {
    await expect(hashPassword('eleven char')).rejects.toMatchObject({ code: 'PASSWORD_TOO_SHORT' });
    await expect(verifyPassword('', DECOY_HASH)).resolves.toBe(false);
    await expect(verifyPassword('anything at all', 'plain text')).resolves.toBe(false);
  });
});
