/**
 * What happens to one account's webhook events once they are stored: each is a hint, so it only nudges
 * that account's tracker to fetch the account's order of that id now. An event for an order we have not
 * recorded yet (the `order` event can beat the cycle's own write) is kept as unknown_order, and one whose
 * check failed stays pending; the sweep retries both for `unknownOrderRetryMs` after arrival, then leaves
 * them for review (polling follows the order anyway), so that no event is swept forever.
 */
import type { TrackingSettings } from '../config/schema.js';
import type { Database } from '../db/index.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { createPeriodicTask } from '../runtime/periodic-task.js';
import { callDatabase } from './database-call.js';
import type { Tracker } from './tracker.js';

export interface StoredEvent {
  dedupeKey: string;
  kind: string;
  serviceOrderId: string | null;
}

export interface EventProcessorDeps {
  /** The account whose path the events arrived on; `tracker` is that account's. */
  account: string;
  database: Database;
  tracker: Pick<Tracker, 'nudge'>;
  metrics: Metrics;
  databaseTimeoutMs: number;
  logger: Logger;
  settings: TrackingSettings['receiver'];
  clock: () => Date;
}

export function createEventProcessor(deps: EventProcessorDeps) {
  const { database, account } = deps;
  const logger = deps.logger.child({ account });
  const inFlight = new Set<Promise<void>>();
  let accepting = true;

  const markProcessed = (dedupeKey: string, status: 'processed' | 'unknown_order') =>
    callDatabase(deps, 'webhook_mark_processed', () =>
      database.webhookEvents.markProcessed(account, dedupeKey, status),
    );

  async function process(event: StoredEvent): Promise<void> {
    if (event.serviceOrderId === null) {
      await markProcessed(event.dedupeKey, 'processed');
      return;
    }
    const outcome = await deps.tracker.nudge(event.serviceOrderId, 'webhook');
    // A failed check leaves the event pending: the sweep tries again.
    if (outcome === 'failed') return;
    const status = outcome === 'unknown_order' ? 'unknown_order' : 'processed';
    await markProcessed(event.dedupeKey, status);
    if (status === 'unknown_order') {
      logger.info(
        { kind: event.kind, orderId: event.serviceOrderId },
        'webhook event for an unknown order kept',
      );
    }
  }

  function track(event: StoredEvent): Promise<void> {
    const running = process(event)
      .catch((error: unknown) => {
        logger.error(
          { err: error, kind: event.kind, orderId: event.serviceOrderId },
          'webhook event not processed',
        );
      })
      .finally(() => inFlight.delete(running));
    inFlight.add(running);
    return running;
  }

  /** The account's stored events still pending or unknown_order, within the retry window, processed again. */
  async function sweep(): Promise<number> {
    const since = new Date(deps.clock().getTime() - deps.settings.unknownOrderRetryMs);
    const events = await callDatabase(deps, 'webhook_list_retry', () =>
      database.webhookEvents.listToRetry(account, since),
    );
    for (const event of events) {
      if (!accepting) break;
      await track(event);
    }
    return events.length;
  }

  const sweeper = createPeriodicTask({
    name: 'webhook event sweep',
    intervalMs: deps.settings.sweepIntervalMs,
    logger,
    run: () => sweep(),
  });

  return {
    /** Processes a freshly stored event in the background (the delivery is answered already). */
    accept(event: StoredEvent): void {
      if (accepting) void track(event);
    },
    sweep,
    start() {
      accepting = true;
      sweeper.start();
    },
    /** Stops the sweep and waits for events in processing; later events stay pending for the next start. */
    async stop() {
      accepting = false;
      await sweeper.stop();
      await idle();
    },
    idle,
  };

  async function idle(): Promise<void> {
    while (inFlight.size > 0) await Promise.all(inFlight);
  }
}

export type EventProcessor = ReturnType<typeof createEventProcessor>;
