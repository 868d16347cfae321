import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type StatementCounter, startStatementCounter } from '../../bench/harness/statement-counter.js';
import { type Database, openDatabase } from '../../src/db/index.js';
import { type AccountContext, KillSwitch, recordStrategiesSeen, runCycle } from '../../src/engine/index.js';
import { testBackends } from '../support/database.js';
import { d, type EngineBench, freshSlot, startEngineBench, strategy } from './support/harness.js';

/**
 * Every statement of a buy cycle costs one exchange with PostgreSQL once it has run on a connection: the
 * cycle's statements are prepared. postgres.js sends a statement that drizzle leaves unprepared, with
 * parameters, in two exchanges (a Parse and Describe, then the Bind and Execute), and the cycle with
 * budgets and credit guards then took 13 exchanges for its 9 statements, 3 of them (the lock, the re-read
 * and the commit statement) inside the quote's window. Counted on the wire by the bench's proxy, which sees
 * exactly what the driver sends. PostgreSQL only: PGlite runs in the process, without a wire.
 */
describe.runIf(testBackends().includes('postgres'))('round trips of a buy cycle', () => {
  let bench: EngineBench;
  let counter: StatementCounter;
  let proxied: Database;
  let context: AccountContext;

  beforeAll(async () => {
    bench = await startEngineBench();
    counter = await startStatementCounter(bench.test.url!);
    // One connection: the warm-up cycles prepare every statement on the connection the counted ones use.
    proxied = await openDatabase({ url: counter.url, maxConnections: 1 });
    context = {
      ...bench.inAccount(),
      database: proxied,
      killSwitch: new KillSwitch({
        control: proxied.control,
        cacheMs: 60_000,
        clock: bench.context.clock,
        metrics: bench.metrics,
      }),
    };
  });
  afterAll(async () => {
    await proxied?.close();
    await counter?.close();
    await bench?.close();
  });

  it('answers each statement of a cycle with budgets and credit guards in one exchange', async () => {
    const guarded = strategy({
      name: 'round-trips',
      maxPrice: d('9.00'),
      budget: { perDay: d('1000000.00'), perMonth: d('10000000.00') },
      guards: { minCreditAvailable: d('100.00'), requireCanWithdraw: false },
    });
    await recordStrategiesSeen(context, [guarded]);
    const cycle = () => runCycle(context, { strategy: guarded, slot: freshSlot(), trigger: 'once' });
    for (let i = 0; i < 3; i++) expect((await cycle()).outcome).toBe('placed');

    for (let i = 0; i < 3; i++) {
      counter.reset();
      expect((await cycle()).outcome).toBe('placed');
      const kinds = counter.log().map((statement) => statement.kind);
      // The cycle re-decided under the locks (begin … commit) and recorded its order.
      expect(kinds).toContain('begin');
      expect(kinds).toContain('commit');
      expect(kinds.length).toBeGreaterThanOrEqual(8);
      expect(counter.exchanges()).toBe(kinds.length);
    }
  });

  it('buys a plain strategy in three statements: the claim with the spend figures, the intent, the record', async () => {
    const plain = strategy({ name: 'round-trips-plain' });
    await recordStrategiesSeen(context, [plain]);
    const cycle = () => runCycle(context, { strategy: plain, slot: freshSlot(), trigger: 'once' });
    expect((await cycle()).outcome).toBe('placed');
    counter.reset();
    expect((await cycle()).outcome).toBe('placed');
    // Four before the claim returned the figures the first rules read (halted, budgets, cooldown).
    expect(counter.log().map((statement) => statement.kind)).toEqual(['with', 'with', 'with']);
    expect(counter.exchanges()).toBe(3);
  });
});
