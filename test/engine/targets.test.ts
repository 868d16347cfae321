/**
 * Targets in the engine, against the sandbox over HTTP, on both backends: a known total bought over a window
 * a slice per slot, paced from the record, capped by maxPrice, never beyond the total. The clock is fake: each
 * slot's cycle runs at its instant, and the sandbox replays a price path on the same clock.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { PriceSeries } from '../../src/backtest/price-series.js';
import { createApprovalControl } from '../../src/control/index.js';
import { EVERY_ACCOUNT } from '../../src/db/account-scope.js';
import { openConsoleStore, openDatabase } from '../../src/db/index.js';
import {
  Maintenance,
  recordStrategiesSeen,
  resolveStrategyVersions,
  runCycle,
} from '../../src/engine/index.js';
import type { Decimal } from '../../src/money.js';
import { parseStrategyText, type TargetStrategy } from '../../src/strategy/index.js';
import { slotsBetween } from '../../src/strategy/slots.js';
import { createTestDatabase, testBackends } from '../support/database.js';
import { d, type EngineBench, replicaOn, startEngineBench } from './support/harness.js';

const START = Date.UTC(2031, 2, 3, 12, 0, 0);
const MINUTE = 60_000;

/** A target strategy as a file would define it (the loader's own parsing, so the test uses what operators write). */
function targetStrategy(fields: string): TargetStrategy {
  const text = `name: payroll\nkind: target\nsymbol: USDTBRL\ntimezone: UTC\n${fields}`;
  const parsed = parseStrategyText(text, 'payroll.yaml');
  expect(parsed.problems).toEqual([]);
  return parsed.strategies[0]!.strategy as TargetStrategy;
}

/** The file's text recorded as the strategy's next version, as the worker records what it loads. */
async function versioned(bench: EngineBench, fields: string): Promise<TargetStrategy> {
  const text = `name: payroll\nkind: target\nsymbol: USDTBRL\ntimezone: UTC\n${fields}`;
  const strategy = targetStrategy(fields);
  const loaded = {
    valid: true as const,
    files: [],
    strategies: [strategy],
    texts: new Map([['payroll', text]]),
  };
  const { running } = await resolveStrategyVersions(bench.context, loaded, {
    changes: 'apply',
    actor: 'automation',
  });
  await recordStrategiesSeen(bench.context, running);
  return running[0] as TargetStrategy;
}

const iso = (ms: number) => new Date(ms).toISOString().slice(0, 19);

/** A price path: `price(ms)` sampled every second over the window and a minute beyond. */
function pricePath(price: (at: number) => string, minutes = 4): PriceSeries {
  const times: number[] = [];
  const prices: string[] = [];
  // The first row is the sandbox's origin: a quote at clock time t takes the row of t.
  for (let at = START; at <= START + minutes * MINUTE; at += 1000) {
    times.push(at);
    prices.push(price(at));
  }
  return new PriceSeries('path', Float64Array.from(times), prices);
}

interface Run {
  bench: EngineBench;
  clock: { now: number };
}

async function startRun(
  backend: Parameters<typeof createTestDatabase>[0],
  series: PriceSeries,
): Promise<Run> {
  const clock = { now: START };
  const test = await createTestDatabase(backend, { clock: () => new Date(clock.now) });
  const bench = await startEngineBench({
    test,
    clock: () => new Date(clock.now),
    sandbox: { now: () => clock.now, replay: { series, speed: 1, origin: START } },
  });
  return { bench, clock };
}

/** What the target's placed cycles spent and received, and every placed cycle's price and slot. */
async function placedOf(bench: EngineBench, name: string) {
  const cycles = (
    await bench.database.cycles.listRecent(EVERY_ACCOUNT, { limit: 1000, strategy: name })
  ).filter((cycle) => cycle.state === 'placed');
  let spent = d('0');
  for (const cycle of cycles) spent = spent.plus(cycle.totalCost!);
  return { cycles, spent };
}

const slotsOf = (strategy: TargetStrategy) =>
  slotsBetween(
    strategy.schedule,
    strategy.timezone,
    new Date(strategy.target.start.getTime() - 1),
    new Date(strategy.target.end.getTime() - 1),
  );

describe.each(testBackends())('targets (%s)', (backend) => {
  let run: Run | undefined;
  const opened: { close(): Promise<void> }[] = [];
  afterEach(async () => {
    for (const database of opened.splice(0)) await database.close();
    await run?.bench.close();
    await run?.bench.test.drop();
    run = undefined;
  });

  /** Runs every slot of the window at its instant; after each, `check(done, slotsPassed)`. */
  async function runWindow(
    strategy: TargetStrategy,
    check?: (spent: Decimal, slotsPassed: number) => void,
  ): Promise<void> {
    const { bench, clock } = run!;
    await recordStrategiesSeen(bench.context, [strategy]);
    const slots = slotsOf(strategy);
    for (const [index, slot] of slots.entries()) {
      clock.now = slot.getTime();
      await runCycle(bench.inAccount(), { strategy, slot, trigger: 'schedule' });
      check?.((await placedOf(bench, strategy.name)).spent, index + 1);
    }
  }

  it('buys 10,000.00 over 2 minutes every 5 s: on the straight line at every slot, the total to the cent, none above maxPrice', async () => {
    run = await startRun(
      backend,
      pricePath((at) => (5.4 + ((at / 1000) % 7) * 0.001).toFixed(4)),
    );
    const strategy = targetStrategy(
      `target: { spend: "10000.00" }\nwindow: { start: "${iso(START)}", end: "${iso(START + 2 * MINUTE)}" }\nevery: "*/5 * * * * *"\nslice: { min: "100.00", max: "1000.00" }\nmaxPrice: "5.50"\n`,
    );
    const slots = slotsOf(strategy);
    expect(slots).toHaveLength(24);
    const total = d('10000.00');
    await runWindow(strategy, (spent, passed) => {
      const line = total.times(passed).dividedBy(slots.length);
      // Within one slice of the line (and each slice loses at most a cent and a part of a unit to rounding).
      expect(spent.minus(line).abs().lessThanOrEqualTo(d('1000.00'))).toBe(true);
      expect(spent.lessThanOrEqualTo(total)).toBe(true);
    });
    const { cycles, spent } = await placedOf(run.bench, strategy.name);
    expect(cycles).toHaveLength(24);
    // The last order sizes itself to what is left: only its own rounding (under a cent plus a micro-unit's cost).
    expect(spent.lessThanOrEqualTo(total)).toBe(true);
    expect(spent.greaterThanOrEqualTo(total.minus('0.02'))).toBe(true);
    for (const cycle of cycles) {
      expect(cycle.price!.lessThanOrEqualTo(d('5.50'))).toBe(true);
      expect(cycle.slot.getTime()).toBeLessThan(strategy.target.end.getTime());
    }
    // Orders at the sandbox are exactly the placed cycles.
    expect(run.bench.sandbox.ledger('default')).toHaveLength(24);
  });

  it('a price above maxPrice for a third of the window: those slots skip, and the pace catches up to complete', async () => {
    const third = START + 40_000;
    run = await startRun(
      backend,
      pricePath((at) => (at >= third && at < third + 40_000 ? '5.9000' : '5.4000')),
    );
    const strategy = targetStrategy(
      `target: { spend: "10000.00" }\nwindow: { start: "${iso(START)}", end: "${iso(START + 2 * MINUTE)}" }\nevery: "*/5 * * * * *"\nslice: { min: "100.00", max: "1500.00" }\nmaxPrice: "5.50"\n`,
    );
    await runWindow(strategy);
    const all = await run.bench.database.cycles.listRecent(EVERY_ACCOUNT, {
      limit: 100,
      strategy: strategy.name,
    });
    const aboveMax = all.filter((cycle) => cycle.reasonCode === 'price_above_max');
    expect(aboveMax).toHaveLength(8);
    const { spent } = await placedOf(run.bench, strategy.name);
    expect(spent.lessThanOrEqualTo(d('10000.00'))).toBe(true);
    expect(spent.greaterThanOrEqualTo(d('9999.98'))).toBe(true);
  });

  it('when slice.max cannot catch up, the window ends short: the remainder is what the record says', async () => {
    const third = START + 40_000;
    run = await startRun(
      backend,
      pricePath((at) => (at >= third && at < third + 40_000 ? '5.9000' : '5.4000')),
    );
    const strategy = targetStrategy(
      `target: { spend: "10000.00" }\nwindow: { start: "${iso(START)}", end: "${iso(START + 2 * MINUTE)}" }\nevery: "*/5 * * * * *"\nslice: { min: "100.00", max: "450.00" }\nmaxPrice: "5.50"\n`,
    );
    await runWindow(strategy);
    const { cycles, spent } = await placedOf(run.bench, strategy.name);
    // 16 slots at or below maxPrice: 8 on the line (416.66 each), then 8 behind it at slice.max.
    expect(cycles).toHaveLength(16);
    const late = cycles.filter((cycle) => cycle.slot.getTime() >= START + 80_000);
    expect(late.map((cycle) => cycle.amount?.toFixed(2))).toEqual(Array(8).fill('450.00'));
    expect(spent.lessThanOrEqualTo(d('8').times('416.66').plus('3600.00'))).toBe(true);
    expect(spent.greaterThan(d('6933.00'))).toBe(true);
  });

  it('a receive target buys a crypto quantity: never above it, short by at most the rounding of the last quote', async () => {
    run = await startRun(
      backend,
      pricePath((at) => (5.4 + ((at / 1000) % 5) * 0.0013).toFixed(4)),
    );
    const strategy = targetStrategy(
      `target: { receive: "1500.000000" }\nwindow: { start: "${iso(START)}", end: "${iso(START + MINUTE)}" }\nevery: "*/5 * * * * *"\nslice: { min: "50.00", max: "2000.00" }\n`,
    );
    await runWindow(strategy);
    // What the service delivers: the orders' quantities at the sandbox.
    let received = d('0');
    for (const order of run.bench.sandbox.ledger('default')) received = received.plus(order.totalFilled);
    expect(received.lessThanOrEqualTo(d('1500'))).toBe(true);
    // The last slice is a whole-cent amount at the last price: short by less than a cent's worth of crypto.
    expect(received.greaterThan(d('1499.99'))).toBe(true);
  });

  it('a new version mid-window (new end, new total): the pace follows it from the next slot, what was bought counts', async () => {
    run = await startRun(
      backend,
      pricePath(() => '5.4000'),
    );
    const first = targetStrategy(
      `target: { spend: "6000.00" }\nwindow: { start: "${iso(START)}", end: "${iso(START + MINUTE)}" }\nevery: "*/5 * * * * *"\nslice: { min: "10.00", max: "5000.00" }\n`,
    );
    const { bench, clock } = run;
    await recordStrategiesSeen(bench.context, [first]);
    const slots = slotsOf(first);
    for (const slot of slots.slice(0, 6)) {
      clock.now = slot.getTime();
      await runCycle(bench.inAccount(), { strategy: first, slot, trigger: 'schedule' });
    }
    // Half the window, half the total: 3,000.00 (each 500.00 order loses under a cent to rounding).
    const half = (await placedOf(bench, 'payroll')).spent;
    expect(half.greaterThan(d('2999.90'))).toBe(true);
    const second = targetStrategy(
      `target: { spend: "9000.00" }\nwindow: { start: "${iso(START)}", end: "${iso(START + 90_000)}" }\nevery: "*/5 * * * * *"\nslice: { min: "10.00", max: "5000.00" }\n`,
    );
    await recordStrategiesSeen(bench.context, [second]);
    const next = slotsOf(second)[6]!;
    clock.now = next.getTime();
    await runCycle(bench.inAccount(), { strategy: second, slot: next, trigger: 'schedule' });
    const cycle = await bench.database.cycles.getBySlot('payroll', next);
    // 9,000.00 − what was bought, over the 12 slots left of the new window.
    const expected = d('9000.00').minus(half).dividedBy(12).toDecimalPlaces(2, 1);
    expect(cycle?.amount).toEqual(expected);
    expect(cycle?.state).toBe('placed');
  });

  it('nothing outside the window, and nothing once the total is reached', async () => {
    run = await startRun(
      backend,
      pricePath(() => '5.4000'),
    );
    const strategy = targetStrategy(
      `target: { spend: "300.00" }\nwindow: { start: "${iso(START + 10_000)}", end: "${iso(START + 20_000)}" }\nevery: "*/5 * * * * *"\nslice: { min: "150.00", max: "1000.00" }\n`,
    );
    const { bench, clock } = run;
    const before = await bench.run(strategy, new Date(START + 5_000));
    expect(before).toMatchObject({ outcome: 'skipped', reason: 'target_outside_window' });
    for (const at of [START + 10_000, START + 15_000]) {
      clock.now = at;
      expect(await bench.run(strategy, new Date(at))).toMatchObject({ outcome: 'placed' });
    }
    const spent = (await placedOf(bench, strategy.name)).spent;
    const remainder = d('300.00').minus(spent);
    expect(remainder.lessThan(d('0.02'))).toBe(true);
    clock.now = START + 20_000;
    expect(await bench.run(strategy, new Date(START + 20_000))).toMatchObject({
      outcome: 'skipped',
      reason: 'target_outside_window',
    });
  });

  it('every slice is an order like any other: parked for approval it counts as bought, approved it buys what parked', async () => {
    run = await startRun(
      backend,
      pricePath(() => '5.4000'),
    );
    const strategy = targetStrategy(
      `target: { spend: "3000.00" }\nwindow: { start: "${iso(START)}", end: "${iso(START + 30_000)}" }\nevery: "*/5 * * * * *"\nslice: { min: "100.00", max: "1000.00" }\napproval: { required: above, above: "400.00", approvers: 1 }\n`,
    );
    const { bench, clock } = run;
    await openConsoleStore(bench.database).people.add(
      { name: 'ana', role: 'approver', passwordHash: 'unused' },
      'test',
    );
    await runWindow(strategy);
    const parked = await bench.database.cycles.listByState(EVERY_ACCOUNT, 'awaiting_approval');
    // Six slices of about 500.00 parked (each the rounding of the one before added back): the total, and not
    // a cent more.
    expect(parked).toHaveLength(6);
    const parkedCost = parked.reduce((sum, cycle) => sum.plus(cycle.totalCost!), d('0'));
    expect(parkedCost.lessThanOrEqualTo(d('3000.00'))).toBe(true);
    expect(parkedCost.greaterThan(d('2999.97'))).toBe(true);
    expect(bench.sandbox.ledger('default')).toEqual([]);
    const control = createApprovalControl(bench.database);
    for (const cycle of parked) await control.approve(cycle.id, 'ana');
    clock.now = START + 29_000;
    await new Maintenance(bench.context, { strategies: () => [strategy] }).runOnce();
    const { cycles, spent } = await placedOf(bench, strategy.name);
    // Each approved slice bought the amount it parked with, at a fresh quote of the same price.
    const amounts = (cycles: { id: number; amount: Decimal | null }[]) =>
      new Map(cycles.map((cycle) => [cycle.id, cycle.amount?.toFixed(2)]));
    expect(amounts(cycles)).toEqual(amounts(parked));
    expect(spent.lessThanOrEqualTo(d('3000.00'))).toBe(true);
    expect(spent.greaterThan(d('2999.97'))).toBe(true);
  });

  it('a parked slice approved after its total was lowered is judged by the total that runs now', async () => {
    run = await startRun(
      backend,
      pricePath(() => '5.4000'),
    );
    const fields = (total: string) =>
      `target: { spend: "${total}" }\nwindow: { start: "${iso(START)}", end: "${iso(START + 30_000)}" }\nevery: "*/5 * * * * *"\nslice: { min: "100.00", max: "1000.00" }\napproval: { required: above, above: "400.00", approvers: 1 }\n`;
    const { bench, clock } = run;
    const first = await versioned(bench, fields('3000.00'));
    await openConsoleStore(bench.database).people.add(
      { name: 'ana', role: 'approver', passwordHash: 'unused' },
      'test',
    );
    await runWindow(first);
    const parked = await bench.database.cycles.listByState(EVERY_ACCOUNT, 'awaiting_approval');
    expect(parked).toHaveLength(6);
    // The owner lowers the total to 2,000.00 (a new version) while the slices wait; then all are approved.
    const lowered = await versioned(bench, fields('2000.00'));
    expect([first.version, lowered.version]).toEqual([1, 2]);
    const control = createApprovalControl(bench.database);
    for (const cycle of parked) await control.approve(cycle.id, 'ana');
    clock.now = START + 29_000;
    await new Maintenance(bench.context, { strategies: () => [lowered] }).runOnce();
    const { cycles, spent } = await placedOf(bench, lowered.name);
    expect(spent.lessThanOrEqualTo(d('2000.00'))).toBe(true);
    expect(cycles.length).toBeLessThan(6);
    const all = await bench.database.cycles.listRecent(EVERY_ACCOUNT, { limit: 100, strategy: lowered.name });
    // The others skip on the lowered total: reached (the parked ones still count) or a quote that would pass it.
    const skipped = all.filter((cycle) => cycle.state === 'skipped');
    expect(skipped).toHaveLength(6 - cycles.length);
    for (const cycle of skipped)
      expect(['target_reached', 'target_would_exceed']).toContain(cycle.reasonCode);
  });

  it('a slice approved after the window ended buys nothing', async () => {
    run = await startRun(
      backend,
      pricePath(() => '5.4000'),
    );
    const strategy = targetStrategy(
      `target: { spend: "1000.00" }\nwindow: { start: "${iso(START)}", end: "${iso(START + 10_000)}" }\nevery: "*/5 * * * * *"\nslice: { min: "100.00", max: "1000.00" }\napproval: { required: always, approvers: 1 }\n`,
    );
    const { bench, clock } = run;
    await openConsoleStore(bench.database).people.add(
      { name: 'ana', role: 'approver', passwordHash: 'unused' },
      'test',
    );
    await runWindow(strategy);
    const parked = await bench.database.cycles.listByState(EVERY_ACCOUNT, 'awaiting_approval');
    expect(parked).toHaveLength(2);
    const control = createApprovalControl(bench.database);
    for (const cycle of parked) await control.approve(cycle.id, 'ana');
    clock.now = START + 10_000;
    await new Maintenance(bench.context, { strategies: () => [strategy] }).runOnce();
    const all = await bench.database.cycles.listRecent(EVERY_ACCOUNT, {
      limit: 100,
      strategy: strategy.name,
    });
    expect(all.map((cycle) => cycle.reasonCode)).toEqual(['target_outside_window', 'target_outside_window']);
    expect(bench.sandbox.ledger('default')).toEqual([]);
  });

  it("a budget caps the slices: a slice that would pass the day's budget skips, and the target ends short", async () => {
    run = await startRun(
      backend,
      pricePath(() => '5.4000'),
    );
    const strategy = targetStrategy(
      `target: { spend: "3000.00" }\nwindow: { start: "${iso(START)}", end: "${iso(START + 30_000)}" }\nevery: "*/5 * * * * *"\nslice: { min: "100.00", max: "1000.00" }\nbudget: { perDay: "1200.00" }\n`,
    );
    await runWindow(strategy);
    const all = await run.bench.database.cycles.listRecent(EVERY_ACCOUNT, {
      limit: 100,
      strategy: strategy.name,
    });
    expect(all.filter((cycle) => cycle.reasonCode === 'budget_day_exceeded')).toHaveLength(4);
    const { spent } = await placedOf(run.bench, strategy.name);
    expect(spent.lessThanOrEqualTo(d('1200.00'))).toBe(true);
  });

  it.skipIf(backend === 'pglite')(
    'two replicas racing on every slot of one target: each slot bought once, never over the total',
    async () => {
      run = await startRun(
        backend,
        pricePath(() => '5.4000'),
      );
      const strategy = targetStrategy(
        `target: { spend: "2000.00" }\nwindow: { start: "${iso(START)}", end: "${iso(START + MINUTE)}" }\nevery: "*/5 * * * * *"\nslice: { min: "100.00", max: "2000.00" }\n`,
      );
      const { bench, clock } = run;
      const other = await openDatabase({ url: bench.test.url, clock: () => new Date(clock.now) });
      opened.push(other);
      const replicaB = replicaOn(bench, other);
      await recordStrategiesSeen(bench.context, [strategy]);
      // Both replicas run every slot, and a second slot at once: the claim and the lock decide.
      const slots = slotsOf(strategy);
      for (let index = 0; index < slots.length; index += 2) {
        clock.now = slots[index]!.getTime();
        const pair = slots.slice(index, index + 2);
        await Promise.all(
          pair.flatMap((slot) => [
            runCycle(bench.inAccount(), { strategy, slot, trigger: 'schedule' }),
            runCycle(
              { ...replicaB, account: bench.inAccount().account },
              { strategy, slot, trigger: 'schedule' },
            ),
          ]),
        );
      }
      const { cycles, spent } = await placedOf(bench, strategy.name);
      expect(new Set(cycles.map((cycle) => cycle.slot.getTime())).size).toBe(cycles.length);
      expect(spent.lessThanOrEqualTo(d('2000.00'))).toBe(true);
      // Two slots sized from the same figures: under the lock the second may no longer fit (skipped
      // `target_would_exceed`), so the window may end short, never over.
      const all = await bench.database.cycles.listRecent(EVERY_ACCOUNT, {
        limit: 100,
        strategy: strategy.name,
      });
      const reasons = new Set(
        all.filter((cycle) => cycle.state === 'skipped').map((cycle) => cycle.reasonCode),
      );
      expect(
        [...reasons].filter(
          (reason) => !['slot_already_claimed', 'target_would_exceed', 'target_reached'].includes(reason!),
        ),
      ).toEqual([]);
      expect(bench.sandbox.ledger('default')).toHaveLength(cycles.length);
    },
  );
});
