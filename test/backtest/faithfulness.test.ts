import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { priceWalkCsv } from '../../examples/backtest/price-walk.js';
import { type PriceSeries, parsePriceCsv, runBacktest, type SlotDecision } from '../../src/backtest/index.js';
import { EVERY_ACCOUNT } from '../../src/db/index.js';
import { Worker } from '../../src/engine/index.js';
import { Decimal } from '../../src/money.js';
import { loadStrategiesOrThrow, slotsBetween } from '../../src/strategy/index.js';
import { type EngineBench, startEngineBench } from '../engine/support/harness.js';

/**
 * The backtest is only worth its figures if the worker would have done the same. Here the live worker (its
 * scheduler, cycles, database and HTTP client; node-cron off, a fake clock) runs against the sandbox
 * replaying a price series on that clock, and the backtest runs over the same series: slot by slot, the
 * same outcome, reason and amount.
 *
 * The strategies cover a threshold with a cooldown and a daily budget in a zone whose midnight falls inside
 * the range, a DCA with a price cap and a credit guard, a DCA whose every order parks for approval, and a DCA without guards that runs into the end of
 * the credit line (the service refuses its orders). Strategies that fire at the same instant run one after
 * the other in file order, as the backtest takes them; the guarded one never shares an instant with an
 * order placed before it in that instant (the worker counts such an order twice, on purpose, to be safe).
 */

const START = '2026-03-09T14:00:00Z';
const ROWS = 181; // 14:00 to 17:00, one a minute; Tokyo's midnight is 15:00Z.
const CREDIT = '7000.00';

interface Row {
  slot: string;
  outcome: string;
  reason: string;
  cost: string | null;
}

describe('faithfulness: the backtest decides as the live worker does', () => {
  let bench: EngineBench;
  let folder: string;
  let series: PriceSeries;
  let now = Date.parse(START) - 60_000;

  beforeAll(async () => {
    series = parsePriceCsv(priceWalkCsv({ seed: 11, start: START, rows: ROWS, stepMinutes: 1 }), 'walk.csv', {
      maxGapMs: 3_600_000,
    });
    const sorted = series.prices.map((price) => new Decimal(price)).sort((a, b) => a.comparedTo(b));
    const quantile = (share: number) => sorted[Math.floor(sorted.length * share)]!.toFixed(4);
    folder = await mkdtemp(join(tmpdir(), 'tb-faithful-'));
    await writeFile(
      join(folder, 'strategies.yaml'),
      [
        'name: dip',
        'kind: threshold',
        'symbol: USDTBRL',
        'amount: "1000.00"',
        'checkEvery: "*/10 * * * *"',
        'timezone: Asia/Tokyo',
        `buyBelow: "${quantile(0.6)}"`,
        'cooldown: 25m',
        'budget:',
        '  perDay: "1500.00"',
        '---',
        'name: steady',
        'kind: dca',
        'symbol: USDTBRL',
        'amount: "500.00"',
        'schedule: "5-59/10 * * * *"',
        'timezone: UTC',
        `maxPrice: "${quantile(0.7)}"`,
        'guards:',
        '  minCreditAvailable: "1500.00"',
        '---',
        'name: four-eyes',
        'kind: dca',
        'symbol: USDTBRL',
        'amount: "300.00"',
        'schedule: "2-59/20 * * * *"',
        'timezone: UTC',
        'approval:',
        '  required: always',
        '---',
        'name: fallback',
        'kind: dca',
        'symbol: USDTBRL',
        'amount: "250.00"',
        'schedule: "*/15 * * * *"',
        'timezone: America/Sao_Paulo',
        '',
      ].join('\n'),
    );
    bench = await startEngineBench({
      clock: () => new Date(now),
      engine: { catchUpIntervalMs: 3_600_000 },
      sandbox: {
        stepMs: 0,
        now: () => now,
        creditLimit: CREDIT,
        replay: { series, speed: 1, origin: series.first },
      },
    });
  });
  afterAll(async () => {
    await bench?.close();
    await rm(folder, { recursive: true, force: true });
  });

  it('places or skips the same slots, for the same reasons and amounts', async () => {
    const { strategies } = await loadStrategiesOrThrow(folder);
    // node-cron's part, played by the test: each strategy's task fires at its slots.
    const due = strategies.map(
      (strategy) =>
        new Set(
          slotsBetween(
            strategy.schedule,
            strategy.timezone,
            new Date(series.first - 1),
            new Date(series.last),
          ).map((slot) => slot.getTime()),
        ),
    );
    const worker = new Worker(bench.context, { strategiesPath: folder, useCron: false });
    await worker.start();
    try {
      for (let at = series.first; at <= series.last; at += 60_000) {
        now = at;
        for (const [index, strategy] of strategies.entries()) {
          if (!due[index]!.has(at)) continue;
          worker.scheduler.tick(strategy.name, new Date(at));
          await worker.scheduler.settled();
        }
      }
    } finally {
      await worker.stop();
    }
    const live: Row[] = [];
    for (const strategy of strategies) {
      const cycles = await bench.database.cycles.listRecent(EVERY_ACCOUNT, {
        strategy: strategy.name,
        limit: 1000,
      });
      for (const cycle of cycles) {
        live.push({
          slot: `${cycle.strategy} ${cycle.slot.toISOString()}`,
          outcome: cycle.state,
          reason: cycle.reasonCode ?? '',
          cost: cycle.state === 'placed' ? cycle.totalCost!.toFixed(2) : null,
        });
      }
    }

    const decisions: SlotDecision[] = [];
    runBacktest(strategies, series, {
      creditTotal: new Decimal(CREDIT),
      settleDelayMs: 86_400_000,
      onDecision: (decision) => decisions.push(decision),
    });
    const backtested: Row[] = decisions.map((decision) => ({
      slot: `${decision.strategy} ${decision.slot.toISOString()}`,
      outcome: decision.outcome,
      reason: decision.reason,
      cost: decision.outcome === 'placed' ? decision.cost!.toFixed(2) : null,
    }));

    const bySlot = (a: Row, b: Row) => a.slot.localeCompare(b.slot);
    expect(live.sort(bySlot)).toEqual(backtested.sort(bySlot));
    // The comparison is only worth something if every kind of decision happened.
    const reasons = new Set(backtested.map((row) => row.reason));
    for (const reason of [
      'ok',
      'price_not_below_threshold',
      'cooldown_active',
      'budget_day_exceeded',
      'price_above_max',
      'credit_available_below_min',
      'order_rejected',
      'approval_required',
    ]) {
      expect(reasons, reason).toContain(reason);
    }
    // dip every 10 minutes, steady at 5 past every 10, four-eyes at 2 past every 20, fallback every 15,
    // from 14:00 to 17:00.
    expect(backtested).toHaveLength(19 + 18 + 9 + 13);
  });
});
