/**
 * Quotes and orders travel on a pool of their own: with every connection of the general pool held by a
 * slow call (tracking, reconciliation), an order must still leave within its quote's window.
 */

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPurchaseClient, type PurchaseClient } from '../../src/api/index.js';
import { EVERY_ACCOUNT } from '../../src/db/index.js';
import { recordStrategiesSeen, runCycle } from '../../src/engine/index.js';
import { DEMO_TOKEN } from '../../src/sandbox/index.js';
import { type EngineBench, onClient, startEngineBench, strategy } from './support/harness.js';

describe('the trading pool', () => {
  let bench: EngineBench;
  let busyClient: PurchaseClient;

  beforeAll(async () => {
    bench = await startEngineBench();
    // The general pool: one connection, which a slow tracking read holds for longer than a quote lives.
    busyClient = createPurchaseClient({
      baseUrl: bench.sandbox.url,
      token: DEMO_TOKEN,
      connections: 1,
      onRequest: (event) => bench.onRequest?.(event),
    });
  });
  afterAll(async () => {
    await busyClient.close();
    await bench.close();
  });

  it('sends the order at once while the general pool is held by a slow call', async () => {
    const placed = await bench.client.getQuote({ symbol: 'USDTBRL', amount: strategy().amount });
    const order = await bench.client.createOrder({
      quoteId: placed.quoteId,
      fxRate: placed.price.toFixed(4),
    });
    bench.sandbox.setFaults({ tracking: { latencyMs: 6_000 } });
    const context = onClient(bench.context, busyClient, bench.client);
    let slowRead: Promise<unknown> | undefined;
    bench.onRequest = (event) => {
      // The moment the quote arrives, the general pool's only connection is taken.
      if (event.operation === 'getQuote')
        slowRead ??= busyClient.getTracking(order.id).catch(() => undefined);
    };
    const pooled = strategy({ name: 'separate-pool' });
    await recordStrategiesSeen(context, [pooled]);
    const report = await runCycle(context, {
      strategy: pooled,
      slot: new Date('2031-03-01T00:00:00Z'),
      trigger: 'once',
    });
    bench.onRequest = undefined;
    bench.sandbox.setFaults({});
    await slowRead;

    expect(report.outcome).toBe('placed');
    const cycle = (await bench.database.cycles.listRecent(EVERY_ACCOUNT, { limit: 1 }))[0]!;
    expect(cycle.attempts).toBe(1);
    const quote = (await bench.database.quotes.forCycle(cycle.id))[0]!;
    expect(cycle.submittedAt!.getTime()).toBeLessThan(quote.deadlineAt.getTime());
  });
});
