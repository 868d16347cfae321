import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type EngineBench, metricValue, startEngineBench, strategy } from './support/harness.js';

/**
 * The service's answers are checked against what the cycle asked. A quote that is not for the request, or
 * carries a field out of range, is refused before any intent; an order answer that differs is still our
 * order (recorded: the service has it) but flagged, and the strategy halted for a person.
 */
describe('answers checked against what was asked', () => {
  let bench: EngineBench;
  beforeAll(async () => {
    bench = await startEngineBench();
  });
  afterAll(() => bench.close());
  beforeEach(() => bench.sandbox.setFaults({}));

  async function cycleOf(name: string) {
    const report = await bench.run(strategy({ name }));
    return { report, cycle: (await bench.database.cycles.getBySlot(name, new Date(report.slot)))! };
  }

  // First release: the value overflowed the integer column and every cycle failed with database_error.
  it('refuses a quote with an absurd expiresIn before any intent: failed, nothing sent', async () => {
    bench.sandbox.setFaults({ quote: { malformedRate: 1, malformed: 'huge-expires' } });
    const before = bench.sandbox.ledger().length;
    const { cycle } = await cycleOf('huge-expires');
    expect(cycle).toMatchObject({
      state: 'failed',
      reasonCode: 'quote_unavailable',
      errorCode: 'API_BAD_RESPONSE',
      submittedAt: null,
    });
    expect(cycle.errorMessage).toMatch(/expiresIn/);
    expect(bench.sandbox.ledger()).toHaveLength(before);
  });

  it('refuses a quote for another pair before any intent', async () => {
    bench.sandbox.setFaults({ quote: { malformedRate: 1, malformed: 'other-symbol' } });
    const { cycle } = await cycleOf('other-symbol');
    expect(cycle).toMatchObject({ state: 'failed', errorCode: 'API_BAD_RESPONSE', submittedAt: null });
    expect(cycle.errorMessage).toMatch(/not the requested "USDTBRL"/);
  });

  it('places on a quote without expiresIn, keeping its own deadline, and stores the value as absent', async () => {
    bench.sandbox.setFaults({ quote: { malformedRate: 1, malformed: 'no-expires' } });
    const { cycle } = await cycleOf('no-expires');
    expect(cycle.state).toBe('placed');
    const [quote] = await bench.database.quotes.forCycle(cycle.id);
    expect(quote!.expiresIn).toBeNull();
  });

  it.each(['price', 'amount'] as const)(
    'records an order answered with another %s, flags it, halts the strategy and raises an alert',
    async (field) => {
      bench.sandbox.setFaults({ createOrder: { driftFigure: field } });
      const name = `answer-${field}`;
      const alertsBefore = await metricValue(bench.metrics, 'treasury_order_discrepancies_total');
      const { cycle } = await cycleOf(name);
      expect(cycle.state).toBe('placed');
      expect(cycle.discrepancy).toEqual([expect.objectContaining({ field })]);
      const order = await bench.database.orders.getByServiceId('default', cycle.serviceOrderId!);
      expect(order).toMatchObject({ cycleId: cycle.id, origin: 'cycle' });
      expect((await bench.database.strategies.get(name))!.haltedAt).not.toBeNull();
      expect(await metricValue(bench.metrics, 'treasury_order_discrepancies_total')).toBe(alertsBefore + 1);
      expect(bench.lines.some((line) => line.alert === 'discrepancy' && line.strategy === name)).toBe(true);
      // The next slot of the halted strategy buys nothing until a person clears it.
      bench.sandbox.setFaults({});
      const next = await bench.run(strategy({ name }));
      expect(next).toMatchObject({ outcome: 'skipped', reason: 'strategy_halted' });
    },
  );

  it('an order request turned away with a 429 places nothing and takes a fresh quote within the slot', async () => {
    bench.sandbox.setFaults({ createOrder: { rateLimit: 0, retryAfterSeconds: 0 } });
    const { report, cycle } = await cycleOf('rate-limited-order');
    expect(report).toMatchObject({ outcome: 'failed', reason: 'rate_limited' });
    expect(cycle).toMatchObject({ state: 'failed', errorCode: 'API_RATE_LIMITED' });
    expect((await bench.database.quotes.forCycle(cycle.id)).length).toBeGreaterThan(1);
    expect(bench.sandbox.ledger().filter((order) => order.quoteId === cycle.quoteId)).toEqual([]);
  });

  it('an answer that matches the quote is not a discrepancy', async () => {
    const { cycle } = await cycleOf('matching-answer');
    expect(cycle).toMatchObject({ state: 'placed', discrepancy: null });
  });
});
