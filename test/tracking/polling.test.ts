import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Decimal } from '../../src/money.js';
import { createTracker, type Tracker } from '../../src/tracking/index.js';
import { type Bench, logged, startBench } from './support/harness.js';

describe('tracker: following orders by polling alone', () => {
  let bench: Bench;
  let tracker: Tracker;

  beforeAll(async () => {
    bench = await startBench();
    tracker = createTracker({
      ...bench,
      // Tight delays so the real poller follows each step within milliseconds.
      settings: bench.settings({
        poll: { intervalMs: 5, minDelayMs: 1, maxDelayMs: 5, maxRequestsPerSecond: 500 },
      }),
    });
  });
  afterAll(async () => {
    await tracker.stop();
    await bench.close();
  });

  it('follows an order through every state to settled, one history row and log line per change', async () => {
    const { serviceOrderId, order } = await bench.placeOrder();
    tracker.start();
    tracker.start(); // idempotent
    const statusOf = async () => (await bench.database.orders.get(order!.id))?.status;

    await vi.waitFor(async () => expect((await bench.database.orders.history(order!.id)).length).toBe(2));
    for (const expected of ['partial', 'paid', 'withdrawn', 'settled'] as const) {
      await bench.sandbox.step(serviceOrderId);
      await vi.waitFor(async () => expect(await statusOf()).toBe(expected), { timeout: 5_000, interval: 5 });
    }
    await tracker.stop();
    await tracker.stop(); // idempotent

    const final = await bench.database.orders.get(order!.id);
    expect(final).toMatchObject({ status: 'settled', leaseOwner: null });
    expect(final!.settledAt).toBeInstanceOf(Date);
    expect(final!.receivedAmount!.eq(final!.expectedAmount!)).toBe(true);
    expect(final!.withdrawnAmount!.gt(0)).toBe(true);

    const history = await bench.database.orders.history(order!.id);
    expect(history.map((event) => [event.source, event.fromStatus, event.toStatus])).toEqual([
      ['create', null, 'pending'],
      // The first report fills in the amounts and the (pending) withdrawal details: a change, same status.
      ['poll', 'pending', 'pending'],
      ['poll', 'pending', 'partial'],
      ['poll', 'partial', 'paid'],
      ['poll', 'paid', 'withdrawn'],
      ['poll', 'withdrawn', 'settled'],
    ]);
    expect(history.every((event) => event.anomaly === null)).toBe(true);
    const settledRow = history.at(-1)!;
    expect(settledRow.withdrawal).toMatchObject({ status: 'confirmed', type: 'crypto' });
    expect(typeof (settledRow.withdrawal as { blockNumber: unknown }).blockNumber).toBe('string');

    const updates = logged(bench.lines, 'settlement details updated').filter(
      (line) => line.orderId === serviceOrderId,
    );
    const atService = bench.sandbox.ledger().find((entry) => entry.id === serviceOrderId)!;
    expect(updates.map((line) => [line.from, line.to, line.expectedAmount])).toEqual([
      ['pending', 'pending', new Decimal(atService.totalCost).toFixed()],
    ]);
    const changes = logged(bench.lines, 'settlement changed').filter(
      (line) => line.orderId === serviceOrderId,
    );
    expect(changes.map((line) => [line.from, line.to, line.source])).toEqual([
      ['pending', 'partial', 'poll'],
      ['partial', 'paid', 'poll'],
      ['paid', 'withdrawn', 'poll'],
      ['withdrawn', 'settled', 'poll'],
    ]);
    // Amounts are logged as exact decimal text, never as floats.
    expect(changes.at(-1)).toMatchObject({
      expectedAmount: final!.expectedAmount!.toFixed(),
      receivedAmount: final!.receivedAmount!.toFixed(),
      withdrawnAmount: final!.withdrawnAmount!.toFixed(),
      withdrawalStatus: 'confirmed',
    });

    const metrics = await bench.metrics.registry.getMetricsAsJSON();
    const changesMetric = metrics.find((metric) => metric.name === 'treasury_settlement_changes_total')!;
    expect(changesMetric.values).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ labels: { status: 'settled', source: 'poll' }, value: 1 }),
      ]),
    );
    const duration = await bench.metrics.settlementDuration.get();
    expect(duration.values.find((value) => value.metricName?.endsWith('_count'))?.value).toBe(1);
  });

  it('stops polling a settled order', async () => {
    const before = bench.requests.length;
    expect(await tracker.pollOnce()).toBe(0);
    expect(bench.requests.length).toBe(before);
  });
});
