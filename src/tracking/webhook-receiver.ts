import type { FastifyInstance } from 'fastify';
import type { TrackingSettings } from '../config/tracking-schema.js';
import type { Database } from '../db/index.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { createEventProcessor } from './event-processor.js';
import { registerReceiverRoute } from './receiver.js';
import type { Tracker } from './tracker.js';

export interface WebhookReceiverDeps {
  database: Database;
  tracker: Pick<Tracker, 'nudge'>;
  metrics: Metrics;
  /** engine.databaseTimeoutMs: no database call of the receiver waits longer. */
  databaseTimeoutMs: number;
  logger: Logger;
  /** TREASURY_WEBHOOK_SECRET: the path segment every delivery must carry. */
  secret: string;
  settings: TrackingSettings;
  clock?: () => Date;
}

export interface WebhookReceiver {
  /** Adds `POST /webhooks/:secret` to the worker's HTTP server; call before it listens. */
  register(app: FastifyInstance): void;
  /** Starts the sweep of stored events not processed yet. Idempotent. */
  start(): void;
  /** Stops the sweep and waits for events in processing. Idempotent. */
  stop(): Promise<void>;
  /** One sweep now; resolves to the number of events looked at. */
  sweep(): Promise<number>;
  /** Resolves when no stored event is being processed. */
  idle(): Promise<void>;
}

export function createWebhookReceiver(deps: WebhookReceiverDeps): WebhookReceiver {
  const clock = deps.clock ?? (() => new Date());
  const processor = createEventProcessor({
    database: deps.database,
    tracker: deps.tracker,
    metrics: deps.metrics,
    databaseTimeoutMs: deps.databaseTimeoutMs,
    logger: deps.logger,
    settings: deps.settings.receiver,
    clock,
  });
  return {
    register(app) {
      registerReceiverRoute(app, {
        database: deps.database,
        processor,
        metrics: deps.metrics,
        databaseTimeoutMs: deps.databaseTimeoutMs,
        logger: deps.logger,
        secret: deps.secret,
        settings: deps.settings.receiver,
        clock,
      });
    },
    start: () => processor.start(),
    stop: () => processor.stop(),
    sweep: () => processor.sweep(),
    idle: () => processor.idle(),
  };
}
