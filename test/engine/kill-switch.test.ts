import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KillSwitch, recordStrategiesSeen, runCycle } from '../../src/engine/index.js';
import { d, type EngineBench, metricValue, startEngineBench, strategy } from './support/harness.js';

describe('the kill switch', () => {
  let bench: EngineBench;
  beforeAll(async () => {
    bench = await startEngineBench();
  });
  afterAll(() => bench.close());

  it('records paused cycles as skipped (paused) without a quote, and places again after resume', async () => {
    await bench.context.killSwitch.pause('maintenance window', 'test');
    expect(await metricValue(bench.metrics, 'treasury_paused')).toBe(1);
    const quotesBefore = bench.requests.filter((event) => event.operation === 'getQuote').length;
    const paused = await bench.run(strategy({ name: 'switched' }));
    expect(paused).toMatchObject({ outcome: 'skipped', reason: 'paused', quoteId: null });
    expect(bench.requests.filter((event) => event.operation === 'getQuote').length).toBe(quotesBefore);

    await bench.context.killSwitch.resume('test');
    const resumed = await bench.run(strategy({ name: 'switched' }));
    expect(resumed.outcome).toBe('placed');
    expect(await metricValue(bench.metrics, 'treasury_paused')).toBe(0);
  });

  it('reaches another replica within its cache time (at most one second)', async () => {
    let now = Date.parse('2030-06-01T00:00:00Z');
    const clock = () => new Date(now);
    const here = new KillSwitch({ control: bench.database.control, cacheMs: 1_000, clock });
    const elsewhere = new KillSwitch({ control: bench.database.control, cacheMs: 1_000, clock });
    expect(await elsewhere.isPaused()).toBe(false);

    await here.pause('incident', 'operator');
    now += 999;
    expect(await elsewhere.isPaused()).toBe(false);
    now += 1;
    expect(await elsewhere.isPaused()).toBe(true);
    expect((await elsewhere.current()).reason).toBe('incident');

    await here.resume('operator');
    now += 1_000;
    expect(await elsewhere.isPaused()).toBe(false);
  });

  it('re-checks right before committing the intent: a pause during the quote stops the order', async () => {
    const context = {
      ...bench.inAccount(),
      killSwitch: new KillSwitch({ control: bench.database.control, cacheMs: 0, clock: () => new Date() }),
    };
    // The pause lands after the cycle's first check (at the balance read, before the quote) and before the
    // intent: only the re-check can stop the order.
    bench.onRequest = (event) => {
      if (event.operation === 'getBalance')
        void bench.database.control.pause('pulled during the cycle', 'test');
    };
    bench.sandbox.setFaults({ quote: { latencyMs: 200 } });
    const before = bench.sandbox.ledger().length;
    const late = strategy({ name: 'paused-mid-cycle', guards: { requireCanWithdraw: true } });
    await recordStrategiesSeen(context, [late]);
    const report = await runCycle(context, {
      strategy: late,
      slot: new Date('2031-02-01T00:00:00Z'),
      trigger: 'once',
    });
    bench.onRequest = undefined;
    bench.sandbox.setFaults({});
    await bench.database.control.resume('test');
    expect(report).toMatchObject({ outcome: 'skipped', reason: 'paused' });
    expect(report.quoteId).not.toBeNull();
    expect(bench.sandbox.ledger().length).toBe(before);
  });

  it('stops a budgeted order whose strategy lock outlasted the cache: the locked commit reads the switch', async () => {
    // The cache never expires here: only the read under the strategy lock can see the pause.
    const context = {
      ...bench.inAccount(),
      killSwitch: new KillSwitch({
        control: bench.database.control,
        cacheMs: 3_600_000,
        clock: () => new Date(),
      }),
    };
    expect(await context.killSwitch.isPaused()).toBe(false);
    await bench.database.control.pause('pulled while the cycle waited for the lock', 'test');
    const budgeted = strategy({ name: 'paused-at-lock', budget: { perDay: d('1000.00') } });
    const before = bench.sandbox.ledger().length;
    await recordStrategiesSeen(context, [budgeted]);
    const report = await runCycle(context, {
      strategy: budgeted,
      slot: new Date('2031-02-02T00:00:00Z'),
      trigger: 'once',
    });
    await bench.database.control.resume('test');
    expect(report).toMatchObject({ outcome: 'skipped', reason: 'paused' });
    expect(report.quoteId).not.toBeNull();
    expect(bench.sandbox.ledger().length).toBe(before);
  });
});
