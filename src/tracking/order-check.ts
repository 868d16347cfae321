/**
 * One tracking check of one order: wait for the rate limit, fetch GET /client/orders/:id/tracking, apply
 * the report, tell operators, and decide when to look again. Failures never escape: the order is
 * rescheduled with a growing delay, because one order the service cannot answer for must not stall others.
 */
import { isPurchaseApiError, type PurchaseClient, type ServiceGate, type Tracking } from '../api/index.js';
import type { TrackingSettings } from '../config/schema.js';
import type {
  Database,
  OrderRecord,
  SettlementEvent,
  SettlementSource,
  TrackingApplied,
  TrackingSnapshot,
} from '../db/index.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { backoffDelayMs } from '../runtime/backoff.js';
import { callDatabase } from './database-call.js';

export interface OrderCheckDeps {
  database: Database;
  client: Pick<PurchaseClient, 'getTracking'>;
  metrics: Metrics;
  logger: Logger;
  settings: TrackingSettings;
  /** engine.databaseTimeoutMs: no database call of tracking waits longer. */
  databaseTimeoutMs: number;
  /** Tracking's own request rate (tracking.poll.maxRequestsPerSecond), apart from the engine's. */
  gate: ServiceGate;
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
    await deps.gate.admit('getTracking', signal);
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

export interface ReportDeps {
  logger: Logger;
  metrics: Metrics;
}

/**
 * Tells operators about one applied tracking report: one log line per settlement change or update (the
 * audit trail an operator greps for an order), a warning per anomaly, and the settlement series.
 */
export function reportApplied(
  deps: ReportDeps,
  before: OrderRecord,
  applied: TrackingApplied,
  source: SettlementSource,
): SettlementOutcome {
  const outcome = classifyApplied(applied.event);
  if (outcome.kind === 'unchanged') return outcome;
  const line = describeChange(applied.order, outcome.event, source);
  if (outcome.kind === 'anomaly') {
    deps.metrics.settlementAnomalies.inc();
    deps.logger.warn(
      { ...line, anomaly: outcome.anomaly, kept: applied.order.status },
      'settlement anomaly: report recorded, not applied',
    );
    return outcome;
  }
  // Same status with new details (amounts received so far, the withdrawal's progress) reads differently
  // from a step, so an operator counting steps in the log does not count these.
  deps.logger.info(line, outcome.kind === 'advanced' ? 'settlement changed' : 'settlement details updated');
  if (outcome.kind === 'advanced') {
    deps.metrics.settlementChanges.inc({ status: outcome.event.toStatus, source });
    if (applied.order.settledAt !== null && before.settledAt === null) {
      const seconds = (applied.order.settledAt.getTime() - applied.order.createdAt.getTime()) / 1000;
      deps.metrics.settlementDuration.observe(Math.max(0, seconds));
    }
  }
  return outcome;
}

/**
 * From a tracking answer to the record the database applies, and from the applied result to what it
 * means. Which moves are legal is decided inside the database's locked transaction (src/db
 * settlement-progress: forward skips are legal since polls miss steps, a move back is an anomaly that is
 * recorded and not applied); this module only reads the outcome.
 */
export function toSnapshot(tracking: Tracking): TrackingSnapshot {
  return {
    status: tracking.settlementStatus,
    expectedAmount: tracking.expectedAmount,
    receivedAmount: tracking.receivedAmount,
    withdrawnAmount: tracking.withdrawnAmount,
    withdrawal: tracking.withdrawal,
  };
}

export type SettlementOutcome =
  /** Nothing new: the report matched what the order knew (or repeated a known anomaly). */
  | { kind: 'unchanged' }
  /** The status moved forward (possibly skipping states), with or without amount changes. */
  | { kind: 'advanced'; event: SettlementEvent }
  /** Same status, new amounts or withdrawal details. */
  | { kind: 'updated'; event: SettlementEvent }
  /** An illegal report (status back, amount down): recorded with its anomaly, not applied. */
  | { kind: 'anomaly'; event: SettlementEvent; anomaly: string };

export function classifyApplied(event: SettlementEvent | null): SettlementOutcome {
  if (event === null) return { kind: 'unchanged' };
  if (event.anomaly !== null) return { kind: 'anomaly', event, anomaly: event.anomaly };
  if (event.fromStatus !== event.toStatus) return { kind: 'advanced', event };
  return { kind: 'updated', event };
}

/** The fields of one settlement log line: order, from, to, source and amounts as decimal text. */
export function describeChange(order: OrderRecord, event: SettlementEvent, source: SettlementSource) {
  const withdrawal = event.withdrawal as { status?: unknown; transactionId?: unknown } | null;
  return {
    orderId: order.serviceOrderId,
    from: event.fromStatus,
    to: event.toStatus,
    source,
    expectedAmount: event.expectedAmount?.toFixed() ?? null,
    receivedAmount: event.receivedAmount?.toFixed() ?? null,
    withdrawnAmount: event.withdrawnAmount?.toFixed() ?? null,
    withdrawalStatus: typeof withdrawal?.status === 'string' ? withdrawal.status : null,
    transactionId: typeof withdrawal?.transactionId === 'string' ? withdrawal.transactionId : null,
  };
}
