import type { orders, settlementEvents } from '../schema.js';
import type {
  JsonValue,
  OrderOrigin,
  OrderRecord,
  ServiceOrder,
  SettlementEvent,
  SettlementSource,
  SettlementStatus,
} from '../types.js';

export type OrderRow = typeof orders.$inferSelect;
export type SettlementEventRow = typeof settlementEvents.$inferSelect;

/*
 * Each record is its row with the unions narrowed (the CHECK constraints hold origin, status and source to
 * them, hence the casts): the table's columns and the record's fields are one set, in the same order. A
 * column that is not a field would show in the record: test/db/orders.test.ts compares an inserted order's
 * record, written out below, with the row read back.
 */

export function toOrder(row: OrderRow): OrderRecord {
  return {
    ...row,
    origin: row.origin as OrderOrigin,
    status: row.status as SettlementStatus,
    lastTracking: (row.lastTracking ?? null) as JsonValue | null,
  };
}

/**
 * The columns an order's first insert writes (the placed statement and the insert-or-adopt in orders.ts):
 * the service's order as recorded, settled_at set only for an order already settled.
 */
export function newOrderColumns(
  cycleId: number | null,
  origin: OrderOrigin,
  order: ServiceOrder,
  now: Date,
  nextCheckAt: Date,
) {
  const status: SettlementStatus = order.status ?? 'pending';
  return {
    account: order.account,
    serviceOrderId: order.id,
    cycleId,
    origin,
    quoteId: order.quoteId ?? null,
    symbol: order.symbol,
    amount: order.amount,
    price: order.price,
    side: order.side,
    serviceTimestamp: order.timestamp,
    status,
    createdAt: now,
    updatedAt: now,
    lastProgressAt: now,
    nextCheckAt,
    settledAt: status === 'settled' ? now : null,
  };
}

/**
 * The row such an insert made, without reading it back: its columns, null in those tracking fills later,
 * and the id the database gave it. Checked against the row read back in test/db/orders.test.ts.
 */
export function insertedOrder(id: number, columns: ReturnType<typeof newOrderColumns>): OrderRecord {
  return {
    id,
    ...columns,
    expectedAmount: null,
    receivedAmount: null,
    withdrawnAmount: null,
    lastTracking: null,
    leaseOwner: null,
    leaseUntil: null,
    stuckFlaggedAt: null,
  };
}

export function toSettlementEvent(row: SettlementEventRow): SettlementEvent {
  return {
    ...row,
    source: row.source as SettlementSource,
    fromStatus: row.fromStatus as SettlementStatus | null,
    toStatus: row.toStatus as SettlementStatus,
    withdrawal: (row.withdrawal ?? null) as JsonValue | null,
  };
}
