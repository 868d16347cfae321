import { describe, expect, it } from 'vitest';
import { DatabaseTimeoutError, withinDatabaseTimeout } from '../../src/db/index.js';

/** The bound the engine and tracking share; tracking/database-timeout.test.ts proves it on a real lock. */
describe('withinDatabaseTimeout', () => {
  it('gives up on a call that never settles, with the stable code DB_TIMEOUT', async () => {
    const never = () => new Promise<never>(() => {});
    const error = await withinDatabaseTimeout(never, 20).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(DatabaseTimeoutError);
    expect(error).toMatchObject({ code: 'DB_TIMEOUT', message: 'no answer within 20 ms' });
  });

  it('passes on the answer and the failure of a call that settles in time', async () => {
    expect(await withinDatabaseTimeout(async () => 'answered', 1_000)).toBe('answered');
    const refused = new Error('refused');
    await expect(withinDatabaseTimeout(() => Promise.reject(refused), 1_000)).rejects.toBe(refused);
  });
});
