import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Database, EVERY_ACCOUNT, openDatabase, type QuoteRecord } from '../../src/db/index.js';
import { Decimal } from '../../src/money.js';
import { createTestDatabase, type TestDatabase, testBackends } from '../support/database.js';

const DAY = Date.parse('2026-03-02T00:00:00Z');
const at = (hours: number) => new Date(DAY + hours * 3_600_000);

describe.each(testBackends())('cycles on %s', (backend) => {
  let test: TestDatabase;
  let db: Database;
  /** A second pool on the same database (PostgreSQL), standing in for another replica. */
  let replica: Database;
  let strategyCount = 0;
  /** Set while cycleIn moves a cycle, so that its intent is written at its slot. */
  let writtenAt: Date | undefined;

  beforeAll(async () => {
    test = await createTestDatabase(backend, { clock: () => writtenAt ?? new Date() });
    db = test.database;
    replica = test.url ? await openDatabase({ url: test.url, maxConnections: 5 }) : db;
  });
  afterAll(async () => {
    if (replica !== db) await replica.close();
    await test.drop();
  });

  async function newStrategy(): Promise<string> {
    const name = `strategy-${++strategyCount}`;
    await db.strategies.upsertSeen([
      { name, account: 'default', kind: 'dca', config: { amount: '100' }, hash: 'h' },
    ]);
    return name;
  }

  async function recordQuote(cycleId: number, totalCost: string): Promise<QuoteRecord> {
    const now = new Date();
    return db.quotes.record(cycleId, {
      quoteId: `Q${cycleId}x${Math.floor(Math.random() * 1e6)}`.slice(0, 9),
      symbol: 'USDTBRL',
      amount: new Decimal(totalCost),
      price: new Decimal('5.412345678901234567'),
      totalCost: new Decimal(totalCost),
      totalFilled: new Decimal('0.123456789012345678'),
      expiresIn: new Decimal('5'),
      requestedAt: now,
      receivedAt: now,
      deadlineAt: new Date(now.getTime() + 4_000),
    });
  }

  /**
   * Drives a fresh cycle to `state` through legal moves, with a quote of `totalCost`; its intent is written
   * at its slot (spend counts in the period of `submitted_at`).
   */
  async function cycleIn(
    strategy: string,
    slot: Date,
    state: 'quoted' | 'submitting' | 'placed' | 'unsure' | 'failed',
    totalCost = '100',
  ) {
    const claimed = await db.cycles.claimSlot({
      strategy,
      account: 'default',
      slot,
      trigger: 'schedule',
      owner: 'r1',
    });
    if (!claimed) throw new Error('slot already claimed');
    const quote = await recordQuote(claimed.id, totalCost);
    let cycle = await db.cycles.transition(claimed.id, 'claimed', 'quoted', { quote });
    if (state === 'quoted') return cycle!;
    writtenAt = slot;
    try {
      cycle = await db.cycles.transition(claimed.id, 'quoted', 'submitting');
    } finally {
      writtenAt = undefined;
    }
    if (state === 'submitting') return cycle!;
    return (await db.cycles.transition(claimed.id, 'submitting', state))!;
  }

  it('lets exactly one of many racing claimers win a slot', async () => {
    const strategy = await newStrategy();
    const slot = at(10);
    const claims = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        (i % 2 ? replica : db).cycles.claimSlot({
          account: 'default',
          strategy,
          slot,
          trigger: 'schedule',
          owner: `replica-${i}`,
        }),
      ),
    );
    const winners = claims.filter((claim) => claim !== null);
    expect(winners).toHaveLength(1);
    expect(winners[0]).toMatchObject({ strategy, slot, state: 'claimed', attempts: 0, trigger: 'schedule' });
    expect(await db.cycles.getBySlot(strategy, slot)).toMatchObject({
      id: winners[0]!.id,
      owner: winners[0]!.owner,
    });
  });

  it('answers a claim with the very row the database holds, defaults and version included', async () => {
    const strategy = await newStrategy();
    const slot = new Date('2026-03-02T10:15:00.123Z');
    const claimed = await db.cycles.claimSlotWithFigures(
      { strategy, account: 'default', strategyVersion: 7, slot, trigger: 'missed', owner: 'replica-x' },
      { day: { start: at(0), end: at(24) }, month: { start: at(-24), end: at(24 * 27) } },
    );
    expect(claimed).not.toBeNull();
    expect(claimed!.cycle).toEqual(await db.cycles.get(claimed!.cycle.id));
    const unversioned = await db.cycles.claimSlot({
      strategy,
      account: 'default',
      slot: at(11),
      trigger: 'once',
      owner: 'r',
    });
    expect(unversioned).toEqual(await db.cycles.get(unversioned!.id));
  });

  it('names the strategies among those asked that have a cycle of the slot, in any state', async () => {
    const [claimed, other, failed, never] = [
      await newStrategy(),
      await newStrategy(),
      await newStrategy(),
      await newStrategy(),
    ];
    const slot = at(11);
    await db.cycles.claimSlot({
      strategy: claimed,
      account: 'default',
      slot,
      trigger: 'schedule',
      owner: 'r2',
    });
    // Another slot of a strategy asked about is not this slot's cycle.
    await db.cycles.claimSlot({
      strategy: other,
      account: 'default',
      slot: at(12),
      trigger: 'schedule',
      owner: 'r2',
    });
    await cycleIn(failed, slot, 'failed');
    const names = await replica.cycles.claimedAmong(slot, [
      claimed,
      other,
      failed,
      never,
      'no such strategy',
    ]);
    expect(names.sort()).toEqual([claimed, failed].sort());
    expect(await db.cycles.claimedAmong(slot, [])).toEqual([]);
  });

  it('moves only along legal transitions, by compare-and-set', async () => {
    const strategy = await newStrategy();
    const claimed = (await db.cycles.claimSlot({
      strategy,
      account: 'default',
      slot: at(1),
      trigger: 'once',
      owner: 'r1',
    }))!;

    await expect(db.cycles.transition(claimed.id, 'claimed', 'placed')).rejects.toMatchObject({
      code: 'ILLEGAL_TRANSITION',
    });
    await expect(db.cycles.transition(claimed.id, 'claimed', 'unsure')).rejects.toMatchObject({
      code: 'ILLEGAL_TRANSITION',
    });
    // A legal move from a state the cycle is not in is a CAS miss, not an error.
    expect(await db.cycles.transition(claimed.id, 'quoted', 'submitting')).toBeNull();

    const quote = await recordQuote(claimed.id, '2500.00');
    const quoted = await db.cycles.transition(claimed.id, 'claimed', 'quoted', {
      quote,
      trace: { maxPrice: { passed: true, limit: '5.90' } },
    });
    expect(quoted).toMatchObject({ state: 'quoted', quoteId: quote.quoteId, quoteRecordId: quote.id });
    expect(quoted!.totalCost!.eq('2500')).toBe(true);
    expect(quoted!.trace).toEqual({ maxPrice: { passed: true, limit: '5.90' } });

    const submitting = await db.cycles.transition(claimed.id, 'quoted', 'submitting');
    expect(submitting).toMatchObject({ state: 'submitting', attempts: 1, finishedAt: null });
    expect(submitting!.submittedAt).toBeInstanceOf(Date);

    // Expired quote: back to quoted with a fresh quote, then a second attempt.
    const fresh = await recordQuote(claimed.id, '2500.00');
    await db.cycles.transition(claimed.id, 'submitting', 'quoted', {
      quote: fresh,
      errorCode: 'QUOTE_EXPIRED',
    });
    const again = await db.cycles.transition(claimed.id, 'quoted', 'submitting', { errorCode: null });
    expect(again).toMatchObject({ attempts: 2, quoteId: fresh.quoteId, errorCode: null });

    const unsure = await db.cycles.transition(claimed.id, 'submitting', 'unsure', {
      errorCode: 'OUTCOME_UNKNOWN',
      errorMessage: 'headers timeout',
    });
    expect(unsure).toMatchObject({ state: 'unsure', finishedAt: null });
    const placed = await db.cycles.transition(claimed.id, 'unsure', 'placed', { serviceOrderId: 'ord-1' });
    expect(placed).toMatchObject({ state: 'placed', serviceOrderId: 'ord-1', errorCode: 'OUTCOME_UNKNOWN' });
    expect(placed!.finishedAt).toBeInstanceOf(Date);

    await expect(db.cycles.transition(claimed.id, 'placed', 'failed')).rejects.toMatchObject({
      code: 'ILLEGAL_TRANSITION',
    });
    expect((await db.cycles.get(claimed.id))!.state).toBe('placed');
  });

  it('lets one of two racing transitions win and reports the other as a miss', async () => {
    const strategy = await newStrategy();
    const cycle = await cycleIn(strategy, at(2), 'submitting');
    const [a, b] = await Promise.all([
      db.cycles.transition(cycle.id, 'submitting', 'placed', { serviceOrderId: 'ord-a' }),
      replica.cycles.transition(cycle.id, 'submitting', 'unsure', { errorCode: 'OUTCOME_UNKNOWN' }),
    ]);
    expect([a, b].filter((result) => result !== null)).toHaveLength(1);
  });

  it('stores decimals with 18 fractional digits exactly', async () => {
    const strategy = await newStrategy();
    const claimed = (await db.cycles.claimSlot({
      strategy,
      account: 'default',
      slot: at(3),
      trigger: 'schedule',
      owner: 'r1',
    }))!;
    const values = {
      amount: '123456789012345678.123456789012345678',
      price: '0.000000000000000001',
      totalCost: '99999999999999999999.999999999999999999',
      totalFilled: '1.100000000000000001',
    };
    const now = new Date();
    const quote = await db.quotes.record(claimed.id, {
      quoteId: 'EXACT1234',
      symbol: 'USDTBRL',
      amount: new Decimal(values.amount),
      price: new Decimal(values.price),
      totalCost: new Decimal(values.totalCost),
      totalFilled: new Decimal(values.totalFilled),
      expiresIn: new Decimal('5'),
      requestedAt: now,
      receivedAt: now,
      deadlineAt: now,
    });
    const [stored] = await db.quotes.forCycle(claimed.id);
    for (const [field, text] of Object.entries(values)) {
      expect(stored![field as keyof typeof values].toFixed(), field).toBe(text);
      expect(quote[field as keyof typeof values].toFixed(), field).toBe(text);
    }
    const quoted = await db.cycles.transition(claimed.id, 'claimed', 'quoted', { quote });
    expect(quoted!.totalCost!.toFixed()).toBe(values.totalCost);
    expect(quoted!.price!.toFixed()).toBe(values.price);
  });

  const periods = (dayStart: number, monthStart: number, monthHours: number) => ({
    day: { start: at(dayStart), end: at(dayStart + 24) },
    month: { start: at(monthStart), end: at(monthStart + monthHours) },
  });

  it('sums spend exactly over money that may have left, within each [start, end)', async () => {
    const strategy = await newStrategy();
    const other = await newStrategy();
    await cycleIn(strategy, at(0), 'placed', '0.1');
    await cycleIn(strategy, at(5), 'submitting', '0.2');
    await cycleIn(strategy, at(23.99), 'unsure', '1000000000000.000000000000000001');
    await cycleIn(strategy, at(6), 'failed', '7'); // never left
    await cycleIn(strategy, at(7), 'quoted', '8'); // not sent
    await cycleIn(strategy, at(24), 'placed', '9'); // next day: excluded by the open upper bound
    await cycleIn(strategy, at(-0.001), 'placed', '10'); // previous day
    await cycleIn(strategy, at(-48), 'placed', '12'); // previous month
    await cycleIn(other, at(8), 'placed', '11'); // another strategy

    const figures = await db.cycles.spendFigures({
      strategy,
      account: 'default',
      periods: periods(0, -24, 30 * 24),
    });
    expect(figures.spentDay.toFixed()).toBe('1000000000000.300000000000000001');
    expect(figures.spentMonth.toFixed()).toBe('1000000000019.300000000000000001');
    const later = await db.cycles.spendFigures({
      strategy,
      account: 'default',
      periods: periods(1_000, 1_000, 30 * 24),
    });
    expect([later.spentDay.toFixed(), later.spentMonth.toFixed()]).toEqual(['0', '0']);
  });

  it('reports the last moment an order request left, the halt and the kill switch', async () => {
    const strategy = await newStrategy();
    const figures = () =>
      db.cycles.spendFigures({ strategy, account: 'default', periods: periods(0, 0, 24) });
    expect(await figures()).toMatchObject({ lastSubmittedAt: null, halted: false, paused: false });
    await cycleIn(strategy, at(1), 'failed');
    expect((await figures()).lastSubmittedAt).toBeNull();
    // The cooldown counts from any earlier order, whatever its month.
    const inFlight = await cycleIn(strategy, at(-1_000), 'submitting');
    expect((await figures()).lastSubmittedAt).toEqual(inFlight.submittedAt);
    const placed = await cycleIn(strategy, at(2), 'placed');
    expect((await figures()).lastSubmittedAt).toEqual(placed.submittedAt);
    // Stamped after the month by a replica whose clock is ahead: still the latest; one that never left is not.
    await cycleIn(strategy, at(40), 'failed');
    const ahead = await cycleIn(strategy, at(30), 'unsure');
    expect((await figures()).lastSubmittedAt).toEqual(ahead.submittedAt);

    await db.strategies.halt(strategy, 'ambiguous');
    await db.control.pause('incident', 'test');
    expect(await figures()).toMatchObject({ halted: true, paused: true });
    await db.control.resume('test');
    await db.strategies.clearHalt(strategy);
    expect(await figures()).toMatchObject({ halted: false, paused: false });
  });

  it('splits unsure cycles between two reconcilers without overlap, until the lease ends', async () => {
    const strategy = await newStrategy();
    const ids: number[] = [];
    const unsureBefore = await db.cycles.countByState('unsure');
    for (let i = 0; i < 30; i++) ids.push((await cycleIn(strategy, at(100 + i), 'unsure')).id);
    expect(await db.cycles.countByState('unsure')).toBe(unsureBefore + 30);
    const now = new Date();

    const [mine, theirs] = await Promise.all([
      db.cycles.claimUnsure('default', 'reconciler-a', 60_000, 25, now),
      replica.cycles.claimUnsure('default', 'reconciler-b', 60_000, 25, now),
    ]);
    // Earlier tests in this file may have left unsure cycles of other strategies behind.
    const ofThisTest = (list: { id: number; strategy: string }[]) =>
      list.filter((cycle) => cycle.strategy === strategy).map((cycle) => cycle.id);
    const a = ofThisTest(mine);
    const b = ofThisTest(theirs);
    expect(a.filter((id) => b.includes(id))).toEqual([]);
    expect([...a, ...b].sort((x, y) => x - y)).toEqual(ids);
    expect(mine.every((cycle) => cycle.leaseOwner === 'reconciler-a')).toBe(true);

    expect(
      await db.cycles.claimUnsure('default', 'reconciler-c', 60_000, 50, new Date(now.getTime() + 59_000)),
    ).toEqual([]);
    const afterLease = await db.cycles.claimUnsure(
      'default',
      'reconciler-c',
      60_000,
      50,
      new Date(now.getTime() + 61_000),
    );
    expect(ofThisTest(afterLease)).toHaveLength(30);

    // Resolving a cycle releases its lease and takes it out of the unsure set.
    const resolved = await db.cycles.transition(ids[0]!, 'unsure', 'not_placed', { reasonCode: 'NOT_FOUND' });
    expect(resolved).toMatchObject({ state: 'not_placed', leaseOwner: null, leaseUntil: null });
    expect(ofThisTest(await db.cycles.listByState(EVERY_ACCOUNT, 'unsure', 100))).toHaveLength(29);
  });

  it('lists recent cycles newest first', async () => {
    const strategy = await newStrategy();
    await cycleIn(strategy, at(200), 'placed');
    const later = await cycleIn(strategy, at(201), 'quoted');
    const recent = await db.cycles.listRecent(EVERY_ACCOUNT, { strategy, limit: 1 });
    expect(recent.map((cycle) => cycle.id)).toEqual([later.id]);
    expect((await db.cycles.listRecent(EVERY_ACCOUNT, { strategy })).length).toBe(2);
  });
});
