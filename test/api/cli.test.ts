import { execFile } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPurchaseClient, type PurchaseClient } from '../../src/api/index.js';
import { Decimal } from '../../src/money.js';
import {
  credentialFingerprint,
  DEMO_TOKEN,
  type RunningSandbox,
  startSandbox,
} from '../../src/sandbox/index.js';
import { cliInvocation } from '../support/cli.js';

const REPO_ROOT = join(import.meta.dirname, '..', '..');

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** The parent's settings must not leak into the child: only what the test sets. */
function childEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!key.startsWith('TREASURY_') && key !== 'DATABASE_URL' && key !== 'LOG_LEVEL') env[key] = value;
  }
  return { ...env, ...extra };
}

function cli(args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      ...cliInvocation(args),
      { cwd: REPO_ROOT, env: childEnv(env), timeout: 20_000 },
      (error, stdout, stderr) => {
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr });
      },
    );
  });
}

function expectOneErrorLine(run: Run, code: string): void {
  expect(run.code).toBe(1);
  expect(run.stdout).toBe('');
  const lines = run.stderr.trimEnd().split('\n');
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(new RegExp(`^treasury-bot: ${code}: `));
  expect(run.stderr).not.toMatch(/\n\s+at /);
}

describe('operator commands, spawned', () => {
  let sandbox: RunningSandbox;
  let client: PurchaseClient;
  let orderId: string;
  let env: Record<string, string>;
  beforeAll(async () => {
    sandbox = await startSandbox({ stepMs: 0, webhookRetryDelaysMs: [1] });
    env = { TREASURY_API_URL: sandbox.url, TREASURY_API_TOKEN: DEMO_TOKEN, TREASURY_API_FORMAT: 'msgpack' };
    client = createPurchaseClient({ baseUrl: sandbox.url, token: DEMO_TOKEN });
    const quote = await client.getQuote({ symbol: 'USDTBRL', amount: new Decimal('250.00') });
    orderId = (await client.createOrder({ quoteId: quote.quoteId })).id;
  });
  afterAll(async () => {
    await client.close();
    await sandbox.close();
  });

  it('quote --json prints one JSON document with decimals as text, nothing on stderr', async () => {
    const run = await cli(['quote', 'USDTBRL', '100', '--json'], env);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    const quote = JSON.parse(run.stdout);
    expect(quote).toMatchObject({
      account: 'default',
      symbol: 'USDTBRL',
      quoteId: expect.stringMatching(/^[A-Za-z0-9]{8,9}$/),
    });
    for (const field of ['price', 'totalCost', 'totalFilled']) expect(quote[field]).toMatch(/^\d+(\.\d+)?$/);
  });

  it('orders, order and tracking in JSON; balance in human form', async () => {
    const [orders, order, tracking, balance] = await Promise.all([
      cli(['orders', '--status', 'pending', '--limit', '5', '--page', '1', '--json'], env),
      cli(['order', orderId, '--json'], env),
      cli(['tracking', orderId, '--json'], env),
      cli(['balance'], env),
    ]);
    expect(JSON.parse(orders.stdout)).toMatchObject({
      data: [
        { account: 'default', id: orderId, status: 'pending', amount: '250', price: expect.any(String) },
      ],
      pagination: { page: 1, limit: 5, total: 1 },
    });
    expect(JSON.parse(order.stdout)).toMatchObject({
      account: 'default',
      id: orderId,
      status: 'pending',
      side: 'BUY',
    });
    expect(JSON.parse(tracking.stdout)).toMatchObject({
      orderId,
      settlementStatus: 'pending',
      receivedAmount: '0',
    });
    expect(balance.code).toBe(0);
    expect(balance.stdout).toMatch(/^account\s+default$/m);
    expect(balance.stdout).toMatch(/^credit\.available\s+\d/m);
    expect(balance.stdout).toMatch(/^canWithdraw\s+(true|false)$/m);
  });

  it('webhook set, get and logs', async () => {
    const set = await cli(
      [
        'webhook',
        'set',
        '--url',
        'http://127.0.0.1:9/hook',
        '--event',
        'order',
        '--active',
        'true',
        '--json',
      ],
      env,
    );
    expect(JSON.parse(set.stdout)).toMatchObject({ url: 'http://127.0.0.1:9/hook' });
    const [get, logs, allLogs] = await Promise.all([
      cli(['webhook', 'get'], env),
      cli(['webhook', 'logs', '--event', 'order', '--limit', '10', '--json'], env),
      cli(['webhook', 'logs', '--page', '2', '--limit', '5', '--json'], env),
    ]);
    expect(get.stdout).toBe('account  default\nurl      http://127.0.0.1:9/hook\nactive   order\n');
    expect(JSON.parse(logs.stdout)).toMatchObject({ data: [], pagination: { page: 1, limit: 10 } });
    // Without --event: all logs, where --limit is the pageSize of GET /client/webhook/logs.
    expect(JSON.parse(allLogs.stdout)).toMatchObject({ data: [], pagination: { page: 2, limit: 5 } });
  });

  it('API errors: one line on stderr with the code, exit 1, never the token', async () => {
    const token = 'wrong-token-7f3a9c';
    const [missing, unauthorized] = await Promise.all([
      cli(['order', 'no-such-order', '--json'], env),
      cli(['balance', '--json'], { ...env, TREASURY_API_TOKEN: token }),
    ]);
    expectOneErrorLine(missing, 'API_NOT_FOUND');
    expectOneErrorLine(unauthorized, 'API_UNAUTHORIZED');
    expect(unauthorized.stderr).not.toContain(token);
  });

  it('bad arguments and bad settings: one clear line, exit 1, nothing sent', async () => {
    const before = sandbox.ledger().length;
    const [amount, limit, settings] = await Promise.all([
      cli(['quote', 'USDTBRL', '1,5'], env),
      cli(['webhook', 'logs', '--event', 'order', '--limit', '101'], env),
      cli(['balance'], { ...env, TREASURY_API_FORMAT: 'xml' }),
    ]);
    expectOneErrorLine(amount, 'INVALID_ARGUMENT');
    expect(amount.stderr).toContain('AMOUNT must be a positive decimal like 2500.00 (got "1,5")');
    expectOneErrorLine(limit, 'INVALID_ARGUMENT');
    expect(limit.stderr).toContain('--limit must be a whole number from 1 to 100 (got "101")');
    expectOneErrorLine(settings, 'SETTINGS_INVALID');
    expect(settings.stderr).toContain('env TREASURY_API_FORMAT: api.format');
    expect(sandbox.ledger()).toHaveLength(before);
  });

  it('without TREASURY_API_URL starts the sandbox in-process and says so loudly on stderr', async () => {
    const run = await cli(['quote', 'USDTBRL', '100', '--json'], {});
    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(
      /^treasury-bot: DEMO MODE: no account names a service \(TREASURY_API_URL is unset\)/,
    );
    expect(JSON.parse(run.stdout)).toMatchObject({ symbol: 'USDTBRL' });
  });
});

describe('operator commands with two accounts', () => {
  const TOKENS = { northco: 'north-helper-token-1', southco: 'south-helper-token-2' } as const;
  let sandbox: RunningSandbox;
  let env: Record<string, string>;
  const orderOf: Record<string, string> = {};

  beforeAll(async () => {
    sandbox = await startSandbox({
      stepMs: 0,
      accounts: Object.entries(TOKENS).map(([name, token]) => ({ name, token })),
    });
    const folder = await mkdtemp(join(tmpdir(), 'tb-helpers-'));
    const settings = join(folder, 'settings.yaml');
    await writeFile(
      settings,
      `accounts:\n${Object.entries(TOKENS)
        .map(([name, token]) => `  - name: ${name}\n    api: { url: "${sandbox.url}", token: ${token} }\n`)
        .join('')}`,
    );
    env = { TREASURY_CONFIG: settings };
    for (const [name, token] of Object.entries(TOKENS)) {
      const client = createPurchaseClient({ baseUrl: sandbox.url, token });
      const quote = await client.getQuote({ symbol: 'USDTBRL', amount: new Decimal('100.00') });
      orderOf[name] = (await client.createOrder({ quoteId: quote.quoteId })).id;
      await client.close();
    }
  });
  afterAll(() => sandbox?.close());

  it('asks which account when there are several, and refuses one the settings do not have', async () => {
    const before = sandbox.requests().length;
    const [unnamed, unknown] = await Promise.all([
      cli(['balance'], env),
      cli(['orders', '--account', 'westco', '--json'], env),
    ]);
    expectOneErrorLine(unnamed, 'INVALID_ARGUMENT');
    expect(unnamed.stderr).toContain(
      '--account is required: the settings have several accounts (northco, southco)',
    );
    expectOneErrorLine(unknown, 'INVALID_ARGUMENT');
    expect(unknown.stderr).toContain('--account: no account named "westco" (accounts: northco, southco)');
    expect(sandbox.requests()).toHaveLength(before);
  });

  it("talks to the named account's service with that account's token only, and names it in every row", async () => {
    const before = sandbox.requests().length;
    const orders = await cli(['orders', '--account', 'southco', '--json'], env);
    expect(orders.code).toBe(0);
    const page = JSON.parse(orders.stdout) as { data: { account: string; id: string }[] };
    expect(page.data.map((row) => [row.account, row.id])).toEqual([['southco', orderOf.southco]]);
    // Northco's order is not southco's to show: its service does not have it.
    expectOneErrorLine(await cli(['order', orderOf.northco!, '--account', 'southco'], env), 'API_NOT_FOUND');
    const human = await cli(['orders', '--account', 'southco'], env);
    expect(human.stdout).toMatch(new RegExp(`^southco +${orderOf.southco} +pending`, 'm'));
    const asked = sandbox.requests().slice(before);
    expect(new Set(asked.map((request) => request.credential))).toEqual(
      new Set([credentialFingerprint(TOKENS.southco)]),
    );

    const balance = await cli(['balance', '--account', 'northco', '--json'], env);
    expect(JSON.parse(balance.stdout)).toMatchObject({
      account: 'northco',
      canWithdraw: expect.any(Boolean),
    });
    expect(sandbox.requests().at(-1)).toMatchObject({
      path: '/client/balance',
      account: 'northco',
      credential: credentialFingerprint(TOKENS.northco),
    });
  });
});
