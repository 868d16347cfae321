import { request } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { SettlementEvent, SettlementSource, SettlementStatus } from '../../src/db/index.js';
import { Decimal } from '../../src/money.js';
import {
  createTracker,
  createWebhookBackfill,
  createWebhookReceiver,
  registerWebhooks,
  type Tracker,
  WANTED_EVENT_KINDS,
  type WebhookReceiver,
} from '../../src/tracking/index.js';
import { startReceiver } from '../sandbox/receiver.js';
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

  /** The receiver's path at the sandbox, as `run` registers it. */
  const register = () =>
    registerWebhooks(
      [{ name: bench.account, client: bench.client, webhookSecret: SECRET }],
      { webhook: { publicUrl: http.url } },
      bench.logger,
    );
  const install = (poll: Record<string, unknown>) => {
    tracker = createTracker({ ...bench, settings: bench.settings({ poll }) });
    return tracker;
  };

  beforeAll(async () => {
    bench = await startBench();
    receiver = createWebhookReceiver({
      ...bench,
      accounts: [
        {
          name: bench.account,
          secret: SECRET,
          tracker: { nudge: (id: string, source?: SettlementSource) => tracker!.nudge(id, source) },
        },
      ],
      settings: bench.settings(),
    });
    http = await startHttp((app) => receiver.register(app));
    expect(await register()).toEqual([{ account: 'default', attempted: true, verified: true, problems: [] }]);
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

  it('follows an order by polling and webhooks together, every event redelivered newest first', async () => {
    const tracker = install({ intervalMs: 5, minDelayMs: 1, maxDelayMs: 5, maxRequestsPerSecond: 500 });
    tracker.start();
    const { serviceOrderId, order } = await bench.placeOrder();
    for (const expected of ['partial', 'paid', 'withdrawn', 'settled'] as const) {
      await bench.sandbox.step(serviceOrderId);
      await vi.waitFor(
        async () => expect((await bench.database.orders.get(order!.id))?.status).toBe(expected),
        { timeout: 5_000, interval: 5 },
      );
    }
    // Every event the service delivered for this order, once more, newest first. Polling can settle the
    // order before the service has logged its last delivery, so the log is awaited, not read once.
    const payloads = await vi.waitFor(
      async () => {
        const { data: logs } = await bench.client.getAllWebhookLogs({ pageSize: 100 });
        const delivered = logs
          .filter((entry) => entry.success && JSON.stringify(entry.payload).includes(serviceOrderId))
          .map((entry) => entry.payload);
        expect(delivered.length).toBeGreaterThanOrEqual(5);
        return delivered;
      },
      { timeout: 5_000, interval: 5 },
    );
    for (const payload of payloads) {
      const response = await request(`${http.url}/webhooks/${SECRET}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(payload),
      });
      expect(((await response.body.json()) as { result: string }).result).toBe('duplicate');
    }
    await receiver.idle();

    const history = await bench.database.orders.history(order!.id);
    expectForwardOnly(history);
    const changes = history.filter((event) => event.fromStatus !== event.toStatus);
    expect(changes.map((event) => event.toStatus)).toEqual([
      'pending',
      'partial',
      'paid',
      'withdrawn',
      'settled',
    ]);
    const sources = new Set(history.slice(1).map((event) => event.source));
    expect([...sources].every((source) => source === 'poll' || source === 'webhook')).toBe(true);
  });

  it('records a forward-only history from duplicated and out-of-order deliveries, in an order the test chooses', async () => {
    const tracker = install({ enabled: false });
    tracker.start();
    // The sandbox's deliveries are held at a stand-in endpoint; the test then delivers them itself.
    const held = await startReceiver();
    for (const methodId of WANTED_EVENT_KINDS)
      await bench.client.setWebhookConfig({ url: held.url, methodId, active: true });
    try {
      const { serviceOrderId, order } = await bench.placeOrder();
      let heldSoFar = 0;
      /** The next event the sandbox emitted (one per step, each awaited before the next step). */
      const nextEvent = async (kind: string) => {
        await held.waitFor(heldSoFar + 1);
        const { body } = held.received[heldSoFar++]!;
        expect(body.event).toBe(kind);
        expect(JSON.stringify(body.data)).toContain(serviceOrderId);
        return body;
      };
      const advance = async (kind: string) => {
        await bench.sandbox.step(serviceOrderId);
        return nextEvent(kind);
      };
      const deliver = async (payload: unknown) => {
        const response = await request(`${http.url}/webhooks/${SECRET}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(payload),
        });
        expect(response.statusCode).toBe(200);
        const { result } = (await response.body.json()) as { result: string };
        // The event's processing (a tracking check, or nothing) is over before the next delivery.
        await receiver.idle();
        return result;
      };
      const status = async () => (await bench.database.orders.get(order!.id))?.status;
      const trackingChecks = () => bench.requests.filter((event) => event.operation === 'getTracking').length;
      const checksBefore = trackingChecks();

      const created = await nextEvent('order');
      const partial = await advance('deposit_fiat');
      const paid = await advance('deposit_fiat');
      // The newer deposit first; the order event and the older deposit are held back.
      expect(await deliver(paid)).toBe('stored');
      expect(await status()).toBe('paid');
      expect(await deliver(paid)).toBe('duplicate');
      expect(await deliver(created)).toBe('stored');
      expect(await deliver(paid)).toBe('duplicate');
      expect(await status()).toBe('paid');

      const withdrawn = await advance('withdrawal_crypto');
      expect(await deliver(withdrawn)).toBe('stored');
      expect(await deliver(withdrawn)).toBe('duplicate');
      expect(await status()).toBe('withdrawn');

      const settled = await advance('withdrawal_crypto');
      // The first deposit, held back until the order settled, arrives now: a hint only, so the check it
      // triggers finds the order settled at the service and records that, not the deposit it describes.
      expect(await deliver(partial)).toBe('stored');
      expect(await status()).toBe('settled');
      expect(await deliver(settled)).toBe('stored');
      // Every event once more, newest first, as a service that redelivers everything would.
      for (const payload of [settled, withdrawn, paid, partial, created])
        expect(await deliver(payload)).toBe('duplicate');
      // A late, never-seen deposit event for the settled order: stored, and it moves nothing back.
      expect(
        await deliver({
          event: 'deposit_fiat',
          data: { orderId: serviceOrderId, amount: 1, currency: 'BRL', receivedAt: '2026-01-01T00:00:00Z' },
        }),
      ).toBe('stored');

      // One tracking check per new event while the order was open (paid, created, withdrawn, partial); none
      // for a duplicate, none once the order was settled.
      expect(trackingChecks() - checksBefore).toBe(4);
      const history = await bench.database.orders.history(order!.id);
      expect(history.map(({ source, fromStatus, toStatus }) => ({ source, fromStatus, toStatus }))).toEqual([
        { source: 'create', fromStatus: null, toStatus: 'pending' },
        { source: 'webhook', fromStatus: 'pending', toStatus: 'paid' },
        { source: 'webhook', fromStatus: 'paid', toStatus: 'withdrawn' },
        { source: 'webhook', fromStatus: 'withdrawn', toStatus: 'settled' },
      ]);
      expectForwardOnly(history);
      const recorded = history.map((event) => event.recordedAt.getTime());
      expect(recorded).toEqual([...recorded].sort((a, b) => a - b));
      // Each step as the service reported it, not as the event said: `paid` with the whole amount received,
      // though the deposit event that brought it named only the second half.
      const atService = bench.sandbox.ledger().find((entry) => entry.id === serviceOrderId)!;
      expect(history[1]!.receivedAmount?.toFixed()).toBe(new Decimal(atService.totalCost).toFixed());
      expect(new Decimal(String(paid.data.amount)).lessThan(atService.totalCost)).toBe(true);
      expect(history.at(-1)!.withdrawal).toMatchObject({ status: 'confirmed' });
    } finally {
      await held.close();
      await register();
    }
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
      await register();
    }
  });
});
