import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createPurchaseClient, type PurchaseClient } from '../../src/api/index.js';
import { type Database, openDatabase } from '../../src/db/index.js';
import { Decimal } from '../../src/money.js';
import { createTracker, surveyOpenOrders, type Tracker, type TrackerDeps } from '../../src/tracking/index.js';
import { type Bench, logged, startBench } from './support/harness.js';
import { startScriptedService, trackingBody } from './support/scripted-service.js';

const T0 = new Date('2026-03-02T12:00:00Z');
/**
 * Each test starts 30 days before the previous one: orders left open by earlier tests then lie in the
 * future (never due, never idle) and cannot disturb the counts.
 */
const epoch = (index: number) => new Date(T0.getTime() - index * 30 * 86_400_000);
let serial = 0;

describe('tracker rules (scripted service, fake clock)', () => {
  let bench: Bench;
  let service: Awaited<ReturnType<typeof startScriptedService>>;
  let client: PurchaseClient;
  const trackers: Tracker[] = [];

  const tracker = (overrides: Record<string, unknown> = {}, deps: Partial<TrackerDeps> = {}) => {
    const created = createTracker({
      ...bench,
      client,
      settings: bench.settings(overrides),
      random: () => 0.5, // no jitter: delays are exact
      ...deps,
    });
    trackers.push(created);
    return created;
  };
  const record = async (answers: unknown[] = []) => {
    const id = `scripted-${++serial}`;
    if (answers.length > 0) service.script(id, answers);
    const order = await bench.database.orders.recordExternal({
      account: bench.account,
      id,
      symbol: 'USDTBRL',
      amount: new Decimal('1000'),
      price: new Decimal('5.4321'),
      side: 'BUY',
      timestamp: bench.clock(),
    });
    return order;
  };

  beforeAll(async () => {
    bench = await startBench();
    service = await startScriptedService();
    client = createPurchaseClient({
      baseUrl: service.url,
      token: 'scripted-service-token',
      retry: { maxAttempts: 1 },
    });
  });
  afterEach(async () => {
    await Promise.all(trackers.splice(0).map((t) => t.stop()));
    serial += 100;
  });
  afterAll(async () => {
    await client.close();
    await service.close();
    await bench.close();
  });

  it('applies a forward skip, records an illegal jump once without applying it, then goes on', async () => {
    bench.clock.set(epoch(0));
    const order = await record([
      trackingBody('x', 'withdrawn', 1000, 184.1),
      trackingBody('x', 'paid', 1000),
      trackingBody('x', 'paid', 1000),
      trackingBody('x', 'settled', 1000, 184.1),
    ]);
    const subject = tracker();
    const pollAt = async (ms: number) => {
      bench.clock.advance(ms);
      expect(await subject.pollOnce()).toBe(1);
    };
    await pollAt(0);
    expect(await bench.database.orders.get(order.id)).toMatchObject({ status: 'withdrawn' });
    await pollAt(600_000);
    const kept = await bench.database.orders.get(order.id);
    expect(kept).toMatchObject({ status: 'withdrawn', stuckFlaggedAt: null });
    expect(kept!.withdrawnAmount!.toFixed()).toBe('184.1');
    await pollAt(600_000); // the same wrong report again: not recorded twice
    await pollAt(600_000);

    const history = await bench.database.orders.history(order.id);
    expect(history.map((event) => [event.fromStatus, event.toStatus, event.anomaly !== null])).toEqual([
      [null, 'pending', false],
      ['pending', 'withdrawn', false],
      ['withdrawn', 'paid', true],
      ['withdrawn', 'settled', false],
    ]);
    expect(history[2]!.anomaly).toContain('status went back from withdrawn to paid');
    expect(history[2]!.anomaly).toContain('withdrawnAmount decreased from 184.1 to 0');
    expect(await bench.database.orders.get(order.id)).toMatchObject({ status: 'settled' });

    const [warning] = logged(bench.lines, 'settlement anomaly: report recorded, not applied');
    expect(warning).toMatchObject({
      orderId: order.serviceOrderId,
      from: 'withdrawn',
      to: 'paid',
      kept: 'withdrawn',
    });
    const anomalies = await bench.metrics.settlementAnomalies.get();
    expect(anomalies.values[0]?.value).toBe(1);
  });

  it('waits longer the longer an order makes no progress, and backs off on failures', async () => {
    bench.clock.set(epoch(1));
    const order = await record([trackingBody('x', 'pending', 0)]);
    const subject = tracker({ poll: { minDelayMs: 2_000, maxDelayMs: 300_000, ageFactor: 0.25 } });
    const nextDelay = async (advanceMs: number) => {
      bench.clock.advance(advanceMs);
      await subject.pollOnce();
      const after = await bench.database.orders.get(order.id);
      return after!.nextCheckAt.getTime() - bench.clock().getTime();
    };
    expect(await nextDelay(0)).toBe(2_000); // the first report was progress: look again soon
    expect(await nextDelay(100_000)).toBe(25_000); // 100 s without progress × 0.25
    expect(await nextDelay(400_000)).toBe(125_000);
    expect(await nextDelay(10_000_000)).toBe(300_000); // capped

    bench.clock.advance(86_400_000);
    const unknown = await record(); // the scripted service answers 404 for it
    const failures: number[] = [];
    for (let i = 0; i < 3; i++) {
      expect(await subject.nudge(unknown.serviceOrderId)).toBe('failed');
      const after = await bench.database.orders.get(unknown.id);
      failures.push(after!.nextCheckAt.getTime() - bench.clock().getTime());
    }
    // The shared backoff (src/runtime/backoff.ts) from twice minDelayMs; random 0.5 is three quarters of
    // each doubling window.
    expect(failures).toEqual([3_000, 6_000, 12_000]);
    expect(logged(bench.lines, 'tracking check failed; will retry later').at(-1)).toMatchObject({
      orderId: unknown.serviceOrderId,
      failures: 3,
    });
  });

  it('flags an order without progress as stuck once, and clears the flag on progress', async () => {
    bench.clock.set(epoch(2));
    const order = await record([trackingBody('x', 'pending', 0), trackingBody('x', 'partial', 500)]);
    const subject = tracker();
    const survey = () =>
      surveyOpenOrders({ ...bench, stuckAfterMs: 3_600_000, accounts: [bench.account, 'elsewhere'] });
    expect(await subject.pollOnce()).toBe(1);

    bench.clock.advance(3_599_999);
    expect(await survey()).toMatchObject({ stuck: 0, newlyStuck: [] });
    bench.clock.advance(1);
    const newlyStuck = [{ account: bench.account, orderId: order.serviceOrderId }];
    expect(await survey()).toMatchObject({ stuck: 1, newlyStuck });
    expect(await survey()).toMatchObject({ stuck: 1, newlyStuck: [] });
    expect((await bench.database.orders.get(order.id))!.stuckFlaggedAt).toEqual(bench.clock());
    // Per account: an account without open orders shows zero.
    const stuckGauge = (await bench.metrics.stuckOrders.get()).values;
    expect(stuckGauge.map(({ labels, value }) => [labels.account, value])).toEqual([
      [bench.account, 1],
      ['elsewhere', 0],
    ]);
    const stuckLines = logged(bench.lines, 'order stuck: no settlement progress');
    expect(stuckLines).toEqual([
      expect.objectContaining({ account: bench.account, orderId: order.serviceOrderId, idleMinutes: 60 }),
    ]);

    // The scripted service now reports a deposit: progress clears the flag.
    service.script(order.serviceOrderId, [trackingBody('x', 'partial', 500)]);
    await subject.nudge(order.serviceOrderId);
    expect((await bench.database.orders.get(order.id))!.stuckFlaggedAt).toBeNull();
    expect(await survey()).toMatchObject({ stuck: 0 });
    const open = await bench.metrics.openOrders.get();
    const partial = (account: string) =>
      open.values.find((value) => value.labels.account === account && value.labels.status === 'partial')
        ?.value;
    expect(partial(bench.account)).toBeGreaterThanOrEqual(1);
    expect(partial('elsewhere')).toBe(0);
  });

  it('splits due orders between replicas without double work, and honours leases', async () => {
    bench.clock.set(epoch(3));
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) ids.push((await record([trackingBody('x', 'pending', 0)])).serviceOrderId);
    // A second pool on the same database stands for the second replica, when the backend has a server.
    const second: Database = bench.test.url
      ? await openDatabase({ url: bench.test.url, maxConnections: 3 })
      : bench.database;
    try {
      const settings = { poll: { batchSize: 5 } };
      const a = tracker(settings, { owner: 'replica-a' });
      const b = tracker(settings, { owner: 'replica-b', database: second });
      const served = service.served.length;
      expect(await Promise.all([a.pollOnce(), b.pollOnce()])).toEqual([5, 5]);
      const [lastA, lastB] = await Promise.all([a.pollOnce(), b.pollOnce()]);
      expect(lastA + lastB).toBe(2);
      expect(await Promise.all([a.pollOnce(), b.pollOnce()])).toEqual([0, 0]);
      const requested = service.served.slice(served);
      expect(requested).toHaveLength(12);
      expect(new Set(requested)).toEqual(new Set(ids));

      // A replica that leased orders and died: nobody touches them until the lease runs out.
      bench.clock.advance(3_600_000);
      const leased = await bench.database.orders.claimDue(
        bench.account,
        'replica-dead',
        bench.clock(),
        60_000,
        100,
      );
      expect(leased.length).toBeGreaterThanOrEqual(12);
      expect(await b.pollOnce()).toBe(0);
      bench.clock.advance(60_001);
      expect(await b.pollOnce()).toBe(5);
    } finally {
      if (second !== bench.database) await second.close();
    }
  });

  it('keeps the request rate under the bound', async () => {
    bench.clock.set(epoch(4));
    for (let i = 0; i < 30; i++) await record([trackingBody('x', 'pending', 0)]);
    const subject = tracker({ poll: { batchSize: 30, concurrency: 8, maxRequestsPerSecond: 20 } });
    const started = performance.now();
    expect(await subject.pollOnce()).toBe(30);
    // One request at once, the other 29 one every 1/20 s however many checks run in parallel: 1.45 s.
    expect(performance.now() - started).toBeGreaterThanOrEqual(1_400);
  });
});
