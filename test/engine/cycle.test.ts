import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createPurchaseClient } from '../../src/api/index.js';
import { recordStrategiesSeen, runCycle } from '../../src/engine/index.js';
import {
  d,
  type EngineBench,
  freshSlot,
  metricValue,
  onClient,
  startEngineBench,
  strategy,
} from './support/harness.js';

/** Added by the sandbox to an answer, after the quote was issued or the order created. */
const ANSWER_LATENCY_MS = 150;
/** Date.now() and timers may disagree by a millisecond or so. */
const CLOCK_SLACK_MS = 5;

describe('the buy cycle against the sandbox', () => {
  let bench: EngineBench;
  beforeAll(async () => {
    bench = await startEngineBench({ sandbox: { creditLimit: '5000.00' } });
  });
  afterAll(() => bench.close());
  beforeEach(() => {
    bench.sandbox.setFaults({});
    bench.lines.length = 0;
  });

  it('places an order: intent committed before the request, order and quote recorded, one log line', async () => {
    // Both answers come back late, so that a timestamp taken after an answer is told apart from one taken
    // before its request left.
    bench.sandbox.setFaults({
      quote: { latencyMs: ANSWER_LATENCY_MS },
      createOrder: { latencyMs: ANSWER_LATENCY_MS },
    });
    const slot = freshSlot();
    const report = await bench.run(strategy({ name: 'placer' }), slot);

    expect(report).toMatchObject({
      strategy: 'placer',
      slot: slot.toISOString(),
      outcome: 'placed',
      reason: 'ok',
    });
    const atService = bench.sandbox.ledger().filter((order) => order.id === report.orderId);
    expect(atService).toHaveLength(1);
    expect(report.quoteId).toBe(atService[0]!.quoteId);
    expect(report.price).toBe(d(atService[0]!.price).toFixed());
    expect(report.totalCost).toBe(d(atService[0]!.totalCost).toFixed());

    const cycle = await bench.database.cycles.getBySlot('placer', slot);
    expect(cycle).toMatchObject({
      state: 'placed',
      attempts: 1,
      serviceOrderId: report.orderId,
      trigger: 'once',
    });
    expect(cycle!.submittedAt).not.toBeNull();
    const order = await bench.database.orders.getByServiceId('default', report.orderId!);
    expect(order).toMatchObject({
      cycleId: cycle!.id,
      origin: 'cycle',
      quoteId: report.quoteId,
      status: 'pending',
    });
    const [quote] = await bench.database.quotes.forCycle(cycle!.id);
    // The deadline counts from when the quote request left, not from its (late) answer...
    expect(quote!.receivedAt.getTime() - quote!.requestedAt.getTime()).toBeGreaterThanOrEqual(
      ANSWER_LATENCY_MS - CLOCK_SLACK_MS,
    );
    expect(quote!.deadlineAt.getTime() - quote!.requestedAt.getTime()).toBe(4_000);
    // ...and the recorded intent predates the order's creation at the service, which its answer trails by
    // the latency: an intent written after the answer would be stamped later than the order.
    expect(cycle!.submittedAt!.getTime()).toBeLessThanOrEqual(Date.parse(atService[0]!.createdAt));

    const lines = bench.lines.filter((line) => line.msg === 'cycle placed');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      strategy: 'placer',
      orderId: report.orderId,
      outcome: 'placed',
      quotes: 1,
    });
    for (const key of ['quoteMs', 'quoteToOrderMs', 'cycleMs']) expect(typeof lines[0]![key]).toBe('number');
    expect(
      await metricValue(bench.metrics, 'treasury_cycles_total', { strategy: 'placer', outcome: 'placed' }),
    ).toBe(1);
    const apiCalls = await bench.metrics.registry
      .getSingleMetric('treasury_api_request_duration_seconds')!
      .get();
    const operations = new Set(apiCalls.values.map((value) => value.labels.operation));
    expect(operations).toEqual(new Set(['getQuote', 'createOrder']));
  });

  it('reports a claimed slot as skipped (slot_already_claimed) and never buys it twice', async () => {
    const slot = freshSlot();
    const first = await bench.run(strategy({ name: 'twice' }), slot);
    const second = await bench.run(strategy({ name: 'twice' }), slot);
    expect(first.outcome).toBe('placed');
    expect(second).toMatchObject({ outcome: 'skipped', reason: 'slot_already_claimed', orderId: null });
    expect(bench.sandbox.ledger().filter((order) => order.quoteId === first.quoteId)).toHaveLength(1);
  });

  it('skips before quoting when a budget would be exceeded (no quote requested)', async () => {
    const capped = strategy({ name: 'capped', budget: { perDay: d('150.00') } });
    const placed = await bench.run(capped, freshSlot());
    expect(placed.outcome).toBe('placed');
    const quotesBefore = bench.requests.filter((request) => request.operation === 'getQuote').length;
    const skipped = await bench.run(capped, freshSlot());
    expect(skipped).toMatchObject({ outcome: 'skipped', reason: 'budget_day_exceeded', quoteId: null });
    expect(bench.requests.filter((request) => request.operation === 'getQuote').length).toBe(quotesBefore);
    const cycle = await bench.database.cycles.getBySlot('capped', new Date(skipped.slot));
    expect(JSON.stringify(cycle!.trace)).toContain('budget_day_exceeded');
  });

  it('skips on the quote when the price is above maxPrice, keeping the quote for the audit trail', async () => {
    const picky = strategy({ name: 'picky', maxPrice: d('1.00') });
    const report = await bench.run(picky, freshSlot());
    expect(report).toMatchObject({ outcome: 'skipped', reason: 'price_above_max' });
    expect(report.quoteId).not.toBeNull();
    expect(bench.sandbox.ledger().some((order) => order.quoteId === report.quoteId)).toBe(false);
  });

  it('dry-runs (strategy flag or TREASURY_DRY_RUN): decides and records, never orders', async () => {
    const before = bench.sandbox.ledger().length;
    const byStrategy = await bench.run(strategy({ name: 'dry', dryRun: true }), freshSlot());
    await recordStrategiesSeen(bench.context, [strategy({ name: 'dry-env' })]);
    const byEnv = await runCycle(
      { ...bench.inAccount(), dryRun: true },
      { strategy: strategy({ name: 'dry-env' }), slot: freshSlot(), trigger: 'once' },
    );
    expect(byStrategy).toMatchObject({ outcome: 'dry-run', reason: 'ok' });
    expect(byEnv).toMatchObject({ outcome: 'dry-run', reason: 'ok' });
    expect(bench.sandbox.ledger().length).toBe(before);
    expect((await bench.database.cycles.getBySlot('dry', new Date(byStrategy.slot)))!.state).toBe('dry_run');
  });

  it('fails closed when the guards need a balance the service cannot give (no quote, no order)', async () => {
    bench.sandbox.setFaults({ balance: { errorRate: 1 } });
    const guarded = strategy({ name: 'guarded', guards: { requireCanWithdraw: true } });
    const report = await bench.run(guarded, freshSlot());
    expect(report).toMatchObject({ outcome: 'skipped', reason: 'balance_unavailable', quoteId: null });
    const cycle = await bench.database.cycles.getBySlot('guarded', new Date(report.slot));
    expect(cycle!.errorCode).toBe('API_SERVER_ERROR');
  });

  it('fails (not skips) when the service refuses the credentials on the balance read', async () => {
    const refused = createPurchaseClient({
      baseUrl: bench.sandbox.url,
      token: 'not-a-token-the-service-knows',
    });
    const guarded = strategy({ name: 'guarded-refused', guards: { requireCanWithdraw: true } });
    await recordStrategiesSeen(bench.context, [guarded]);
    const before = bench.sandbox.ledger().length;
    try {
      const report = await runCycle(onClient(bench.context, refused), {
        strategy: guarded,
        slot: freshSlot(),
        trigger: 'once',
      });
      expect(report).toMatchObject({ outcome: 'failed', quoteId: null });
      const cycle = await bench.database.cycles.getBySlot('guarded-refused', new Date(report.slot));
      expect(cycle!.errorCode).toBe('API_UNAUTHORIZED');
      expect(bench.sandbox.ledger().length).toBe(before);
    } finally {
      await refused.close();
    }
  });

  it('records a balance snapshot with the decision when the guards need one', async () => {
    const guarded = strategy({ name: 'guarded-ok', guards: { requireCanWithdraw: true } });
    const report = await bench.run(guarded, freshSlot());
    expect(report.outcome).toBe('placed');
    const cycle = await bench.database.cycles.getBySlot('guarded-ok', new Date(report.slot));
    expect(cycle!.balanceSnapshotId).not.toBeNull();
  });

  it('makes the cycle unsure when the order answer is lost, and never re-sends the request', async () => {
    bench.sandbox.setFaults({ createOrder: { acceptThenDropRate: 1 } });
    const before = bench.sandbox.ledger().length;
    const report = await bench.run(strategy({ name: 'dropped' }), freshSlot());
    expect(report).toMatchObject({ outcome: 'unsure', reason: 'outcome_unknown', orderId: null });
    expect(bench.sandbox.ledger().length).toBe(before + 1);
    const sent = bench.requests.filter(
      (request) => request.operation === 'createOrder' && request.errorCode === 'OUTCOME_UNKNOWN',
    );
    expect(sent.filter((request) => request.attempt > 1)).toHaveLength(0);
    const cycle = await bench.database.cycles.getBySlot('dropped', new Date(report.slot));
    expect(cycle).toMatchObject({ state: 'unsure', attempts: 1, errorCode: 'OUTCOME_UNKNOWN' });
  });

  it('fails a refused order (insufficient credit) with the service error code', async () => {
    const big = strategy({ name: 'too-big', amount: d('6000.00') });
    const report = await bench.run(big, freshSlot());
    expect(report).toMatchObject({ outcome: 'failed', reason: 'order_rejected' });
    const cycle = await bench.database.cycles.getBySlot('too-big', new Date(report.slot));
    expect(cycle!.errorCode).toBe('API_REJECTED');
  });

  it('fails a cycle whose quote request fails, without ordering', async () => {
    bench.sandbox.setFaults({ quote: { errorRate: 1 } });
    const report = await bench.run(strategy({ name: 'no-quote' }), freshSlot());
    expect(report).toMatchObject({ outcome: 'failed', reason: 'quote_unavailable', quoteId: null });
  });
});
