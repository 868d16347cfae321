/**
 * The reads of the web console's pages that the engine's repositories do not already offer. Each walks an
 * index and is bounded (a page of rows, or one strategy's month), so a page costs the same with a few
 * cycles as with hundreds of thousands.
 */
import { and, count, desc, eq, gte, inArray, isNotNull, isNull, lt, lte, sql } from 'drizzle-orm';
import { Decimal } from '../../money.js';
import type { DrizzleHandle } from '../connection.js';
import { MONEY_MAY_HAVE_LEFT } from '../cycle-transitions.js';
import { auditLog, cycles, orders, strategies } from '../schema.js';
import type { Cycle, CycleState, OrderOrigin, OrderRecord, SettlementStatus } from '../types.js';
import { orderSubject } from './console-actions.js';
import { toCycle } from './cycle-rows.js';
import { toOrder } from './order-rows.js';

export interface OrderFilter {
  strategy?: string;
  status?: SettlementStatus;
  origin?: OrderOrigin;
  from?: Date;
  until?: Date;
  /** Keyset paging: orders with a smaller id than this one (the last of the previous page). */
  beforeId?: number;
  limit: number;
}

export interface OrderListed extends OrderRecord {
  strategy: string | null;
}

export interface SpendPoint {
  at: Date;
  cost: Decimal;
}

/** What the alert conditions on the records count (src/console/firing-alerts.ts). */
export interface AlertCounts {
  /** Cycles unsure since at least the instant. */
  unsureSince: number;
  /** Orders of ours recorded with a discrepancy since the instant. */
  discrepanciesSince: number;
  /** Open orders flagged stuck since at least the instant. */
  stuckSince: number;
}

export interface ConsoleReads {
  /** Cycles claimed since the instant, by state. */
  countByStateSince(since: Date): Promise<Map<CycleState, number>>;
  alertCounts(bounds: {
    unsureBefore: Date;
    discrepancySince: Date;
    stuckBefore: Date;
  }): Promise<AlertCounts>;
  /** Who acknowledged which of these external orders, and when (by the service's order id). */
  acknowledgements(serviceOrderIds: readonly string[]): Promise<Map<string, { actor: string; at: Date }>>;
  /** The newest cycle of each strategy named. */
  lastCycles(strategies: readonly string[]): Promise<Map<string, Cycle>>;
  listOrders(filter: OrderFilter): Promise<OrderListed[]>;
  /** The money committed by one strategy in [from, until) per day of its zone: the cumulative-spend chart. */
  spendPoints(strategy: string, timeZone: string, from: Date, until: Date): Promise<SpendPoint[]>;
}

export function createConsoleReads(db: DrizzleHandle): ConsoleReads {
  return {
    async countByStateSince(since) {
      const rows = await db
        .select({ state: cycles.state, n: count() })
        .from(cycles)
        .where(gte(cycles.claimedAt, since))
        .groupBy(cycles.state);
      return new Map(rows.map((row) => [row.state as CycleState, row.n]));
    },

    async alertCounts({ unsureBefore, discrepancySince, stuckBefore }) {
      // Each walks an index: cycles_state_idx (state, updated_at) for the first two, since a discrepancy is
      // only ever recorded with the move to placed, and orders_due_idx (open orders only) for the third.
      const [unsure, discrepancies, stuck] = await Promise.all([
        db
          .select({ n: count() })
          .from(cycles)
          .where(and(eq(cycles.state, 'unsure'), lte(cycles.updatedAt, unsureBefore))),
        db
          .select({ n: count() })
          .from(cycles)
          .where(
            and(
              eq(cycles.state, 'placed'),
              gte(cycles.updatedAt, discrepancySince),
              isNotNull(cycles.discrepancy),
            ),
          ),
        db
          .select({ n: count() })
          .from(orders)
          .where(and(isNull(orders.settledAt), lte(orders.stuckFlaggedAt, stuckBefore))),
      ]);
      return {
        unsureSince: unsure[0]?.n ?? 0,
        discrepanciesSince: discrepancies[0]?.n ?? 0,
        stuckSince: stuck[0]?.n ?? 0,
      };
    },

    async acknowledgements(serviceOrderIds) {
      if (serviceOrderIds.length === 0) return new Map();
      const idOf = new Map(serviceOrderIds.map((id) => [orderSubject(id), id]));
      const rows = await db
        .select({ subject: auditLog.subject, actor: auditLog.actor, at: auditLog.at })
        .from(auditLog)
        .where(and(eq(auditLog.action, 'order.acknowledge'), inArray(auditLog.subject, [...idOf.keys()])));
      return new Map(
        rows.map((row) => [idOf.get(row.subject ?? '') ?? '', { actor: row.actor, at: row.at }]),
      );
    },

    async lastCycles(names) {
      if (names.length === 0) return new Map();
      // One index step per strategy (cycles_strategy_slot_key, newest slot first); a DISTINCT ON over
      // the strategies' cycles would sort their whole history instead.
      const newest = db
        .select({ id: cycles.id })
        .from(cycles)
        .where(eq(cycles.strategy, strategies.name))
        .orderBy(desc(cycles.slot))
        .limit(1);
      const ids = await db
        .select({ id: sql<number | null>`(${newest})` })
        .from(strategies)
        .where(inArray(strategies.name, [...names]));
      const found = ids.flatMap((row) => (row.id === null ? [] : [Number(row.id)]));
      if (found.length === 0) return new Map();
      const rows = await db.select().from(cycles).where(inArray(cycles.id, found));
      return new Map(rows.map((row) => [row.strategy, toCycle(row)]));
    },

    async listOrders({ strategy, status, origin, from, until, beforeId, limit }) {
      const rows = await db
        .select({ order: orders, strategy: cycles.strategy })
        .from(orders)
        .leftJoin(cycles, eq(cycles.id, orders.cycleId))
        .where(
          and(
            strategy === undefined ? undefined : eq(cycles.strategy, strategy),
            status === undefined ? undefined : eq(orders.status, status),
            // External rows are exactly those without a cycle (a cycle that adopts one makes it its own),
            // and orders_cycle_idx finds them without walking the orders of every cycle.
            origin === undefined
              ? undefined
              : origin === 'external'
                ? isNull(orders.cycleId)
                : isNotNull(orders.cycleId),
            from === undefined ? undefined : gte(orders.serviceTimestamp, from),
            until === undefined ? undefined : lt(orders.serviceTimestamp, until),
            beforeId === undefined ? undefined : lt(orders.id, beforeId),
          ),
        )
        .orderBy(desc(orders.id))
        .limit(limit);
      return rows.map((row) => ({ ...toOrder(row.order), strategy: row.strategy }));
    },

    async spendPoints(strategy, timeZone, from, until) {
      // Summed per calendar day of the strategy's zone in the database: at most 31 points however many
      // orders the month holds, and exact (numeric sums, read back as decimal text).
      const day = sql<Date>`date_trunc('day', ${cycles.submittedAt}, ${timeZone})`;
      const rows = await db
        .select({ at: day, cost: sql<string>`sum(${cycles.totalCost})::text` })
        .from(cycles)
        .where(
          and(
            eq(cycles.strategy, strategy),
            gte(cycles.submittedAt, from),
            lt(cycles.submittedAt, until),
            inArray(cycles.state, [...MONEY_MAY_HAVE_LEFT]),
          ),
        )
        // By position: the zone is a parameter, and two placeholders make two different expressions.
        .groupBy(sql`1`)
        .orderBy(sql`1`);
      return rows.flatMap((row) =>
        row.cost === null ? [] : [{ at: new Date(row.at), cost: new Decimal(row.cost) }],
      );
    },
  };
}
