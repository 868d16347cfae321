/**
 * Recovers from webhook deliveries that failed: reads the most recent pages of the service's webhook log
 * (GET /client/webhook/logs) and nudges the order of every event none of whose attempts succeeded. Each
 * event is handled once per process; orders are followed by polling anyway, so this only shortens the
 * time a missed event costs.
 */
import { type PurchaseClient, parseWebhookEvent, type WebhookLogEntry } from '../api/index.js';
import type { TrackingSettings } from '../config/schema.js';
import type { Logger } from '../observability/logger.js';
import { createPeriodicTask } from '../runtime/periodic-task.js';
import type { NudgeOutcome, Tracker } from './tracker.js';
import { orderIdOf, webhookDedupeKey } from './webhook-receiver.js';

export interface BackfillDeps {
  client: Pick<PurchaseClient, 'getAllWebhookLogs'>;
  tracker: Pick<Tracker, 'nudge'>;
  logger: Logger;
  settings: TrackingSettings['backfill'];
}

export interface BackfillReport {
  entries: number;
  /** Events whose every logged attempt failed. */
  undelivered: number;
  nudged: { orderId: string; outcome: NudgeOutcome }[];
}

/** Bounds the memory of handled events; the oldest are forgotten first (they have left the recent pages). */
const REMEMBERED_EVENTS = 10_000;

export function createWebhookBackfill(deps: BackfillDeps) {
  const handled = new Set<string>();

  async function readRecentLogs(signal?: AbortSignal): Promise<WebhookLogEntry[]> {
    const entries: WebhookLogEntry[] = [];
    for (let page = 1; page <= deps.settings.pages && !signal?.aborted; page++) {
      const logs = await deps.client.getAllWebhookLogs({ page, pageSize: deps.settings.pageSize });
      entries.push(...logs.data);
      if (page >= logs.pagination.totalPages) break;
    }
    return entries;
  }

  async function runOnce(signal?: AbortSignal): Promise<BackfillReport> {
    const entries = await readRecentLogs(signal);
    const events = new Map<string, { orderId: string | null; delivered: boolean }>();
    for (const entry of entries) {
      let key: string;
      let orderId: string | null;
      try {
        const event = parseWebhookEvent(entry.payload);
        key = webhookDedupeKey(event.event, event.data);
        orderId = orderIdOf(event);
      } catch {
        continue; // A payload we cannot read names no order we could fetch.
      }
      const known = events.get(key) ?? { orderId, delivered: false };
      known.delivered ||= entry.success;
      events.set(key, known);
    }
    const report: BackfillReport = { entries: entries.length, undelivered: 0, nudged: [] };
    /** One check per order and pass, however many of its events were missed. */
    const outcomes = new Map<string, NudgeOutcome>();
    for (const [key, event] of events) {
      if (event.delivered) continue;
      report.undelivered += 1;
      if (handled.has(key) || event.orderId === null || signal?.aborted) continue;
      let outcome = outcomes.get(event.orderId);
      if (outcome === undefined) {
        outcome = await deps.tracker.nudge(event.orderId, 'webhook');
        outcomes.set(event.orderId, outcome);
        report.nudged.push({ orderId: event.orderId, outcome });
      }
      if (outcome !== 'failed') remember(key);
    }
    if (report.nudged.length > 0) {
      deps.logger.info(
        { undelivered: report.undelivered, nudged: report.nudged },
        'webhook backfill nudged orders',
      );
    }
    return report;
  }

  function remember(key: string): void {
    handled.add(key);
    if (handled.size > REMEMBERED_EVENTS) {
      const oldest = handled.values().next().value;
      if (oldest !== undefined) handled.delete(oldest);
    }
  }

  const task = createPeriodicTask({
    name: 'webhook backfill',
    intervalMs: deps.settings.intervalMs,
    logger: deps.logger,
    runAtStart: false,
    run: runOnce,
  });

  return {
    runOnce,
    start() {
      if (deps.settings.enabled) task.start();
    },
    stop: () => task.stop(),
  };
}

export type WebhookBackfill = ReturnType<typeof createWebhookBackfill>;
