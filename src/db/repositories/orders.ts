import { and, asc, desc, eq, getTableColumns, inArray, isNull, lt, lte, or, sql } from 'drizzle-orm';
import { toDecimalText } from '../../money.js';
import { type AccountScope, accountCondition } from '../account-scope.js';
import { arrayPlaceholder as arr } from '../bulk.js';
import { type DrizzleExecutor, type DrizzleHandle, encodedPlaceholder as encoded } from '../connection.js';
import { assertLegalTransition } from '../cycle-transitions.js';
import { GroupCommit } from '../group-commit.js';
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
import { insertedOrder, newOrderColumns, type OrderRow, toOrder, toSettlementEvent } from './order-rows.js';
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
   * another cycle (the caller decides). `audit`: a person's decision, appended in the same transaction
   * when the cycle moved.
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
  /** The order of this id at the account's service. */
  getByServiceId(account: string, serviceOrderId: string): Promise<OrderRecord | null>;
  forCycle(cycleId: number): Promise<OrderRecord | null>;
  /**
   * Leases up to `limit` of the account's unsettled orders due for a check; other owners skip them until the
   * lease ends.
   */
  claimDue(account: string, owner: string, now: Date, leaseMs: number, limit: number): Promise<OrderRecord[]>;
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
  /** The scope's orders not settled yet, oldest first. */
  listOpen(scope: AccountScope, limit?: number): Promise<OrderRecord[]>;
  /** The settlement status of each of these cycles' orders (cycles without an order are absent). */
  statusOfCycles(cycleIds: readonly number[]): Promise<Map<number, string>>;
  listRecent(limit?: number): Promise<OrderRecord[]>;
  history(orderId: number): Promise<SettlementEvent[]>;
}

const p = sql.placeholder;

/**
 * An order the worker placed, recorded as ONE statement prepared once on the pool: the order row, its first
 * history row and the cycle's move to `placed`, in data-modifying CTEs. As a transaction (begin, two
 * inserts, an update, commit) it was five round trips and three query-builder renders on every cycle
 * (bench/README.md, "Where the cycle's time goes"). The cycle moves only with a new order row; the answer is
 * the new order's id with the moved cycle (null when it was no longer in `from`), or no row at all when the
 * service's order id was already recorded (the conflict), which the caller resolves in a transaction. The
 * order row itself is composed from the values written (insertedOrder), not read back.
 */
function recordPlacedStatement(db: DrizzleHandle) {
  const insertOrder = db
    .insert(orders)
    .values({
      account: p('account'),
      serviceOrderId: p('serviceOrderId'),
      cycleId: p('cycleId'),
      origin: 'cycle',
      quoteId: p('quoteId'),
      symbol: p('symbol'),
      amount: p('amount'),
      price: p('price'),
      side: p('side'),
      serviceTimestamp: p('serviceTimestamp'),
      status: p('status'),
      createdAt: p('now'),
      updatedAt: p('now'),
      lastProgressAt: p('now'),
      nextCheckAt: p('nextCheckAt'),
      // Not a placeholder of its own: the column's encoder would be handed a null.
      settledAt: sql`case when ${p('status')} = 'settled' then ${encoded(orders.settledAt, 'now')}::timestamptz end`,
    })
    .onConflictDoNothing({ target: [orders.account, orders.serviceOrderId] })
    .returning({ id: orders.id, status: orders.status });
  const placedOrder = db
    .$with('placed_order', { id: orders.id, status: orders.status })
    .as(insertOrder.getSQL());
  const firstEvent = db.$with('first_event', { id: settlementEvents.id }).as(
    sql`insert into ${settlementEvents} (order_id, source, from_status, to_status, recorded_at)
      select id, ${p('source')}, null, status, ${encoded(settlementEvents.recordedAt, 'now')} from ${placedOrder}
      returning id`,
  );
  const moveCycle = db
    .update(cycles)
    .set({
      state: 'placed',
      serviceOrderId: encoded(cycles.serviceOrderId, 'serviceOrderId'),
      reasonCode: encoded(cycles.reasonCode, 'reasonCode'),
      errorCode: null,
      errorMessage: null,
      updatedAt: encoded(cycles.updatedAt, 'now'),
      finishedAt: encoded(cycles.finishedAt, 'now'),
      leaseOwner: null,
      leaseUntil: null,
    })
    .where(
      and(
        eq(cycles.id, p('cycleId')),
        eq(cycles.state, p('from')),
        sql`exists (select 1 from ${placedOrder})`,
      ),
    )
    .returning();
  const movedCycle = db.$with('moved_cycle', getTableColumns(cycles)).as(moveCycle.getSQL());
  return db
    .with(placedOrder, firstEvent, movedCycle)
    .select()
    .from(placedOrder)
    .leftJoin(movedCycle, sql`true`)
    .prepare('orders_record_placed');
}

/** One placed order to record with its cycle's move, as recordPlacedWithCycle's usual case takes it. */
interface PlaceCall {
  cycleId: number;
  order: ServiceOrder;
  from: CycleState;
  reasonCode: string;
  nextCheckAt: Date | undefined;
  source: SettlementSource;
}

interface Placed {
  order: OrderRecord;
  cycle: Cycle | null;
}

/** The most placed orders one statement records. */
const PLACED_PER_STATEMENT = 200;

/**
 * Several placed orders as ONE statement, the same rows and moves as recordPlacedStatement's: each order's
 * values an element of an array, unnested into rows. An order whose service id is already recorded answers
 * no row (its caller resolves it in a transaction, as a single one's does); a cycle no longer in its `from`
 * answers its order without a moved cycle. The orders are inserted in one order everywhere (account, service
 * id), so that two batches holding the same ids never wait for each other in a circle.
 */
function recordManyPlacedStatement(db: DrizzleHandle) {
  // Its other columns are read by name in the statement's text.
  const input = db.$with('i', { cycleId: orders.cycleId }).as(
    // One array per column (db/bulk.ts arrayPlaceholder), unnested into rows.
    sql`select * from unnest(${arr('cycleIds', 'bigint')}, ${arr('accounts', 'text')}, ${arr('serviceOrderIds', 'text')},
        ${arr('quoteIds', 'text')}, ${arr('symbols', 'text')}, ${arr('amounts', 'numeric')},
        ${arr('prices', 'numeric')}, ${arr('sides', 'text')}, ${arr('serviceTimestamps', 'timestamptz')},
        ${arr('statuses', 'text')}, ${arr('nextCheckAts', 'timestamptz')}, ${arr('froms', 'text')},
        ${arr('reasonCodes', 'text')}, ${arr('sources', 'text')})
      as placed_orders(cycle_id, account, service_order_id, quote_id, symbol, amount, price, side, service_timestamp,
        status, next_check_at, from_state, reason_code, source)`,
  );
  const now = sql`${p('now')}::timestamptz`;
  const placed = db.$with('placed', { id: orders.id, cycleId: orders.cycleId, status: orders.status }).as(
    sql`insert into ${orders} (account, service_order_id, cycle_id, origin, quote_id, symbol, amount, price, side,
        service_timestamp, status, created_at, updated_at, last_progress_at, next_check_at, settled_at)
      select account, service_order_id, cycle_id, 'cycle', quote_id, symbol, amount, price, side, service_timestamp,
        status, ${now}, ${now}, ${now}, next_check_at, case when status = 'settled' then ${now} end
      from ${input} order by account, service_order_id
      on conflict (account, service_order_id) do nothing
      returning id, cycle_id, status`,
  );
  const firstEvents = db.$with('first_events', { id: settlementEvents.id }).as(
    sql`insert into ${settlementEvents} (order_id, source, from_status, to_status, recorded_at)
      select placed.id, i.source, null, placed.status, ${now} from ${placed} join ${input} on i.cycle_id = placed.cycle_id
      returning id`,
  );
  const moved = db.$with('moved', getTableColumns(cycles)).as(
    sql`update ${cycles} set state = 'placed', service_order_id = i.service_order_id, reason_code = i.reason_code,
        error_code = null, error_message = null, updated_at = ${now}, finished_at = ${now}, lease_owner = null,
        lease_until = null
      from ${input} join ${placed} on placed.cycle_id = i.cycle_id
      where ${cycles.id} = i.cycle_id and ${cycles.state} = i.from_state
      returning ${cycles}.*`,
  );
  return db
    .with(input, placed, firstEvents, moved)
    .select()
    .from(placed)
    .leftJoin(moved, sql`${moved.id} = ${placed.cycleId}`)
    .prepare('orders_record_placed_many');
}

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
        eq(orders.account, p('account')),
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
    .where(and(eq(orders.account, p('account')), eq(orders.serviceOrderId, p('serviceOrderId'))))
    .prepare('orders_get_by_service_id');
  const placeOnPool = recordPlacedStatement(db);
  const placeManyOnPool = recordManyPlacedStatement(db);
  // Orders answered while a record is in flight are recorded together (group-commit.ts). Undefined: the
  // service's order id was already recorded, which the transaction below resolves.
  const placing = new GroupCommit<PlaceCall, Placed | undefined>({
    maxBatch: PLACED_PER_STATEMENT,
    // One statement moves a cycle once: the same cycle twice waits for the next.
    fits: (taken, next) => !taken.some((call) => call.cycleId === next.cycleId),
    async one(call) {
      const now = clock();
      const columns = newOrderColumns(call.cycleId, 'cycle', call.order, now, call.nextCheckAt ?? now);
      const [row] = await placeOnPool.execute({
        ...columns,
        now,
        source: call.source,
        from: call.from,
        reasonCode: call.reasonCode,
      });
      if (!row) return undefined;
      const cycle = row.moved_cycle ? toCycle(row.moved_cycle) : null;
      return { order: insertedOrder(row.placed_order.id, columns), cycle };
    },
    async many(calls) {
      const now = clock();
      const columns = calls.map((call) =>
        newOrderColumns(call.cycleId, 'cycle', call.order, now, call.nextCheckAt ?? now),
      );
      const rows = await placeManyOnPool.execute({
        cycleIds: calls.map((call) => String(call.cycleId)),
        accounts: columns.map((row) => row.account),
        serviceOrderIds: columns.map((row) => row.serviceOrderId),
        quoteIds: columns.map((row) => row.quoteId),
        symbols: columns.map((row) => row.symbol),
        amounts: columns.map((row) => toDecimalText(row.amount)),
        prices: columns.map((row) => toDecimalText(row.price)),
        sides: columns.map((row) => row.side),
        serviceTimestamps: columns.map((row) => row.serviceTimestamp.toISOString()),
        statuses: columns.map((row) => row.status),
        nextCheckAts: columns.map((row) => row.nextCheckAt.toISOString()),
        froms: calls.map((call) => call.from),
        reasonCodes: calls.map((call) => call.reasonCode),
        sources: calls.map((call) => call.source),
        now: now.toISOString(),
      });
      const byCycle = new Map(rows.map((row) => [row.placed.cycleId, row]));
      return calls.map((call, index) => {
        const row = byCycle.get(call.cycleId);
        if (!row) return undefined;
        const cycle = row.moved ? toCycle(row.moved) : null;
        return { order: insertedOrder(row.placed.id, columns[index]!), cycle };
      });
    },
  });

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
    const columns = newOrderColumns(cycleId, origin, order, now, nextCheckAt ?? now);
    const [inserted] = await tx
      .insert(orders)
      .values(columns)
      .onConflictDoNothing({ target: [orders.account, orders.serviceOrderId] })
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
          .where(
            and(
              eq(orders.account, order.account),
              eq(orders.serviceOrderId, order.id),
              isNull(orders.cycleId),
            ),
          )
          .returning();
        if (adopted) return toOrder(adopted);
      }
      const [existing] = await tx
        .select()
        .from(orders)
        .where(and(eq(orders.account, order.account), eq(orders.serviceOrderId, order.id)));
      return toOrder(existing as OrderRow);
    }
    const [event] = await tx
      .insert(settlementEvents)
      .values({ orderId: inserted.id, source, fromStatus: null, toStatus: columns.status, recordedAt: now })
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
    async recordPlacedWithCycle(cycleId, order, move, options = {}) {
      assertLegalTransition(move.from, 'placed');
      // The usual case in one statement. A discrepancy (flag and halt), a message or an audit row to write
      // with the fact, or an order already recorded (adopt or read it) take the transaction below.
      if (!move.discrepancy?.length && !options.audit && !outbox.announces('order_placed')) {
        const placed = await placing.run({
          cycleId,
          order,
          from: move.from,
          reasonCode: move.reasonCode,
          nextCheckAt: options.nextCheckAt,
          source: options.source ?? 'create',
        });
        if (placed) return placed;
      }
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

    async getByServiceId(account, serviceOrderId) {
      return first(await selectByServiceId.execute({ account, serviceOrderId }));
    },

    async forCycle(cycleId) {
      return first(await db.select().from(orders).where(eq(orders.cycleId, cycleId)).limit(1));
    },

    async claimDue(account, owner, now, leaseMs, limit) {
      const rows = await leaseDue.execute({
        account,
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

    async listOpen(scope, limit = 500) {
      const rows = await db
        .select()
        .from(orders)
        .where(and(isNull(orders.settledAt), accountCondition(orders.account, scope)))
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
