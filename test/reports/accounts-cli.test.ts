import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPurchaseClient } from '../../src/api/index.js';
import { openConsoleStore } from '../../src/db/index.js';
import { Decimal } from '../../src/money.js';
import { credentialFingerprint, type RunningSandbox, startSandbox } from '../../src/sandbox/index.js';
import { type CommandDatabase, createCommandDatabase } from '../support/database.js';
import { runCommand, writeWorkerFiles } from '../support/worker-process.js';

const TOKENS = { northco: 'north-cli-token-1', southco: 'south-cli-token-2' } as const;
type Account = keyof typeof TOKENS;
const ACCOUNTS = Object.keys(TOKENS) as Account[];

const strategiesOf = (account: Account) => `name: ${account}-dca
account: ${account}
kind: dca
symbol: USDTBRL
amount: "100.00"
schedule: "0 10 * * *"
---
name: ${account}-guarded
account: ${account}
kind: dca
symbol: USDTBRL
amount: "100.00"
schedule: "0 10 * * *"
approval:
  required: always
`;

const SLOT = '2031-03-03T10:00:00Z';
/** Orders are placed at the sandbox's time (now), skipped and parked cycles belong to SLOT: both within. */
const PERIOD = ['--from', '2020-01-01', '--to', '2100-01-01'];

/**
 * The commands of a deployment of two accounts (one sandbox serving both, each with its own token and
 * ledger), as child processes: every listed command narrows to one account with `--account`, names the
 * account in every row (table, CSV and JSON), refuses an account the settings do not have, and
 * `reconcile-report` reconciles each account against its own service.
 */
describe('commands with two accounts', { timeout: 180_000 }, () => {
  let sandbox: RunningSandbox;
  let test: CommandDatabase;
  let env: Record<string, string>;
  const placed = {} as Record<Account, string>;

  async function snapshotBalances(): Promise<void> {
    const balances = await Promise.all(
      ACCOUNTS.map(async (account) => {
        const client = createPurchaseClient({ baseUrl: sandbox.url, token: TOKENS[account] });
        try {
          return { account, balance: await client.getBalance() };
        } finally {
          await client.close();
        }
      }),
    );
    await test.use(async (database) => {
      for (const { account, balance } of balances)
        await database.balances.record({ ...balance, account, takenAt: new Date() });
    });
  }

  const run = (args: string[]) => runCommand(args, env);
  const json = async (args: string[]) => {
    const result = await run([...args, '--json']);
    expect(result.stderr, args.join(' ')).not.toContain('"level":50');
    expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(0);
    return JSON.parse(result.stdout);
  };
  const accountsOf = (rows: { account: string }[]) => [...new Set(rows.map((row) => row.account))].sort();

  // Embedded PGlite is opened by one command after another, each opening the data folder: slower than a server.
  beforeAll(async () => {
    sandbox = await startSandbox({
      stepMs: 0,
      accounts: ACCOUNTS.map((name) => ({ name, token: TOKENS[name] })),
    });
    const settings = `accounts:\n${ACCOUNTS.map(
      (name) => `  - name: ${name}\n    api: { url: "${sandbox.url}", token: ${TOKENS[name]} }\n`,
    ).join('')}engine:\n  reload:\n    watch: false\nreports:\n  timezone: UTC\n`;
    const files = await writeWorkerFiles(ACCOUNTS.map(strategiesOf).join('---\n'), settings);
    env = { ...files, LOG_LEVEL: 'warn' };
    test = await createCommandDatabase(env);
    await test.use(async (database) => {
      const { people } = openConsoleStore(database);
      for (const name of ['ana', 'bruno'])
        await people.add({ name, role: 'approver', passwordHash: 'unused' }, 'test');
    });
    await snapshotBalances();
    const once = await json(['once', '--slot', SLOT]);
    expect(
      once.cycles.map((cycle: { strategy: string; outcome: string }) => [cycle.strategy, cycle.outcome]),
    ).toEqual([
      ['northco-dca', 'placed'],
      ['northco-guarded', 'awaiting-approval'],
      ['southco-dca', 'placed'],
      ['southco-guarded', 'awaiting-approval'],
    ]);
    for (const account of ACCOUNTS) {
      const [order] = sandbox.ledger(account);
      placed[account] = order!.id;
    }
    await snapshotBalances();
    for (const account of ACCOUNTS) {
      const add = await run([
        'envelope',
        'add',
        '--strategy',
        `${account}-guarded`,
        '--max-order',
        '200.00',
        '--max-total',
        '1000.00',
        '--from',
        '2031-01-01T00:00:00Z',
        '--until',
        '2031-12-31T00:00:00Z',
        '--by',
        'ana',
      ]);
      expect(add.code, add.stderr).toBe(0);
    }
  }, 120_000);
  afterAll(async () => {
    await sandbox?.close();
    await test?.drop();
  });

  it('status: every row names its account, and --account shows one account only', async () => {
    const all = await json(['status']);
    expect(accountsOf(all.recentCycles)).toEqual(ACCOUNTS);
    expect(accountsOf(all.openOrders)).toEqual(ACCOUNTS);

    const south = await json(['status', '--account', 'southco']);
    expect(accountsOf(south.recentCycles)).toEqual(['southco']);
    expect(south.recentCycles).toHaveLength(2);
    expect(south.openOrders.map((order: { orderId: string }) => order.orderId)).toEqual([placed.southco]);

    const human = await run(['status', '--account', 'northco']);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/^account +strategy +slot +state/m);
    expect(human.stdout).toMatch(new RegExp(`^northco +${placed.northco} +pending`, 'm'));
    expect(human.stdout).not.toContain('southco');
  });

  it('approvals and envelope list: one account with --account, the account in every row', async () => {
    const parked = await json(['approvals']);
    // Listed oldest first: the two were parked in the same instant, in either order.
    const pairs = parked.map((row: { account: string; strategy: string }) => [row.account, row.strategy]);
    expect(pairs.sort()).toEqual([
      ['northco', 'northco-guarded'],
      ['southco', 'southco-guarded'],
    ]);
    const north = await json(['approvals', '--account', 'northco']);
    expect(north.map((row: { strategy: string }) => row.strategy)).toEqual(['northco-guarded']);
    const table = await run(['approvals', '--account', 'northco']);
    expect(table.stdout).toMatch(/^cycle +account +strategy/m);
    expect(table.stdout).toMatch(/^\d+ +northco +northco-guarded /m);
    expect(table.stdout).not.toContain('southco');

    const envelopes = await json(['envelope', 'list']);
    expect(accountsOf(envelopes)).toEqual(ACCOUNTS);
    const south = await json(['envelope', 'list', '--account', 'southco']);
    expect(south.map((row: { account: string; strategy: string }) => [row.account, row.strategy])).toEqual([
      ['southco', 'southco-guarded'],
    ]);
    expect((await run(['envelope', 'list', '--account', 'southco'])).stdout).toMatch(
      /^\d+ +southco +southco-guarded +pending /m,
    );
  });

  it("report: each account's figures apart, the total of the scope, --account narrowing it", async () => {
    const report = async (args: string[]) => {
      const result = await run(['report', ...PERIOD, ...args, '--format', 'json']);
      expect(result.code, result.stderr).toBe(0);
      return JSON.parse(result.stdout);
    };
    const all = await report(['--by', 'strategy']);
    expect(all.accounts).toEqual(ACCOUNTS);
    expect(
      all.groups.map((group: { account: string; group: string; orders: number; skipped: object }) => [
        group.account,
        group.group,
        group.orders,
      ]),
    ).toEqual(ACCOUNTS.map((account) => [account, `${account}-dca`, 1]));
    expect(all.total).toMatchObject({ account: null, orders: 2 });

    const north = await report(['--by', 'month', '--account', 'northco']);
    expect(north.accounts).toEqual(['northco']);
    expect(accountsOf(north.groups)).toEqual(['northco']);
    expect(north.total).toMatchObject({ account: 'northco', orders: 1 });

    const csv = await run([
      'report',
      ...PERIOD,
      '--by',
      'strategy',
      '--format',
      'csv',
      '--account',
      'southco',
    ]);
    const rows = parse(csv.stdout, { columns: true }) as Record<string, string>[];
    expect(rows.map((row) => [row.account, row.group, row.orders])).toEqual([
      ['southco', 'southco-dca', '1'],
      ['southco', 'total', '1'],
    ]);
  });

  it('export orders: the account in every row, and --account exports one account', async () => {
    const all = await run(['export', 'orders', ...PERIOD]);
    expect(all.code).toBe(0);
    const rows = parse(all.stdout, { columns: true }) as Record<string, string>[];
    expect(Object.keys(rows[0]!)[0]).toBe('account');
    expect(rows.map((row) => [row.account, row.orderId]).sort()).toEqual(
      ACCOUNTS.map((account) => [account, placed[account]]).sort(),
    );

    const south = await run(['export', 'orders', ...PERIOD, '--account', 'southco', '--format', 'json']);
    expect(south.code).toBe(0);
    expect(
      JSON.parse(south.stdout).orders.map((order: { account: string; orderId: string }) => [
        order.account,
        order.orderId,
      ]),
    ).toEqual([['southco', placed.southco]]);
    expect(south.stderr).toContain('exported 1 orders of account southco,');
  });

  it('reconcile-report reconciles each account against its own service; one --account asks only its own', async () => {
    let mark = sandbox.requests().length;
    const agreed = await run(['reconcile-report', ...PERIOD, '--json']);
    expect(agreed.code, agreed.stderr).toBe(0);
    const report = JSON.parse(agreed.stdout);
    expect(report.agrees).toBe(true);
    expect(
      report.accounts.map((one: { account: string; orders: object; differences: object[] }) => [
        one.account,
        one.orders,
        one.differences,
      ]),
    ).toEqual(ACCOUNTS.map((account) => [account, { ours: 1, service: 1, matched: 1 }, []]));
    const listings = (since: number) =>
      sandbox
        .requests()
        .slice(since)
        .filter((request) => request.path === '/client/orders');
    expect(new Set(listings(mark).map((request) => `${request.account} ${request.credential}`))).toEqual(
      new Set(ACCOUNTS.map((account) => `${account} ${credentialFingerprint(TOKENS[account])}`)),
    );

    mark = sandbox.requests().length;
    const north = await run(['reconcile-report', ...PERIOD, '--account', 'northco', '--json']);
    expect(north.code).toBe(0);
    expect(JSON.parse(north.stdout).accounts.map((one: { account: string }) => one.account)).toEqual([
      'northco',
    ]);
    expect(
      new Set(
        sandbox
          .requests()
          .slice(mark)
          .map((request) => request.credential),
      ),
    ).toEqual(new Set([credentialFingerprint(TOKENS.northco)]));

    // An order at southco's service that no record of ours has: southco's difference, not northco's.
    const south = createPurchaseClient({ baseUrl: sandbox.url, token: TOKENS.southco });
    const quote = await south.getQuote({ symbol: 'USDTBRL', amount: new Decimal('50.00') });
    const stray = (await south.createOrder({ quoteId: quote.quoteId })).id;
    await south.close();
    const differing = await run(['reconcile-report', ...PERIOD, '--json']);
    expect(differing.code).toBe(3);
    const [northco, southco] = JSON.parse(differing.stdout).accounts;
    expect(northco).toMatchObject({ account: 'northco', agrees: true });
    expect(
      southco.differences.map((d: { account: string; kind: string; orderId: string }) => [
        d.account,
        d.kind,
        d.orderId,
      ]),
    ).toEqual([['southco', 'missing_in_records', stray]]);
    const human = await run(['reconcile-report', ...PERIOD]);
    expect(human.code).toBe(3);
    expect(human.stdout).toContain('account northco:\n');
    expect(human.stdout).toContain(`[southco] [orders] missing_in_records: the service has order ${stray}`);
    expect(human.stdout).toContain('DIFFERENCES in 1 of 2 account(s): southco');
  });

  it('refuses an account the settings do not have, naming it and theirs, with exit 1', async () => {
    for (const args of [
      ['status'],
      ['approvals'],
      ['envelope', 'list'],
      ['report', ...PERIOD],
      ['export', 'orders', ...PERIOD],
      ['reconcile-report', ...PERIOD],
    ]) {
      const before = sandbox.requests().length;
      const refused = await run([...args, '--account', 'westco']);
      expect(refused.code, args.join(' ')).toBe(1);
      expect(refused.stdout, args.join(' ')).toBe('');
      expect(refused.stderr.trim(), args.join(' ')).toBe(
        'treasury-bot: INVALID_ARGUMENT: --account: no account named "westco" (accounts: northco, southco)',
      );
      expect(sandbox.requests()).toHaveLength(before);
    }
  });
});
