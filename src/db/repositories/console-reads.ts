/**
 * The reads of the web console's pages that the engine's repositories do not already offer. Each walks an
 * index and is bounded (a page of rows, or one strategy's month), so a page costs the same with a few
 * cycles as with hundreds of thousands. Each takes the reader's account scope (src/db/account-scope.ts) and
 * reads no row outside it.
 */
import { and, count, desc, eq, gte, inArray, isNotNull, isNull, lt, lte, type SQL, sql } from 'drizzle-orm';
import { alias } from 'drizzle-orm/pg-core';
import { Decimal } from '../../money.js';
import { DEFAULT_ACCOUNT } from '../../strategy/index.js';
import { type AccountScope, accountCondition } from '../account-scope.js';
import type { DrizzleHandle } from '../connection.js';
import { MONEY_MAY_HAVE_LEFT } from '../cycle-transitions.js';
import { auditLog, cycles, envelopes, orders, strategies } from '../schema.js';
import type { Cycle, CycleState, JsonValue, OrderOrigin, OrderRecord, SettlementStatus } from '../types.js';
import type { AuditRecord } from './audit.js';
import { orderSubject } from './console-actions.js';
import { toCycle } from './cycle-rows.js';
import { toOrder } from './order-rows.js';

export interface OrderFilter {
  scope: AccountScope;
  strategy?: string;
  status?: SettlementStatus;
  origin?: OrderOrigin;
  from?: Date;
  until?: Date;
  /** Keyset paging: orders with a smaller id than this one (the last of the previous page). */
  beforeId?: number;
  limit: number;
}

export interface CycleFilter {
  scope: AccountScope;
  strategy?: string;
  state?: CycleState;
  /** Keyset paging: cycles with a smaller id than this one (the last of the previous page). */
  beforeId?: number;
  limit: number;
}

export interface OrderListed extends OrderRecord {
  strategy: string | null;
}

/** An account's orders whose settlement is not final yet, and their cost (as the export counts it). */
export interface OpenOrders {
  orders: number;
  cost: Decimal;
}

/** An audit row with the account of what it names (a cycle, a strategy, an envelope, an order); null: none. */
export interface AuditListed extends AuditRecord {
  account: string | null;
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
  countByStateSince(since: Date, scope: AccountScope): Promise<Map<CycleState, number>>;
  alertCounts(
    bounds: {
      unsureBefore: Date;
      discrepancySince: Date;
      stuckBefore: Date;
    },
    scope: AccountScope,
  ): Promise<AlertCounts>;
  /**
   * Who acknowledged which of these external orders, and when, by their audit subject (orderSubject: an
   * order id is unique only within its account).
   */
  acknowledgements(
    externalOrders: readonly Pick<OrderRecord, 'account' | 'serviceOrderId'>[],
  ): Promise<Map<string, { actor: string; at: Date }>>;
  /** The newest cycle of each strategy named, among the scope's accounts' cycles. */
  lastCycles(strategies: readonly string[], scope: AccountScope): Promise<Map<string, Cycle>>;
  listOrders(filter: OrderFilter): Promise<OrderListed[]>;
  /** The orders the service knows by this id at the scope's accounts (one per account at most). */
  ordersByServiceId(serviceOrderId: string, scope: AccountScope): Promise<OrderRecord[]>;
  /** Each account's open orders (by account name; an account without one is absent). */
  openOrders(scope: AccountScope): Promise<Map<string, OpenOrders>>;
  /**
   * The money committed by one strategy's cycles of the scope's accounts in [from, until) per day of its
   * zone: the cumulative-spend chart.
   */
  spendPoints(
    strategy: string,
    timeZone: string,
    period: { from: Date; until: Date },
    scope: AccountScope,
  ): Promise<SpendPoint[]>;
  /** The account an envelope's strategy buys for; null when there is no such envelope. */
  accountOfEnvelope(id: number): Promise<string | null>;
  /** The audit log newest first, each row with its subject's account; `beforeId` pages backwards. */
  auditEntries(filter: {
    scope: AccountScope;
    since?: Date;
    beforeId?: number;
    limit: number;
  }): Promise<AuditListed[]>;
  /** The scope's cycles newest first (by id), narrowed by the filter: the REST API's pages of cycles. */
  listCycles(filter: CycleFilter): Promise<Cycle[]>;
}

export function createConsoleReads(db: DrizzleHandle): ConsoleReads {
  return {
    async countByStateSince(since, scope) {
      const rows = await db
        .select({ state: cycles.state, n: count() })
        .from(cycles)
        .where(and(gte(cycles.claimedAt, since), accountCondition(cycles.account, scope)))
        .groupBy(cycles.state);
      return new Map(rows.map((row) => [row.state as CycleState, row.n]));
    },

    async alertCounts({ unsureBefore, discrepancySince, stuckBefore }, scope) {
      // Each walks an index: cycles_state_idx (state, updated_at) for the first two, since a discrepancy is
      // only ever recorded with the move to placed, and orders_due_idx (open orders only) for the third.
      const [unsure, discrepancies, stuck] = await Promise.all([
        db
          .select({ n: count() })
          .from(cycles)
          .where(
            and(
              eq(cycles.state, 'unsure'),
              lte(cycles.updatedAt, unsureBefore),
              accountCondition(cycles.account, scope),
            ),
          ),
        db
          .select({ n: count() })
          .from(cycles)
          .where(
            and(
              eq(cycles.state, 'placed'),
              gte(cycles.updatedAt, discrepancySince),
              isNotNull(cycles.discrepancy),
              accountCondition(cycles.account, scope),
            ),
          ),
        db
          .select({ n: count() })
          .from(orders)
          .where(
            and(
              isNull(orders.settledAt),
              lte(orders.stuckFlaggedAt, stuckBefore),
              accountCondition(orders.account, scope),
            ),
          ),
      ]);
      return {
        unsureSince: unsure[0]?.n ?? 0,
        discrepanciesSince: discrepancies[0]?.n ?? 0,
        stuckSince: stuck[0]?.n ?? 0,
      };
    },

    async acknowledgements(externalOrders) {
      if (externalOrders.length === 0) return new Map();
      const subjects = externalOrders.map((order) => orderSubject(order.account, order.serviceOrderId));
      const rows = await db
        .select({ subject: auditLog.subject, actor: auditLog.actor, at: auditLog.at })
        .from(auditLog)
        .where(and(eq(auditLog.action, 'order.acknowledge'), inArray(auditLog.subject, subjects)));
      return new Map(rows.map((row) => [row.subject ?? '', { actor: row.actor, at: row.at }]));
    },

    async lastCycles(names, scope) {
      if (names.length === 0) return new Map();
      // One index step per strategy (cycles_strategy_slot_key, newest slot first); a DISTINCT ON over
      // the strategies' cycles would sort their whole history instead. A strategy moved to another account
      // keeps its cycles of the first: the scope keeps them from a person of the second.
      const newest = db
        .select({ id: cycles.id })
        .from(cycles)
        .where(and(eq(cycles.strategy, strategies.name), accountCondition(cycles.account, scope)))
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

    async listOrders({ scope, strategy, status, origin, from, until, beforeId, limit }) {
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
            accountCondition(orders.account, scope),
          ),
        )
        .orderBy(desc(orders.id))
        .limit(limit);
      return rows.map((row) => ({ ...toOrder(row.order), strategy: row.strategy }));
    },

    async ordersByServiceId(serviceOrderId, scope) {
      const rows = await db
        .select()
        .from(orders)
        .where(and(eq(orders.serviceOrderId, serviceOrderId), accountCondition(orders.account, scope)))
        .orderBy(orders.account);
      return rows.map(toOrder);
    },

    async openOrders(scope) {
      // orders_due_idx holds the open orders only; the cost is the export's (the quote's, else the service's).
      const rows = await db
        .select({
          account: orders.account,
          n: count(),
          cost: sql<string>`coalesce(sum(coalesce(${cycles.totalCost}, ${orders.expectedAmount}, ${orders.amount})), 0)::text`,
        })
        .from(orders)
        .leftJoin(cycles, eq(cycles.id, orders.cycleId))
        .where(and(isNull(orders.settledAt), accountCondition(orders.account, scope)))
        .groupBy(orders.account);
      return new Map(rows.map((row) => [row.account, { orders: row.n, cost: new Decimal(row.cost) }]));
    },

    async accountOfEnvelope(id) {
      const [row] = await db
        .select({ account: strategies.account })
        .from(envelopes)
        .innerJoin(strategies, eq(strategies.name, envelopes.strategy))
        .where(eq(envelopes.id, id));
      return row?.account ?? null;
    },

    async auditEntries({ scope, since, beforeId, limit }) {
      const account = auditAccount();
      const rows = await db
        .select({ entry: auditLog, account: account.expression })
        .from(auditLog)
        .leftJoin(cycles, account.cycleJoin)
        .leftJoin(strategies, account.strategyJoin)
        .leftJoin(envelopes, account.envelopeJoin)
        .leftJoin(account.envelopeStrategy, account.envelopeStrategyJoin)
        .where(
          and(
            since === undefined ? undefined : gte(auditLog.at, since),
            beforeId === undefined ? undefined : lt(auditLog.id, beforeId),
            scope.accounts === null ? undefined : inArray(account.expression, [...scope.accounts]),
          ),
        )
        .orderBy(desc(auditLog.id))
        .limit(limit);
      return rows.map(({ entry, account }) => ({
        id: entry.id,
        at: entry.at,
        actor: entry.actor,
        action: entry.action,
        subject: entry.subject,
        before: entry.before as JsonValue | null,
        after: entry.after as JsonValue | null,
        account,
      }));
    },

    async listCycles({ scope, strategy, state, beforeId, limit }) {
      const rows = await db
        .select()
        .from(cycles)
        .where(
          and(
            accountCondition(cycles.account, scope),
            strategy === undefined ? undefined : eq(cycles.strategy, strategy),
            state === undefined ? undefined : eq(cycles.state, state),
            beforeId === undefined ? undefined : lt(cycles.id, beforeId),
          ),
        )
        .orderBy(desc(cycles.id))
        .limit(limit);
      return rows.map(toCycle);
    },

    async spendPoints(strategy, timeZone, { from, until }, scope) {
      // Summed per calendar day of the strategy's zone in the database: at most 31 points however many
      // orders the month holds, and exact (numeric sums, read back as decimal text).
      const day = sql<Date>`date_trunc('day', ${cycles.submittedAt}, ${timeZone})`;
      const rows = await db
        .select({ at: day, cost: sql<string>`sum(${cycles.totalCost})::text` })
        .from(cycles)
        .where(
          and(
            eq(cycles.strategy, strategy),
            accountCondition(cycles.account, scope),
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

/**
 * The account of what an audit row names, read through its subject: `cycle:ID` and `envelope:ID` (by id),
 * `strategy:NAME`, and `order:…` (orderSubject). Subjects of no account (people, sessions, the kill switch)
 * have none. Each join is one primary-key step.
 */
function auditAccount() {
  const subject = auditLog.subject;
  const idAfter = (prefix: string): SQL =>
    sql`case when ${subject} ~ ${`^${prefix}:[0-9]{1,15}$`} then substr(${subject}, ${prefix.length + 2})::bigint end`;
  const envelopeStrategy = alias(strategies, 'envelope_strategy');
  const orderAccount = sql`case when ${subject} ~ '^order:[^:]+:' then split_part(${subject}, ':', 2) when ${subject} like 'order:%' then ${DEFAULT_ACCOUNT} end`;
  return {
    cycleJoin: sql`${cycles.id} = ${idAfter('cycle')}`,
    strategyJoin: sql`${strategies.name} = case when ${subject} like 'strategy:%' then substr(${subject}, 10) end`,
    envelopeJoin: sql`${envelopes.id} = ${idAfter('envelope')}`,
    envelopeStrategy,
    envelopeStrategyJoin: eq(envelopeStrategy.name, envelopes.strategy),
    expression: sql<
      string | null
    >`coalesce(${cycles.account}, ${strategies.account}, ${envelopeStrategy.account}, ${orderAccount})`,
  };
}
