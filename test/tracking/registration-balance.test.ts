import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createPurchaseClient } from '../../src/api/index.js';
import {
  createBalanceSnapshots,
  type RegisteringAccount,
  registerWebhooks,
  WANTED_EVENT_KINDS,
} from '../../src/tracking/index.js';
import { type Bench, logged, SECRET, startBench } from './support/harness.js';

const PUBLIC_URL = 'https://treasury.example.com/hooks/';

describe('webhook registration', () => {
  let bench: Bench;
  /** The bench's account as registration takes it: with the secret and the bench's client, unless told. */
  const account = (overrides: Partial<RegisteringAccount> = {}): RegisteringAccount => ({
    name: bench.account,
    client: bench.client,
    webhookSecret: SECRET,
    ...overrides,
  });
  beforeAll(async () => {
    bench = await startBench();
  });
  afterAll(() => bench.close());

  it('configures every wanted kind with <public>/webhooks/<secret> and verifies it', async () => {
    const result = await registerWebhooks([account()], { webhook: { publicUrl: PUBLIC_URL } }, bench.logger);
    expect(result).toEqual([{ account: 'default', attempted: true, verified: true, problems: [] }]);
    const config = await bench.client.getWebhookConfig();
    expect(config.url).toBe(`https://treasury.example.com/hooks/webhooks/${SECRET}`);
    for (const kind of WANTED_EVENT_KINDS) {
      expect(config.events.find((event) => event.methodId === kind)?.active).toBe(true);
    }
    expect(config.events.find((event) => event.methodId === 'quote')?.active).toBe(false);
    expect(logged(bench.lines, 'webhooks registered and verified')).toEqual([
      expect.objectContaining({ account: 'default', origin: 'https://treasury.example.com' }),
    ]);
  });

  it('does nothing without a public url or without a secret', async () => {
    const before = bench.requests.length;
    expect(await registerWebhooks([account()], { webhook: {} }, bench.logger)).toEqual([
      { account: 'default', attempted: false, verified: false, problems: [] },
    ]);
    expect(
      await registerWebhooks(
        [{ name: bench.account, client: bench.client }],
        { webhook: { publicUrl: PUBLIC_URL } },
        bench.logger,
      ),
    ).toEqual([{ account: 'default', attempted: false, verified: false, problems: [] }]);
    expect(bench.requests.length).toBe(before);
  });

  it('logs a clear error when the service keeps another configuration', async () => {
    // A service that accepts every POST but keeps someone else's url and only one kind.
    const server = createServer((request, response) => {
      request.resume();
      request.on('end', () => {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(
          JSON.stringify({
            url: 'https://elsewhere.example/hook',
            events: [{ methodId: 'order', active: true }],
          }),
        );
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const client = createPurchaseClient({
      baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      token: 'stand-in-service-token',
    });
    try {
      const [result] = await registerWebhooks(
        [account({ client })],
        { webhook: { publicUrl: PUBLIC_URL } },
        bench.logger,
      );
      expect(result!.verified).toBe(false);
      expect(result!.problems).toEqual([
        'the configured url is not this receiver (it differs from <publicUrl>/webhooks/<secret>)',
        'event kind deposit_fiat is not active',
        'event kind deposit_crypto is not active',
        'event kind withdrawal_fiat is not active',
        'event kind withdrawal_crypto is not active',
      ]);
      expect(
        logged(bench.lines, 'webhook registration does not match the service configuration'),
      ).toHaveLength(1);
    } finally {
      await client.close();
      server.close();
    }
  });

  it('reports a failed registration call without echoing the url', async () => {
    bench.sandbox.setFaults({ setWebhookConfig: { errorRate: 1 } });
    try {
      const result = await registerWebhooks(
        [account()],
        { webhook: { publicUrl: PUBLIC_URL } },
        bench.logger,
      );
      expect(result).toEqual([
        {
          account: 'default',
          attempted: true,
          verified: false,
          problems: ['registration call failed (API_SERVER_ERROR, HTTP 500)'],
        },
      ]);
    } finally {
      bench.sandbox.setFaults({});
    }
    expect(bench.lines.join('\n')).not.toContain(SECRET);
  });
});

describe('balance snapshots', () => {
  let bench: Bench;
  beforeAll(async () => {
    bench = await startBench({ creditLimit: '250000.00' });
  });
  afterAll(() => bench.close());

  it('stores a snapshot and exports it as gauges', async () => {
    bench.clock.set(new Date('2026-03-02T12:00:00Z'));
    await bench.placeOrder();
    const snapshots = createBalanceSnapshots({ ...bench, settings: bench.settings().balance });
    const snapshot = await snapshots.takeSnapshot();
    const stored = await bench.database.balances.latest(bench.account);
    expect(stored).toEqual(snapshot);
    expect(stored).toMatchObject({ account: 'default', takenAt: bench.clock() });
    const balance = await bench.client.getBalance();
    expect(stored!.credit.total.toFixed()).toBe('250000');
    expect(stored!.credit.used.eq(balance.credit.used)).toBe(true);
    expect(stored!.credit.used.gt(0)).toBe(true);

    const gauge = async (
      metric: { get(): Promise<{ values: { labels: Record<string, unknown>; value: number }[] }> },
      labels: Record<string, string> = {},
    ) =>
      (await metric.get()).values.find((value) =>
        Object.entries(labels).every(([k, v]) => value.labels[k] === v),
      )?.value;
    expect(await gauge(bench.metrics.credit, { account: 'default', kind: 'total' })).toBe(250_000);
    expect(await gauge(bench.metrics.credit, { kind: 'used' })).toBe(Number(balance.credit.used.toFixed()));
    expect(await gauge(bench.metrics.canWithdraw, { account: 'default' })).toBe(balance.canWithdraw ? 1 : 0);
    expect(await gauge(bench.metrics.balance, { currency: balance.fiat.currency })).toBe(
      Number(balance.fiat.balance.toFixed()),
    );

    // The periodic task takes one right at start, and stops cleanly (twice).
    const periodic = createBalanceSnapshots({ ...bench, settings: { enabled: true, intervalMs: 60_000 } });
    bench.clock.advance(1_000);
    periodic.start();
    await vi.waitFor(async () =>
      expect((await bench.database.balances.latest(bench.account))?.takenAt).toEqual(
        new Date('2026-03-02T12:00:01Z'),
      ),
    );
    await periodic.stop();
    await periodic.stop();
  });
});
