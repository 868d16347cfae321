/**
 * Replica liveness: each `run` process registers in the `replicas` table and beats every second. A replica
 * whose heartbeat stopped (killed, its host gone) is seen by the others within `goneAfterMs` and its work
 * is taken over at once, instead of after the time-based recovery margins: a cycle it left `submitting`
 * becomes `unsure`, one left `claimed` or `quoted` sent nothing and is abandoned, and its leases on unsure
 * cycles and tracking work are released. The replica that took the `unsure` cycles over reconciles them on
 * each of its beats, not on the maintenance interval: the order is adopted as soon as the service lists it,
 * and absence is proven once its quote's window plus the visibility lag passed (a dead process sends
 * nothing more), so with the defaults nothing it left is unsure 10 s after its death.
 * A clean stop removes the row after the worker drained, so it never looks dead.
 */
import { hostname } from 'node:os';
import type { Cycle } from '../db/index.js';
import { errorCodeOf } from '../errors.js';
import { createPeriodicTask } from '../runtime/periodic-task.js';
import { type EngineContext, inAccount } from './context.js';
import { withDatabase } from './engine-errors.js';
import { reconcileCycle } from './reconcile.js';
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
  /** Reconciles the unsure cycles taken over from lost replicas once (tests; a task of its own otherwise). */
  reconcileTakenOver(): Promise<void>;
  stop(): Promise<void>;
}

export function createLiveness(context: EngineContext, options: LivenessOptions = {}): Liveness {
  const heartbeatMs = options.heartbeatMs ?? 1_000;
  const goneAfterMs = options.goneAfterMs ?? 3_000;
  const { database, replicaId, logger } = context;
  const self = { id: replicaId, host: hostname(), pid: process.pid };
  /** Cycles this replica made unsure in a takeover, reconciled on each beat until settled. */
  const chased = new Map<number, Cycle>();

  const chase = async (signal?: AbortSignal): Promise<void> => {
    const now = context.clock();
    const { quoteWindowMs, reconcile } = context.settings;
    for (const [id, cycle] of chased) {
      if (signal?.aborted) return;
      try {
        const verdict = await reconcileCycle(inAccount(context, cycle.account), cycle, now, signal);
        if (verdict !== 'waiting') chased.delete(id);
      } catch (error) {
        if (signal?.aborted) return;
        logger.warn(
          { cycleId: id, strategy: cycle.strategy, errorCode: errorCodeOf(error), err: error },
          'reconciliation of a lost replica’s cycle failed; retried on the next beat',
        );
      }
      // Settled elsewhere, or absence not provable from a partial list: maintenance has it from here.
      const sentAt = (cycle.submittedAt ?? cycle.updatedAt).getTime();
      const hopeless = sentAt + quoteWindowMs + reconcile.visibilityLagMs + 10 * heartbeatMs;
      if (now.getTime() > hopeless) chased.delete(id);
    }
  };

  const beat = async (): Promise<string[]> => {
    const apiPace = context.apiPace();
    await withDatabase(context, 'replica_heartbeat', () =>
      database.replicas.heartbeat(apiPace === undefined ? self : { ...self, apiPace }),
    );
    const gone = (
      await withDatabase(context, 'replicas_gone', () => database.replicas.listGone(goneAfterMs))
    ).filter((replica) => replica.id !== replicaId);
    for (const replica of gone) {
      const { unsure, ...recovered } = await recoverCyclesOf(context, replica.id);
      for (const cycle of unsure) chased.set(cycle.id, cycle);
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

  // Apart from the heartbeat: a slow service must never delay a beat past the others' silence limit.
  const tasks = [
    createPeriodicTask({
      name: 'replica heartbeat',
      intervalMs: heartbeatMs,
      run: beat,
      logger,
      runAtStart: false,
    }),
    createPeriodicTask({
      name: 'lost replica reconciliation',
      intervalMs: heartbeatMs,
      run: chase,
      logger,
      runAtStart: false,
    }),
  ];
  return {
    async start() {
      // A database away at this moment must not stop the start: the first beat registers (it upserts).
      await withDatabase(context, 'replica_register', () => database.replicas.register(self)).catch(
        (error: unknown) =>
          logger.warn({ err: error }, 'could not register this replica yet; its heartbeat will register it'),
      );
      for (const task of tasks) task.start();
    },
    beat,
    reconcileTakenOver: () => chase(),
    async stop() {
      await Promise.all(tasks.map((task) => task.stop()));
      await withDatabase(context, 'replica_remove', () => database.replicas.remove(replicaId)).catch(
        (error: unknown) =>
          logger.warn({ err: error }, 'could not remove this replica from the replicas table'),
      );
    },
  };
}
