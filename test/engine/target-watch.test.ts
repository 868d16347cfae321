/**
 * The worker watching its targets, on both backends, against the sandbox over HTTP and a real Slack-shaped
 * receiver: the maintenance pass of each replica reads where every loaded target stands, exports it as
 * gauges, and writes `target_completed`, `target_behind` and `target_missed` once however many replicas,
 * passes and restarts see them. The clock is fake: each slot's cycle and each pass run at their instant.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PriceSeries } from '../../src/backtest/price-series.js';
import { notificationsSchema } from '../../src/config/index.js';
import { EVERY_ACCOUNT } from '../../src/db/account-scope.js';
import { type Database, openDatabase } from '../../src/db/index.js';
import { Maintenance, recordStrategiesSeen, runCycle } from '../../src/engine/index.js';
import { behindShareOf } from '../../src/engine/target-watch.js';
import { formatMoney } from '../../src/money.js';
import { type Channel, createChannels, deliverDue, routerFor } from '../../src/notify/index.js';
import {
  ALERT_RULES,
  TARGET_BEHIND_SHARE,
  TARGET_LATE_WINDOW_LEFT,
} from '../../src/observability/alert-rules.js';
import { createLogger } from '../../src/observability/logger.js';
import { gaugeValue } from '../../src/observability/metrics.js';
import { parseStrategyText, type Strategy, type TargetStrategy } from '../../src/strategy/index.js';
import { slotsBetween } from '../../src/strategy/slots.js';
import { type HttpReceiver, startHttpReceiver } from '../notify/support/receivers.js';
import { createTestDatabase, testBackends } from '../support/database.js';
import {
  d,
  type EngineBench,
  engineSettings,
  metricValue,
  replicaOn,
  startEngineBench,
} from './support/harness.js';

const START = Date.UTC(2031, 2, 3, 12, 0, 0);
const MINUTE = 60_000;
const END = START + 2 * MINUTE;
const iso = (ms: number) => new Date(ms).toISOString().slice(0, 19);

let receiver: HttpReceiver;
beforeAll(async () => {
  receiver = await startHttpReceiver(() => 200);
});
afterAll(() => receiver.close());

const notifications = () =>
  notificationsSchema.parse({
    channels: { desk: { type: 'slack', webhookUrl: receiver.url } },
    routes: [{ events: ['target_completed', 'target_behind', 'target_missed'], channels: ['desk'] }],
  });

/** 10,000.00 over two minutes, a slot every 5 s; `fields` adds or overrides the file's lines. */
function target(fields = ''): TargetStrategy {
  const text = `name: payroll\nkind: target\nsymbol: USDTBRL\ntimezone: UTC\ntarget: { spend: "10000.00" }\nwindow: { start: "${iso(START)}", end: "${iso(END)}" }\nevery: "*/5 * * * * *"\n${fields}`;
  const parsed = parseStrategyText(text, 'payroll.yaml');
  expect(parsed.problems).toEqual([]);
  return parsed.strategies[0]!.strategy as TargetStrategy;
}

/** A price path sampled every second from START: the sandbox quotes the row of its clock's instant. */
function pricePath(price: (at: number) => string): PriceSeries {
  const times: number[] = [];
  const prices: string[] = [];
  for (let at = START; at <= START + 6 * MINUTE; at += 1000) {
    times.push(at);
    prices.push(price(at));
  }
  return new PriceSeries('path', Float64Array.from(times), prices);
}

/** What the slack receiver got: each message's title and its lines. */
const received = () =>
  receiver.requests.map((request) => {
    const body = JSON.parse(request.body) as { text: string; blocks: { text: { text: string } }[] };
    return { title: body.text, text: body.blocks[0]!.text.text };
  });

it('notices and the alert are late under the same share of the window, behind by the same default share', () => {
  expect(engineSettings().targets.behindShare).toBe(TARGET_BEHIND_SHARE);
  expect(ALERT_RULES.targetBehind.expr).toContain(`> ${TARGET_BEHIND_SHARE}\n`);
  expect(ALERT_RULES.targetBehind.expr).toContain(`< ${TARGET_LATE_WINDOW_LEFT}\n`);
});

describe.each(testBackends())('target watch (%s)', (backend) => {
  let bench: EngineBench | undefined;
  let channels: Map<string, Channel> | undefined;
  const opened: Database[] = [];
  const clock = { now: START };
  afterEach(async () => {
    for (const database of opened.splice(0)) await database.close();
    for (const channel of channels?.values() ?? []) await channel.close();
    await bench?.close();
    await bench?.test.drop();
    bench = undefined;
    receiver.requests.splice(0);
  });

  async function start(series: PriceSeries): Promise<EngineBench> {
    clock.now = START;
    const settings = notifications();
    const test = await createTestDatabase(backend, {
      clock: () => new Date(clock.now),
      routeNotifications: routerFor(settings),
    });
    bench = await startEngineBench({
      test,
      clock: () => new Date(clock.now),
      sandbox: { now: () => clock.now, replay: { series, speed: 1, origin: START } },
    });
    channels = createChannels(settings);
    return bench;
  }

  /** A second replica's database: on PostgreSQL a pool of its own, on PGlite the one embedded database. */
  async function secondReplica(): Promise<Database> {
    if (!bench!.test.url) return bench!.database;
    const other = await openDatabase({
      url: bench!.test.url,
      clock: () => new Date(clock.now),
      routeNotifications: routerFor(notifications()),
    });
    opened.push(other);
    return other;
  }

  /** Runs the window's slots in [from, to) at their instants. */
  async function runSlots(strategy: TargetStrategy, from: number, to: number): Promise<void> {
    await recordStrategiesSeen(bench!.context, [strategy]);
    for (const slot of slotsBetween(strategy.schedule, 'UTC', new Date(from - 1), new Date(to - 1))) {
      clock.now = slot.getTime();
      await runCycle(bench!.inAccount(), { strategy, slot, trigger: 'schedule' });
    }
  }

  /** Delivers what the outbox holds to the receiver: a pass sends one message per subject, in order. */
  async function deliver(): Promise<void> {
    const settings = notifications().delivery;
    const logger = createLogger({ level: 'silent' });
    const deps = { database: bench!.database, settings, metrics: bench!.metrics, logger };
    const pending = async () =>
      (await bench!.database.notifications.listRecent(100)).some((row) => row.status === 'pending');
    for (let pass = 0; pass < 10 && (await pending()); pass++)
      await deliverDue({ ...deps, channels: channels!, clock: () => new Date(clock.now) });
    expect(await pending()).toBe(false);
  }

  async function spentOf(name: string) {
    const cycles = await bench!.database.cycles.listRecent(EVERY_ACCOUNT, { limit: 100, strategy: name });
    return cycles
      .filter((cycle) => cycle.state === 'placed')
      .reduce((sum, cycle) => sum.plus(cycle.totalCost!), d('0'));
  }

  const gauges = async (strategy: string) => ({
    progress: await metricValue(bench!.metrics, 'treasury_target_progress_ratio', { strategy }),
    behind: await metricValue(bench!.metrics, 'treasury_target_behind_ratio', { strategy }),
    windowLeft: await metricValue(bench!.metrics, 'treasury_target_window_left_ratio', { strategy }),
  });

  it('a target that completes: one target_completed from two replicas and repeated passes; its gauges, gone once unloaded', async () => {
    const { context } = await start(pricePath(() => '5.4000'));
    const strategy = target('slice: { min: "100.00", max: "1000.00" }\n');
    let loaded: Strategy[] = [strategy];
    const replicaA = new Maintenance(context, { strategies: () => loaded });
    const replicaB = new Maintenance(replicaOn(bench!, await secondReplica()), { strategies: () => loaded });
    await runSlots(strategy, START, END);
    clock.now = END + 1_000;
    const now = new Date(clock.now);
    const [first] = await Promise.all([replicaA.runOnce(now), replicaB.runOnce(now)]);
    expect(first.errors).toEqual([]);
    expect(first.targets).toMatchObject([{ strategy: 'payroll', notice: 'target_completed' }]);
    // A later pass, and a replica started afresh: the notice is already written.
    await replicaA.runOnce(new Date(clock.now + 30_000));
    await new Maintenance(context, { strategies: () => loaded }).runOnce(new Date(clock.now + 60_000));
    await deliver();
    expect(received()).toHaveLength(1);
    const [message] = received();
    expect(message!.title).toBe('Target completed');
    expect(message!.text).toContain('strategy: payroll');
    expect(message!.text).toContain(`done: ${(await spentOf('payroll')).toFixed(2)}`);

    const completed = await gauges('payroll');
    expect(completed.progress).toBeCloseTo(1, 5);
    expect(completed).toMatchObject({ behind: 0, windowLeft: 0 });

    loaded = [];
    await replicaA.runOnce(new Date(clock.now + 90_000));
    const series = await bench!.metrics.targetProgress.get();
    expect(series.values).toEqual([]);
    expect((await bench!.metrics.targetBehind.get()).values).toEqual([]);
    expect((await bench!.metrics.targetWindowLeft.get()).values).toEqual([]);
  });

  it('a target that falls behind, then misses: one target_behind per version with under a quarter left, one target_missed stating the remainder', async () => {
    // Above maxPrice from 40 s to 80 s: 8 slots skip, and slice.max is too small to catch up.
    const { context } = await start(
      pricePath((at) => (at >= START + 40_000 && at < START + 80_000 ? '5.9000' : '5.4000')),
    );
    const strategy = { ...target('slice: { min: "100.00", max: "450.00" }\nmaxPrice: "5.50"\n'), version: 1 };
    let loaded: Strategy[] = [strategy];
    const replicaA = new Maintenance(context, { strategies: () => loaded });
    const replicaB = new Maintenance(replicaOn(bench!, await secondReplica()), { strategies: () => loaded });

    // At 80 s a third behind, but a third of the window left: not yet.
    await runSlots(strategy, START, START + 85_000);
    const early = await replicaA.runOnce(new Date(START + 81_000));
    expect(early.targets?.[0]?.notice).toBeUndefined();
    // The window's share left is its slots' (every 5 s): 7 of 24 at 81 s.
    expect(await gauges('payroll')).toMatchObject({ windowLeft: gaugeValue(d('7').dividedBy(24)) });

    await runSlots(strategy, START + 85_000, START + 95_000);
    clock.now = START + 91_000;
    const now = new Date(clock.now);
    const [late] = await Promise.all([replicaA.runOnce(now), replicaB.runOnce(now)]);
    expect(late.errors).toEqual([]);
    const standing = late.targets![0]!.standing;
    expect(late.targets![0]!.notice).toBe('target_behind');
    const behind = behindShareOf(standing);
    expect(behind.greaterThan('0.1')).toBe(true);
    const shown = await gauges('payroll');
    expect(shown.behind).toBe(gaugeValue(behind));
    expect(shown.windowLeft).toBe(gaugeValue(d('5').dividedBy(24)));
    expect(shown.progress).toBe(gaugeValue(standing.ratio));
    await replicaA.runOnce(new Date(START + 92_000));
    // A new version of the file is told again, once.
    loaded = [{ ...strategy, version: 2 }];
    await replicaB.runOnce(new Date(START + 93_000));
    await replicaA.runOnce(new Date(START + 94_000));

    await runSlots(strategy, START + 95_000, END);
    // Just past the end the last slot's order may still land: not judged yet, and no longer behind.
    const ended = await replicaA.runOnce(new Date(END + 1_000));
    expect(ended.targets).toMatchObject([{ standing: { state: 'missed' } }]);
    expect(ended.targets![0]!.notice).toBeUndefined();
    expect(await gauges('payroll')).toMatchObject({ behind: 0, windowLeft: 0 });

    const judged = END + context.settings.recovery.abandonAfterMs;
    clock.now = judged;
    await Promise.all([replicaA.runOnce(new Date(judged)), replicaB.runOnce(new Date(judged))]);
    await replicaA.runOnce(new Date(judged + 30_000));
    await deliver();

    const messages = received();
    expect(messages.map((message) => message.title)).toEqual([
      'Target behind its pace with little of its window left',
      'Target behind its pace with little of its window left',
      'Target missed: its window ended short of the total',
    ]);
    expect(messages[0]!.text).toContain('version: 1');
    expect(messages[1]!.text).toContain('version: 2');
    expect(messages[0]!.text).toContain(`behindPct: ${formatMoney(behind.times(100), 2, 'halfEven')}`);
    const left = d('10000.00').minus(await spentOf('payroll'));
    expect(left.greaterThan('2000')).toBe(true);
    expect(messages[2]!.text).toContain(`left: ${left.toFixed(2)}`);
    expect(messages[2]!.text).toContain(`leftFiat: ${left.toFixed(2)}`);
    expect(messages[2]!.text).toContain('total: 10000.00');
    expect(messages[2]!.text).toContain(`windowEnd: ${new Date(END).toISOString()}`);
  });
});
