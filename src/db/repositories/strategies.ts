import { and, asc, eq, isNotNull, sql } from 'drizzle-orm';
import { type AccountScope, accountCondition, EVERY_ACCOUNT } from '../account-scope.js';
import { insertRows, rowSlices } from '../bulk.js';
import type { DrizzleExecutor, DrizzleHandle } from '../connection.js';
import { strategies } from '../schema.js';
import type { JsonValue, StrategyRecord, StrategySeen } from '../types.js';
import { NO_OUTBOX, type Outbox, strategyHalted } from './notification-events.js';

export interface StrategiesRepository {
  /** Records the strategies as just loaded: new ones are inserted, known ones get their config refreshed. */
  upsertSeen(list: readonly StrategySeen[]): Promise<void>;
  /** Stops automation for a strategy until an operator clears it; the first reason is kept. */
  halt(name: string, reason: string): Promise<StrategyRecord | null>;
  clearHalt(name: string): Promise<StrategyRecord | null>;
  get(name: string): Promise<StrategyRecord | null>;
  /** `scope`: only the strategies of these accounts (the console's lists); every account's by default. */
  list(scope?: AccountScope): Promise<StrategyRecord[]>;
  /** The halted ones of the scope only: a worker with thousands of strategies asks this every maintenance pass. */
  listHalted(scope: AccountScope): Promise<StrategyRecord[]>;
}

type StrategyRow = typeof strategies.$inferSelect;

function toStrategy(row: StrategyRow): StrategyRecord {
  return {
    name: row.name,
    kind: row.kind,
    account: row.account,
    config: row.config as JsonValue,
    hash: row.configHash,
    firstSeenAt: row.firstSeenAt,
    lastSeenAt: row.lastSeenAt,
    haltedAt: row.haltedAt,
    haltReason: row.haltReason,
  };
}

export function createStrategiesRepository(
  db: DrizzleHandle,
  clock: () => Date,
  outbox: Outbox = NO_OUTBOX,
): StrategiesRepository {
  const first = (rows: StrategyRow[]) => (rows[0] ? toStrategy(rows[0]) : null);
  return {
    async upsertSeen(list) {
      if (list.length === 0) return;
      const now = clock();
      const upsert = (executor: DrizzleExecutor, chunk: readonly StrategySeen[]) =>
        insertRows(
          executor,
          strategies,
          chunk.map((strategy) => ({
            name: strategy.name,
            kind: strategy.kind,
            account: strategy.account,
            config: strategy.config,
            configHash: strategy.hash,
            firstSeenAt: now,
            lastSeenAt: now,
          })),
        ).onConflictDoUpdate({
          target: strategies.name,
          set: {
            kind: sql`excluded.kind`,
            account: sql`excluded.account`,
            config: sql`excluded.config`,
            configHash: sql`excluded.config_hash`,
            lastSeenAt: sql`excluded.last_seen_at`,
          },
        });
      const slices = rowSlices(list);
      if (slices.length === 1) {
        await upsert(db, list);
        return;
      }
      // All or nothing, as one statement would be.
      await db.transaction(async (transaction) => {
        for (const slice of slices) await upsert(transaction, slice);
      });
    },

    async halt(name, reason) {
      const now = clock();
      return db.transaction(async (tx) => {
        const rows = await tx
          .update(strategies)
          .set({
            haltedAt: sql`coalesce(${strategies.haltedAt}, ${now.toISOString()}::timestamptz)`,
            haltReason: sql`coalesce(${strategies.haltReason}, ${reason})`,
          })
          .where(eq(strategies.name, name))
          .returning();
        const [row] = rows;
        if (row?.haltedAt)
          await outbox.enqueue(tx, strategyHalted(name, row.haltReason ?? reason, row.haltedAt));
        return first(rows);
      });
    },

    async clearHalt(name) {
      const rows = await db
        .update(strategies)
        .set({ haltedAt: null, haltReason: null })
        .where(eq(strategies.name, name))
        .returning();
      return first(rows);
    },

    async get(name) {
      return first(await db.select().from(strategies).where(eq(strategies.name, name)));
    },

    async list(scope = EVERY_ACCOUNT) {
      const rows = await db
        .select()
        .from(strategies)
        .where(accountCondition(strategies.account, scope))
        .orderBy(asc(strategies.name));
      return rows.map(toStrategy);
    },

    async listHalted(scope) {
      const rows = await db
        .select()
        .from(strategies)
        .where(and(isNotNull(strategies.haltedAt), accountCondition(strategies.account, scope)))
        .orderBy(asc(strategies.name));
      return rows.map(toStrategy);
    },
  };
}
