import { mkdtemp, readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { Decimal as PlainDecimal } from 'decimal.js';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createPurchaseClient, type PurchaseClient, type Quote } from '../../src/api/index.js';
import type { Database } from '../../src/db/index.js';
import { Decimal } from '../../src/money.js';
import { DEMO_TOKEN, type RunningSandbox, startSandbox } from '../../src/sandbox/index.js';
import { DEFAULT_ACCOUNT } from '../../src/strategy/index.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { runCommand } from '../support/worker-process.js';

const onPostgres = inject('treasuryDatabase').backend === 'postgres';
if (!onPostgres) {
  process.stderr.write(
    '\n!!! reports.test.ts SKIPPED: the commands run as child processes on a shared PostgreSQL database\n\n',
  );
}

/** A strategy name no strategy file allows, as a database may still hold: a comma, a quote, a line break. */
const ODD = 'dip, "the\nbuyer"';
/** ODD in a CSV file or at a terminal: its line break escaped (src/printable.ts). */
const ODD_SHOWN = 'dip, "the\\nbuyer"';
const DCA = 'plain-dca';
const ZONE = 'America/New_York';

/**
 * Orders placed at the sandbox at chosen instants around New York's spring-forward night (2026-03-08: the
 * day from local midnight 05:00Z to the next local midnight 04:00Z lasts 23 hours), each with the local day
 * it belongs to, written out by hand rather than computed.
 */
const PLACED = [
  { at: '2026-03-07T04:59:59.999Z', day: null, strategy: DCA }, // 23:59:59.999 on the 6th: before --from
  { at: '2026-03-07T05:00:00.000Z', day: '2026-03-07', strategy: ODD }, // local midnight: the 7th
  { at: '2026-03-08T04:59:00.000Z', day: '2026-03-07', strategy: DCA }, // 23:59 EST
  { at: '2026-03-08T05:00:00.000Z', day: '2026-03-08', strategy: ODD }, // local midnight of the short day
  { at: '2026-03-09T03:59:59.000Z', day: '2026-03-08', strategy: null }, // 23:59:59 EDT; external
  { at: '2026-03-09T04:00:00.000Z', day: '2026-03-09', strategy: ODD }, // midnight EDT: the 9th
  { at: '2026-03-10T03:30:00.000Z', day: '2026-03-09', strategy: DCA }, // left `paid`: its crypto waits
] as const;

interface Placed {
  orderId: string;
  quote: Quote;
  at: string;
  day: string | null;
  strategy: string | null;
}

// Each test starts a few CLI processes; on a machine shared with other test runs that takes a while.
describe.skipIf(!onPostgres)(
  'report, export orders and reconcile-report against the sandbox',
  { timeout: 120_000 },
  () => {
    let now = Date.parse('2026-03-07T04:00:00Z');
    const clock = () => new Date(now);
    let sandbox: RunningSandbox;
    let client: PurchaseClient;
    let test: TestDatabase;
    let database: Database;
    let env: Record<string, string>;
    const placed: Placed[] = [];
    const skippedQuotes: Quote[] = [];

    async function buy(at: string): Promise<{ orderId: string; quote: Quote }> {
      now = Date.parse(at);
      const quote = await client.getQuote({ symbol: 'USDTBRL', amount: new Decimal('1000.00') });
      const order = await client.createOrder({ quoteId: quote.quoteId });
      return { orderId: order.id, quote };
    }

    /** Moves the order at the sandbox to `status` a second per step, recording each step as tracking does. */
    async function settle(orderId: string, status: string, adjust?: (received: Decimal) => Decimal) {
      const record = await database.orders.getByServiceId(DEFAULT_ACCOUNT, orderId);
      if (!record) throw new Error(`order ${orderId} is not recorded`);
      for (;;) {
        const tracking = await client.getTracking(orderId);
        if (tracking.settlementStatus === status) {
          await database.orders.applyTracking(
            record.id,
            {
              status: tracking.settlementStatus,
              expectedAmount: tracking.expectedAmount,
              receivedAmount:
                adjust && tracking.receivedAmount ? adjust(tracking.receivedAmount) : tracking.receivedAmount,
              withdrawnAmount: tracking.withdrawnAmount,
              withdrawal: tracking.withdrawal,
            },
            'poll',
          );
          return;
        }
        if (!adjust) {
          await database.orders.applyTracking(
            record.id,
            {
              status: tracking.settlementStatus,
              expectedAmount: tracking.expectedAmount,
              receivedAmount: tracking.receivedAmount,
              withdrawnAmount: tracking.withdrawnAmount,
              withdrawal: tracking.withdrawal,
            },
            'poll',
          );
        }
        now += 1000;
        await sandbox.step(orderId);
      }
    }

    async function snapshot(at: string) {
      now = Date.parse(at);
      const balance = await client.getBalance();
      await database.balances.record({ ...balance, account: DEFAULT_ACCOUNT, takenAt: clock() });
    }

    async function recordOurs(strategy: string, at: string, quote: Quote, orderId: string) {
      const cycle = await database.cycles.claimSlot({
        strategy,
        account: DEFAULT_ACCOUNT,
        strategyVersion: strategy === ODD ? 3 : 1,
        slot: new Date(at),
        trigger: 'schedule',
        owner: 'report-test',
      });
      if (!cycle) throw new Error('slot already claimed');
      const quoteInput = {
        ...quote,
        amount: new Decimal('1000.00'),
        expiresIn: quote.expiresIn ?? null,
        requestedAt: new Date(at),
        receivedAt: new Date(at),
        deadlineAt: new Date(Date.parse(at) + 4000),
      };
      await database.cycles.commitIntent(
        { id: cycle.id, from: 'claimed', quote: quoteInput },
        { stands: { trace: {}, balanceSnapshotId: null } },
      );
      const order = await client.getOrder(orderId);
      await database.orders.recordPlacedWithCycle(
        cycle.id,
        { ...order, account: DEFAULT_ACCOUNT },
        { from: 'submitting', reasonCode: 'ok' },
      );
    }

    beforeAll(async () => {
      sandbox = await startSandbox({ stepMs: 0, now: () => now, seed: 7 });
      client = createPurchaseClient({ baseUrl: sandbox.url, token: DEMO_TOKEN, retry: { maxAttempts: 1 } });
      test = await createTestDatabase(undefined, { clock });
      database = test.database;
      env = {
        TREASURY_API_URL: sandbox.url,
        TREASURY_API_TOKEN: DEMO_TOKEN,
        DATABASE_URL: test.url ?? '',
        TREASURY_TIMEZONE: ZONE,
        LOG_LEVEL: 'silent',
      };
      await database.strategies.upsertSeen([
        {
          name: ODD,
          kind: 'threshold',
          account: DEFAULT_ACCOUNT,
          config: { buyBelow: '5.5000' },
          hash: 'odd-v1',
        },
        { name: DCA, kind: 'dca', account: DEFAULT_ACCOUNT, config: {}, hash: 'dca-v1' },
      ]);
      await snapshot('2026-03-07T04:30:00Z');
      for (const entry of PLACED) {
        const { orderId, quote } = await buy(entry.at);
        if (entry.strategy === null)
          await database.orders.recordExternal({
            ...(await client.getOrder(orderId)),
            account: DEFAULT_ACCOUNT,
          });
        else await recordOurs(entry.strategy, entry.at, quote, orderId);
        await settle(orderId, entry === PLACED.at(-1) ? 'paid' : 'settled');
        placed.push({ orderId, quote, at: entry.at, day: entry.day, strategy: entry.strategy });
      }
      // A check of the threshold strategy that saw a price and skipped: its quote counts for plain DCA.
      now = Date.parse('2026-03-08T15:00:00Z');
      const skipped = await database.cycles.claimSlot({
        strategy: ODD,
        account: DEFAULT_ACCOUNT,
        slot: clock(),
        trigger: 'schedule',
        owner: 'report-test',
      });
      const seen = await client.getQuote({ symbol: 'USDTBRL', amount: new Decimal('1000.00') });
      skippedQuotes.push(seen);
      await database.quotes.record(skipped!.id, {
        ...seen,
        amount: new Decimal('1000.00'),
        expiresIn: seen.expiresIn ?? null,
        requestedAt: clock(),
        receivedAt: clock(),
        deadlineAt: clock(),
      });
      await database.cycles.transition(skipped!.id, 'claimed', 'skipped', {
        reasonCode: 'price_not_below_threshold',
      });
      await snapshot('2026-03-10T03:45:00Z');
    }, 60_000);

    afterAll(async () => {
      await client?.close();
      await sandbox?.close();
      await test?.drop();
    });

    const inPeriod = () => placed.filter((order) => order.day !== null);
    const sum = (values: PlainDecimal.Value[]) =>
      values.reduce<PlainDecimal>((a, b) => a.plus(b), new PlainDecimal(0));

    it('groups by local day across the DST change, with exact sums and the stated rounding', async () => {
      const result = await runCommand(
        ['report', '--from', '2026-03-07', '--to', '2026-03-10', '--by', 'day', '--format', 'json'],
        env,
      );
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
      const report = JSON.parse(result.stdout);
      expect(report.from).toBe('2026-03-07T05:00:00.000Z');
      expect(report.to).toBe('2026-03-10T04:00:00.000Z');
      expect(report.rounding).toContain('half-even to 6 decimals');
      expect(
        report.groups.map((g: { group: string; from: string; to: string }) => [g.group, g.from, g.to]),
      ).toEqual([
        ['2026-03-07', '2026-03-07T05:00:00.000Z', '2026-03-08T05:00:00.000Z'],
        ['2026-03-08', '2026-03-08T05:00:00.000Z', '2026-03-09T04:00:00.000Z'],
        ['2026-03-09', '2026-03-09T04:00:00.000Z', '2026-03-10T04:00:00.000Z'],
      ]);
      for (const group of report.groups) {
        const orders = inPeriod().filter((order) => order.day === group.group);
        // The external order has no quote: its cost is what the service expects and its quantity what was
        // withdrawn, which are the quote's figures at the sandbox.
        const spent = sum(orders.map((order) => order.quote.totalCost.toFixed()));
        const bought = sum(orders.map((order) => order.quote.totalFilled.toFixed()));
        expect(group.orders).toBe(orders.length);
        expect(group.spent).toBe(spent.toFixed());
        expect(group.bought).toBe(bought.toFixed());
        expect(group.averageCost).toBe(
          spent.dividedBy(bought).toDecimalPlaces(6, PlainDecimal.ROUND_HALF_EVEN).toFixed(),
        );
        const prices = orders.map((order) => new PlainDecimal(order.quote.price.toFixed()));
        expect(group.lowestPrice).toBe(PlainDecimal.min(...prices).toFixed());
        expect(group.highestPrice).toBe(PlainDecimal.max(...prices).toFixed());
      }
      expect(report.groups[1].skipped).toEqual({ price_not_below_threshold: 1 });
      // The last order of the 9th is paid, not settled.
      const paid = placed.at(-1)!;
      expect(report.groups[2].unsettledSpent).toBe(paid.quote.totalCost.toFixed());
      expect(report.total.orders).toBe(inPeriod().length);
      expect(report.total.ordersWithoutQuantity).toBe(0);

      const odd = inPeriod().filter((order) => order.strategy === ODD);
      const prices = [...odd.map((order) => order.quote.price.toFixed()), skippedQuotes[0]!.price.toFixed()];
      const averageQuoted = sum(prices)
        .dividedBy(prices.length)
        .toDecimalPlaces(6, PlainDecimal.ROUND_HALF_EVEN);
      const oddBought = sum(odd.map((order) => order.quote.totalFilled.toFixed()));
      const oddSpent = sum(odd.map((order) => order.quote.totalCost.toFixed()));
      const plain = oddBought.times(averageQuoted).toDecimalPlaces(2, PlainDecimal.ROUND_HALF_EVEN);
      expect(report.groups.map((group: { account: string }) => group.account)).toEqual([
        DEFAULT_ACCOUNT,
        DEFAULT_ACCOUNT,
        DEFAULT_ACCOUNT,
      ]);
      expect(report.total.account).toBe(DEFAULT_ACCOUNT);
      expect(report.savings).toEqual([
        {
          account: DEFAULT_ACCOUNT,
          strategy: ODD,
          quotesSeen: 4,
          averageQuotedPrice: averageQuoted.toFixed(),
          averageCost: oddSpent
            .dividedBy(oddBought)
            .toDecimalPlaces(6, PlainDecimal.ROUND_HALF_EVEN)
            .toFixed(),
          bought: oddBought.toFixed(),
          spent: oddSpent.toFixed(),
          plainDcaCost: plain.toFixed(),
          savings: plain.minus(oddSpent).toFixed(),
          savingsPct: plain
            .minus(oddSpent)
            .dividedBy(plain)
            .times(100)
            .toDecimalPlaces(2, PlainDecimal.ROUND_HALF_EVEN)
            .toFixed(),
        },
      ]);
    });

    it('prints the boundaries and the rounding in the table, and groups by strategy', async () => {
      const result = await runCommand(
        ['report', '--from', '2026-03-07', '--to', '2026-03-10', '--by', 'strategy'],
        env,
      );
      expect(result.code).toBe(0);
      expect(result.stdout).toContain(
        '2026-03-07 00:00 America/New_York (2026-03-07T05:00:00.000Z) (inclusive)',
      );
      expect(result.stdout).toContain(
        '2026-03-10 00:00 America/New_York (2026-03-10T04:00:00.000Z) (exclusive)',
      );
      expect(result.stdout).toContain('rounded half-even to 6 decimals');
      expect(result.stdout).toMatch(/^default +\(external\) +1 /m);
      expect(result.stdout).toMatch(/^default +plain-dca +2 /m);

      const csv = await runCommand(
        ['report', '--from', '2026-03-07', '--to', '2026-03-10', '--by', 'strategy', '--format', 'csv'],
        env,
      );
      const rows = parse(csv.stdout, { columns: true }) as Record<string, string>[];
      expect(rows.map((row) => [row.account, row.group, row.orders])).toEqual([
        [DEFAULT_ACCOUNT, '(external)', '1'],
        [DEFAULT_ACCOUNT, ODD_SHOWN, '3'],
        [DEFAULT_ACCOUNT, DCA, '2'],
        [DEFAULT_ACCOUNT, 'total', '6'],
      ]);
    });

    it('exports one CSV row per order that a standard reader parses back exactly', async () => {
      const result = await runCommand(
        ['export', 'orders', '--from', '2026-03-07', '--to', '2026-03-10'],
        env,
      );
      expect(result.code).toBe(0);
      expect(result.stdout.charCodeAt(0)).not.toBe(0xfeff);
      expect(result.stderr).toContain('exported 6 orders');
      const rows = parse(result.stdout, { columns: true }) as Record<string, string>[];
      const expected = [...inPeriod()].sort((a, b) => a.at.localeCompare(b.at));
      expect(rows.map((row) => row.orderId)).toEqual(expected.map((order) => order.orderId));
      for (const [index, row] of rows.entries()) {
        const order = expected[index]!;
        const tracking = await client.getTracking(order.orderId);
        expect(row.account).toBe(DEFAULT_ACCOUNT);
        expect(row.strategy).toBe(order.strategy === ODD ? ODD_SHOWN : (order.strategy ?? ''));
        expect(row.origin).toBe(order.strategy === null ? 'external' : 'cycle');
        expect(row.placedAt).toBe(order.at);
        expect(row.price).toBe(order.quote.price.toFixed(4));
        expect(row.totalCost).toBe(order.quote.totalCost.toFixed(2));
        expect(row.amount).toBe('1000.00');
        expect(row.totalFilled).toBe(order.quote.totalFilled.toFixed(6));
        expect(row.status).toBe(order === placed.at(-1) ? 'paid' : 'settled');
        expect(row.transactionId).toBe(tracking.withdrawal?.transactionId ?? '');
        expect(row.strategyVersion).toBe(order.strategy === ODD ? '3' : order.strategy === DCA ? '1' : '');
        expect(row.discrepancy).toBe('false');
      }
      expect(rows.filter((row) => row.strategy === ODD_SHOWN)).toHaveLength(3);
    });

    it("narrows the ledger to one strategy's orders, or to one settlement state", async () => {
      const period = ['export', 'orders', '--from', '2026-03-07', '--to', '2026-03-10'];
      const odd = await runCommand([...period, '--strategy', ODD], env);
      expect(odd.code).toBe(0);
      const oddRows = parse(odd.stdout, { columns: true }) as Record<string, string>[];
      const expectedOdd = [...inPeriod()].filter((order) => order.strategy === ODD);
      expect(oddRows.map((row) => row.orderId).sort()).toEqual(
        expectedOdd.map((order) => order.orderId).sort(),
      );
      expect(odd.stderr).toContain(`exported 3 orders of ${JSON.stringify(ODD)},`);

      const paid = await runCommand([...period, '--status', 'paid', '--format', 'json'], env);
      expect(paid.code).toBe(0);
      const paidOrders = JSON.parse(paid.stdout).orders as { orderId: string; status: string }[];
      expect(paidOrders.map((row) => row.orderId)).toEqual([placed.at(-1)!.orderId]);
      expect(paid.stderr).toContain('exported 1 orders now paid,');

      const both = await runCommand([...period, '--strategy', ODD, '--status', 'paid'], env);
      expect(both.code).toBe(0);
      expect(parse(both.stdout, { columns: true })).toEqual([]);
    });

    it('writes the ledger to a file only once complete, with a BOM for Excel, and as JSON', async () => {
      const result = await runCommand(
        ['export', 'orders', '--from', '2026-03-07', '--to', '2026-03-10'],
        env,
      );
      const rows = parse(result.stdout, { columns: true }) as Record<string, string>[];
      const folder = await mkdtemp(join(tmpdir(), 'tb-ledger-'));
      const file = join(folder, 'ledger.csv');
      const written = await runCommand(
        ['export', 'orders', '--from', '2026-03-07', '--to', '2026-03-10', '--output', file],
        env,
      );
      expect(written.code).toBe(0);
      expect(written.stdout).toBe('');
      expect(await readFile(file, 'utf8')).toBe(result.stdout);
      expect(await readdir(folder)).toEqual(['ledger.csv']);
      const nowhere = await runCommand(
        [
          'export',
          'orders',
          '--from',
          '2026-03-07',
          '--to',
          '2026-03-10',
          '--output',
          join(folder, 'no', 'x.csv'),
        ],
        env,
      );
      expect(nowhere.code).toBe(1);
      expect(nowhere.stderr.trim().split('\n')).toHaveLength(1);
      expect(nowhere.stderr).toContain('ENOENT');

      const excel = await runCommand(
        ['export', 'orders', '--from', '2026-03-07', '--to', '2026-03-10', '--excel'],
        env,
      );
      expect(excel.stdout.charCodeAt(0)).toBe(0xfeff);
      const json = await runCommand(
        ['export', 'orders', '--from', '2026-03-07', '--to', '2026-03-10', '--format', 'json'],
        env,
      );
      // JSON is data: the name as stored.
      expect(JSON.parse(json.stdout).orders.map((row: { strategy: string }) => row.strategy)).toEqual(
        rows.map((row) => (row.strategy === ODD_SHOWN ? ODD : row.strategy || null)),
      );
    });

    it('reconciles a period where everything agrees with exit 0', async () => {
      const result = await runCommand(
        ['reconcile-report', '--from', '2026-03-07', '--to', '2026-03-10', '--json'],
        env,
      );
      const report = JSON.parse(result.stdout);
      expect(report.agrees).toBe(true);
      expect(report.accounts.map((one: { account: string }) => one.account)).toEqual([DEFAULT_ACCOUNT]);
      const [only] = report.accounts;
      expect(only.differences).toEqual([]);
      expect(result.code).toBe(0);
      expect(only.orders).toEqual({ ours: 6, service: 6, matched: 6 });
      // The last order is paid, its crypto waits at the service: both sides see it arrive.
      const paid = placed.at(-1)!;
      expect(only.balance.change.cryptoBalance).toBe(paid.quote.totalFilled.toFixed());
      expect(only.balance.expectedChange.cryptoBalance).toBe(paid.quote.totalFilled.toFixed());
    });

    it('lists an order only the service has and a settlement short by 0.01, with exit 3', async () => {
      const unknown = await buy('2026-03-10T12:00:00Z');
      const short = await buy('2026-03-10T13:00:00Z');
      await recordOurs(DCA, '2026-03-10T13:00:00Z', short.quote, short.orderId);
      for (let step = 0; step < 4; step++) {
        now += 1000;
        await sandbox.step(unknown.orderId);
        await sandbox.step(short.orderId);
      }
      await settle(short.orderId, 'settled', (received) => received.minus('0.01'));
      await snapshot('2026-03-11T03:00:00Z');

      const result = await runCommand(
        ['reconcile-report', '--from', '2026-03-10', '--to', '2026-03-11', '--json'],
        env,
      );
      expect(result.code).toBe(3);
      const report = JSON.parse(result.stdout);
      expect(
        report.accounts[0].differences
          .map((d: { account: string; kind: string; orderId: string }) => [d.account, d.kind, d.orderId])
          .sort(),
      ).toEqual(
        [
          [DEFAULT_ACCOUNT, 'fiat_received_differs', short.orderId],
          [DEFAULT_ACCOUNT, 'missing_in_records', unknown.orderId],
        ].sort(),
      );
      const human = await runCommand(['reconcile-report', '--from', '2026-03-10', '--to', '2026-03-11'], env);
      expect(human.code).toBe(3);
      expect(human.stdout).toContain('DIFFERENCES (2)');
      expect(human.stdout).toContain(`(-0.01)`);
    });

    it('refuses to reconcile against a sandbox of its own (no TREASURY_API_URL)', async () => {
      const { TREASURY_API_URL: _, ...withoutService } = env;
      const result = await runCommand(
        ['reconcile-report', '--from', '2026-03-07', '--to', '2026-03-10'],
        withoutService,
      );
      expect(result.code).toBe(1);
      expect(result.stderr.trim()).toBe(
        'treasury-bot: INVALID_ARGUMENT: reconcile-report compares our records with the purchase service: set TREASURY_API_URL',
      );
    });

    it.each([
      [['report', '--from', '2026-02-30', '--to', '2026-03-10'], '--from must be a date'],
      [['report', '--from', 'yesterday', '--to', '2026-03-10'], '--from must be a date'],
      [['report', '--from', '2026-03-10', '--to', '2026-03-07'], '--from must be before --to'],
      [
        ['report', '--from', '2026-03-07', '--to', '2026-03-10', '--by', 'year'],
        '--by must be one of day, week, month, strategy',
      ],
      [
        ['report', '--from', '2026-03-07', '--to', '2026-03-10', '--tz', 'Mars/Olympus'],
        '--tz must be an IANA time zone',
      ],
      [['export', 'orders', '--from', '2026-03-07', '--to', '2026-03-07'], '--from must be before --to'],
      [
        ['export', 'orders', '--from', '2026-03-07', '--to', '2026-03-10', '--format', 'xml'],
        '--format must be one of csv, json',
      ],
      [
        ['export', 'orders', '--from', '2026-03-07', '--to', '2026-03-10', '--status', 'cleared'],
        '--status must be one of pending, partial, paid, withdrawn, settled',
      ],
      [
        ['export', 'orders', '--from', '2026-03-07', '--to', '2026-03-10', '--strategy', 'plain-dac'],
        '--strategy: no strategy named "plain-dac" is recorded',
      ],
      [['reconcile-report', '--from', '2026-13-01', '--to', '2026-03-10'], '--from must be a date'],
    ])('refuses %j with one line and exit 1', async (args, message) => {
      const result = await runCommand(args, env);
      expect(result.code).toBe(1);
      expect(result.stdout).toBe('');
      const lines = result.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain(`INVALID_ARGUMENT: ${message}`);
    });
  },
);
