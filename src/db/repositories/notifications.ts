/**
 * The notification outbox. Messages are written by `enqueue` in the caller's transaction, one row per
 * channel their type is routed to, so a fact and the news of it commit or vanish together. The delivery
 * loop (src/notify/) claims due rows with FOR UPDATE SKIP LOCKED and a lease (the row's next_attempt_at
 * pushed past the delivery timeout): one replica at a time per message, and a replica that dies
 * mid-delivery leaves the message due again once the lease ends.
 */
import { randomUUID } from 'node:crypto';
import {
  and,
  asc,
  count,
  desc,
  eq,
  gte,
  inArray,
  isNotNull,
  isNull,
  lt,
  lte,
  notExists,
  sql,
} from 'drizzle-orm';
import { alias } from 'drizzle-orm/pg-core';
import { Decimal } from '../../money.js';
import type { NotificationData, NotificationEvent, NotificationType } from '../../notify/event-types.js';
import type { DrizzleExecutor, DrizzleHandle } from '../connection.js';
import { toJson } from '../json.js';
import { cycles, notifications, orders, strategies } from '../schema.js';

export type NotificationStatus = 'pending' | 'sent' | 'dead';

export interface NotificationRecord {
  /** The dedupe id the receiver sees (Standard Webhooks `webhook-id`). */
  id: string;
  type: NotificationType;
  subject: string;
  occurredAt: Date;
  data: NotificationData;
  channel: string;
  status: NotificationStatus;
  attempts: number;
  nextAttemptAt: Date;
  lastError: string | null;
  createdAt: Date;
  sentAt: Date | null;
}

/** Which channels a type goes to (the settings' routes); the outbox knows no settings of its own. */
export type NotificationRouter = (type: NotificationType) => readonly string[];

export interface DigestFigures {
  strategies: { strategy: string; orders: number; spent: Decimal; averagePrice: Decimal | null }[];
  openOrders: number;
  unsureCycles: number;
  haltedStrategies: number;
}

export interface NotificationsRepository {
  /**
   * Writes the events' messages with `executor` (a transaction of the caller, or the pool); returns how
   * many rows were written. An event with a `key` already written is left out.
   */
  enqueue(executor: DrizzleExecutor, events: readonly NotificationEvent[]): Promise<number>;
  /** Whether messages of this type go to any channel. */
  announces(type: NotificationType): boolean;
  /** enqueue() on the pool, for facts written by a single statement elsewhere. */
  enqueueNow(events: readonly NotificationEvent[]): Promise<number>;
  /**
   * Due messages whose subject has no older pending message on the same channel, leased for `leaseMs`
   * (attempts counted). `channels` limits the claim to the channels this replica can deliver to.
   */
  claimDue(limit: number, leaseMs: number, channels: readonly string[]): Promise<NotificationRecord[]>;
  markSent(id: string): Promise<void>;
  /** Another attempt at `at`; ignored when the message was claimed again since (its attempts moved on). */
  retryLater(id: string, attempts: number, at: Date, error: string): Promise<void>;
  markDead(id: string, attempts: number, error: string): Promise<void>;
  listRecent(limit: number): Promise<NotificationRecord[]>;
  /** Orders of [from, to) per strategy, and what is open now: the daily digest's figures. */
  digestFigures(from: Date, to: Date): Promise<DigestFigures>;
}

function toRecord(row: typeof notifications.$inferSelect): NotificationRecord {
  return {
    id: row.id,
    // The writers hold type to NotificationType and the CHECK constraint status to its union.
    type: row.type as NotificationType,
    subject: row.subject,
    occurredAt: row.occurredAt,
    data: row.data as NotificationData,
    channel: row.channel,
    status: row.status as NotificationStatus,
    attempts: row.attempts,
    nextAttemptAt: row.nextAttemptAt,
    lastError: row.lastError,
    createdAt: row.createdAt,
    sentAt: row.sentAt,
  };
}

/** Errors are stored for operators, bounded: a receiver may answer with a whole HTML page. */
const ERROR_LIMIT = 500;

export function createNotificationsRepository(
  db: DrizzleHandle,
  clock: () => Date,
  route: NotificationRouter,
): NotificationsRepository {
  async function enqueue(executor: DrizzleExecutor, events: readonly NotificationEvent[]): Promise<number> {
    const now = clock();
    const rows = events.flatMap((event) =>
      route(event.type).map((channel) => ({
        // A keyed message has an id derived from its key, so a second write of it conflicts.
        id: event.key === undefined ? `msg_${randomUUID()}` : `msg_${event.key}_${channel}`,
        type: event.type,
        subject: event.subject,
        occurredAt: event.occurredAt,
        data: toJson(event.data),
        channel,
        nextAttemptAt: now,
        createdAt: now,
      })),
    );
    if (rows.length === 0) return 0;
    const written = await executor
      .insert(notifications)
      .values(rows)
      .onConflictDoNothing({ target: notifications.id })
      .returning({ id: notifications.id });
    return written.length;
  }

  return {
    enqueue,
    announces: (type) => route(type).length > 0,
    enqueueNow: (events) => enqueue(db, events),

    async claimDue(limit, leaseMs, channels) {
      if (channels.length === 0) return [];
      const now = clock();
      const older = alias(notifications, 'older');
      return db.transaction(async (tx) => {
        const due = await tx
          .select({ id: notifications.id })
          .from(notifications)
          .where(
            and(
              eq(notifications.status, 'pending'),
              lte(notifications.nextAttemptAt, now),
              inArray(notifications.channel, [...channels]),
              notExists(
                tx
                  .select({ one: sql`1` })
                  .from(older)
                  .where(
                    and(
                      eq(older.subject, notifications.subject),
                      eq(older.channel, notifications.channel),
                      eq(older.status, 'pending'),
                      lt(older.seq, notifications.seq),
                    ),
                  ),
              ),
            ),
          )
          .orderBy(asc(notifications.seq))
          .limit(limit)
          .for('update', { skipLocked: true });
        if (due.length === 0) return [];
        const claimed = await tx
          .update(notifications)
          .set({
            attempts: sql`${notifications.attempts} + 1`,
            nextAttemptAt: new Date(now.getTime() + leaseMs),
          })
          .where(
            inArray(
              notifications.id,
              due.map((row) => row.id),
            ),
          )
          .returning();
        return claimed.sort((a, b) => a.seq - b.seq).map(toRecord);
      });
    },

    async markSent(id) {
      await db
        .update(notifications)
        .set({ status: 'sent', sentAt: clock(), lastError: null })
        .where(and(eq(notifications.id, id), eq(notifications.status, 'pending')));
    },

    async retryLater(id, attempts, at, error) {
      await db
        .update(notifications)
        .set({ nextAttemptAt: at, lastError: error.slice(0, ERROR_LIMIT) })
        .where(
          and(
            eq(notifications.id, id),
            eq(notifications.status, 'pending'),
            eq(notifications.attempts, attempts),
          ),
        );
    },

    async markDead(id, attempts, error) {
      await db
        .update(notifications)
        .set({ status: 'dead', lastError: error.slice(0, ERROR_LIMIT) })
        .where(
          and(
            eq(notifications.id, id),
            eq(notifications.status, 'pending'),
            eq(notifications.attempts, attempts),
          ),
        );
    },

    async listRecent(limit) {
      const rows = await db.select().from(notifications).orderBy(desc(notifications.seq)).limit(limit);
      return rows.map(toRecord);
    },

    async digestFigures(from, to) {
      const strategy = sql<string>`coalesce(${cycles.strategy}, 'external')`;
      const perStrategy = await db
        .select({
          strategy,
          orders: count(),
          spent: sql<string>`sum(${orders.amount})::text`,
          crypto: sql<string>`sum(${orders.amount} / nullif(${orders.price}, 0))::text`,
        })
        .from(orders)
        .leftJoin(cycles, eq(cycles.id, orders.cycleId))
        .where(and(gte(orders.createdAt, from), lt(orders.createdAt, to)))
        .groupBy(strategy)
        .orderBy(strategy);
      const [open] = await db.select({ n: count() }).from(orders).where(isNull(orders.settledAt));
      const [unsure] = await db.select({ n: count() }).from(cycles).where(eq(cycles.state, 'unsure'));
      const [halted] = await db.select({ n: count() }).from(strategies).where(isNotNull(strategies.haltedAt));
      return {
        strategies: perStrategy.map((row) => {
          const spent = new Decimal(row.spent ?? '0');
          const crypto = new Decimal(row.crypto ?? '0');
          return {
            strategy: row.strategy,
            orders: row.orders,
            spent,
            // Weighted by what was spent; four places, as the service quotes prices.
            averagePrice: crypto.isZero()
              ? null
              : spent.div(crypto).toDecimalPlaces(4, Decimal.ROUND_HALF_EVEN),
          };
        }),
        openOrders: open?.n ?? 0,
        unsureCycles: unsure?.n ?? 0,
        haltedStrategies: halted?.n ?? 0,
      };
    },
  };
}
