import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createPurchaseClient } from '../../src/api/index.js';
import { createTracker, createTracking } from '../../src/tracking/index.js';
import { type Bench, SECRET, startBench, startHttp } from './support/harness.js';

/**
 * Stopping tracking while work is under way: the stop waits neither for queued deliveries' turns at the
 * rate limit nor for a tracking request the service is slow to answer, and loses nothing.
 */
describe('stopping tracking with work under way', () => {
  let bench: Bench;
  beforeAll(async () => {
    bench = await startBench();
  });
  afterAll(() => bench.close());

  it('ends at once and leaves the unprocessed events pending', async () => {
    const tracking = createTracking({
      ...bench,
      accounts: [{ name: bench.account, client: bench.client, webhookSecret: SECRET }],
      settings: {
        tracking: bench.settings({ poll: { enabled: false, maxRequestsPerSecond: 0.5 } }),
        engine: { databaseTimeoutMs: bench.databaseTimeoutMs },
      },
    });
    const http = await startHttp((app) => tracking.registerRoutes(app));
    tracking.start();
    try {
      const orders: string[] = [];
      for (let i = 0; i < 4; i++) orders.push((await bench.placeOrder()).serviceOrderId);
      const trackingCalls = () => bench.requests.filter((event) => event.operation === 'getTracking').length;
      const before = trackingCalls();
      for (const orderId of orders) {
        const response = await request(`${http.url}/webhooks/${SECRET}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            event: 'deposit_fiat',
            data: { orderId, amount: 1, currency: 'BRL', receivedAt: '2026-03-02T12:00:00Z' },
          }),
        });
        expect(response.statusCode).toBe(200);
        await response.body.dump();
      }
      // One token at start, then one every 2 s: the first nudge runs, the other three wait their turn.
      await vi.waitFor(() => expect(trackingCalls()).toBe(before + 1));

      const began = performance.now();
      await tracking.stop();
      expect(performance.now() - began).toBeLessThan(1_500);
      expect(trackingCalls()).toBe(before + 1);
      const pending = (await bench.database.webhookEvents.listToRetry(bench.account, new Date(0))).filter(
        (event) => event.status === 'pending' && orders.includes(event.serviceOrderId ?? ''),
      );
      expect(pending).toHaveLength(3);
    } finally {
      await tracking.stop();
      await http.app.close();
    }
  });

  it('cuts short a tracking request in flight, without counting it as a failure of the order', async () => {
    const service = await startSilentService();
    const client = createPurchaseClient({
      baseUrl: service.url,
      token: 'silent-token',
      retry: { maxAttempts: 1 },
    });
    const tracker = createTracker({
      ...bench,
      client,
      settings: bench.settings({ poll: { enabled: false } }),
    });
    try {
      tracker.start();
      const { order } = await bench.placeOrder();
      const linesBefore = bench.lines.length;
      const nudged = tracker.nudge(order!.serviceOrderId);
      await service.arrived;

      const began = performance.now();
      await tracker.stop();
      expect(performance.now() - began).toBeLessThan(1_000);
      expect(await nudged).toBe('failed');
      expect(bench.lines.slice(linesBefore).join('\n')).not.toContain('tracking check failed');
    } finally {
      await tracker.stop();
      await client.close();
      await service.close();
    }
  });
});

/** A stand-in service that takes requests and never answers them; `arrived` resolves on the first. */
async function startSilentService() {
  let arrive = () => {};
  const arrived = new Promise<void>((resolve) => {
    arrive = resolve;
  });
  const server = createServer(() => arrive());
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    arrived,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
