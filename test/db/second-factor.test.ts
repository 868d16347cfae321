import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ConsoleStore, type Database, openConsoleStore, openDatabase } from '../../src/db/index.js';
import { createTestDatabase, type TestDatabase, testBackends } from '../support/database.js';

/**
 * The second factor's writes where replicas race: a code's step and a recovery code are each accepted once,
 * however many replicas check them at the same moment; a confirmed enrolment is not replaced.
 */
describe.each(testBackends())('second factors on %s', (backend) => {
  let test: TestDatabase;
  let replica: Database;
  let stores: ConsoleStore[];

  beforeAll(async () => {
    test = await createTestDatabase(backend);
    replica = test.url ? await openDatabase({ url: test.url, maxConnections: 5 }) : test.database;
    stores = [openConsoleStore(test.database), openConsoleStore(replica)];
    await stores[0]!.people.add({ name: 'rita', role: 'approver', passwordHash: 'scrypt$x' }, 'test-setup');
  });
  afterAll(async () => {
    if (replica !== test.database) await replica.close();
    await test.drop();
  });

  it('accepts a step and a recovery code once across replicas, and refuses an older step', async () => {
    const rita = (await stores[0]!.people.findByName('rita'))!;
    await stores[0]!.secondFactor.enrol(rita, 'JBSWY3DPEHPK3PXP', ['hash-1', 'hash-2'], 'test-setup');
    const steps = await Promise.all(
      Array.from({ length: 6 }, (_, index) => stores[index % 2]!.secondFactor.acceptStep(rita, 1000, 'rita')),
    );
    expect(steps.filter(Boolean)).toHaveLength(1);
    expect(await stores[1]!.secondFactor.acceptStep(rita, 999, 'rita')).toBe(false);
    expect(await stores[1]!.secondFactor.acceptStep(rita, 1001, 'rita')).toBe(true);
    const codes = await Promise.all(
      Array.from({ length: 6 }, (_, index) =>
        stores[index % 2]!.secondFactor.useRecoveryCode(rita, 'hash-1'),
      ),
    );
    expect(codes.filter(Boolean)).toHaveLength(1);
    expect(await stores[0]!.secondFactor.find(rita)).toMatchObject({ lastStep: 1001, recoveryCodesLeft: 1 });
    // The first accepted step confirmed it, once: a confirmed second factor is not replaced.
    const audit = await stores[0]!.audit.list({ limit: 100 });
    expect(audit.filter((row) => row.action === 'user.totp_confirm')).toHaveLength(1);
    await expect(stores[1]!.secondFactor.enrol(rita, 'AAAAAAAAAAAAAAAA', [], 'rita')).rejects.toMatchObject({
      code: 'TOTP_ACTIVE',
    });
    expect((await stores[0]!.secondFactor.find(rita))?.secret).toBe('JBSWY3DPEHPK3PXP');
  });
});
