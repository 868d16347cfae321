import postgres from 'postgres';
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it, vi } from 'vitest';
import { recordStrategiesSeen, recoverAbandonedCycles } from '../../src/engine/index.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { d, type EngineBench, metricValue, startEngineBench, strategy } from './support/harness.js';

/**
 * Issue 32, item 1: a quote that arrives late in its window after a 429's pause. The intent must not start
 * when the window cannot hold it, and a commit cut by our own time limit has an unknown outcome: the row is
 * read back and the cycle goes on from what it records, never reported as the database being unavailable
 * and never left `submitting` with no order in flight.
 */

/**
 * The service takes one quote a second; a request of the test's own takes this second's room, so the cycle's
 * quote is answered 429 (Retry-After: 1), waits out the pause at the gate, and is then answered after
 * `latencyMs`. Later quotes come at once.
 */
async function quoteAfterPause(bench: EngineBench, latencyMs: number): Promise<void> {
  bench.sandbox.setFaults({ quote: { rateLimit: 1, retryAfterSeconds: 1 } });
  await bench.client.getQuote({ symbol: 'USDTBRL', amount: d('100.00') });
  bench.sandbox.setFaults({ quote: { rateLimit: 1, retryAfterSeconds: 1, latencyMs } });
  bench.onRequest = (event) => {
    if (event.operation === 'getQuote' && event.status === 200) bench.sandbox.setFaults({});
  };
}

describe('an intent the quote window cannot hold', () => {
  let bench: EngineBench;
  beforeAll(async () => {
    // A reserve well above the scheduling jitter of a busy test machine, so the quote lands inside it.
    bench = await startEngineBench({ gate: {}, engine: { intentReserveMs: 1_000 } });
  });
  afterAll(() => bench.close());

  it('is not started: the late quote is given up before the write and a fresh one is placed', async () => {
    // 1 s of pause + 2.5 s of latency: the quote arrives about 500 ms before its deadline (4 s).
    await quoteAfterPause(bench, 2_500);
    const report = await bench.run(strategy({ name: 'late-in-window' }));

    const cycle = await bench.database.cycles.getBySlot('late-in-window', new Date(report.slot));
    const quotes = await bench.database.quotes.forCycle(cycle!.id);
    const [late] = quotes;
    const leftMs = late!.deadlineAt.getTime() - late!.receivedAt.getTime();
    // The scenario held: the first quote came inside its window, with less left than the intent needs.
    expect(leftMs).toBeGreaterThan(0);
    expect(quotes).toHaveLength(2);
    expect(leftMs).toBeLessThan(bench.context.settings.intentReserveMs);
    expect(report.outcome).toBe('placed');
    // One intent only, on the fresh quote.
    expect(cycle).toMatchObject({ state: 'placed', attempts: 1, quoteId: quotes[1]!.quoteId });
    expect(bench.sandbox.ledger().filter((order) => order.quoteId === late!.quoteId)).toHaveLength(0);
    expect(
      await metricValue(bench.metrics, 'treasury_quotes_expired_total', {
        strategy: 'late-in-window',
        where: 'local',
      }),
    ).toBe(1);
  });
});

const onPostgres = inject('treasuryDatabase').backend === 'postgres';

/**
 * The sequence the issue measured: the commit is cut by our own time limit while it waits on a row lock,
 * and lands right after. The lock is held from a second connection, so this needs a PostgreSQL server.
 */
describe.skipIf(!onPostgres)('an intent commit cut by our own time limit', () => {
  let test: TestDatabase;
  let admin: postgres.Sql;
  let bench: EngineBench;
  beforeAll(async () => {
    test = await createTestDatabase('postgres');
    admin = postgres(test.url!, { max: 2, onnotice: () => {} });
    bench = await startEngineBench({
      test,
      gate: {},
      engine: { databaseTimeoutMs: 1_000 },
    });
  });
  afterAll(async () => {
    await bench.close();
    await admin.end({ timeout: 1 });
    await test.drop();
  });
  beforeEach(() => {
    bench.sandbox.setFaults({});
  });

  it('is read back and the cycle goes on from what landed, never blamed on the database', async () => {
    const name = 'cut-commit';
    await recordStrategiesSeen(bench.context, [strategy({ name })]);
    // The quote arrives about 2.5 s into its window: the commit gets the database's limit (1 s), not less.
    await quoteAfterPause(bench, 1_500);
    const locker = await admin.reserve();
    const running = bench.run(strategy({ name }));
    try {
      // Lock the claimed row before the quote arrives: the intent's update waits for it.
      await vi.waitFor(
        async () => {
          const [row] = await admin`select id from cycles where strategy = ${name}`;
          expect(row).toBeDefined();
        },
        { timeout: 5_000, interval: 10 },
      );
      await locker`begin`;
      await locker`select id from cycles where strategy = ${name} for update`;
      // The intent and the worker's next move on the row both wait: the limit has cut the commit.
      await vi.waitFor(
        async () => {
          const [row] = await admin`
            select count(*)::int as waiting from pg_stat_activity
            where datname = current_database() and wait_event_type = 'Lock'`;
          expect(row!.waiting).toBeGreaterThanOrEqual(2);
        },
        { timeout: 8_000, interval: 10 },
      );
    } finally {
      // The intent lands first (the row's lock queue is in order), then the worker's move.
      await locker`rollback`;
      locker.release();
    }
    const report = await running;

    const cycle = await bench.database.cycles.getBySlot(name, new Date(report.slot));
    const quotes = await bench.database.quotes.forCycle(cycle!.id);
    expect(report).toMatchObject({ outcome: 'placed' });
    // The intent landed: the order left on its quote if the window still held it, on a fresh one otherwise.
    expect(cycle).toMatchObject({ state: 'placed' });
    const ordered = new Set(quotes.map((quote) => quote.quoteId));
    const orders = bench.sandbox.ledger().filter((order) => ordered.has(order.quoteId));
    expect(orders.map((order) => order.quoteId)).toEqual([cycle!.quoteId]);
    expect(
      await metricValue(bench.metrics, 'treasury_database_errors_total', {
        operation: 'cycle_commit_intent',
      }),
    ).toBe(0);
    expect(
      await metricValue(bench.metrics, 'treasury_database_timeouts_total', {
        operation: 'cycle_commit_intent',
      }),
    ).toBe(1);
    expect(bench.lines.some((line) => line.errorCode === 'DB_UNAVAILABLE')).toBe(false);
  });
});

describe('a submitting cycle whose order never left', () => {
  let bench: EngineBench;
  beforeAll(async () => {
    bench = await startEngineBench({ replicaId: 'live-replica' });
    await recordStrategiesSeen(bench.context, [strategy({ name: 'left-submitting' })]);
  });
  afterAll(() => bench.close());

  async function submittingOf(owner: string, second: number) {
    const { cycles, quotes } = bench.database;
    const slot = new Date(Date.UTC(2034, 0, 1, 0, 0, second));
    const cycle = (await cycles.claimSlot({
      account: 'default',
      strategy: 'left-submitting',
      slot,
      trigger: 'schedule',
      owner,
    }))!;
    const now = new Date();
    const quote = await quotes.record(cycle.id, {
      quoteId: `S${String(second).padStart(8, '0')}`,
      symbol: 'USDTBRL',
      amount: d('100'),
      price: d('5.4'),
      totalCost: d('99.99'),
      totalFilled: d('18.516666'),
      expiresIn: d('5'),
      requestedAt: now,
      receivedAt: now,
      deadlineAt: now,
    });
    await cycles.transition(cycle.id, 'claimed', 'quoted', { quote });
    return (await cycles.transition(cycle.id, 'quoted', 'submitting'))!;
  }

  it('is settled as not placed by its own replica at once when this process is not sending it', async () => {
    const own = await submittingOf('live-replica', 1);
    const others = await submittingOf('another-replica', 2);

    await recoverAbandonedCycles(bench.context, new Date());

    expect(await bench.database.cycles.get(own.id)).toMatchObject({
      state: 'failed',
      reasonCode: 'order_not_sent',
    });
    // Another replica's may have an order in flight: it waits for that replica, or for its death.
    expect(await bench.database.cycles.get(others.id)).toMatchObject({ state: 'submitting' });
  });
});
