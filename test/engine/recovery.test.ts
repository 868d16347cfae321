import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Cycle, CycleState } from '../../src/db/index.js';
import { recordStrategiesSeen, recoverAbandonedCycles } from '../../src/engine/index.js';
import { d, type EngineBench, startEngineBench, strategy } from './support/harness.js';

/** Cycles left mid-way by a process that died: what recovery makes of them, and what it leaves alone. */
describe('crash recovery', () => {
  let bench: EngineBench;
  beforeAll(async () => {
    bench = await startEngineBench();
    await recordStrategiesSeen(bench.context, [strategy({ name: 'crashed' })]);
  });
  afterAll(() => bench.close());

  let slotSeconds = 0;
  async function leftIn(state: CycleState): Promise<Cycle> {
    const { cycles, quotes } = bench.database;
    const slot = new Date(Date.UTC(2033, 0, 1, 0, 0, slotSeconds++));
    const cycle = (await cycles.claimSlot({
      account: 'default',
      strategy: 'crashed',
      slot,
      trigger: 'schedule',
      owner: 'dead-replica',
    }))!;
    if (state === 'claimed') return cycle;
    const now = new Date();
    const quote = await quotes.record(cycle.id, {
      quoteId: `Q${String(slotSeconds).padStart(8, '0')}`,
      symbol: 'USDTBRL',
      amount: d('100'),
      price: d('5.4'),
      totalCost: d('99.99'),
      totalFilled: d('18.516666'),
      expiresIn: d('5'),
      requestedAt: now,
      receivedAt: now,
      deadlineAt: now,
    });
    const quoted = (await cycles.transition(cycle.id, 'claimed', 'quoted', { quote }))!;
    if (state === 'quoted') return quoted;
    return (await cycles.transition(cycle.id, 'quoted', 'submitting'))!;
  }

  it('makes old submitting cycles unsure and old claimed/quoted ones failed (abandoned); young ones stay', async () => {
    const submitting = await leftIn('submitting');
    const claimed = await leftIn('claimed');
    const quoted = await leftIn('quoted');
    const { orderTimeoutMs, recovery } = bench.context.settings;

    const early = await recoverAbandonedCycles(bench.context, new Date(Date.now() + 1_000));
    expect(early).toEqual({ madeUnsure: 0, abandoned: 0 });

    const justBefore = new Date(Date.now() + orderTimeoutMs + recovery.submittingMarginMs - 1_000);
    expect(await recoverAbandonedCycles(bench.context, justBefore)).toEqual({ madeUnsure: 0, abandoned: 0 });

    const result = await recoverAbandonedCycles(
      bench.context,
      new Date(Date.now() + recovery.abandonAfterMs + 1_000),
    );
    expect(result).toEqual({ madeUnsure: 1, abandoned: 2 });
    expect(await bench.database.cycles.get(submitting.id)).toMatchObject({
      state: 'unsure',
      errorCode: 'ABANDONED_IN_FLIGHT',
    });
    for (const cycle of [claimed, quoted]) {
      expect(await bench.database.cycles.get(cycle.id)).toMatchObject({
        state: 'failed',
        reasonCode: 'abandoned',
      });
    }
  });

  it('is idempotent and safe from two replicas at once (compare-and-set: each cycle moves once)', async () => {
    await leftIn('submitting');
    await leftIn('claimed');
    const future = new Date(Date.now() + 3_600_000);
    const other = { ...bench.context, replicaId: 'other' };
    const [a, b] = await Promise.all([
      recoverAbandonedCycles(bench.context, future),
      recoverAbandonedCycles(other, future),
    ]);
    expect(a.madeUnsure + b.madeUnsure).toBe(1);
    expect(a.abandoned + b.abandoned).toBe(1);
    expect(await recoverAbandonedCycles(bench.context, future)).toEqual({ madeUnsure: 0, abandoned: 0 });
  });
});
