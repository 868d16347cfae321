import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPurchaseClient, formatFxRate } from '../../src/api/index.js';
import { type Database, openConsoleStore } from '../../src/db/index.js';
import { Decimal } from '../../src/money.js';
import { DEMO_TOKEN, type RunningSandbox, startSandbox } from '../../src/sandbox/index.js';
import { type CommandDatabase, createCommandDatabase } from '../support/database.js';
import { runCommand, startCommand, writeWorkerFiles } from '../support/worker-process.js';

const NAME = 'halted-dca';
/** Halted without unsure cycles (as after an operator settled them), for the worker's start warning. */
const STILL_HALTED = 'still-halted';
const STRATEGIES = `name: ${NAME}
kind: dca
symbol: USDTBRL
amount: "100.00"
schedule: "0 10 * * *"
timezone: UTC
`;

/**
 * The operator's way out of an ambiguous reconciliation, as child processes: a halted strategy with unsure
 * cycles, two real orders at the sandbox that both match, `resolve` (adopt one, declare another not
 * placed, refuse what would contradict the records), `unhalt` (refused while a cycle is unsure), and the
 * warning a starting worker logs for a halted strategy.
 */
describe('resolve and unhalt', () => {
  let sandbox: RunningSandbox;
  let test: CommandDatabase;
  let env: Record<string, string>;
  let unsure: number[];
  let orderIds: string[];

  beforeAll(async () => {
    sandbox = await startSandbox({ stepMs: 0 });
    const files = await writeWorkerFiles(STRATEGIES, 'engine:\n  reload:\n    watch: false\n');
    env = {
      ...files,
      TREASURY_API_URL: sandbox.url,
      TREASURY_API_TOKEN: DEMO_TOKEN,
      LOG_LEVEL: 'info',
      TREASURY_ACTOR: 'ops-oncall',
    };
    test = await createCommandDatabase(env);

    // Two orders at the service with the same figures: the case only a person can settle.
    const client = createPurchaseClient({ baseUrl: sandbox.url, token: DEMO_TOKEN });
    orderIds = [];
    for (let index = 0; index < 2; index++) {
      const quote = await client.getQuote({ symbol: 'USDTBRL', amount: new Decimal('100.00') });
      const order = await client.createOrder({ quoteId: quote.quoteId, fxRate: formatFxRate(quote.price) });
      orderIds.push(order.id);
    }
    await client.close();

    unsure = await test.use(async (database) => {
      await database.strategies.upsertSeen([
        { name: NAME, account: 'default', kind: 'dca', config: {}, hash: 'h' },
      ]);
      const ids: number[] = [];
      for (let index = 0; index < 2; index++) ids.push(await unsureCycle(database, index));
      await database.strategies.halt(NAME, `reconciliation of cycle ${ids[0]} found 2 matching orders`);
      await database.strategies.upsertSeen([
        { name: STILL_HALTED, account: 'default', kind: 'dca', config: {}, hash: 'h' },
      ]);
      await database.strategies.halt(STILL_HALTED, 'left for the worker test');
      return ids;
    });
  });
  afterAll(async () => {
    await sandbox.close();
    await test?.drop();
  });

  it('unhalt is refused while the strategy has unsure cycles, naming them and the way out', async () => {
    const refused = await runCommand(['unhalt', NAME], env);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe('');
    expect(refused.stderr.trim().split('\n')).toHaveLength(1);
    expect(refused.stderr).toMatch(
      /^treasury-bot: STRATEGY_HAS_UNSURE_CYCLES: strategy "halted-dca" still has 2/,
    );
    expect(refused.stderr).toContain(`(${unsure.join(', ')})`);
    expect(refused.stderr).toContain('treasury-bot resolve CYCLE_ID');
  });

  it('resolve --order adopts the order for the unsure cycle; the same order cannot go to another cycle', async () => {
    const [first, second] = unsure as [number, number];
    const adopted = await runCommand(['resolve', String(first), '--order', orderIds[0]!, '--json'], {
      ...env,
      TREASURY_ACTOR: 'olga',
    });
    expect(adopted.stderr).not.toContain('"level":50');
    expect(adopted.code).toBe(0);
    expect(JSON.parse(adopted.stdout)).toEqual({
      cycleId: first,
      strategy: NAME,
      slot: expect.any(String),
      state: 'placed',
      reason: 'operator_resolved',
      orderId: orderIds[0],
    });
    await test.use(async (database) => {
      const order = await database.orders.getByServiceId('default', orderIds[0]!);
      expect(order).toMatchObject({ cycleId: first, origin: 'cycle', symbol: 'USDTBRL' });
      expect((await database.orders.history(order!.id)).map((event) => event.source)).toEqual(['reconcile']);
      // The operator's decision is in the audit log, written with it.
      const [audited] = await openConsoleStore(database).audit.list({ limit: 1 });
      expect(audited).toMatchObject({
        actor: 'olga',
        action: 'cycle.adopt_order',
        subject: `cycle:${first}`,
        after: { state: 'placed', orderId: orderIds[0] },
      });
    });

    const taken = await runCommand(['resolve', String(second), '--order', orderIds[0]!], env);
    expect(taken.code).toBe(1);
    expect(taken.stderr.trim()).toBe(
      `treasury-bot: ORDER_OWNED_BY_OTHER_CYCLE: order ${orderIds[0]} is already recorded for cycle ${first}; one order belongs to one cycle`,
    );
    const again = await runCommand(['resolve', String(first), '--not-placed'], env);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(
      /^treasury-bot: CYCLE_NOT_UNSURE: cycle \d+ \(halted-dca, slot .*\) is 'placed'/,
    );
  });

  it('resolve --not-placed settles the other cycle; then unhalt lifts the halt and cycles run again', async () => {
    const second = unsure[1]!;
    const settled = await runCommand(['resolve', String(second), '--not-placed', '--by', 'olga'], env);
    expect(settled.code).toBe(0);
    expect(settled.stdout).toMatch(new RegExp(`^cycle ${second} not placed\\n`));
    expect(settled.stdout).toMatch(/reason\s+operator_resolved/);

    const lifted = await runCommand(['unhalt', NAME, '--json', '--by', 'pedro'], env);
    expect(lifted.code).toBe(0);
    expect(JSON.parse(lifted.stdout)).toEqual({ strategy: NAME, halted: false, wasHalted: true });
    await test.use(async (database) => {
      const [unhalted, notPlaced] = await openConsoleStore(database).audit.list({ limit: 2 });
      expect(notPlaced).toMatchObject({
        actor: 'olga',
        action: 'cycle.reconcile',
        subject: `cycle:${second}`,
      });
      expect(unhalted).toMatchObject({
        actor: 'pedro',
        action: 'strategy.resume',
        subject: `strategy:${NAME}`,
      });
    });
    const twice = await runCommand(['unhalt', NAME], env);
    expect(twice).toMatchObject({ code: 0, stdout: `strategy ${NAME} was not halted\n` });

    const cycle = await runCommand(['once', '--json', '--slot', '2033-01-01T10:00:00Z'], env);
    expect(JSON.parse(cycle.stdout).cycles[0]).toMatchObject({ strategy: NAME, outcome: 'placed' });
  });

  // Last: a running worker reconciles, and the unsure cycles above are settled by then.
  it('a starting worker warns about a strategy still halted', async () => {
    const worker = startCommand(['run'], { ...env, TREASURY_OPS_ADDR: '127.0.0.1:0' });
    const line = JSON.parse(await worker.waitForLine('strategy HALTED')) as Record<string, unknown>;
    expect(line).toMatchObject({ level: 'warn', strategy: STILL_HALTED, alert: 'strategy_halted' });
    expect(line.reason).toBe('left for the worker test');
    await worker.waitForLine('worker started');
    worker.child.kill('SIGTERM');
    expect((await worker.exited).code).toBe(0);
  });

  it('refuses bad arguments and unknown records with one line on stderr', async () => {
    const cases: [string[], Record<string, string>, RegExp][] = [
      [
        ['resolve', '7'],
        env,
        /^treasury-bot: INVALID_ARGUMENT: give exactly one of --order ID or --not-placed$/,
      ],
      [['resolve', '7', '--order', 'x', '--not-placed'], env, /INVALID_ARGUMENT: give exactly one/],
      [['resolve', 'seven', '--not-placed'], env, /INVALID_ARGUMENT: cycle id must be a positive integer/],
      [
        ['resolve', '999999', '--not-placed'],
        env,
        /^treasury-bot: CYCLE_NOT_FOUND: no cycle with id 999999$/,
      ],
      [['unhalt', 'nope'], env, /^treasury-bot: STRATEGY_NOT_FOUND: no strategy named "nope"/],
      [
        ['resolve', '1', '--order', 'x'],
        { ...env, TREASURY_API_URL: '' },
        /^treasury-bot: API_URL_MISSING: resolve --order reads the order from the purchase service/,
      ],
    ];
    const results = await Promise.all(cases.map(([args, caseEnv]) => runCommand(args, caseEnv)));
    results.forEach((result, index) => {
      expect(result.code, cases[index]![0].join(' ')).toBe(1);
      expect(result.stdout).toBe('');
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
      expect(result.stderr.trim()).toMatch(cases[index]![2]);
    });
  });
});

/** A cycle of the halted strategy that sent an order request and never learnt what became of it. */
async function unsureCycle(database: Database, index: number): Promise<number> {
  const slot = new Date(Date.UTC(2032, 0, 1 + index, 10));
  const claimed = (await database.cycles.claimSlot({
    account: 'default',
    strategy: NAME,
    slot,
    trigger: 'schedule',
    owner: 'x',
  }))!;
  const now = new Date();
  const quote = await database.quotes.record(claimed.id, {
    quoteId: `OPQUOTE${index}`,
    symbol: 'USDTBRL',
    amount: new Decimal('100.00'),
    price: new Decimal('5.40'),
    totalCost: new Decimal('100.00'),
    totalFilled: new Decimal('18.51'),
    expiresIn: new Decimal('5'),
    requestedAt: now,
    receivedAt: now,
    deadlineAt: now,
  });
  await database.cycles.transition(claimed.id, 'claimed', 'quoted', { quote });
  await database.cycles.transition(claimed.id, 'quoted', 'submitting');
  await database.cycles.transition(claimed.id, 'submitting', 'unsure');
  return claimed.id;
}
