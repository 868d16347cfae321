import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPurchaseClient } from '../../src/api/index.js';
import { trackingSettingsSchema } from '../../src/config/index.js';
import { createHttpServer, listen } from '../../src/observability/http-server.js';
import { createLogger } from '../../src/observability/logger.js';
import { createMetrics, type Metrics } from '../../src/observability/metrics.js';
import { DEFAULT_ACCOUNT } from '../../src/strategy/index.js';
import {
  createTracker,
  createWebhookReceiver,
  surveyOpenOrders,
  type Tracker,
} from '../../src/tracking/index.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { parseExposition, value } from './support/prometheus.js';

const SECRET = 'dbErr-Webhook-Secret-42';

/**
 * A database that stopped answering while no cycle is due: tracking's own calls (poll claim, survey,
 * webhook store) must still show in treasury_database_errors_total.
 */
describe('database errors of tracking', () => {
  let test: TestDatabase;
  let metrics: Metrics;
  let tracker: Tracker;
  let survey: () => Promise<unknown>;
  let http: ReturnType<typeof createHttpServer>;
  let baseUrl: string;

  beforeAll(async () => {
    test = await createTestDatabase();
    metrics = createMetrics({ defaultMetrics: false });
    const logger = createLogger({
      level: 'silent',
      destination: new Writable({ write: (_c, _e, done) => done() }),
    });
    const settings = trackingSettingsSchema.parse({});
    // Never called: every check stops at the database first.
    const client = createPurchaseClient({ baseUrl: 'http://127.0.0.1:9', token: 'unused-token' });
    const databaseTimeoutMs = 5_000;
    tracker = createTracker({
      account: DEFAULT_ACCOUNT,
      database: test.database,
      client,
      metrics,
      databaseTimeoutMs,
      logger,
      settings,
    });
    const receiver = createWebhookReceiver({
      database: test.database,
      accounts: [{ name: DEFAULT_ACCOUNT, secret: SECRET, tracker }],
      metrics,
      databaseTimeoutMs,
      logger,
      settings,
    });
    survey = () =>
      surveyOpenOrders({
        database: test.database,
        metrics,
        databaseTimeoutMs,
        logger,
        stuckAfterMs: settings.stuckAfterMs,
        clock: () => new Date(),
        accounts: [DEFAULT_ACCOUNT],
      });
    http = createHttpServer({
      metrics,
      logger,
      readiness: () => ({ ready: true, paused: false, checks: {} }),
    });
    receiver.register(http);
    baseUrl = `http://127.0.0.1:${await listen(http, '127.0.0.1', 0)}`;
    await test.database.close();
  });
  afterAll(async () => {
    await http?.close();
    await test?.drop();
  });

  it('counts the failed poll claim, survey and webhook store by operation', async () => {
    await expect(tracker.pollOnce()).rejects.toThrow();
    await expect(survey()).rejects.toThrow();
    const delivery = await fetch(`${baseUrl}/webhooks/${SECRET}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        event: 'order',
        data: {
          id: 'o-1',
          amount: 100,
          symbol: 'USDTBRL',
          price: '5.40',
          side: 'BUY',
          timestamp: new Date().toISOString(),
        },
      }),
    });
    // Not stored, so not acknowledged: the service will deliver it again.
    expect(delivery.status).toBe(503);

    const scrape = parseExposition(await (await fetch(`${baseUrl}/metrics`)).text());
    for (const operation of ['tracking_claim', 'survey', 'webhook_store'])
      expect(value(scrape, 'treasury_database_errors_total', { operation }), operation).toBe(1);
    expect(
      value(scrape, 'treasury_webhook_events_total', {
        account: DEFAULT_ACCOUNT,
        kind: 'order',
        result: 'failed',
      }),
    ).toBe(1);
  });
});
