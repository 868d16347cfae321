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
  /** Requests per second the replica allows itself at the service, as of its last beat; null: no pace. */
  apiPace: number | null;
}

export interface ReplicasRepository {
  /** Registers this process (or refreshes its row) with a first heartbeat. */
  register(replica: { id: string; host: string; pid: number }): Promise<void>;
  /**
   * Beats with the replica's pace at the service, and registers again a replica the others took for dead (a
   * long pause, a database outage) and forgot: its next cycles must have a live owner again.
   */
  heartbeat(replica: { id: string; host: string; pid: number; apiPace?: number }): Promise<void>;
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
    async heartbeat({ id, host, pid, apiPace }) {
      const now = clock();
      const pace = apiPace === undefined ? null : String(apiPace);
      await db
        .insert(replicas)
        .values({ id, host, pid, startedAt: now, heartbeatAt: now, apiPace: pace })
        .onConflictDoUpdate({ target: replicas.id, set: { heartbeatAt: now, apiPace: pace } });
    },
    async remove(id) {
      await db.delete(replicas).where(eq(replicas.id, id));
    },
    async list() {
      return (await db.select().from(replicas).orderBy(replicas.startedAt)).map(toReplica);
    },
    async listGone(silentMs) {
      const before = new Date(clock().getTime() - silentMs);
      return (await db.select().from(replicas).where(lt(replicas.heartbeatAt, before))).map(toReplica);
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

/** A pace is a figure to show, not money: a JS number is exact enough for it. */
function toReplica({ apiPace, ...row }: typeof replicas.$inferSelect): ReplicaRecord {
  return { ...row, apiPace: apiPace === null ? null : Number(apiPace) };
}
