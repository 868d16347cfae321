import { and, eq, inArray, isNotNull, lt } from 'drizzle-orm';
import type { DrizzleHandle } from '../connection.js';
import { cycles, orders, replicas } from '../schema.js';
import { NO_OUTBOX, type Outbox, replicasLost } from './notification-events.js';

export interface ReplicaRecord {
  id: string;
  host: string;
  pid: number;
  startedAt: Date;
  heartbeatAt: Date;
}

export interface ReplicasRepository {
  /** Registers this process (or refreshes its row) with a first heartbeat. */
  register(replica: { id: string; host: string; pid: number }): Promise<void>;
  /**
   * Beats, and registers again a replica the others took for dead (a long pause, a database outage) and
   * forgot: its next cycles must have a live owner again.
   */
  heartbeat(replica: { id: string; host: string; pid: number }): Promise<void>;
  /** A clean stop: the row goes, after the process drained its work. */
  remove(id: string): Promise<void>;
  list(): Promise<ReplicaRecord[]>;
  /** Replicas whose last heartbeat is older than `silentMs`: processes that died without stopping. */
  listGone(silentMs: number): Promise<ReplicaRecord[]>;
  /** Ends the leases a gone replica held on unsure cycles and on tracking work, so others take them now. */
  releaseLeases(ids: readonly string[]): Promise<{ cycles: number; orders: number }>;
  /** Forgets gone replicas once their work was taken over. */
  forget(ids: readonly string[]): Promise<void>;
}

export function createReplicasRepository(
  db: DrizzleHandle,
  clock: () => Date,
  outbox: Outbox = NO_OUTBOX,
): ReplicasRepository {
  return {
    async register({ id, host, pid }) {
      const now = clock();
      const values = { id, host, pid, startedAt: now, heartbeatAt: now };
      await db.insert(replicas).values(values).onConflictDoUpdate({ target: replicas.id, set: values });
    },
    async heartbeat({ id, host, pid }) {
      const now = clock();
      await db
        .insert(replicas)
        .values({ id, host, pid, startedAt: now, heartbeatAt: now })
        .onConflictDoUpdate({ target: replicas.id, set: { heartbeatAt: now } });
    },
    async remove(id) {
      await db.delete(replicas).where(eq(replicas.id, id));
    },
    async list() {
      return db.select().from(replicas).orderBy(replicas.startedAt);
    },
    async listGone(silentMs) {
      const before = new Date(clock().getTime() - silentMs);
      return db.select().from(replicas).where(lt(replicas.heartbeatAt, before));
    },
    async releaseLeases(ids) {
      if (ids.length === 0) return { cycles: 0, orders: 0 };
      const owned = (column: typeof cycles.leaseOwner | typeof orders.leaseOwner) =>
        and(isNotNull(column), inArray(column, [...ids]));
      const releasedCycles = await db
        .update(cycles)
        .set({ leaseOwner: null, leaseUntil: null })
        .where(owned(cycles.leaseOwner))
        .returning({ id: cycles.id });
      const releasedOrders = await db
        .update(orders)
        .set({ leaseOwner: null, leaseUntil: null })
        .where(owned(orders.leaseOwner))
        .returning({ id: orders.id });
      return { cycles: releasedCycles.length, orders: releasedOrders.length };
    },
    async forget(ids) {
      if (ids.length === 0) return;
      await db.transaction(async (tx) => {
        const gone = await tx
          .delete(replicas)
          .where(inArray(replicas.id, [...ids]))
          .returning();
        await outbox.enqueue(
          tx,
          replicasLost(
            gone.map((replica) => replica.id),
            clock(),
          ),
        );
      });
    },
  };
}
