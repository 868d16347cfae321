import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Database, openDatabase } from '../../src/db/index.js';
import { Decimal } from '../../src/money.js';
import { createTestDatabase, type TestDatabase, testBackends } from '../support/database.js';

const DAY = Date.parse('2026-03-02T00:00:00Z');
const at = (hours: number) => new Date(DAY + hours * 3_600_000);
// Periods around the moment the test runs: an intent is stamped with the database's clock, the real one.
const NOW = Date.now();
const PERIODS = {
  day: { start: new Date(NOW - 3_600_000), end: new Date(NOW + 3_600_000) },
  month: { start: new Date(NOW - 86_400_000), end: new Date(NOW + 86_400_000) },
};

/**
 * Claims sent while one is in flight go as one statement (db/group-commit.ts): a burst of claims from one
 * pool is claimed in batches, and two replicas' batches racing for the same slots still claim each slot once.
 */
describe.each(testBackends())('claims in batches on %s', (backend) => {
  let test: TestDatabase;
  let db: Database;
  /** A second pool on the same database (PostgreSQL), standing in for another replica. */
  let replica: Database;
  let strategyCount = 0;

  beforeAll(async () => {
    test = await createTestDatabase(backend);
    db = test.database;
    replica = test.url ? await openDatabase({ url: test.url, maxConnections: 5 }) : db;
  });
  afterAll(async () => {
    if (replica !== db) await replica.close();
    await test.drop();
  });

  async function newStrategies(count: number): Promise<string[]> {
    const names = Array.from({ length: count }, () => `batch-${++strategyCount}`);
    await db.strategies.upsertSeen(
      names.map((name) => ({ name, account: 'default', kind: 'dca', config: { amount: '100' }, hash: 'h' })),
    );
    return names;
  }

  const claim = (on: Database, strategy: string, slot: Date, owner: string) =>
    on.cycles.claimSlotWithFigures(
      { strategy, account: 'default', strategyVersion: 3, slot, trigger: 'schedule', owner },
      PERIODS,
    );

  it('claims each slot once when two replicas claim the same 400 slots in batches at once', async () => {
    const names = await newStrategies(400);
    const slot = at(9);
    // Each replica walks the burst in its own order, as replicas' timers and queues do.
    const [first, second] = await Promise.all([
      Promise.all(names.map((name) => claim(db, name, slot, 'replica-a'))),
      Promise.all([...names].reverse().map((name) => claim(replica, name, slot, 'replica-b'))),
    ]);
    const wonByA = first.flatMap((won, index) => (won ? [names[index]!] : []));
    const wonByB = second.flatMap((won, index) => (won ? [names[names.length - 1 - index]!] : []));
    expect(new Set([...wonByA, ...wonByB]).size).toBe(names.length);
    expect(wonByA.length + wonByB.length).toBe(names.length);
    for (const won of [...first, ...second]) {
      if (won === null) continue;
      // Each answer is the row the database holds, with its own strategy's figures.
      expect(won.cycle).toEqual(await db.cycles.get(won.cycle.id));
      expect(won.figures.spentDay.isZero()).toBe(true);
    }
    if (test.url) {
      // Two pools raced: the winners are split between them, not all of one.
      expect(wonByA.length).toBeGreaterThan(0);
      expect(wonByB.length).toBeGreaterThan(0);
    }
  });

  it("answers every claim of a batch with its own strategy's figures, and a slot asked twice once", async () => {
    const names = await newStrategies(5);
    // Strategy i spent i × 10 earlier in the day: each claim must read its own strategy's, not a neighbour's.
    for (const [index, name] of names.entries()) {
      const won = await claim(db, name, at(1), 'r');
      const quote = await db.quotes.record(won!.cycle.id, {
        quoteId: `QB${strategyCount}x${index}`,
        symbol: 'USDTBRL',
        amount: new Decimal(index * 10 + 1),
        price: new Decimal('5.1'),
        totalCost: new Decimal(index * 10 + 1),
        totalFilled: new Decimal('1'),
        expiresIn: new Decimal('5'),
        requestedAt: at(1),
        receivedAt: at(1),
        deadlineAt: at(1.001),
      });
      await db.cycles.transition(won!.cycle.id, 'claimed', 'quoted', { quote });
      await db.cycles.transition(won!.cycle.id, 'quoted', 'submitting');
    }
    const slot = at(2);
    const calls = [...names, names[2]!].map((name) => claim(db, name, slot, 'r'));
    const answers = await Promise.all(calls);
    expect(answers.slice(0, 5).map((won) => won?.figures.spentDay.toFixed(2))).toEqual(
      names.map((_, index) => new Decimal(index * 10 + 1).toFixed(2)),
    );
    // The slot asked for a second time in the same burst is not this call's: it was claimed by the first.
    expect(answers[5]).toBeNull();
    expect(answers.slice(0, 5).every((won) => won?.cycle.state === 'claimed')).toBe(true);
  });
});
