import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { advisoryLockKey } from '../../src/db/advisory-key.js';
import type { Database, IntentGuard, QuoteInput, SpendFigures } from '../../src/db/index.js';
import { lockKeyOfIntent } from '../../src/db/repositories/serialized-intent.js';
import { Decimal } from '../../src/money.js';
import { createTestDatabase, type TestDatabase, testBackends } from '../support/database.js';

const DAY = { start: new Date('2031-06-01T00:00:00Z'), end: new Date('2031-06-02T00:00:00Z') };
const MONTH = { start: new Date('2031-06-01T00:00:00Z'), end: new Date('2031-07-01T00:00:00Z') };

function quoteOf(totalCost: string, suffix: number): QuoteInput {
  const now = new Date();
  return {
    quoteId: `SER${suffix}`.padEnd(8, '0'),
    symbol: 'USDTBRL',
    amount: new Decimal(totalCost),
    price: new Decimal('5.4321'),
    totalCost: new Decimal(totalCost),
    totalFilled: new Decimal('18.409086'),
    expiresIn: 5,
    requestedAt: now,
    receivedAt: now,
    deadlineAt: new Date(now.getTime() + 4_000),
  };
}

describe('advisory lock keys', () => {
  it('are stable signed 64-bit integers, distinct per strategy', () => {
    // Every replica, of any version, must derive the same key: a changed derivation would split the lock.
    expect(lockKeyOfIntent('weekday-dca')).toBe(advisoryLockKey('intent:weekday-dca'));
    expect(advisoryLockKey('intent:weekday-dca')).toBe('5519429391466663546');
    const key = BigInt(lockKeyOfIntent('dip-buyer'));
    expect(key >= -(2n ** 63n) && key < 2n ** 63n).toBe(true);
    expect(lockKeyOfIntent('dip-buyer')).not.toBe(lockKeyOfIntent('weekday-dca'));
  });
});

describe.each(testBackends())('serialized intent commit on %s', (backend) => {
  let test: TestDatabase;
  let db: Database;
  let count = 0;

  beforeAll(async () => {
    // Intents are charged to the day they are written in: the database's clock is inside DAY.
    test = await createTestDatabase(backend, { clock: () => new Date('2031-06-01T12:00:00Z') });
    db = test.database;
  });
  afterAll(() => test.drop());

  async function claimed(strategy: string, hour: number) {
    await db.strategies.upsertSeen([{ name: strategy, kind: 'dca', config: {}, hash: 'h' }]);
    const slot = new Date(DAY.start.getTime() + hour * 3_600_000);
    const cycle = await db.cycles.claimSlot({ strategy, slot, trigger: 'schedule', owner: 'r1' });
    return cycle!;
  }

  /** A guard that records the figures it saw and commits when the day's spend stays within `cap`. */
  function guardWithCap(strategy: string, cap: string, seen: SpendFigures[], timeoutMs = 2_000): IntentGuard {
    return {
      strategy,
      periodsAt: () => ({ day: DAY, month: MONTH }),
      timeoutMs,
      decide(figures) {
        seen.push(figures);
        const trace = [{ spent: figures.spentDay.toString() }];
        return figures.spentDay.plus('100').lessThanOrEqualTo(cap)
          ? { action: 'commit', patch: { trace, balanceSnapshotId: null } }
          : { action: 'skip', reasonCode: 'budget_day_exceeded', trace, balanceSnapshotId: null };
      },
    };
  }

  it('commits on fresh figures, then skips with the quote and trace recorded', async () => {
    const strategy = `serial-${++count}`;
    const seen: SpendFigures[] = [];
    const first = await claimed(strategy, 10);
    const committed = await db.cycles.commitIntentSerialized(
      first.id,
      'claimed',
      quoteOf('100', 1),
      guardWithCap(strategy, '150', seen),
    );
    expect(committed.action).toBe('commit');
    expect(committed.cycle).toMatchObject({ state: 'submitting', attempts: 1, quoteId: 'SER10000' });

    const second = await claimed(strategy, 11);
    const skipped = await db.cycles.commitIntentSerialized(
      second.id,
      'claimed',
      quoteOf('100', 2),
      guardWithCap(strategy, '150', seen),
    );
    expect(seen.map((figures) => figures.spentDay.toString())).toEqual(['0', '100']);
    expect(seen[1]!.lastPlacedAt).toEqual(committed.cycle!.submittedAt);
    expect(skipped.action).toBe('skip');
    expect(skipped.cycle).toMatchObject({
      state: 'skipped',
      reasonCode: 'budget_day_exceeded',
      quoteId: 'SER20000',
      trace: [{ spent: '100' }],
    });
    expect(skipped.cycle!.finishedAt).not.toBeNull();
    expect((await db.quotes.forCycle(second.id)).map((quote) => quote.quoteId)).toEqual(['SER20000']);
  });

  it('reads the kill switch under the lock with the figures', async () => {
    const strategy = `serial-${++count}`;
    const seen: SpendFigures[] = [];
    await db.control.pause('incident', 'test');
    await db.cycles.commitIntentSerialized(
      (await claimed(strategy, 14)).id,
      'claimed',
      quoteOf('100', 5),
      guardWithCap(strategy, '1000', seen),
    );
    await db.control.resume('test');
    await db.cycles.commitIntentSerialized(
      (await claimed(strategy, 15)).id,
      'claimed',
      quoteOf('100', 6),
      guardWithCap(strategy, '1000', seen),
    );
    expect(seen.map((figures) => figures.paused)).toEqual([true, false]);
  });

  it('returns no cycle when the cycle was moved meanwhile (compare-and-set)', async () => {
    const strategy = `serial-${++count}`;
    const cycle = await claimed(strategy, 12);
    await db.cycles.transition(cycle.id, 'claimed', 'failed', { reasonCode: 'internal_error' });
    const result = await db.cycles.commitIntentSerialized(
      cycle.id,
      'claimed',
      quoteOf('100', 3),
      guardWithCap(strategy, '1000', []),
    );
    expect(result).toEqual({ action: 'commit', cycle: null });
    expect((await db.cycles.get(cycle.id))!.state).toBe('failed');
  });

  it.skipIf(backend !== 'postgres')(
    'waits for the strategy lock no longer than its timeout, and commits nothing then',
    async () => {
      const strategy = `serial-${++count}`;
      const cycle = await claimed(strategy, 13);
      const started = performance.now();
      const attempt = await db.withReservedConnection(async (holder) => {
        await holder.query('select pg_advisory_lock($1::bigint)', [lockKeyOfIntent(strategy)]);
        try {
          return await db.cycles
            .commitIntentSerialized(
              cycle.id,
              'claimed',
              quoteOf('100', 4),
              guardWithCap(strategy, '1000', [], 150),
            )
            .then(
              () => 'committed',
              (error: { cause?: { code?: string } }) => error.cause?.code,
            );
        } finally {
          await holder.query('select pg_advisory_unlock($1::bigint)', [lockKeyOfIntent(strategy)]);
        }
      });
      const elapsedMs = performance.now() - started;
      // SQLSTATE 57014: the statement timeout cancelled the wait for the lock.
      expect(attempt).toBe('57014');
      expect(elapsedMs).toBeGreaterThanOrEqual(140);
      expect(elapsedMs).toBeLessThan(1_500);
      expect((await db.cycles.get(cycle.id))!.state).toBe('claimed');
      expect(await db.quotes.forCycle(cycle.id)).toEqual([]);
    },
  );
});
