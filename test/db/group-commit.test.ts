import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GroupCommit } from '../../src/db/group-commit.js';
import {
  type Database,
  type IntentGuard,
  openDatabase,
  type QuoteInput,
  type ServiceOrder,
} from '../../src/db/index.js';
import { lockKeyOfCredit, lockKeyOfIntent } from '../../src/db/repositories/intent.js';
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

/** Calls of one statement sent while one is in flight wait for it and go together, each with its outcome. */
describe('GroupCommit', () => {
  /** A statement whose answers the test releases: what it was sent, alone or together, in order. */
  function gate() {
    const sent: string[][] = [];
    const pending: (() => void)[] = [];
    const hold = <T>(value: T) => new Promise<T>((resolve) => pending.push(() => resolve(value)));
    const group = new GroupCommit<string, string>({
      maxBatch: 3,
      one: (input) => {
        sent.push([input]);
        return input === 'bad' ? Promise.reject(new Error('refused')) : hold(`${input}!`);
      },
      many: (inputs) => {
        sent.push([...inputs]);
        return inputs.includes('bad')
          ? Promise.reject(new Error('refused'))
          : hold(inputs.map((x) => `${x}!`));
      },
    });
    const release = async () => {
      pending.shift()!();
      // The answers travel through a few promise steps before the next statement is sent.
      await new Promise((resolve) => setImmediate(resolve));
    };
    return { group, sent, release };
  }

  it('sends a call that finds nothing in flight at once and alone', async () => {
    const { group, sent, release } = gate();
    const answer = group.run('a');
    expect(sent).toEqual([['a']]);
    await release();
    await expect(answer).resolves.toBe('a!');
  });

  it('sends the calls that waited together, at most maxBatch at a time, each answered with its own result', async () => {
    const { group, sent, release } = gate();
    const answers = ['a', 'b', 'c', 'd', 'e'].map((input) => group.run(input));
    expect(sent).toEqual([['a']]);
    await release();
    expect(sent).toEqual([['a'], ['b', 'c', 'd']]);
    await release();
    expect(sent).toEqual([['a'], ['b', 'c', 'd'], ['e']]);
    await release();
    expect(await Promise.all(answers)).toEqual(['a!', 'b!', 'c!', 'd!', 'e!']);
  });

  it('leaves a call that does not fit for a later statement, in its turn', async () => {
    const sent: string[][] = [];
    const pending: (() => void)[] = [];
    const group = new GroupCommit<string, string>({
      maxBatch: 10,
      // Calls of one letter never share a statement.
      fits: (taken, next) => !taken.some((input) => input[0] === next[0]),
      one: (input) => {
        sent.push([input]);
        return new Promise((resolve) => pending.push(() => resolve(input)));
      },
      many: (inputs) => {
        sent.push([...inputs]);
        return new Promise((resolve) => pending.push(() => resolve([...inputs])));
      },
    });
    const answers = ['a1', 'b1', 'a2', 'c1', 'b2', 'a3'].map((input) => group.run(input));
    for (let round = 0; round < 4; round++) {
      pending.shift()?.();
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(sent).toEqual([['a1'], ['b1', 'a2', 'c1'], ['b2', 'a3']]);
    expect(await Promise.all(answers)).toEqual(['a1', 'b1', 'a2', 'c1', 'b2', 'a3']);
  });

  it('fails every call of a batch that failed, and goes on with the next', async () => {
    const { group, sent, release } = gate();
    const first = group.run('a');
    const failed = [group.run('b'), group.run('bad')].map((call) =>
      call.then(
        () => 'answered',
        (error: Error) => error.message,
      ),
    );
    await release();
    await expect(first).resolves.toBe('a!');
    expect(await Promise.all(failed)).toEqual(['refused', 'refused']);
    const next = group.run('c');
    expect(sent.at(-1)).toEqual(['c']);
    await release();
    await expect(next).resolves.toBe('c!');
  });
});

/**
 * Claims and intents sent while one is in flight go as one statement (db/group-commit.ts): a burst from one
 * pool is written in batches, and two replicas' batches racing for the same slots still claim each slot once.
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

  function quoteOf(totalCost: string, suffix: string): QuoteInput {
    const now = new Date();
    return {
      quoteId: `QI-${suffix}`,
      symbol: 'USDTBRL',
      amount: new Decimal(totalCost),
      price: new Decimal('5.123456789012345678'),
      totalCost: new Decimal(totalCost),
      totalFilled: new Decimal('19.518072289156626506'),
      expiresIn: suffix.endsWith('0') ? null : new Decimal('5'),
      requestedAt: now,
      receivedAt: new Date(now.getTime() + 1),
      deadlineAt: new Date(now.getTime() + 4_000),
    };
  }

  it('commits intents that stand in batches: each cycle moved with its own quote, one moved elsewhere not', async () => {
    const names = await newStrategies(12);
    const slot = at(5);
    const claimed = await Promise.all(names.map((name) => claim(db, name, slot, 'r')));
    const cycles = claimed.map((won) => won!.cycle);
    // One cycle was moved by another process meanwhile: its compare-and-set misses.
    await db.cycles.transition(cycles[7]!.id, 'claimed', 'failed', { reasonCode: 'elsewhere' });
    const results = await Promise.all(
      cycles.map((cycle, index) =>
        db.cycles.commitIntent(
          { id: cycle.id, from: 'claimed', quote: quoteOf(`${index + 1}00.01`, `${strategyCount}-${index}`) },
          { stands: { trace: [{ rule: 'amount', index }], balanceSnapshotId: null } },
        ),
      ),
    );
    for (const [index, result] of results.entries()) {
      const stored = await db.cycles.get(cycles[index]!.id);
      if (index === 7) {
        expect(result.cycle).toBeNull();
        expect(stored!.state).toBe('failed');
        continue;
      }
      expect(result.action).toBe('commit');
      // The answer is the row as stored, trace included; the quote row is this cycle's own.
      expect(result.cycle).toEqual(stored);
      expect(stored).toMatchObject({
        state: 'submitting',
        quoteId: `QI-${strategyCount}-${index}`,
        totalCost: new Decimal(`${index + 1}00.01`),
        trace: [{ rule: 'amount', index }],
        attempts: 1,
      });
      const [quote, ...more] = await db.quotes.forCycle(stored!.id);
      expect(more).toEqual([]);
      expect(quote).toMatchObject({
        id: stored!.quoteRecordId,
        cycleId: stored!.id,
        totalFilled: new Decimal('19.518072289156626506'),
        expiresIn: index % 10 === 0 ? null : new Decimal('5'),
      });
    }
  });

  it('records placed orders in batches: each order with its first event and its cycle placed, conflicts resolved', async () => {
    const names = await newStrategies(12);
    const slot = at(6);
    const cycles = (await Promise.all(names.map((name) => claim(db, name, slot, 'r')))).map(
      (won) => won!.cycle,
    );
    for (const cycle of cycles) await db.cycles.transition(cycle.id, 'claimed', 'submitting');
    const orderOf = (index: number): ServiceOrder => ({
      account: 'default',
      id: `ORD-${strategyCount}-${index}`,
      symbol: 'USDTBRL',
      amount: new Decimal(`${index + 1}000.01`),
      price: new Decimal('5.432100000000000001'),
      side: 'BUY',
      timestamp: new Date(Date.UTC(2026, 2, 2, 13, 0, index)),
      quoteId: `Q-${strategyCount}-${index}`,
      ...(index === 4 ? { status: 'settled' as const } : {}),
    });
    // Found at the service by the order scan before its cycle recorded it: the cycle adopts it.
    await db.orders.recordExternal(orderOf(2));
    // Made unsure by recovery meanwhile: its order is kept, its cycle left to reconciliation.
    await db.cycles.transition(cycles[9]!.id, 'submitting', 'unsure', { reasonCode: 'outcome_unknown' });
    const results = await Promise.all(
      cycles.map((cycle, index) =>
        db.orders.recordPlacedWithCycle(cycle.id, orderOf(index), { from: 'submitting', reasonCode: 'ok' }),
      ),
    );
    for (const [index, { order, cycle }] of results.entries()) {
      expect(order).toEqual(await db.orders.get(order.id));
      expect(order).toMatchObject({
        serviceOrderId: `ORD-${strategyCount}-${index}`,
        cycleId: cycles[index]!.id,
        origin: 'cycle',
        amount: new Decimal(`${index + 1}000.01`),
        status: index === 4 ? 'settled' : 'pending',
      });
      expect(await db.orders.history(order.id)).toEqual([
        expect.objectContaining({ source: 'create', fromStatus: null }),
      ]);
      if (index === 9) {
        expect(cycle).toBeNull();
        expect((await db.cycles.get(cycles[9]!.id))!.state).toBe('unsure');
        continue;
      }
      expect(cycle).toEqual(await db.cycles.get(cycles[index]!.id));
      expect(cycle).toMatchObject({ state: 'placed', serviceOrderId: `ORD-${strategyCount}-${index}` });
    }
  });

  /** A guard that commits while the day's spend, with this order's 100, stays within `cap`. */
  function guardWithCap(strategy: string, cap: string, seen: string[], credit = false): IntentGuard {
    return {
      strategy,
      account: 'default',
      periodsAt: () => PERIODS,
      timeoutMs: 5_000,
      ...(credit ? { balanceReadAt: new Date(NOW - 60_000) } : {}),
      decide(figures) {
        seen.push(`${strategy} ${figures.spentDay.toFixed(2)} ${figures.creditPending?.toFixed(2) ?? '-'}`);
        const trace = [{ spent: figures.spentDay.toFixed(2) }];
        return figures.spentDay.plus('100').lessThanOrEqualTo(cap)
          ? { action: 'commit', patch: { trace, balanceSnapshotId: null } }
          : { action: 'skip', reasonCode: 'budget_day_exceeded', trace, balanceSnapshotId: null };
      },
    };
  }

  it('re-checks intents in batches: one order per cap however many slots race, from two replicas', async () => {
    const names = await newStrategies(8);
    const seen: string[] = [];
    // Two slots of every strategy, claimed and committed at once, half of them through the other replica:
    // a cap that fits one order lets exactly one of the two through.
    const calls = await Promise.all(
      names.flatMap((name, index) =>
        [at(7), at(8)].map(async (slot, second) => {
          const on = (index + second) % 2 === 0 ? db : replica;
          const won = await claim(on, name, slot, second ? 'replica-b' : 'replica-a');
          const quote = quoteOf('100', `${strategyCount}-${index}-${second}`);
          return {
            name,
            result: await on.cycles.commitIntent(
              { id: won!.cycle.id, from: 'claimed', quote },
              { recheck: guardWithCap(name, '150', seen, index === 0) },
            ),
          };
        }),
      ),
    );
    for (const name of names) {
      const results = calls.filter((call) => call.name === name).map((call) => call.result);
      expect(results.map((result) => result.action).sort()).toEqual(['commit', 'skip']);
      const committed = results.find((result) => result.action === 'commit')!;
      const skipped = results.find((result) => result.action === 'skip')!;
      expect(committed.cycle).toEqual(await db.cycles.get(committed.cycle!.id));
      expect(committed.cycle).toMatchObject({ state: 'submitting', totalCost: new Decimal('100') });
      // The skip was judged on figures that hold the commit before it.
      expect(skipped.cycle).toMatchObject({ state: 'skipped', trace: [{ spent: '100.00' }] });
      expect(skipped.cycle).toEqual(await db.cycles.get(skipped.cycle!.id));
    }
    // The credit-guarded strategy read its account's pending cost: its own commit at least, for its skip.
    expect(
      seen.filter((line) => line.startsWith(`${names[0]} 100.00`)).every((line) => !line.endsWith(' -')),
    ).toBe(true);
  });

  it("commits an account's intents in groups while another account's lock is held elsewhere", async () => {
    if (!test.url) return; // one connection: nothing else can hold a lock meanwhile
    const north = await newStrategies(1);
    const south = await newStrategies(6);
    // Another replica holds the north account's credit lock and that strategy's lock, for as long as it likes.
    const holder = postgres(test.url, { max: 1, onnotice: () => undefined });
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let locked: () => void = () => undefined;
    const isLocked = new Promise<void>((resolve) => {
      locked = resolve;
    });
    const held = holder.begin(async (tx) => {
      await tx.unsafe(
        `select pg_advisory_xact_lock(${lockKeyOfCredit('north')}), pg_advisory_xact_lock(${lockKeyOfIntent(north[0]!)})`,
      );
      locked();
      await released;
    });
    try {
      await isLocked;
      const slot = at(12);
      const seen: string[] = [];
      const northCall = (async () => {
        const won = await claim(db, north[0]!, slot, 'r');
        return db.cycles.commitIntent(
          { id: won!.cycle.id, from: 'claimed', quote: quoteOf('100', `${strategyCount}-north`) },
          { recheck: { ...guardWithCap(north[0]!, '1000', seen, true), account: 'north' } },
        );
      })();
      // The south account's intents, credit-guarded or not, commit while north's waits for its locks.
      const southResults = await Promise.all(
        south.map(async (name, index) => {
          const won = await claim(db, name, slot, 'r');
          return db.cycles.commitIntent(
            { id: won!.cycle.id, from: 'claimed', quote: quoteOf('100', `${strategyCount}-south-${index}`) },
            { recheck: guardWithCap(name, '1000', seen, index === 0) },
          );
        }),
      );
      expect(southResults.map((result) => result.action)).toEqual(south.map(() => 'commit'));
      release();
      expect((await northCall).action).toBe('commit');
    } finally {
      release();
      await held;
      await holder.end();
    }
  });
});
