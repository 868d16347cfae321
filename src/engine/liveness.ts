/**
 * Replica liveness: each `run` process registers in the `replicas` table and beats every second. A replica
 * whose heartbeat stopped (killed, its host gone) is seen by the others within `goneAfterMs` and its work
 * is taken over at once, instead of after the time-based recovery margins: a cycle it left `submitting`
 * becomes `unsure` (reconciliation tells whether its order exists), one left `claimed` or `quoted` sent
 * nothing and is abandoned, and its leases on unsure cycles and tracking work are released.
 * A clean stop removes the row after the worker drained, so it never looks dead.
 */
import { hostname } from 'node:os';
import { createPeriodicTask } from '../runtime/periodic-task.js';
import type { EngineContext } from './context.js';
import { withDatabase } from './engine-errors.js';
import { recoverCyclesOf } from './recovery.js';

export interface LivenessOptions {
  heartbeatMs?: number;
  /** Silence after which a replica counts as gone; several heartbeats, so one slow write is not a death. */
  goneAfterMs?: number;
}

export interface Liveness {
  start(): Promise<void>;
  /** Runs one beat and takeover pass now (tests, and the first pass at start). */
  beat(): Promise<string[]>;
  stop(): Promise<void>;
}

export function createLiveness(context: EngineContext, options: LivenessOptions = {}): Liveness {
  const heartbeatMs = options.heartbeatMs ?? 1_000;
  const goneAfterMs = options.goneAfterMs ?? 3_000;
  const { database, replicaId, logger } = context;
  const self = { id: replicaId, host: hostname(), pid: process.pid };

  const beat = async (): Promise<string[]> => {
    await withDatabase(context, 'replica_heartbeat', () => database.replicas.heartbeat(self));
    const gone = (
      await withDatabase(context, 'replicas_gone', () => database.replicas.listGone(goneAfterMs))
    ).filter((replica) => replica.id !== replicaId);
    for (const replica of gone) {
      const recovered = await recoverCyclesOf(context, replica.id);
      const released = await withDatabase(context, 'replica_release_leases', () =>
        database.replicas.releaseLeases([replica.id]),
      );
      await withDatabase(context, 'replica_forget', () => database.replicas.forget([replica.id]));
      logger.warn(
        {
          alert: 'replica_lost',
          replica: replica.id,
          host: replica.host,
          pid: replica.pid,
          lastHeartbeat: replica.heartbeatAt,
          ...recovered,
          releasedLeases: released,
        },
        'replica lost (no heartbeat): its in-flight cycles and leases are taken over',
      );
    }
    return gone.map((replica) => replica.id);
  };

  const task = createPeriodicTask({
    name: 'replica heartbeat',
    intervalMs: heartbeatMs,
    run: beat,
    logger,
    runAtStart: false,
  });
  return {
    async start() {
      // A database away at this moment must not stop the start: the first beat registers (it upserts).
      await withDatabase(context, 'replica_register', () => database.replicas.register(self)).catch(
        (error: unknown) =>
          logger.warn({ err: error }, 'could not register this replica yet; its heartbeat will register it'),
      );
      task.start();
    },
    beat,
    async stop() {
      await task.stop();
      await withDatabase(context, 'replica_remove', () => database.replicas.remove(replicaId)).catch(
        (error: unknown) =>
          logger.warn({ err: error }, 'could not remove this replica from the replicas table'),
      );
    },
  };
}
