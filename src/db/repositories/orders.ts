import { and, asc, desc, eq, inArray, isNull, lt, lte, or, sql } from 'drizzle-orm';
import type { DrizzleExecutor, DrizzleHandle } from '../connection.js';
import { assertLegalTransition } from '../cycle-transitions.js';
import { cycles, orders, settlementEvents, strategies } from '../schema.js';
import type {
  Cycle,
  CycleState,
  FigureDifference,
  OrderOrigin,
  OrderRecord,
  ServiceOrder,
  SettlementEvent,
  SettlementSource,
  TrackingSnapshot,
} from '../types.js';
import { type AuditEntry, appendAudit } from './audit.js';
import { toCycle } from './cycle-rows.js';
import { NO_OUTBOX, type Outbox, orderPlaced, settlementStuck } from './notification-events.js';
import { type OrderRow, toOrder, toSettlementEvent } from './order-rows.js';
import { type ApplyTrackingOptions, applyTracking, type TrackingApplied } from './order-tracking.js';

export interface OrdersRepository {
  /**
   * Records an order the worker placed for a cycle, with its first history row ('create', or 'reconcile'
   * when reconciliation found it). Idempotent on the service's order id: recording it again returns the
   * existing record, and an external row (found by the order scan before its cycle) is adopted by the cycle.
   */
  recordPlaced(
    cycleId: number,
    order: ServiceOrder,
    options?: { nextCheckAt?: Date; source?: SettlementSource },
  ): Promise<OrderRecord>;
  /**
   * recordPlaced and the cycle's move from `from` to `placed`, in one transaction. The order row is kept
   * even when the cycle was no longer in `from`; `cycle` is null then, and when the order belongs to
   * another cycle (the caller decides).
   */
  recordPlacedWithCycle(
    cycleId: number,
    order: ServiceOrder,
    move: { from: CycleState; reasonCode: string; discrepancy?: FigureDifference[] },
    options?: { nextCheckAt?: Date; source?: SettlementSource; audit?: AuditEntry },
  ): Promise<{ order: OrderRecord; cycle: Cycle | null }>;
  /** Records an order found at the service that no cycle of ours placed. Idempotent like recordPlaced. */
  recordExternal(order: ServiceOrder, options?: { nextCheckAt?: Date }): Promise<OrderRecord>;
  get(id: number): Promise<OrderRecord | null>;
  getByServiceId(serviceOrderId: string): Promise<OrderRecord | null>;
  forCycle(cycleId: number): Promise<OrderRecord | null>;
  /** Leases up to `limit` unsettled orders due for a check; other owners skip them until the lease ends. */
  claimDue(owner: string, now: Date, leaseMs: number, limit: number): Promise<OrderRecord[]>;
  applyTracking(
    order: OrderRecord | number,
    tracking: TrackingSnapshot,
    source: SettlementSource,
    options?: ApplyTrackingOptions,
  ): Promise<TrackingApplied>;
  /** Sets the next check without a report (e.g. the tracking call failed) and releases the lease. */
  reschedule(orderId: number, nextCheckAt: Date): Promise<void>;
  /** Flags an order whose settlement stopped progressing; kept until progress is seen again. */
  markStuck(orderId: number, at?: Date): Promise<OrderRecord | null>;
  listOpen(limit?: number): Promise<OrderRecord[]>;
  /** The settlement status of each of these cycles' orders (cycles without an order are absent). */
  statusOfCycles(cycleIds: readonly number[]): Promise<Map<number, string>>;
  listRecent(limit?: number): Promise<OrderRecord[]>;
  history(orderId: number): Promise<SettlementEvent[]>;
}

const p = sql.placeholder;

export function createOrdersRepository(
  db: DrizzleHandle,
  clock: () => Date,
  outbox: Outbox = NO_OUTBOX,
): OrdersRepository {
  const due = db
    .select({ id: orders.id })
    .from(orders)
    .where(
      and(
        isNull(orders.settledAt),
        lte(orders.nextCheckAt, p('now')),
        or(isNull(orders.leaseUntil), lt(orders.leaseUntil, p('now'))),
      ),
    )
    .orderBy(asc(orders.nextCheckAt))
    .limit(p('limit'))
    .for('update', { skipLocked: true });
  const leaseDue = db
    .update(orders)
    .set({ leaseOwner: sql`${p('owner')}`, leaseUntil: sql`${p('leaseUntil')}` })
    .where(inArray(orders.id, due))
    .returning()
    .prepare('orders_claim_due');
  const selectByServiceId = db
    .select()
    .from(orders)
    .where(eq(orders.serviceOrderId, p('serviceOrderId')))
    .prepare('orders_get_by_service_id');

  const first = (rows: OrderRow[]) => (rows[0] ? toOrder(rows[0]) : null);

  const insertOrAdopt = async (
    tx: DrizzleExecutor,
    now: Date,
    cycleId: number | null,
    origin: OrderOrigin,
    order: ServiceOrder,
    nextCheckAt?: Date,
    source: SettlementSource = 'create',
  ): Promise<OrderRecord> => {
    const status = order.status ?? 'pending';
    const [inserted] = await tx
      .insert(orders)
      .values({
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
        nextCheckAt: nextCheckAt ?? now,
        settledAt: status === 'settled' ? now : null,
      })
      .onConflictDoNothing({ target: orders.serviceOrderId })
      .returning();
    if (!inserted) {
      if (cycleId !== null) {
        const [adopted] = await tx
          .update(orders)
          .set({
            cycleId,
            origin: 'cycle',
            quoteId: order.quoteId ?? sql`${orders.quoteId}`,
            updatedAt: now,
          })
          .where(and(eq(orders.serviceOrderId, order.id), isNull(orders.cycleId)))
          .returning();
        if (adopted) return toOrder(adopted);
      }
      const [existing] = await tx.select().from(orders).where(eq(orders.serviceOrderId, order.id));
      return toOrder(existing as OrderRow);
    }
    const [event] = await tx
      .insert(settlementEvents)
      .values({ orderId: inserted.id, source, fromStatus: null, toStatus: status, recordedAt: now })
      .returning({ id: settlementEvents.id });
    if (!event) throw new Error('insert into settlement_events returned no row');
    return toOrder(inserted);
  };

  const record = (
    cycleId: number | null,
    origin: OrderOrigin,
    order: ServiceOrder,
    nextCheckAt?: Date,
    source: SettlementSource = 'create',
  ) => db.transaction((tx) => insertOrAdopt(tx, clock(), cycleId, origin, order, nextCheckAt, source));

  return {
    recordPlaced: (cycleId, order, options = {}) =>
      record(cycleId, 'cycle', order, options.nextCheckAt, options.source),
    recordPlacedWithCycle(cycleId, order, move, options = {}) {
      assertLegalTransition(move.from, 'placed');
      return db.transaction(async (tx) => {
        const now = clock();
        const recorded = await insertOrAdopt(
          tx,
          now,
          cycleId,
          'cycle',
          order,
          options.nextCheckAt,
          options.source,
        );
        // An order another cycle owns is not this cycle's to claim.
        if (recorded.cycleId !== cycleId) return { order: recorded, cycle: null };
        const [row] = await tx
          .update(cycles)
          .set({
            state: 'placed',
            serviceOrderId: order.id,
            reasonCode: move.reasonCode,
            errorCode: null,
            errorMessage: null,
            updatedAt: now,
            finishedAt: now,
            leaseOwner: null,
            leaseUntil: null,
          })
          .where(and(eq(cycles.id, cycleId), eq(cycles.state, move.from)))
          .returning();
        if (row) await outbox.enqueue(tx, orderPlaced(row, order.id, move.discrepancy ?? []));
        // A person's decision (an operator adopting the order) is recorded with its effect.
        if (row && options.audit) await appendAudit(tx, options.audit, now);
        if (!row || !move.discrepancy?.length) return { order: recorded, cycle: row ? toCycle(row) : null };
        // Our order, with figures we did not ask for: kept, flagged, and the strategy stopped for a person.
        const [flagged] = await tx
          .update(cycles)
          .set({ discrepancy: move.discrepancy })
          .where(eq(cycles.id, cycleId))
          .returning();
        await tx
          .update(strategies)
          .set({
            haltedAt: sql`coalesce(${strategies.haltedAt}, ${now.toISOString()}::timestamptz)`,
            haltReason: sql`coalesce(${strategies.haltReason}, ${discrepancyReason(cycleId, order.id, move.discrepancy)})`,
          })
          .where(eq(strategies.name, row.strategy));
        return { order: recorded, cycle: toCycle(flagged!) };
      });
    },
    recordExternal: (order, options = {}) => record(null, 'external', order, options.nextCheckAt),

    async get(id) {
      return first(await db.select().from(orders).where(eq(orders.id, id)));
    },

    async statusOfCycles(cycleIds) {
      if (cycleIds.length === 0) return new Map();
      const rows = await db
        .select({ cycleId: orders.cycleId, status: orders.status })
        .from(orders)
        .where(inArray(orders.cycleId, [...cycleIds]));
      return new Map(
        rows.flatMap((row) => (row.cycleId === null ? [] : [[row.cycleId, row.status] as const])),
      );
    },

    async getByServiceId(serviceOrderId) {
      return first(await selectByServiceId.execute({ serviceOrderId }));
    },

    async forCycle(cycleId) {
      return first(await db.select().from(orders).where(eq(orders.cycleId, cycleId)).limit(1));
    },

    async claimDue(owner, now, leaseMs, limit) {
      const rows = await leaseDue.execute({
        owner,
        now: now.toISOString(),
        leaseUntil: new Date(now.getTime() + leaseMs).toISOString(),
        limit,
      });
      return rows.map(toOrder).sort((a, b) => a.nextCheckAt.getTime() - b.nextCheckAt.getTime());
    },

    applyTracking: (order, tracking, source, options) =>
      applyTracking(
        db,
        clock,
        typeof order === 'number' ? order : order.id,
        tracking,
        source,
        options,
        outbox,
      ),

    async reschedule(orderId, nextCheckAt) {
      await db
        .update(orders)
        .set({ nextCheckAt, leaseOwner: null, leaseUntil: null, updatedAt: clock() })
        .where(eq(orders.id, orderId));
    },

    async markStuck(orderId, at = clock()) {
      return db.transaction(async (tx) => {
        const rows = await tx
          .update(orders)
          .set({ stuckFlaggedAt: sql`coalesce(${orders.stuckFlaggedAt}, ${at.toISOString()}::timestamptz)` })
          .where(eq(orders.id, orderId))
          .returning();
        if (rows[0]) await outbox.enqueue(tx, settlementStuck(rows[0]));
        return first(rows);
      });
    },

    async listOpen(limit = 500) {
      const rows = await db
        .select()
        .from(orders)
        .where(isNull(orders.settledAt))
        .orderBy(asc(orders.createdAt), asc(orders.id))
        .limit(limit);
      return rows.map(toOrder);
    },

    async listRecent(limit = 50) {
      const rows = await db
        .select()
        .from(orders)
        .orderBy(desc(orders.createdAt), desc(orders.id))
        .limit(limit);
      return rows.map(toOrder);
    },

    async history(orderId) {
      const rows = await db
        .select()
        .from(settlementEvents)
        .where(eq(settlementEvents.orderId, orderId))
        .orderBy(asc(settlementEvents.id));
      return rows.map(toSettlementEvent);
    },
  };
}

function discrepancyReason(cycleId: number, orderId: string, differences: FigureDifference[]): string {
  const figures = differences.map((d) => `${d.field} ${d.got} (expected ${d.expected})`).join(', ');
  return `order ${orderId} of cycle ${cycleId} differs from its request and quote: ${figures}`;
}
