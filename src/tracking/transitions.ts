/**
 * From a tracking answer to the record the database applies, and from the applied result to what it
 * means. Which moves are legal is decided inside the database's locked transaction (src/db
 * settlement-progress: forward skips are legal since polls miss steps, a move back is an anomaly that is
 * recorded and not applied); this module only reads the outcome.
 */
import type { Tracking } from '../api/index.js';
import type { OrderRecord, SettlementEvent, SettlementSource, TrackingSnapshot } from '../db/index.js';

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
