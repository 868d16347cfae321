/**
 * Crash recovery: cycles a dead process left mid-way. A cycle in `submitting` for longer than the order
 * timeout plus a margin may have sent its order: it becomes `unsure` and reconciliation will tell. A cycle
 * in claimed or quoted for longer than any live cycle can take sent nothing: it fails as `abandoned`. Every
 * move is a compare-and-set, so a live owner that was merely slow sees the conflict and stops.
 *
 * One kind needs no waiting: a `submitting` cycle of this very replica that this process neither drives nor
 * sent an order for (its intent landed after the process had given it up, or the process could not record
 * the undo when it did). Nothing of it left the process, so it fails as `order_not_sent` at once. Another
 * replica's `submitting` cycle is left to that replica while it lives, to the takeover when it dies
 * (liveness.ts), and to the time limit above otherwise: only its owner knows whether its request left.
 */
import { type Cycle, type CycleState, EVERY_ACCOUNT } from '../db/index.js';
import type { EngineContext } from './context.js';
import { withDatabase } from './engine-errors.js';

export interface RecoveryResult {
  madeUnsure: number;
  /** Failed with nothing sent: claimed or quoted for too long, or this replica's own unsent `submitting`. */
  abandoned: number;
}

const BATCH = 500;

export async function recoverAbandonedCycles(context: EngineContext, now: Date): Promise<RecoveryResult> {
  const { settings } = context;
  const submittingLimit = now.getTime() - settings.orderTimeoutMs - settings.recovery.submittingMarginMs;
  const idleLimit = now.getTime() - settings.recovery.abandonAfterMs;

  const submitting = await listOldest(context, 'submitting');
  const neverSent = (cycle: Cycle) =>
    cycle.owner === context.replicaId && !context.cyclesInFlight.has(cycle.id);
  const stuckSubmitting = submitting.filter(
    (cycle) => !neverSent(cycle) && (cycle.submittedAt ?? cycle.updatedAt).getTime() < submittingLimit,
  );
  let abandoned = 0;
  let madeUnsure = 0;
  for (const cycle of submitting.filter(neverSent)) {
    const moved = await move(context, cycle, 'failed', {
      reasonCode: 'order_not_sent',
      errorCode: 'INTENT_NOT_SENT',
      errorMessage: `left in submitting by this replica (${cycle.owner}) with no order sent`,
    });
    if (moved) abandoned++;
  }
  for (const cycle of stuckSubmitting) {
    const moved = await move(context, cycle, 'unsure', {
      reasonCode: 'outcome_unknown',
      errorCode: 'ABANDONED_IN_FLIGHT',
      errorMessage: `left in submitting by ${cycle.owner}; the order may have been sent`,
    });
    if (moved) {
      madeUnsure++;
      context.metrics.unsureCycles.inc();
    }
  }

  for (const state of ['claimed', 'quoted'] as const) {
    for (const cycle of await listOldest(context, state)) {
      if (cycle.updatedAt.getTime() >= idleLimit) continue;
      const moved = await move(context, cycle, 'failed', {
        reasonCode: 'abandoned',
        errorCode: 'ABANDONED',
        errorMessage: `left in ${state} by ${cycle.owner}; no order was sent`,
      });
      if (moved) abandoned++;
    }
  }
  if (madeUnsure + abandoned > 0) {
    context.logger.warn({ madeUnsure, abandoned }, 'recovered cycles left behind by a stopped process');
  }
  return { madeUnsure, abandoned };
}

/**
 * Takes over what a replica known to be dead left mid-way, without the time margins: its process sends
 * nothing more, so a `submitting` cycle is unsure now, and a `claimed` or `quoted` one sent nothing.
 */
export async function recoverCyclesOf(
  context: EngineContext,
  owner: string,
): Promise<RecoveryResult & { unsure: Cycle[] }> {
  const unsure: Cycle[] = [];
  let abandoned = 0;
  for (const state of ['submitting', 'claimed', 'quoted'] as const) {
    for (const cycle of await listOldest(context, state)) {
      if (cycle.owner !== owner) continue;
      const inFlight = state === 'submitting';
      const moved = await move(context, cycle, inFlight ? 'unsure' : 'failed', {
        reasonCode: inFlight ? 'outcome_unknown' : 'abandoned',
        errorCode: inFlight ? 'ABANDONED_IN_FLIGHT' : 'ABANDONED',
        errorMessage: inFlight
          ? `replica ${owner} died with the order in flight; the order may have been sent`
          : `replica ${owner} died in ${state}; no order was sent`,
      });
      if (!moved) continue;
      if (inFlight) {
        unsure.push(moved);
        context.metrics.unsureCycles.inc();
      } else abandoned++;
    }
  }
  return { madeUnsure: unsure.length, abandoned, unsure };
}

function listOldest(context: EngineContext, state: CycleState): Promise<Cycle[]> {
  return withDatabase(context, 'cycles_list_by_state', () =>
    context.database.cycles.listByState(EVERY_ACCOUNT, state, BATCH),
  );
}

async function move(
  context: EngineContext,
  cycle: Cycle,
  to: 'unsure' | 'failed',
  patch: { reasonCode: string; errorCode: string; errorMessage: string },
): Promise<Cycle | null> {
  const moved = await withDatabase(context, 'cycle_transition', () =>
    context.database.cycles.transition(cycle.id, cycle.state, to, patch),
  );
  if (moved) {
    context.logger.warn(
      {
        cycleId: cycle.id,
        strategy: cycle.strategy,
        slot: cycle.slot,
        from: cycle.state,
        to,
        owner: cycle.owner,
      },
      `recovered cycle: ${cycle.state} → ${to}`,
    );
  }
  return moved;
}
