import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { recordStrategiesSeen, runCycle } from '../../src/engine/index.js';
import { type EngineBench, metricValue, startEngineBench, strategy } from './support/harness.js';

/**
 * Invariant 6: a quote older than the window minus the margin is never used, and an expired quote leads to
 * at most a bounded number of fresh quotes for the same slot.
 */
describe('expired and late quotes', () => {
  let bench: EngineBench;
  beforeAll(async () => {
    bench = await startEngineBench();
  });
  afterAll(() => bench.close());
  beforeEach(() => {
    bench.sandbox.setFaults({});
    bench.onRequest = undefined;
    bench.sandboxClockOffsetMs = 0;
  });

  /** Moves the sandbox's clock 6 s ahead after each of the first `count` quotes: the order finds them expired. */
  function expireTheFirstQuotes(count: number) {
    let expired = 0;
    bench.onRequest = (event) => {
      if (event.operation === 'getQuote' && event.status === 200 && expired < count) {
        expired++;
        bench.sandboxClockOffsetMs += 6_000;
      }
    };
  }

  it('takes a fresh quote after a QUOTE_EXPIRED 400 and places on it, within the same slot', async () => {
    expireTheFirstQuotes(1);
    const report = await bench.run(strategy({ name: 'fresh-after-expiry' }));

    expect(report.outcome).toBe('placed');
    const cycle = await bench.database.cycles.getBySlot('fresh-after-expiry', new Date(report.slot));
    const quotes = await bench.database.quotes.forCycle(cycle!.id);
    expect(quotes).toHaveLength(2);
    expect(cycle).toMatchObject({ attempts: 2, quoteId: quotes[1]!.quoteId, state: 'placed' });
    const orders = bench.sandbox
      .ledger()
      .filter((order) => quotes.some((quote) => quote.quoteId === order.quoteId));
    expect(orders.map((order) => order.quoteId)).toEqual([quotes[1]!.quoteId]);
    expect(
      await metricValue(bench.metrics, 'treasury_quotes_expired_total', {
        strategy: 'fresh-after-expiry',
        where: 'service',
      }),
    ).toBe(1);
  });

  it('gives up after the configured number of fresh quotes (default 2) and fails quote_expired', async () => {
    expireTheFirstQuotes(100);
    const report = await bench.run(strategy({ name: 'always-expired' }));

    expect(report).toMatchObject({ outcome: 'failed', reason: 'quote_expired', orderId: null });
    const cycle = await bench.database.cycles.getBySlot('always-expired', new Date(report.slot));
    expect(await bench.database.quotes.forCycle(cycle!.id)).toHaveLength(3);
    expect(cycle).toMatchObject({ attempts: 3, errorCode: 'QUOTE_EXPIRED', state: 'failed' });
  });

  it('never uses a quote answered after the local deadline (sandbox latency 4.3 s > 5 s − 1 s margin)', async () => {
    bench.sandbox.setFaults({ quote: { latencyMs: 4_300 } });
    // The first quote arrives too late; the fresh one comes fast.
    bench.onRequest = (event) => {
      if (event.operation === 'getQuote') bench.sandbox.setFaults({});
    };
    const before = bench.sandbox.ledger().length;
    const report = await bench.run(strategy({ name: 'late-quote' }));

    expect(report.outcome).toBe('placed');
    const cycle = await bench.database.cycles.getBySlot('late-quote', new Date(report.slot));
    const quotes = await bench.database.quotes.forCycle(cycle!.id);
    // The late answer was cut off at the deadline and never read; only the fresh quote exists for the cycle.
    expect(quotes).toHaveLength(1);
    expect(quotes[0]!.receivedAt.getTime()).toBeLessThan(quotes[0]!.deadlineAt.getTime());
    expect(bench.sandbox.ledger().length).toBe(before + 1);
    expect(
      await metricValue(bench.metrics, 'treasury_quotes_expired_total', {
        strategy: 'late-quote',
        where: 'local',
      }),
    ).toBe(1);
    const timedOut = bench.requests.filter(
      (event) => event.operation === 'getQuote' && event.errorCode !== undefined,
    );
    expect(timedOut.at(-1)!.durationMs).toBeLessThan(4_300);
  });

  it('fails quote_deadline_exceeded when every quote is late, with no order at the service', async () => {
    const before = bench.sandbox.ledger().length;
    const context = {
      ...bench.inAccount(),
      settings: { ...bench.context.settings, deadlineMarginMs: 4_700, maxFreshQuotes: 1 },
    };
    bench.sandbox.setFaults({ quote: { latencyMs: 400 } });
    const slow = strategy({ name: 'all-late' });
    await recordStrategiesSeen(context, [slow]);
    const report = await runCycle(context, {
      strategy: slow,
      slot: new Date('2031-01-01T00:00:00Z'),
      trigger: 'once',
    });
    expect(report).toMatchObject({ outcome: 'failed', reason: 'quote_deadline_exceeded' });
    expect(bench.sandbox.ledger().length).toBe(before);
  });
});
