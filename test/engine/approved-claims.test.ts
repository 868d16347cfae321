/**
 * Approved cycles are claimed back a bounded number at a time, however alike they are: cycles approved at
 * the same instant (one clock reading) share their `updated_at`, and the claim's order must still name one
 * row per claim rather than whichever rows each rescan of the due rows meets first.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApprovalControl } from '../../src/control/index.js';
import { EVERY_ACCOUNT, openConsoleStore } from '../../src/db/index.js';
import { Maintenance } from '../../src/engine/index.js';
import { createTestDatabase, type TestDatabase, testBackends } from '../support/database.js';
import { d, type EngineBench, startEngineBench, strategy } from './support/harness.js';

describe.each(testBackends())('claiming approved cycles back (%s)', (backend) => {
  let bench: EngineBench;
  let test: TestDatabase;
  // One instant for everything: every approval and every move shares its reading.
  const clock = () => new Date(Date.UTC(2031, 0, 1, 10, 0, 30));

  beforeAll(async () => {
    test = await createTestDatabase(backend, { clock });
    bench = await startEngineBench({ test, clock });
    await openConsoleStore(bench.database).people.add(
      { name: 'ana', role: 'approver', passwordHash: 'unused' },
      'test',
    );
  });
  afterAll(async () => {
    await bench.close();
    await test.drop();
  });

  it('claims one of three cycles approved at the same instant, and the maintenance pass buys all three', async () => {
    const subject = strategy({
      name: 'same-instant',
      approval: { required: 'always', approvers: 1, timeoutMs: 3_600_000, priceTolerancePct: d('0.5') },
    });
    for (const second of [1, 2, 3]) {
      const report = await bench.run(subject, new Date(Date.UTC(2031, 0, 1, 10, 0, second)));
      expect(report.outcome).toBe('awaiting-approval');
    }
    const control = createApprovalControl(bench.database);
    const parked = await bench.database.cycles.listByState(EVERY_ACCOUNT, 'awaiting_approval');
    for (const cycle of parked) await control.approve(cycle.id, 'ana');

    const claimed = await bench.database.approvals.claimApproved('replica-x', [subject.name], 1);
    expect(claimed).toHaveLength(1);
    expect(await bench.database.cycles.listByState(EVERY_ACCOUNT, 'approved')).toHaveLength(2);
    // Handed back as a replica that died would leave it: recovery's business, not this test's.
    await bench.database.cycles.transition(claimed[0]!.cycle.id, 'claimed', 'failed', {
      reasonCode: 'internal_error',
    });

    await new Maintenance(bench.context, { strategies: () => [subject] }).runOnce();
    const cycles = await bench.database.cycles.listRecent(EVERY_ACCOUNT, { strategy: subject.name });
    expect(cycles.map((cycle) => cycle.state).sort()).toEqual(['failed', 'placed', 'placed']);
  });
});
