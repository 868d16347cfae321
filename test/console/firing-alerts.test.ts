import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type AlertsNow, alertsFiringNow } from '../../src/console/firing-alerts.js';
import { EVERY_ACCOUNT } from '../../src/db/index.js';
import { Decimal } from '../../src/money.js';
import { ALERT_RULES, EVENT_WINDOW_MS } from '../../src/observability/alert-rules.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { createProcessFacts, type ProcessFacts, SAMPLE_MS } from '../../src/observability/process-facts.js';
import { type ConsoleClient, loggedIn, type RunningConsole, startTestConsole } from './support.js';

const MINUTE = 60_000;

/** The lines that fire for one alert (an empty list: evaluated, not firing). */
function firing(now: AlertsNow, alert: string): string[] {
  const found = now.verdicts.find((v) => v.rule.alert === alert);
  if (!found) throw new Error(`no verdict for ${alert}`);
  if (!('firing' in found.verdict)) throw new Error(`${alert} was not evaluated: ${found.verdict.unknown}`);
  return found.verdict.firing;
}

/**
 * The overview's "alerts that fire now", against the alert rules' own numbers: each condition just short of
 * its threshold (or its `for`) does not fire, just past it fires. Records come from the database on the
 * console's fake clock; the process's counters and gauges from a metrics registry sampled on that clock.
 */
describe('console: alerts that fire now', () => {
  let console: RunningConsole;
  let viewer: ConsoleClient;
  let slot = 0;
  const start = new Date('2026-05-04T12:00:00Z');

  const at = (ms: number) => new Date(start.getTime() + ms);
  const records = async () => ({
    control: await console.test.database.control.get(),
    strategies: await console.test.database.strategies.list(),
  });
  const evaluate = async (now: Date, processFacts?: ProcessFacts) =>
    alertsFiringNow(
      { ...consoleContext(), ...(processFacts ? { processFacts } : {}) },
      now,
      await records(),
      EVERY_ACCOUNT,
    );
  const consoleContext = () => ({
    database: console.test.database,
    store: console.store,
    clock: () => console.now.value,
    logger: { error() {}, warn() {}, info() {} },
    accounts: new Map([['default', { name: 'default' }]]),
  });

  async function unsureCycle(strategy: string): Promise<number> {
    const { database } = console.test;
    const cycle = await database.cycles.claimSlot({
      strategy,
      account: 'default',
      slot: new Date(Date.UTC(2026, 0, 1, 0, 0, slot++)),
      trigger: 'schedule',
      owner: 'test',
    });
    await database.cycles.transition(cycle!.id, 'claimed', 'submitting');
    await database.cycles.transition(cycle!.id, 'submitting', 'unsure');
    return cycle!.id;
  }

  beforeAll(async () => {
    console = await startTestConsole();
    await console.test.database.strategies.upsertSeen([
      { name: 'alerting', kind: 'dca', account: 'default', config: { name: 'alerting' }, hash: 'h' },
      { name: 'discrepant', kind: 'dca', account: 'default', config: { name: 'discrepant' }, hash: 'h' },
      { name: 'stuck', kind: 'dca', account: 'default', config: { name: 'stuck' }, hash: 'h' },
    ]);
    viewer = await loggedIn(console, 'viewer');
  }, 60_000);

  beforeEach(() => {
    console.now.value = start;
  });

  afterAll(async () => {
    await console?.close();
  });

  it('fires on an unsure cycle only once it has been unsure for the rule’s `for`, and shows it on the overview', async () => {
    const id = await unsureCycle('alerting');
    const { forMs } = ALERT_RULES.unsureCycles;
    expect(firing(await evaluate(at(forMs - 1000)), 'TreasuryUnsureCycles')).toEqual([]);
    expect(firing(await evaluate(at(forMs + 1000)), 'TreasuryUnsureCycles')).toEqual([
      '1 cycle(s) unsure for over 10 min (Attention page)',
    ]);

    console.now.value = at(forMs + 1000);
    const overview = (await viewer.get('/')).body;
    expect(overview).toContain('<h2>Alerts that fire now</h2>');
    expect(overview).toMatch(
      /<tr class="alert-firing"><td><span class="state state-page">page<\/span><\/td><td>TreasuryUnsureCycles<\/td>/,
    );
    expect(overview).toContain(
      'Not evaluated here (counted by the worker process; this console runs without it): TreasuryNoSuccessfulCycle, TreasuryNoSuccessfulCycleSinceStart, TreasuryApprovalsWaiting, TreasuryTargetBehind, TreasuryClockSkew, TreasuryApiErrors,',
    );

    await console.test.database.cycles.transition(id, 'unsure', 'not_placed', {
      reasonCode: 'operator_resolved',
    });
    expect(firing(await evaluate(at(forMs + 2000)), 'TreasuryUnsureCycles')).toEqual([]);
  });

  it('fires on a halted strategy at once, with its reason', async () => {
    await console.test.database.strategies.halt('alerting', 'found 2 matching orders: <b>a</b>, b');
    expect(firing(await evaluate(at(0)), 'TreasuryStrategyHalted')).toEqual([
      'alerting: found 2 matching orders: <b>a</b>, b',
    ]);
    const overview = (await viewer.get('/')).body;
    expect(overview).toContain('alerting: found 2 matching orders: &lt;b&gt;a&lt;/b&gt;, b');
    await console.test.database.strategies.clearHalt('alerting');
    expect(firing(await evaluate(at(0)), 'TreasuryStrategyHalted')).toEqual([]);
  });

  it('fires on a discrepancy recorded within the event window, not after it', async () => {
    const id = await unsureCycle('discrepant');
    await console.test.database.orders.recordPlacedWithCycle(
      id,
      {
        account: 'default',
        id: 'DISCREPANT1',
        symbol: 'USDTBRL',
        amount: new Decimal('100'),
        price: new Decimal('5.5'),
        side: 'buy',
        timestamp: start,
      },
      {
        from: 'unsure',
        reasonCode: 'reconciled',
        discrepancy: [{ field: 'price', expected: '5.4', got: '5.5' }],
      },
    );
    expect(firing(await evaluate(at(EVENT_WINDOW_MS - 1000)), 'TreasuryOrderDiscrepancy')).toHaveLength(1);
    expect(firing(await evaluate(at(EVENT_WINDOW_MS + 1000)), 'TreasuryOrderDiscrepancy')).toEqual([]);
    await console.test.database.strategies.clearHalt('discrepant');
  });

  it('fires on an order stuck for the rule’s `for`', async () => {
    const id = await unsureCycle('stuck');
    const { order } = await console.test.database.orders.recordPlacedWithCycle(
      id,
      {
        account: 'default',
        id: 'STUCK1',
        symbol: 'USDTBRL',
        amount: new Decimal('100'),
        price: new Decimal('5.4'),
        side: 'buy',
        timestamp: start,
      },
      { from: 'unsure', reasonCode: 'reconciled' },
    );
    await console.test.database.orders.markStuck(order.id, start);
    const { forMs } = ALERT_RULES.stuckOrders;
    expect(firing(await evaluate(at(forMs - 1000)), 'TreasuryStuckOrders')).toEqual([]);
    expect(firing(await evaluate(at(forMs + 1000)), 'TreasuryStuckOrders')).toHaveLength(1);
  });

  it('fires when the kill switch has been on for the rule’s `for`', async () => {
    await console.store.actions.pauseAll('ana', 'holiday');
    const { forMs } = ALERT_RULES.pausedTooLong;
    expect(firing(await evaluate(at(forMs - 1000)), 'TreasuryPausedTooLong')).toEqual([]);
    expect(firing(await evaluate(at(forMs + 1000)), 'TreasuryPausedTooLong')[0]).toContain('holiday');
    await console.store.actions.resumeAll('ana');
    expect(firing(await evaluate(at(forMs + 1000)), 'TreasuryPausedTooLong')).toEqual([]);
  });

  describe("from this process's metrics", () => {
    let now: Date;
    let metrics: ReturnType<typeof createMetrics>;
    let facts: ProcessFacts;

    beforeEach(async () => {
      now = start;
      metrics = createMetrics({ defaultMetrics: false });
      facts = createProcessFacts(metrics, () => now);
      await facts.sample();
    });

    /** Moves the clock in sampling steps, running `each` before every reading. */
    async function advance(ms: number, each: () => void = () => {}) {
      for (let step = 0; step < ms / SAMPLE_MS; step++) {
        now = new Date(now.getTime() + SAMPLE_MS);
        each();
        await facts.sample();
      }
    }

    it('a bug counted within the event window fires, with where it surfaced, and stops after the window', async () => {
      await advance(MINUTE);
      metrics.internalErrors.inc({ where: 'cycle' });
      await advance(SAMPLE_MS);
      expect(firing(await evaluate(now, facts), 'TreasuryInternalErrors')).toEqual([
        'cycle: 1 error(s) of code INTERNAL',
      ]);
      await advance(EVENT_WINDOW_MS - SAMPLE_MS);
      expect(firing(await evaluate(now, facts), 'TreasuryInternalErrors')).toHaveLength(1);
      await advance(2 * SAMPLE_MS);
      expect(firing(await evaluate(now, facts), 'TreasuryInternalErrors')).toEqual([]);
    });

    it('service errors above the rate fire only once the rate has held for the rule’s `for`', async () => {
      // One error per reading: 1/15 s = 0.067/s, above 0.05/s; one per two readings (0.033/s) is below.
      const { forMs } = ALERT_RULES.apiErrors;
      let tick = 0;
      const slow = () => {
        if (tick++ % 2 === 0) metrics.apiErrors.inc({ operation: 'quote', code: 'API_SERVER_ERROR' });
      };
      await advance(forMs + 5 * MINUTE, slow);
      expect(firing(await evaluate(now, facts), 'TreasuryApiErrors')).toEqual([]);
      const fast = () => metrics.apiErrors.inc({ operation: 'quote', code: 'API_SERVER_ERROR' });
      await advance(forMs, fast);
      expect(firing(await evaluate(now, facts), 'TreasuryApiErrors')).toEqual([]);
      await advance(5 * MINUTE + SAMPLE_MS, fast);
      expect(firing(await evaluate(now, facts), 'TreasuryApiErrors')).toEqual(['API_SERVER_ERROR: 0.067/s']);
    });

    it('statements cut by the time limit fire the slow-database rule once held for its `for`, not the errors rule', async () => {
      const { forMs } = ALERT_RULES.databaseTimeouts;
      const cut = () => metrics.databaseTimeouts.inc({ operation: 'cycle_commit_intent' });
      await advance(forMs, cut);
      expect(firing(await evaluate(now, facts), 'TreasuryDatabaseSlow')).toEqual([]);
      await advance(5 * MINUTE + SAMPLE_MS, cut);
      expect(firing(await evaluate(now, facts), 'TreasuryDatabaseSlow')).toEqual([
        '0.067 database calls/s cut by the time limit',
      ]);
      expect(firing(await evaluate(now, facts), 'TreasuryDatabaseErrors')).toEqual([]);
    });

    it('an order request of unknown outcome fires for the event window', async () => {
      metrics.apiErrors.inc({ operation: 'createOrder', code: 'OUTCOME_UNKNOWN' });
      await advance(SAMPLE_MS);
      expect(firing(await evaluate(now, facts), 'TreasuryOutcomeUnknown')).toEqual([
        '1 order request(s) with an unknown outcome in the last 15 min',
      ]);
    });

    it('a strategy without a successful cycle for twice its longest gap plus the `for` fires', async () => {
      const { forMs } = ALERT_RULES.noSuccessfulCycle;
      metrics.strategyInterval.set({ strategy: 'alerting' }, 60);
      metrics.lastSuccessfulCycle.set({ strategy: 'alerting' }, now.getTime() / 1000);
      await advance(2 * MINUTE + forMs - SAMPLE_MS);
      expect(firing(await evaluate(now, facts), 'TreasuryNoSuccessfulCycle')).toEqual([]);
      await advance(2 * SAMPLE_MS);
      expect(firing(await evaluate(now, facts), 'TreasuryNoSuccessfulCycle')).toEqual([
        'alerting: last successful cycle 7 min ago, longest gap between slots 1 min',
      ]);
      expect(firing(await evaluate(now, facts), 'TreasuryNoSuccessfulCycleSinceStart')).toEqual([]);
      metrics.lastSuccessfulCycle.reset();
      expect(firing(await evaluate(now, facts), 'TreasuryNoSuccessfulCycleSinceStart')).toEqual([
        'alerting: no successful cycle in the 7 min since this worker started',
      ]);
    });

    it('a target more than the share behind with under a quarter of its window left fires, from the gauges of the last pass', async () => {
      metrics.targetBehind.set({ strategy: 'alerting' }, 0.29);
      metrics.targetWindowLeft.set({ strategy: 'alerting' }, 0.3);
      expect(firing(await evaluate(now, facts), 'TreasuryTargetBehind')).toEqual([]);
      metrics.targetWindowLeft.set({ strategy: 'alerting' }, 0.2);
      expect(firing(await evaluate(now, facts), 'TreasuryTargetBehind')).toEqual([
        'alerting: 29.0% of its total behind its pace, 20.0% of its window left',
      ]);
      metrics.targetBehind.set({ strategy: 'alerting' }, 0.1);
      expect(firing(await evaluate(now, facts), 'TreasuryTargetBehind')).toEqual([]);
    });
  });
});
