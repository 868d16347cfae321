/**
 * Several accounts in one engine: two entities at the sandbox (each its own token, ledger and credit line),
 * one strategy each, due at the same instant. What one account's guards, locks, rows and reconciliation do
 * never reaches the other's.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lockKeyOfCredit } from '../../src/db/repositories/intent.js';
import { recordStrategiesSeen, reconcileUnsureCycles, runCycle } from '../../src/engine/index.js';
import { credentialFingerprint } from '../../src/sandbox/index.js';
import { createTestDatabase, type TestDatabase, testBackends } from '../support/database.js';
import { d, type EngineBench, freshSlot, startEngineBench, strategy } from './support/harness.js';

const guarded = (name: string, account: string) =>
  strategy({
    name,
    account,
    amount: d('100.00'),
    guards: { minCreditAvailable: d('5000.00'), requireCanWithdraw: false },
  });

describe.each(testBackends())('two accounts in one engine (%s)', (backend) => {
  let bench: EngineBench;
  let test: TestDatabase;

  beforeAll(async () => {
    test = await createTestDatabase(backend);
    bench = await startEngineBench({
      test,
      accounts: ['north', 'south'],
      sandbox: {
        accounts: [
          // North is at its floor: 1,000.00 of credit, where the guard keeps 5,000.00.
          { name: 'north', token: 'token-north', creditLimit: '1000.00' },
          { name: 'south', token: 'token-south', creditLimit: '1000000.00' },
        ],
      },
    });
  });
  afterAll(async () => {
    await bench.close();
    await test.drop();
  });

  const fingerprintOf = (account: string) => credentialFingerprint(bench.tokens.get(account)!);
  /** The accounts whose credentials reached the sandbox on these paths since `from` (an index of its log). */
  const credentialsSince = (from: number, path: RegExp) =>
    new Set(
      bench.sandbox
        .requests()
        .slice(from)
        .filter((request) => path.test(request.path))
        .map((request) => request.credential),
    );

  it("a guard at one account's floor does not stop the other account's strategy due at the same instant", async () => {
    const north = guarded('north-guarded', 'north');
    const south = guarded('south-guarded', 'south');
    await recordStrategiesSeen(bench.context, [north, south]);
    const slot = freshSlot();
    const [northReport, southReport] = await Promise.all([
      runCycle(bench.inAccount('north'), { strategy: north, slot, trigger: 'once' }),
      runCycle(bench.inAccount('south'), { strategy: south, slot, trigger: 'once' }),
    ]);
    expect(northReport).toMatchObject({ outcome: 'skipped', reason: 'credit_available_below_min' });
    expect(southReport).toMatchObject({ outcome: 'placed' });
    // Each cycle and its balance snapshot are recorded under its own account.
    const northCycle = await bench.database.cycles.getBySlot('north-guarded', slot);
    const southCycle = await bench.database.cycles.getBySlot('south-guarded', slot);
    expect(northCycle?.account).toBe('north');
    expect(southCycle?.account).toBe('south');
    expect((await bench.database.balances.latest('north'))?.credit.total).toEqual(d('1000.00'));
    expect((await bench.database.balances.latest('south'))?.credit.total).toEqual(d('1000000.00'));
    // The order is the south account's, at its own ledger, and recorded as such.
    const order = await bench.database.orders.forCycle(southCycle!.id);
    expect(order?.account).toBe('south');
    expect(bench.sandbox.ledger('south').map((entry) => entry.id)).toContain(order?.serviceOrderId);
    expect(bench.sandbox.ledger('north')).toEqual([]);
  });

  it('each cycle talks to its own account only: quotes, balance and order carry its token', async () => {
    const from = bench.sandbox.requests().length;
    const report = await bench.run(strategy({ name: 'south-plain', account: 'south' }));
    expect(report.outcome).toBe('placed');
    expect(credentialsSince(from, /^\/client\//)).toEqual(new Set([fingerprintOf('south')]));
  });

  it("holding one account's credit lock never holds the other's guarded cycles", async (context) => {
    // A second connection holds the lock: PGlite has one connection, where nothing can wait on another.
    if (backend !== 'postgres') context.skip();
    for (const [held, free] of [
      ['north', 'south'],
      ['south', 'north'],
    ] as const) {
      const subject = strategy({
        name: `${free}-under-${held}-lock`,
        account: free,
        guards: { minCreditAvailable: d('0.00'), requireCanWithdraw: false },
      });
      await recordStrategiesSeen(bench.context, [subject]);
      const report = await bench.database.withReservedConnection(async (holder) => {
        await holder.query('select pg_advisory_lock($1::bigint)', [lockKeyOfCredit(held)]);
        try {
          // The quote lives 5 s: a cycle that waited on the held lock would give the quote up.
          return await runCycle(bench.inAccount(free), {
            strategy: subject,
            slot: freshSlot(),
            trigger: 'once',
          });
        } finally {
          await holder.query('select pg_advisory_unlock($1::bigint)', [lockKeyOfCredit(held)]);
        }
      });
      expect(report.outcome).toBe('placed');
    }
  });

  it("the same account's guarded cycle does wait on its own held lock (the lock is real)", async (context) => {
    if (backend !== 'postgres') context.skip();
    const subject = strategy({
      name: 'south-under-own-lock',
      account: 'south',
      guards: { minCreditAvailable: d('0.00'), requireCanWithdraw: false },
    });
    await recordStrategiesSeen(bench.context, [subject]);
    const report = await bench.database.withReservedConnection(async (holder) => {
      await holder.query('select pg_advisory_lock($1::bigint)', [lockKeyOfCredit('south')]);
      try {
        return await runCycle(bench.inAccount('south'), {
          strategy: subject,
          slot: freshSlot(),
          trigger: 'once',
        });
      } finally {
        await holder.query('select pg_advisory_unlock($1::bigint)', [lockKeyOfCredit('south')]);
      }
    });
    expect(report.outcome).not.toBe('placed');
  });

  it("reconciliation of an unsure cycle asks only its own account's service", async () => {
    // A south order whose answer was lost: the cycle is unsure, the order exists at south's service.
    const subject = strategy({ name: 'south-lost-answer', account: 'south' });
    await recordStrategiesSeen(bench.context, [subject]);
    bench.sandbox.setFaults({ createOrder: { acceptThenDropRate: 1 } });
    const lost = await bench.run(subject);
    bench.sandbox.setFaults({});
    expect(lost.outcome).toBe('unsure');

    const from = bench.sandbox.requests().length;
    const now = new Date();
    // North's pass leases no south cycle and sends nothing with south's token.
    const northPass = await reconcileUnsureCycles(bench.inAccount('north'), now);
    expect(northPass.examined).toBe(0);
    expect(credentialsSince(from, /^\/client\//)).not.toContain(fingerprintOf('south'));
    const southPass = await reconcileUnsureCycles(bench.inAccount('south'), now);
    expect(southPass).toMatchObject({ examined: 1, adopted: 1 });
    expect(credentialsSince(from, /^\/client\//)).toEqual(new Set([fingerprintOf('south')]));
  });
});

describe.each(testBackends())('the same quote id and order id at two accounts (%s)', (backend) => {
  let bench: EngineBench;
  let test: TestDatabase;
  beforeAll(async () => {
    test = await createTestDatabase(backend);
    bench = await startEngineBench({ test, accounts: ['north', 'south'] });
  });
  afterAll(async () => {
    await bench.close();
    await test.drop();
  });

  it('are two orders, each owned by its own account’s cycle', async () => {
    const { database } = bench;
    const slot = freshSlot();
    const cycles = [];
    for (const account of ['north', 'south']) {
      const name = `${account}-same-quote`;
      await recordStrategiesSeen(bench.context, [strategy({ name, account })]);
      const claimed = (await database.cycles.claimSlot({
        strategy: name,
        account,
        slot,
        trigger: 'once',
        owner: 'test',
      }))!;
      const quote = await database.quotes.record(claimed.id, {
        quoteId: 'Q-SAME',
        symbol: 'USDTBRL',
        amount: d('100.00'),
        price: d('5.40'),
        totalCost: d('100.00'),
        totalFilled: d('18.51'),
        expiresIn: d('5'),
        requestedAt: slot,
        receivedAt: slot,
        deadlineAt: slot,
      });
      await database.cycles.transition(claimed.id, 'claimed', 'quoted', { quote });
      cycles.push((await database.cycles.transition(claimed.id, 'quoted', 'submitting'))!);
    }
    const recorded = [];
    for (const cycle of cycles) {
      recorded.push(
        await database.orders.recordPlacedWithCycle(
          cycle.id,
          {
            account: cycle.account,
            id: 'ORDER-SAME',
            quoteId: 'Q-SAME',
            symbol: 'USDTBRL',
            amount: d('100.00'),
            price: d('5.40'),
            side: 'BUY',
            timestamp: slot,
          },
          { from: 'submitting', reasonCode: 'ok' },
        ),
      );
    }
    expect(recorded.map((entry) => entry.order.account)).toEqual(['north', 'south']);
    expect(recorded[0]!.order.id).not.toBe(recorded[1]!.order.id);
    expect(recorded.map((entry) => entry.cycle?.state)).toEqual(['placed', 'placed']);
    expect((await database.orders.getByServiceId('south', 'ORDER-SAME'))?.cycleId).toBe(cycles[1]!.id);
    // Ownership of a listed order by its quote id is asked per account.
    expect((await database.cycles.ownersOfQuotes('north', ['Q-SAME'])).get('Q-SAME')?.cycleId).toBe(
      cycles[0]!.id,
    );
    expect((await database.cycles.ownersOfQuotes('south', ['Q-SAME'])).get('Q-SAME')?.cycleId).toBe(
      cycles[1]!.id,
    );
  });
});
