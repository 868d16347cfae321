import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readStatus } from '../../src/control/index.js';
import { EVERY_ACCOUNT } from '../../src/db/index.js';
import { d, type EngineBench, freshSlot, startEngineBench } from '../engine/support/harness.js';
import { recordUnsureCycle } from '../engine/support/unsure-cycle.js';

/**
 * `status` reads the recent cycles and their orders' settlement in two statements, while the worker goes on.
 * An order recorded between the two reads (the CI of 26 November caught it: `settlement: 'pending'` on a
 * cycle shown without an order) must not appear on a cycle read without it.
 */
describe('status of recent cycles', () => {
  let bench: EngineBench;
  beforeAll(async () => {
    bench = await startEngineBench();
  });
  afterAll(() => bench?.close());

  it('shows a settlement only on a cycle whose own row names its order', async () => {
    const slot = freshSlot();
    const cycle = await recordUnsureCycle(bench, { name: 'status-race', slot, quoteId: 'QSTATUS01' });
    // The order row of the cycle, recorded after the cycle was read and before its settlement is.
    await bench.database.orders.recordPlaced(cycle.id, {
      account: 'default',
      id: 'ORD-STATUS-RACE',
      symbol: 'USDTBRL',
      amount: d('100'),
      price: d('5.4099'),
      side: 'BUY',
      timestamp: slot,
      quoteId: 'QSTATUS01',
    });
    const report = await readStatus(bench.database, EVERY_ACCOUNT, 10, new Date());
    const shown = report.recentCycles.find((view) => view.strategy === 'status-race')!;
    expect(shown.orderId).toBeNull();
    expect(shown.settlement).toBeNull();
  });
});
