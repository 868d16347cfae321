import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { credentialFingerprint, type SandboxRequestRecord } from '../../src/sandbox/index.js';
import {
  createTracking,
  registerWebhooks,
  type TrackedAccount,
  type Tracking,
} from '../../src/tracking/index.js';
import { testBackends } from '../support/database.js';
import { type Bench, logged, startBench, startHttp } from './support/harness.js';

/**
 * Tracking of several accounts at one sandbox (one ledger, token and webhook configuration per account):
 * each account's orders are checked at its own service with its own token, each path takes its own
 * account's secret only, and an event is its account's alone.
 */
const ACCOUNTS = [
  { name: 'default', token: 'tok-default-7Hq2', secret: 'whsec-default-Yc4n8Rk2Lp0v' },
  { name: 'north', token: 'tok-north-3Jw9', secret: 'whsec-north-Tz6m1Qa5Xe8b', creditLimit: '250000.00' },
  { name: 'south', token: 'tok-south-5Fd1', secret: 'whsec-south-Nv3k7Gu0Hs2d', creditLimit: '400000.00' },
] as const;
type AccountName = (typeof ACCOUNTS)[number]['name'];
const account = (name: AccountName) => ACCOUNTS.find((each) => each.name === name)!;
const fingerprint = (name: AccountName) => credentialFingerprint(account(name).token);

describe.each(testBackends())('tracking several accounts on %s', (backend) => {
  let bench: Bench;
  let tracking: Tracking;
  let http: Awaited<ReturnType<typeof startHttp>>;
  let tracked: TrackedAccount[];
  const answers: string[] = [];

  const post = async (path: string, body: unknown) => {
    const response = await request(`${http.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const text = await response.body.text();
    answers.push(text);
    return { status: response.statusCode, body: JSON.parse(text) as Record<string, unknown> };
  };
  const deposit = (orderId: string) => ({
    event: 'deposit_fiat',
    data: { orderId, amount: 500, currency: 'BRL', receivedAt: '2026-03-02T12:00:00.000Z' },
  });
  /** The sandbox's requests from here on, read when called. */
  const requestsFrom = () => {
    const start = bench.sandbox.requests().length;
    return () => bench.sandbox.requests().slice(start);
  };
  const trackingCalls = (records: SandboxRequestRecord[], orderId: string) =>
    records.filter((record) => record.path === `/client/orders/${orderId}/tracking`);
  const storedEvents = (orderId: string) =>
    bench.database.withReservedConnection((connection) =>
      connection.query('select account, status from webhook_events where service_order_id = $1 order by id', [
        orderId,
      ]),
    );
  const rejected = async (name: string) =>
    (await bench.metrics.webhookEvents.get()).values.find(
      ({ labels }) => labels.account === name && labels.kind === 'unknown' && labels.result === 'rejected',
    )?.value ?? 0;
  const statusOf = async (id: number) => (await bench.database.orders.get(id))?.status;

  beforeAll(async () => {
    bench = await startBench(
      { accounts: ACCOUNTS.map(({ name, token, ...rest }) => ({ name, token, ...rest })) },
      backend,
    );
    tracked = ACCOUNTS.map(({ name, secret }) => ({
      name,
      client: bench.clients.get(name)!,
      webhookSecret: secret,
    }));
    tracking = createTracking({
      ...bench,
      accounts: tracked,
      settings: {
        // Nothing runs on its own: each test polls, snapshots and delivers itself.
        tracking: bench.settings({
          poll: { enabled: false },
          backfill: { enabled: false },
          balance: { enabled: false },
        }),
        engine: { databaseTimeoutMs: bench.databaseTimeoutMs },
      },
    });
    http = await startHttp((app) => tracking.registerRoutes(app));
    tracking.start();
  });
  afterAll(async () => {
    await http.app.close();
    await tracking.stop();
    await bench.close();
  });

  it("checks each account's orders at its own service, with its own token only", async () => {
    const north = (await bench.placeOrder({ account: 'north' })).order!;
    const south = (await bench.placeOrder({ account: 'south' })).order!;
    for (const order of [north, south]) {
      await bench.sandbox.step(order.serviceOrderId);
      await bench.sandbox.step(order.serviceOrderId);
    }
    const since = requestsFrom();
    const trackerOf = (name: AccountName) => tracking.accounts.get(name)!.tracker;
    expect(await trackerOf('default').pollOnce()).toBe(0);
    expect(await trackerOf('north').pollOnce()).toBe(1);
    expect(await trackerOf('south').pollOnce()).toBe(1);
    expect(await statusOf(north.id)).toBe('paid');
    expect(await statusOf(south.id)).toBe('paid');

    const seen = since();
    for (const [order, name] of [
      [north, 'north'],
      [south, 'south'],
    ] as const) {
      const calls = trackingCalls(seen, order.serviceOrderId);
      expect(calls).toHaveLength(1);
      expect(calls[0]).toMatchObject({ account: name, credential: fingerprint(name) });
    }
    // Nothing else went out: no tracking request of one account carried another's token.
    expect(seen).toHaveLength(2);

    // The survey counts per account; an account without orders shows zero.
    await tracking.survey();
    const open = (await bench.metrics.openOrders.get()).values;
    const paid = (name: string) =>
      open.find(({ labels }) => labels.account === name && labels.status === 'paid')?.value;
    expect([paid('default'), paid('north'), paid('south')]).toEqual([0, 1, 1]);
  });

  it('records a balance snapshot per account, each read with its own token', async () => {
    const since = requestsFrom();
    for (const { name } of ACCOUNTS) await tracking.accounts.get(name)!.balances.takeSnapshot();
    const seen = since();
    expect(seen.map(({ path, account, credential }) => ({ path, account, credential }))).toEqual(
      ACCOUNTS.map(({ name }) => ({ path: '/client/balance', account: name, credential: fingerprint(name) })),
    );
    const totals = await Promise.all(
      ACCOUNTS.map(async ({ name }) => (await bench.database.balances.latest(name))?.credit.total.toFixed()),
    );
    expect(totals).toEqual(['1000000', '250000', '400000']);
    for (const { name } of ACCOUNTS) {
      const stored = await bench.database.balances.latest(name);
      const live = await bench.clients.get(name)!.getBalance();
      expect(stored).toMatchObject({ account: name });
      expect(stored!.credit.used.eq(live.credit.used)).toBe(true);
      expect(stored!.fiat.balance.eq(live.fiat.balance)).toBe(true);
    }

    const credit = (await bench.metrics.credit.get()).values;
    const total = (name: string) =>
      credit.find(({ labels }) => labels.account === name && labels.kind === 'total')?.value;
    expect([total('default'), total('north'), total('south')]).toEqual([1_000_000, 250_000, 400_000]);
  });

  it("refuses a delivery carrying another account's secret, and it changes nothing", async () => {
    const { serviceOrderId, order } = await bench.placeOrder({ account: 'south' });
    await bench.sandbox.step(serviceOrderId);
    const event = deposit(serviceOrderId);
    const before = { default: await rejected('default'), south: await rejected('south') };
    const since = requestsFrom();

    for (const path of [
      `/webhooks/south/${account('north').secret}`,
      `/webhooks/south/${account('default').secret}`,
      // South's secret on the default account's path, and on north's.
      `/webhooks/${account('south').secret}`,
      `/webhooks/north/${account('south').secret}`,
      // `default` has the one-segment path only; an account we do not have has none.
      `/webhooks/default/${account('default').secret}`,
      `/webhooks/elsewhere/${account('south').secret}`,
    ])
      expect(await post(path, event), path).toEqual({ status: 401, body: { error: 'unauthorized' } });
    await tracking.receiver!.idle();

    expect(await storedEvents(serviceOrderId)).toEqual([]);
    expect(await statusOf(order!.id)).toBe('pending');
    expect(await bench.database.orders.history(order!.id)).toHaveLength(1);
    expect(since()).toEqual([]);
    // Counted under the account the path names, when it is one of ours.
    expect((await rejected('south')) - before.south).toBe(2);
    expect((await rejected('default')) - before.default).toBe(1);

    // The same delivery with south's secret on south's path is taken: the refusals were about the secret.
    expect(await post(`/webhooks/south/${account('south').secret}`, event)).toEqual({
      status: 200,
      body: { result: 'stored' },
    });
    await tracking.receiver!.idle();
    expect(await storedEvents(serviceOrderId)).toEqual([{ account: 'south', status: 'processed' }]);
    expect(await statusOf(order!.id)).toBe('partial');
    expect(trackingCalls(since(), serviceOrderId)).toEqual([
      expect.objectContaining({ account: 'south', credential: fingerprint('south') }),
    ]);
  });

  it("leaves another account's order alone when an event on one account's path names it", async () => {
    const { serviceOrderId, order } = await bench.placeOrder({ account: 'south' });
    await bench.sandbox.step(serviceOrderId);
    const event = deposit(serviceOrderId);
    const since = requestsFrom();

    // North's own path and secret, about an order only south has: kept as north's, for no order of north's.
    expect(await post(`/webhooks/north/${account('north').secret}`, event)).toEqual({
      status: 200,
      body: { result: 'stored' },
    });
    await tracking.receiver!.idle();
    expect(await storedEvents(serviceOrderId)).toEqual([{ account: 'north', status: 'unknown_order' }]);
    expect(await statusOf(order!.id)).toBe('pending');
    expect(await bench.database.orders.history(order!.id)).toHaveLength(1);
    expect(since()).toEqual([]);
    expect(logged(bench.lines, 'webhook event for an unknown order kept').at(-1)).toMatchObject({
      account: 'north',
      orderId: serviceOrderId,
    });
    // North's sweep looks at it again and still finds no order of north's.
    await tracking.receiver!.sweep();
    expect(since()).toEqual([]);
    expect(await statusOf(order!.id)).toBe('pending');

    // Deduplicated per account: the same event on south's path is south's, and moves south's order.
    expect(await post(`/webhooks/south/${account('south').secret}`, event)).toEqual({
      status: 200,
      body: { result: 'stored' },
    });
    await tracking.receiver!.idle();
    expect(await storedEvents(serviceOrderId)).toEqual([
      { account: 'north', status: 'unknown_order' },
      { account: 'south', status: 'processed' },
    ]);
    expect(await statusOf(order!.id)).toBe('partial');
    expect(trackingCalls(since(), serviceOrderId)).toEqual([
      expect.objectContaining({ account: 'south', credential: fingerprint('south') }),
    ]);
  });

  it('keeps every secret out of logs, metrics and answers, on both path shapes', async () => {
    const metrics = await bench.metrics.registry.metrics();
    const everything = [...bench.lines, metrics, ...answers].join('\n');
    for (const { secret } of ACCOUNTS) {
      expect(everything).not.toContain(secret);
      expect(everything).not.toContain(encodeURIComponent(secret));
    }
    const routes = new Set(
      logged(bench.lines)
        .filter((line) => 'route' in line)
        .map((line) => line.route),
    );
    expect(routes).toEqual(new Set(['/webhooks/:secret', '/webhooks/:account/:secret', '/webhooks/*']));
    // A name in the path that is no account of ours is neither logged nor a label.
    expect(everything).not.toContain('elsewhere');
  });

  it("registers each account's own path with its own client, and follows an order by its deliveries", async () => {
    const since = requestsFrom();
    const results = await registerWebhooks(tracked, { webhook: { publicUrl: http.url } }, bench.logger);
    expect(results).toEqual(
      ACCOUNTS.map(({ name }) => ({ account: name, attempted: true, verified: true, problems: [] })),
    );
    const paths = { default: '/webhooks/', north: '/webhooks/north/', south: '/webhooks/south/' };
    for (const { name, secret } of ACCOUNTS) {
      const config = await bench.clients.get(name)!.getWebhookConfig();
      expect(config.url).toBe(`${http.url}${paths[name]}${secret}`);
    }
    const configCalls = since().filter((record) => record.path === '/client/webhook/config');
    expect(configCalls.length).toBeGreaterThan(ACCOUNTS.length);
    expect(
      configCalls.every((record) => record.credential === fingerprint(record.account as AccountName)),
    ).toBe(true);
    expect(new Set(configCalls.map((record) => record.account))).toEqual(
      new Set(['default', 'north', 'south']),
    );

    // The sandbox now delivers north's events to north's path: they alone move north's order.
    const { serviceOrderId, order } = await bench.placeOrder({ account: 'north' });
    await bench.sandbox.step(serviceOrderId);
    await vi.waitFor(async () => expect(await statusOf(order!.id)).toBe('partial'), {
      timeout: 5_000,
      interval: 5,
    });
    expect((await bench.database.orders.history(order!.id)).at(-1)).toMatchObject({ source: 'webhook' });
    await vi.waitFor(async () => expect((await storedEvents(serviceOrderId)).length).toBe(2));
    await tracking.receiver!.idle();
    expect(new Set((await storedEvents(serviceOrderId)).map((row) => row.account))).toEqual(
      new Set(['north']),
    );
    expect(
      trackingCalls(since(), serviceOrderId).every((record) => record.credential === fingerprint('north')),
    ).toBe(true);
  });
});
