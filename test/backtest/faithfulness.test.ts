import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { priceWalkCsv } from '../../examples/backtest/price-walk.js';
import { type PriceSeries, parsePriceCsv, runBacktest, type SlotDecision } from '../../src/backtest/index.js';
import { EVERY_ACCOUNT } from '../../src/db/index.js';
import { Worker } from '../../src/engine/index.js';
import { Decimal } from '../../src/money.js';
import { loadStrategiesOrThrow, slotsBetween } from '../../src/strategy/index.js';
import { startEngineBench } from '../engine/support/harness.js';

/**
 * The backtest is only worth its figures if the worker would have done the same. Here the live worker (its
 * scheduler, cycles, database and HTTP client; node-cron off, a fake clock) runs against the sandbox
 * replaying a price series on that clock, and the backtest runs over the same series: slot by slot, the
 * same outcome, reason, amount and cost.
 *
 * The first scenario covers a threshold with a cooldown and a daily budget in a zone whose midnight falls
 * inside the range, a DCA with a price cap and a credit guard, a DCA whose every order parks for approval,
 * and a DCA without guards that runs into the end of the credit line (the service refuses its orders).
 * Strategies that fire at the same instant run one after the other in file order, as the backtest takes
 * them; the guarded one never shares an instant with an order placed before it in that instant (the worker
 * counts such an order twice, on purpose, to be safe). The second covers targets, spend and receive.
 */

const START = '2026-03-09T14:00:00Z';
const MINUTE = 60_000;

interface Row {
  slot: string;
  outcome: string;
  reason: string;
  amount: string | null;
  cost: string | null;
}

/** Every slot of the strategies in `yaml` over the series, decided by the live worker and by the backtest. */
async function decideBoth(
  yaml: string,
  series: PriceSeries,
  credit: string,
): Promise<{ live: Row[]; backtested: Row[] }> {
  const folder = await mkdtemp(join(tmpdir(), 'tb-faithful-'));
  let now = series.first - MINUTE;
  const bench = await startEngineBench({
    clock: () => new Date(now),
    engine: { catchUpIntervalMs: 3_600_000 },
    sandbox: {
      stepMs: 0,
      now: () => now,
      creditLimit: credit,
      replay: { series, speed: 1, origin: series.first },
    },
  });
  try {
    await writeFile(join(folder, 'strategies.yaml'), yaml);
    const { strategies } = await loadStrategiesOrThrow(folder);
    // node-cron's part, played by the test: each strategy's task fires at its slots (a target's outside
    // its window too: the scheduler itself drops those).
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
      for (let at = series.first; at <= series.last; at += MINUTE) {
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
          amount: cycle.amount?.toFixed(2) ?? null,
          cost: cycle.state === 'placed' ? cycle.totalCost!.toFixed(2) : null,
        });
      }
    }

    const decisions: SlotDecision[] = [];
    runBacktest(strategies, series, {
      creditTotal: new Decimal(credit),
      settleDelayMs: 86_400_000,
      onDecision: (decision) => decisions.push(decision),
    });
    const backtested: Row[] = decisions.map((decision) => ({
      slot: `${decision.strategy} ${decision.slot.toISOString()}`,
      outcome: decision.outcome,
      reason: decision.reason,
      amount: decision.amount?.toFixed(2) ?? null,
      cost: decision.outcome === 'placed' ? decision.cost!.toFixed(2) : null,
    }));
    const bySlot = (a: Row, b: Row) => a.slot.localeCompare(b.slot);
    return { live: live.sort(bySlot), backtested: backtested.sort(bySlot) };
  } finally {
    await bench.close();
    await rm(folder, { recursive: true, force: true });
  }
}

describe('faithfulness: the backtest decides as the live worker does', () => {
  it('places or skips the same slots, for the same reasons and amounts', async () => {
    // 14:00 to 17:00, one a minute; Tokyo's midnight is 15:00Z.
    const series = parsePriceCsv(
      priceWalkCsv({ seed: 11, start: START, rows: 181, stepMinutes: 1 }),
      'walk.csv',
      { maxGapMs: 3_600_000 },
    );
    const sorted = series.prices.map((price) => new Decimal(price)).sort((a, b) => a.comparedTo(b));
    const quantile = (share: number) => sorted[Math.floor(sorted.length * share)]!.toFixed(4);
    const yaml = [
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
    ].join('\n');
    const { live, backtested } = await decideBoth(yaml, series, '7000.00');
    expect(live).toEqual(backtested);
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

  it('sizes, resizes and skips the slots of spend and receive targets alike', async () => {
    // 14:00 to 16:00, one a minute: around 5.40, above both targets' maxPrice from 14:25 to 14:39, and a dip
    // well below the window's quote average from 15:00 to 15:11 (their opportunistic slices).
    const rows = ['timestamp,price'];
    for (let minute = 0; minute <= 120; minute++) {
      const level = minute >= 25 && minute < 40 ? 5.58 : minute >= 60 && minute < 72 ? 5.33 : 5.4;
      const wiggle = (((minute * 7) % 11) - 5) * 0.0004;
      rows.push(
        `${new Date(Date.parse(START) + minute * MINUTE).toISOString()},${(level + wiggle).toFixed(4)}`,
      );
    }
    const series = parsePriceCsv(rows.join('\n'), 'path.csv', { maxGapMs: 3_600_000 });
    const yaml = [
      // 30 slots from 14:06 to 15:33; a slice.min of 250.00 finishes 6,000.00 before the window ends.
      'name: payroll',
      'kind: target',
      'symbol: USDTBRL',
      'timezone: UTC',
      'target: { spend: "6000.00" }',
      'window: { start: "2026-03-09T14:05:00", end: "2026-03-09T15:35:00" }',
      'every: "*/3 * * * *"',
      'slice: { min: "250.00", max: "900.00" }',
      'maxPrice: "5.50"',
      'opportunistic: { belowAveragePct: "1.0", upTo: "2x" }',
      '---',
      // 25 slots from 14:12 to 15:48; sized on the quote average before quoting, then on the real price.
      'name: hedge',
      'kind: target',
      'symbol: USDTBRL',
      'timezone: UTC',
      'target: { receive: "1200.00" }',
      'window: { start: "2026-03-09T14:10:00", end: "2026-03-09T15:50:00" }',
      'every: "*/4 * * * *"',
      'slice: { min: "150.00", max: "900.00" }',
      'maxPrice: "5.50"',
      'opportunistic: { belowAveragePct: "1.0", upTo: "1.5x" }',
      '',
    ].join('\n');
    const { live, backtested } = await decideBoth(yaml, series, '1000000.00');
    expect(live).toEqual(backtested);
    const of = (name: string) => backtested.filter((row) => row.slot.startsWith(`${name} `));
    const reasonsOf = (name: string) => new Set(of(name).map((row) => row.reason));
    const amountAt = (name: string, time: string) =>
      new Decimal(of(name).find((row) => row.slot.endsWith(`T${time}:00.000Z`))!.amount!);
    // Only the slots of each window ran (the series starts before both and ends after both).
    expect(of('payroll')).toHaveLength(30);
    expect(of('hedge')).toHaveLength(25);
    expect([...reasonsOf('payroll')].sort()).toEqual(['ok', 'price_above_max', 'target_reached']);
    expect([...reasonsOf('hedge')].sort()).toEqual(['ok', 'price_above_max']);
    // The dip's slices are larger than the pace around them: sized again on the quote's price (one resize).
    expect(amountAt('payroll', '14:57').toFixed(2)).toBe('250.00');
    expect(amountAt('payroll', '15:00').greaterThan(amountAt('payroll', '14:57').times('1.3'))).toBe(true);
    expect(amountAt('hedge', '15:08').greaterThan(amountAt('hedge', '15:12').times('1.3'))).toBe(true);
    // The receive target's first slot has no quote average to size on: it quotes slice.min, then its pace.
    expect(amountAt('hedge', '14:12').greaterThan('150.00')).toBe(true);
  });
});
