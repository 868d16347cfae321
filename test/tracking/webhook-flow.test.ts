import { request } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { SettlementEvent, SettlementStatus } from '../../src/db/index.js';
import {
  createTracker,
  createWebhookBackfill,
  createWebhookReceiver,
  registerWebhooks,
  type Tracker,
  type WebhookReceiver,
} from '../../src/tracking/index.js';
import { type Bench, SECRET, startBench, startHttp } from './support/harness.js';

const RANK: Record<SettlementStatus, number> = { pending: 0, partial: 1, paid: 2, withdrawn: 3, settled: 4 };

function expectForwardOnly(history: SettlementEvent[]) {
  expect(history.every((event) => event.anomaly === null)).toBe(true);
  const ranks = history.map((event) => RANK[event.toStatus]);
  expect(ranks).toEqual([...ranks].sort((a, b) => a - b));
}

describe('following orders through webhooks', () => {
  let bench: Bench;
  let http: Awaited<ReturnType<typeof startHttp>>;
  let receiver: WebhookReceiver;
  /** Each test brings its own tracker (polling on or off); the one receiver nudges whichever is current. */
  let tracker: Tracker | undefined;

  const install = (poll: Record<string, unknown>) => {
    tracker = createTracker({ ...bench, settings: bench.settings({ poll }) });
    return tracker;
  };

  beforeAll(async () => {
    bench = await startBench();
    receiver = createWebhookReceiver({
      ...bench,
      tracker: { nudge: (id, source) => tracker!.nudge(id, source) },
      secret: SECRET,
      settings: bench.settings(),
    });
    http = await startHttp(bench, (app) => receiver.register(app));
    const registered = await registerWebhooks(
      bench.client,
      { webhook: { publicUrl: http.url, secret: SECRET } },
      bench.logger,
    );
    expect(registered).toEqual({ attempted: true, verified: true, problems: [] });
  });
  afterEach(async () => {
    await receiver.idle();
    await tracker?.stop();
  });
  afterAll(async () => {
    await http.app.close();
    await receiver.stop();
    await bench.close();
  });

  it('follows an order to settled by webhooks alone (polling off)', async () => {
    const tracker = install({ enabled: false });
    tracker.start();
    const { serviceOrderId, order } = await bench.placeOrder();
    const requestsBefore = bench.requests.filter((event) => event.operation === 'getTracking').length;
    for (const expected of ['partial', 'paid', 'withdrawn', 'settled'] as const) {
      await bench.sandbox.step(serviceOrderId);
      await vi.waitFor(
        async () => expect((await bench.database.orders.get(order!.id))?.status).toBe(expected),
        {
          timeout: 5_000,
          interval: 5,
        },
      );
    }
    const history = await bench.database.orders.history(order!.id);
    expect(history[0]!.source).toBe('create');
    expect(new Set(history.slice(1).map((event) => event.source))).toEqual(new Set(['webhook']));
    const statuses = history.map((event) => event.toStatus).filter((s, i, all) => s !== all[i - 1]);
    expect(statuses).toEqual(['pending', 'partial', 'paid', 'withdrawn', 'settled']);
    expectForwardOnly(history);
    expect(history.at(-1)!.withdrawal).toMatchObject({ status: 'confirmed' });
    // Only nudges fetched tracking: at most one per delivered event (order, 2 deposits, 2 withdrawals).
    const fetched =
      bench.requests.filter((event) => event.operation === 'getTracking').length - requestsBefore;
    expect(fetched).toBeGreaterThanOrEqual(4);
    expect(fetched).toBeLessThanOrEqual(5);
  });

  it('follows an order by polling and webhooks together, through duplicated and out-of-order events', async () => {
    const tracker = install({ intervalMs: 5, minDelayMs: 1, maxDelayMs: 20, maxRequestsPerSecond: 500 });
    tracker.start();
    const { serviceOrderId, order } = await bench.placeOrder();
    // Four steps at once: their events race each other and the poller.
    for (let i = 0; i < 4; i++) await bench.sandbox.step(serviceOrderId);
    await vi.waitFor(
      async () => expect((await bench.database.orders.get(order!.id))?.status).toBe('settled'),
      {
        timeout: 5_000,
        interval: 5,
      },
    );
    await vi.waitFor(async () => {
      const logs = await bench.client.getAllWebhookLogs({ pageSize: 100 });
      const ours = logs.data.filter((entry) => JSON.stringify(entry.payload).includes(serviceOrderId));
      expect(ours.filter((entry) => entry.success)).toHaveLength(5);
    });
    await receiver.idle();
    const settledHistory = await bench.database.orders.history(order!.id);

    // The service redelivers everything, newest first: each one is a duplicate and changes nothing.
    const logs = await bench.client.getAllWebhookLogs({ pageSize: 100 });
    const ours = logs.data.filter((entry) => JSON.stringify(entry.payload).includes(serviceOrderId));
    for (const entry of ours) {
      const response = await request(`${http.url}/webhooks/${SECRET}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(entry.payload),
      });
      expect(await response.body.json()).toEqual({ result: 'duplicate' });
    }
    // A late, never-seen deposit event for the settled order: stored, and it moves nothing back.
    const late = {
      event: 'deposit_fiat',
      data: { orderId: serviceOrderId, amount: 1, currency: 'BRL', receivedAt: '2026-01-01T00:00:00Z' },
    };
    const response = await request(`${http.url}/webhooks/${SECRET}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(late),
    });
    expect(await response.body.json()).toEqual({ result: 'stored' });
    await receiver.idle();

    const history = await bench.database.orders.history(order!.id);
    expect(history).toEqual(settledHistory);
    expectForwardOnly(history);
    expect(history.at(-1)).toMatchObject({ toStatus: 'settled' });
  });

  it('backfills orders whose deliveries failed, from the service webhook logs', async () => {
    const tracker = install({ enabled: false });
    // Deliveries now go to a path with the wrong secret: every attempt is refused with 401.
    await bench.client.setWebhookConfig({
      url: `${http.url}/webhooks/not-the-secret-at-all`,
      methodId: 'deposit_fiat',
      active: true,
    });
    try {
      const { serviceOrderId, order } = await bench.placeOrder();
      await bench.sandbox.step(serviceOrderId);
      await bench.sandbox.step(serviceOrderId);
      const failedAttempts = async () => {
        const logs = await bench.client.getAllWebhookLogs({ pageSize: 100 });
        return logs.data.filter(
          (entry) => !entry.success && JSON.stringify(entry.payload).includes(serviceOrderId),
        );
      };
      // The order event and two deposit events, each tried three times (one attempt and two retries).
      await vi.waitFor(async () => expect(await failedAttempts()).toHaveLength(9));
      expect((await bench.database.orders.get(order!.id))?.status).toBe('pending');

      const backfill = createWebhookBackfill({ ...bench, tracker, settings: bench.settings().backfill });
      const report = await backfill.runOnce();
      expect(report.nudged).toEqual([{ orderId: serviceOrderId, outcome: 'checked' }]);
      expect(await bench.database.orders.get(order!.id)).toMatchObject({ status: 'paid' });
      const history = await bench.database.orders.history(order!.id);
      expect(history.at(-1)).toMatchObject({ source: 'webhook', toStatus: 'paid' });
      // Handled once: the next pass nudges nothing more for those events.
      expect((await backfill.runOnce()).nudged).toEqual([]);
    } finally {
      await registerWebhooks(
        bench.client,
        { webhook: { publicUrl: http.url, secret: SECRET } },
        bench.logger,
      );
    }
  });
});
