/**
 * One tracking check of one order: wait for the rate limit, fetch GET /client/orders/:id/tracking, apply
 * the report, tell operators, and decide when to look again. Failures never escape: the order is
 * rescheduled with a growing delay, because one order the service cannot answer for must not stall others.
 */
import { isPurchaseApiError, type PurchaseClient, type ServiceGate } from '../api/index.js';
import type { TrackingSettings } from '../config/tracking-schema.js';
import type { Database, OrderRecord, SettlementSource } from '../db/index.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { backoffDelayMs } from '../runtime/backoff.js';
import { callDatabase } from './database-call.js';
import { reportApplied } from './settlement-report.js';
import { type SettlementOutcome, toSnapshot } from './transitions.js';

export interface OrderCheckDeps {
  database: Database;
  client: Pick<PurchaseClient, 'getTracking'>;
  metrics: Metrics;
  logger: Logger;
  settings: TrackingSettings;
  databaseTimeoutMs: number;
  /** Tracking's own request rate (tracking.poll.maxRequestsPerSecond), apart from the engine's. */
  limiter: ServiceGate;
  clock: () => Date;
  random: () => number;
}

export type CheckResult = { ok: true; outcome: SettlementOutcome; order: OrderRecord } | { ok: false };

export function createOrderCheck(deps: OrderCheckDeps) {
  const { database, settings, clock } = deps;
  /** Consecutive failures per order (this replica's view): the backoff of a failing order grows. */
  const failures = new Map<number, number>();

  async function fail(order: OrderRecord, error: unknown): Promise<CheckResult> {
    const count = (failures.get(order.id) ?? 0) + 1;
    failures.set(order.id, count);
    const now = clock();
    const delay = failureDelayMs(settings.poll, sinceProgress(order, now), count, deps.random);
    const retryable = isPurchaseApiError(error) ? error.retryable : true;
    const fields = { orderId: order.serviceOrderId, failures: count, retryInMs: delay, err: error };
    if (retryable) deps.logger.warn(fields, 'tracking check failed; will retry');
    else deps.logger.error(fields, 'tracking check failed; will retry later');
    try {
      await callDatabase(deps, 'tracking_reschedule', () =>
        database.orders.reschedule(order.id, new Date(now.getTime() + delay)),
      );
    } catch (rescheduleError) {
      // The lease runs out on its own and another pass picks the order up again.
      deps.logger.error(
        { orderId: order.serviceOrderId, err: rescheduleError },
        'could not reschedule order',
      );
    }
    return { ok: false };
  }

  return async function checkOrder(
    order: OrderRecord,
    source: SettlementSource,
    signal?: AbortSignal,
  ): Promise<CheckResult> {
    await deps.limiter.admit('getTracking', signal);
    let snapshot: ReturnType<typeof toSnapshot>;
    try {
      // The signal cuts the request short when tracking stops: a worker's stop must not wait out the
      // client's timeouts and retries.
      const tracking = await deps.client.getTracking(order.serviceOrderId, { signal });
      snapshot = toSnapshot(tracking);
    } catch (error) {
      // Stopped, not failed: no backoff for the order; its lease runs out and another pass checks it.
      if (signal?.aborted) return { ok: false };
      return fail(order, error);
    }
    try {
      const now = clock();
      const nextCheckAt = new Date(
        now.getTime() + nextCheckDelayMs(settings.poll, sinceProgress(order, now), deps.random),
      );
      const applied = await callDatabase(deps, 'tracking_apply', () =>
        database.orders.applyTracking(order.id, snapshot, source, { nextCheckAt }),
      );
      failures.delete(order.id);
      const outcome = reportApplied(deps, order, applied, source);
      if (outcome.kind === 'advanced' || outcome.kind === 'updated') {
        // Settlement moves in bursts: right after a change, look again soon rather than at the old pace.
        const soon = new Date(now.getTime() + nextCheckDelayMs(settings.poll, 0, deps.random));
        if (applied.order.settledAt === null && soon < nextCheckAt) {
          await callDatabase(deps, 'tracking_reschedule', () => database.orders.reschedule(order.id, soon));
        }
      }
      return { ok: true, outcome, order: applied.order };
    } catch (error) {
      return fail(order, error);
    }
  };
}

function sinceProgress(order: OrderRecord, now: Date): number {
  return now.getTime() - order.lastProgressAt.getTime();
}

/**
 * When to look at an open order again. Settlement moves in bursts (a deposit, then the rest; a withdrawal,
 * then its confirmation), so the delay grows with the time since the order last changed: quick right after
 * any progress, slower while nothing happens.
 */
export interface PollPacing {
  minDelayMs: number;
  maxDelayMs: number;
  /** Delay as a share of the time since the last progress. */
  ageFactor: number;
}

/** ±10 %: replicas and orders placed together should not poll in lockstep. */
const POLL_JITTER = 0.1;

export function nextCheckDelayMs(
  pacing: PollPacing,
  sinceProgressMs: number,
  random: () => number = Math.random,
): number {
  const clamp = (ms: number) => Math.min(pacing.maxDelayMs, Math.max(pacing.minDelayMs, ms));
  const wanted = clamp(Math.max(0, sinceProgressMs) * pacing.ageFactor);
  return Math.round(clamp(wanted * (1 + (random() * 2 - 1) * POLL_JITTER)));
}

/**
 * After `failures` consecutive failed checks (1 = the first): the project's backoff, starting at twice the
 * shortest delay, and never sooner than the order's normal pace.
 */
export function failureDelayMs(
  pacing: PollPacing,
  sinceProgressMs: number,
  failures: number,
  random: () => number = Math.random,
): number {
  const backoff = backoffDelayMs(
    failures,
    { baseMs: 2 * pacing.minDelayMs, maxMs: pacing.maxDelayMs },
    random,
  );
  return Math.max(backoff, nextCheckDelayMs(pacing, sinceProgressMs, random));
}
