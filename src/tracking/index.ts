/**
 * Settlement tracking, as the composition root (src/app.ts) uses it: one object that owns the tracker,
 * the webhook receiver (when a secret is set), the webhook-log backfill and the balance snapshots.
 * Start it after the database and the client exist; stop it before closing them.
 */
import type { FastifyInstance } from 'fastify';
import type { PurchaseClient } from '../api/index.js';
import type { Settings } from '../config/index.js';
import type { Database } from '../db/index.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { createWebhookBackfill, type WebhookBackfill } from './backfill.js';
import { type BalanceSnapshots, createBalanceSnapshots } from './balance-snapshots.js';
import { createTracker, type Tracker } from './tracker.js';
import { createWebhookReceiver, type WebhookReceiver } from './webhook-receiver.js';

export { type BackfillReport, createWebhookBackfill, type WebhookBackfill } from './backfill.js';
export { type BalanceSnapshots, createBalanceSnapshots } from './balance-snapshots.js';
export { type RegistrationResult, registerWebhooks, WANTED_EVENT_KINDS } from './registration.js';
export { createTracker, type NudgeOutcome, type Tracker, type TrackerDeps } from './tracker.js';
export {
  createWebhookReceiver,
  REDACTED_WEBHOOK_ROUTE,
  type WebhookReceiver,
  type WebhookReceiverDeps,
  webhookUrl,
} from './webhook-receiver.js';

export interface TrackingDeps {
  database: Database;
  client: Pick<PurchaseClient, 'getTracking' | 'getBalance' | 'getAllWebhookLogs'>;
  metrics: Metrics;
  logger: Logger;
  /** `engine` for databaseTimeoutMs: tracking's database calls are bounded like the engine's. */
  settings: Pick<Settings, 'tracking' | 'webhook'> & {
    engine: Pick<Settings['engine'], 'databaseTimeoutMs'>;
  };
  clock?: () => Date;
  /** This replica's name on order leases. */
  owner?: string;
}

export interface Tracking {
  tracker: Tracker;
  /** undefined when no webhook secret is set: the receiver is off. */
  receiver: WebhookReceiver | undefined;
  backfill: WebhookBackfill;
  balances: BalanceSnapshots;
  /** Adds the receiver's route (if any) to the worker's HTTP server; call before it listens. */
  registerRoutes(app: FastifyInstance): void;
  start(): void;
  stop(): Promise<void>;
}

export function createTracking(deps: TrackingDeps): Tracking {
  const logger = deps.logger.child({ component: 'tracking' });
  const settings = deps.settings.tracking;
  const common = {
    database: deps.database,
    metrics: deps.metrics,
    databaseTimeoutMs: deps.settings.engine.databaseTimeoutMs,
    logger,
    clock: deps.clock,
  };
  const tracker = createTracker({ ...common, client: deps.client, settings, owner: deps.owner });
  const secret = deps.settings.webhook.secret;
  const receiver =
    secret === undefined ? undefined : createWebhookReceiver({ ...common, tracker, secret, settings });
  const backfill = createWebhookBackfill({
    client: deps.client,
    tracker,
    logger,
    settings: settings.backfill,
  });
  const balances = createBalanceSnapshots({ ...common, client: deps.client, settings: settings.balance });
  let started = false;

  return {
    tracker,
    receiver,
    backfill,
    balances,
    registerRoutes(app) {
      receiver?.register(app);
    },
    start() {
      if (started) return;
      started = true;
      tracker.start();
      receiver?.start();
      // Without a receiver no deliveries reach us, so there is nothing of ours to backfill.
      if (receiver) backfill.start();
      balances.start();
    },
    async stop() {
      if (!started) return;
      started = false;
      await balances.stop();
      await backfill.stop();
      // Together, not receiver first: the receiver waits for its events' nudges, which queue behind the
      // tracker's rate limit; stopping the tracker fails those waits at once, and the events stay pending
      // for the next start. Otherwise a burst of deliveries would hold the stop for burst ÷ rate seconds.
      await Promise.all([receiver?.stop(), tracker.stop()]);
    },
  };
}
