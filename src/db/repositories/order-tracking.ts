import { eq, sql } from 'drizzle-orm';
import type { DrizzleExecutor, DrizzleHandle } from '../connection.js';
import { toJson } from '../json.js';
import { orders, settlementEvents } from '../schema.js';
import { assessTracking, sameJson } from '../settlement-progress.js';
import type {
  JsonValue,
  OrderRecord,
  SettlementEvent,
  SettlementSource,
  SettlementStatus,
  TrackingSnapshot,
} from '../types.js';
import { NO_OUTBOX, type Outbox, orderSettled } from './notification-events.js';
import { type OrderRow, toOrder, toSettlementEvent } from './order-rows.js';

export interface TrackingApplied {
  order: OrderRecord;
  /** The history row written, or null when the report changed nothing. */
  event: SettlementEvent | null;
}

export interface ApplyTrackingOptions {
  /** When to look at the order again; unchanged when absent. */
  nextCheckAt?: Date;
}

/**
 * Writes one tracking report: the history row (when something changed or looks wrong) and the order's new
 * state, in one transaction, with the order row locked so that a poll and a webhook for the same order
 * cannot interleave. Applying a report releases the tracker's lease on the order.
 */
export async function applyTracking(
  db: DrizzleHandle,
  clock: () => Date,
  orderId: number,
  tracking: TrackingSnapshot,
  source: SettlementSource,
  options: ApplyTrackingOptions = {},
  outbox: Outbox = NO_OUTBOX,
): Promise<TrackingApplied> {
  return db.transaction(async (tx) => {
    const [locked] = await tx.select().from(orders).where(eq(orders.id, orderId)).for('update');
    if (!locked) throw new RangeError(`order ${orderId} does not exist`);
    const current = toOrder(locked);
    const last = lastReport(current.lastTracking);
    const step = assessTracking({ ...current, withdrawal: last.withdrawal ?? null }, tracking);
    const now = clock();
    const withdrawal = tracking.withdrawal === undefined ? null : toJson(tracking.withdrawal);
    const report = toJson({ ...tracking, withdrawal, source, at: now });
    // An anomalous report is recorded once, not on every poll that repeats it.
    const repeated = step.anomaly !== null && sameReport(last, report);
    const event =
      (step.changed || step.anomaly) && !repeated
        ? await insertEvent(tx, {
            orderId,
            source,
            fromStatus: current.status,
            toStatus: tracking.status,
            expectedAmount: tracking.expectedAmount,
            receivedAmount: tracking.receivedAmount,
            withdrawnAmount: tracking.withdrawnAmount,
            withdrawal,
            anomaly: step.anomaly,
            recordedAt: now,
          })
        : null;
    // A report that looks wrong is kept in the history for a human, but the order keeps what it knew.
    const applied = step.anomaly === null;
    const status = applied ? step.status : current.status;
    const progressed = applied && step.changed;
    const [updated] = await tx
      .update(orders)
      .set({
        status,
        ...(applied
          ? {
              expectedAmount: tracking.expectedAmount,
              receivedAmount: tracking.receivedAmount,
              withdrawnAmount: tracking.withdrawnAmount,
            }
          : {}),
        lastTracking: report,
        updatedAt: now,
        ...(progressed ? { lastProgressAt: now, stuckFlaggedAt: null } : {}),
        ...(options.nextCheckAt ? { nextCheckAt: options.nextCheckAt } : {}),
        settledAt: settledAtFor(status, now),
        leaseOwner: null,
        leaseUntil: null,
      })
      .where(eq(orders.id, orderId))
      .returning();
    if (updated && status === 'settled' && current.status !== 'settled')
      await outbox.enqueue(tx, orderSettled(updated));
    return { order: toOrder(updated as OrderRow), event };
  });
}

type StoredReport = { [key: string]: JsonValue };

function lastReport(lastTracking: JsonValue | null): StoredReport {
  return typeof lastTracking === 'object' && lastTracking !== null && !Array.isArray(lastTracking)
    ? lastTracking
    : {};
}

const REPORT_FIELDS = ['status', 'expectedAmount', 'receivedAmount', 'withdrawnAmount', 'withdrawal'];

function sameReport(last: StoredReport, report: JsonValue): boolean {
  const next = lastReport(report);
  return REPORT_FIELDS.every((field) => sameJson(last[field] ?? null, next[field] ?? null));
}

function settledAtFor(status: SettlementStatus, now: Date) {
  return status === 'settled' ? sql`coalesce(${orders.settledAt}, ${now.toISOString()}::timestamptz)` : null;
}

export async function insertEvent(
  executor: DrizzleExecutor,
  values: typeof settlementEvents.$inferInsert,
): Promise<SettlementEvent> {
  // Named so that the driver prepares it once per connection (it runs inside the caller's transaction).
  const [row] = await executor
    .insert(settlementEvents)
    .values(values)
    .returning()
    .prepare('settlement_events_insert')
    .execute();
  if (!row) throw new Error('insert into settlement_events returned no row');
  return toSettlementEvent(row);
}
