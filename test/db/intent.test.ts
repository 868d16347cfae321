import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { advisoryLockKey } from '../../src/db/advisory-key.js';
import type { Database, IntentGuard, QuoteInput, SpendFigures } from '../../src/db/index.js';
import { lockKeyOfIntent } from '../../src/db/repositories/intent.js';
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
    expiresIn: new Decimal('5'),
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

describe.each(testBackends())('intent commit re-decided under the lock on %s', (backend) => {
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
    await db.strategies.upsertSeen([
      { name: strategy, account: 'default', kind: 'dca', config: {}, hash: 'h' },
    ]);
    const slot = new Date(DAY.start.getTime() + hour * 3_600_000);
    const cycle = await db.cycles.claimSlot({
      strategy,
      account: 'default',
      slot,
      trigger: 'schedule',
      owner: 'r1',
    });
    return cycle!;
  }

  /** A guard that records the figures it saw and commits when the day's spend stays within `cap`. */
  function guardWithCap(strategy: string, cap: string, seen: SpendFigures[], timeoutMs = 2_000): IntentGuard {
    return {
      strategy,
      account: 'default',
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
    const committed = await db.cycles.commitIntent(
      { id: first.id, from: 'claimed', quote: quoteOf('100', 1) },
      { recheck: guardWithCap(strategy, '150', seen) },
    );
    expect(committed.action).toBe('commit');
    expect(committed.cycle).toMatchObject({ state: 'submitting', attempts: 1, quoteId: 'SER10000' });
    expect(committed.cycle).toEqual(await db.cycles.get(first.id));

    const second = await claimed(strategy, 11);
    const skipped = await db.cycles.commitIntent(
      { id: second.id, from: 'claimed', quote: quoteOf('100', 2) },
      { recheck: guardWithCap(strategy, '150', seen) },
    );
    expect(seen.map((figures) => figures.spentDay.toString())).toEqual(['0', '100']);
    expect(seen[1]!.lastSubmittedAt).toEqual(committed.cycle!.submittedAt);
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
    const paused = await claimed(strategy, 14);
    await db.cycles.commitIntent(
      { id: paused.id, from: 'claimed', quote: quoteOf('100', 5) },
      { recheck: guardWithCap(strategy, '1000', seen) },
    );
    await db.control.resume('test');
    const resumed = await claimed(strategy, 15);
    await db.cycles.commitIntent(
      { id: resumed.id, from: 'claimed', quote: quoteOf('100', 6) },
      { recheck: guardWithCap(strategy, '1000', seen) },
    );
    expect(seen.map((figures) => figures.paused)).toEqual([true, false]);
  });

  it('commits a decision that stands without re-reading, in one statement', async () => {
    const strategy = `serial-${++count}`;
    const cycle = await claimed(strategy, 16);
    // Keys out of the order jsonb keeps them in, nesting and numbers: the cycle answered is the one stored.
    const trace = [{ rule: 'max_price', passed: true, seen: { price: '5.4321', limit: 5.5, at: null } }];
    const result = await db.cycles.commitIntent(
      { id: cycle.id, from: 'claimed', quote: quoteOf('42.5', 7) },
      { stands: { trace, balanceSnapshotId: null } },
    );
    expect(result.action).toBe('commit');
    expect(result.cycle).toMatchObject({ state: 'submitting', attempts: 1, trace });
    expect(result.cycle!.totalCost!.toFixed()).toBe('42.5');
    expect(result.cycle!.quoteRecordId).toBe((await db.quotes.forCycle(cycle.id))[0]!.id);
    // The statement's row is decoded as the query builder decodes the same row (Decimal, Date, JSON).
    expect(result.cycle).toEqual(await db.cycles.get(cycle.id));
    expect(result.cycle!.submittedAt).toBeInstanceOf(Date);
  });

  it('counts every submitting and unsure cycle of the account as credit pending, placed ones since the read', async () => {
    const strategy = `serial-${++count}`;
    const other = `serial-${++count}`;
    const commit = async (name: string, hour: number, cost: string) => {
      const cycle = await claimed(name, hour);
      const result = await db.cycles.commitIntent(
        { id: cycle.id, from: 'claimed', quote: quoteOf(cost, 100 + hour) },
        { stands: { trace: [], balanceSnapshotId: null } },
      );
      return result.cycle!;
    };
    await commit(other, 1, '1.5'); // submitting, another strategy: the credit line is one
    const unsure = await commit(strategy, 2, '20');
    await db.cycles.transition(unsure.id, 'submitting', 'unsure');
    const placed = await commit(strategy, 3, '300');
    await db.cycles.transition(placed.id, 'submitting', 'placed');
    const failed = await commit(strategy, 6, '4000'); // never left
    await db.cycles.transition(failed.id, 'submitting', 'failed');
    const seen: SpendFigures[] = [];
    const guard = {
      ...guardWithCap(strategy, '1000', seen),
      balanceReadAt: new Date('2031-06-01T11:00:00Z'),
    };
    const next = await claimed(strategy, 4);
    await db.cycles.commitIntent(
      { id: next.id, from: 'claimed', quote: quoteOf('1', 104) },
      { recheck: guard },
    );
    // Earlier tests of this file left submitting cycles of 100 each: bounds rather than an exact sum.
    const pending = seen[0]!.creditPending!;
    expect(pending.gte('321.5') && pending.lt('4000')).toBe(true);
    const withoutRead = await claimed(strategy, 5);
    await db.cycles.commitIntent(
      { id: withoutRead.id, from: 'claimed', quote: quoteOf('1', 105) },
      { recheck: guardWithCap(strategy, '1000', seen) },
    );
    expect(seen[1]!.creditPending).toBeNull();
  });

  it('returns no cycle when the cycle was moved meanwhile (compare-and-set)', async () => {
    const strategy = `serial-${++count}`;
    const cycle = await claimed(strategy, 12);
    await db.cycles.transition(cycle.id, 'claimed', 'failed', { reasonCode: 'internal_error' });
    const result = await db.cycles.commitIntent(
      { id: cycle.id, from: 'claimed', quote: quoteOf('100', 3) },
      { recheck: guardWithCap(strategy, '1000', []) },
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
            .commitIntent(
              { id: cycle.id, from: 'claimed', quote: quoteOf('100', 4) },
              { recheck: guardWithCap(strategy, '1000', [], 150) },
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
      // SQLSTATE 55P03: the lock timeout cancelled the wait for the lock.
      expect(attempt).toBe('55P03');
      expect(elapsedMs).toBeGreaterThanOrEqual(140);
      expect(elapsedMs).toBeLessThan(1_500);
      expect((await db.cycles.get(cycle.id))!.state).toBe('claimed');
      expect(await db.quotes.forCycle(cycle.id)).toEqual([]);
    },
  );
});
