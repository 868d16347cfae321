/**
 * One cycle: claim the slot, read what the rules need, decide before quoting, then quote → decide → commit
 * the intent → order (placement.ts). Whatever happens, the cycle ends recorded with a reason code, and the
 * worker goes on with its other strategies.
 */
import type { Cycle, CycleTrigger, SpendFigures } from '../db/index.js';
import { errorCodeOf, messageOf } from '../errors.js';
import { Decimal } from '../money.js';
import {
  budgetPeriods,
  evaluateBeforeQuote,
  isTarget,
  planSlice,
  REASON_CODES,
  type Strategy,
} from '../strategy/index.js';
import { announceCycle } from './announce.js';
import type { AccountContext, EngineContext } from './context.js';
import { type FiguresRead, readCycleInputs } from './cycle-inputs.js';
import { CycleRecord } from './cycle-record.js';
import { withDatabase } from './engine-errors.js';
import { type ApprovalState, traceAsJson } from './intent.js';
import { type CycleReport, type EngineReason, reportOfCycle, unrecordedReport } from './outcomes.js';
import { type CycleTiming, placeWithFreshQuotes } from './placement.js';

export interface CycleRequest {
  strategy: Strategy;
  slot: Date;
  trigger: CycleTrigger;
}

/** Runs one cycle of a strategy that was recorded (recordStrategiesSeen) for one slot; never throws. */
export async function runCycle(context: AccountContext, request: CycleRequest): Promise<CycleReport> {
  const { strategy, slot, trigger } = request;
  const startTick = performance.now();
  const timing: CycleTiming = { quotes: 0, quoteMs: null, quoteToOrderMs: null };
  let claimed: { cycle: Cycle; figures: SpendFigures } | null;
  // Budgets cap what leaves the account per calendar period: a cycle is charged to the period (in the
  // strategy's zone) of the moment its intent is committed, whatever its slot (a past `--slot`, a late
  // missed slot). The claim reads the figures of this moment's periods; the commit re-reads them for its own.
  const periods = budgetPeriods(strategy.timezone, context.clock());
  try {
    claimed = await withDatabase(context, 'claim_slot', () =>
      context.database.cycles.claimSlotWithFigures(
        {
          strategy: strategy.name,
          account: context.account.name,
          strategyVersion: strategy.version ?? null,
          slot,
          trigger,
          owner: context.replicaId,
        },
        periods,
        isTarget(strategy) ? strategy.target : undefined,
      ),
    );
  } catch (error) {
    const report = unrecordedReport(strategy.name, slot, 'failed', reasonOfError(error), strategy.amount);
    return announceCycle(
      context,
      report,
      factsOf(trigger, startTick, timing, null, errorCodeOf(error)),
      error,
    );
  }
  if (claimed === null) {
    const report = unrecordedReport(strategy.name, slot, 'skipped', 'slot_already_claimed', strategy.amount);
    return announceCycle(context, report, factsOf(trigger, startTick, timing, null, null));
  }
  const { cycle, figures } = claimed;
  return driveClaimed(context, strategy, cycle, undefined, startTick, timing, { periods, figures });
}

/**
 * Runs a parked cycle people approved, which this replica just claimed back (`approved → claimed`): every
 * rule again on a fresh quote, with the approved maximum price, and no approval asked again. Never throws.
 */
export function resumeApprovedCycle(
  context: AccountContext,
  strategy: Strategy,
  claimed: Cycle,
  approvedMaxPrice: Decimal,
): Promise<CycleReport> {
  const timing: CycleTiming = { quotes: 0, quoteMs: null, quoteToOrderMs: null };
  return driveClaimed(context, strategy, claimed, { approvedMaxPrice }, performance.now(), timing);
}

/**
 * Ends an approved cycle this replica claimed back that cannot buy what people approved (its strategy
 * version is gone or would buy another amount): failed with the reason, which sends `order_failed`. Nothing
 * is quoted or ordered. Never throws.
 */
export async function endApprovedCycle(
  context: EngineContext,
  claimed: Cycle,
  why: string,
): Promise<CycleReport> {
  const startTick = performance.now();
  const timing: CycleTiming = { quotes: 0, quoteMs: null, quoteToOrderMs: null };
  const record = new CycleRecord(context, claimed);
  let failure: unknown;
  try {
    await record.move('failed', { reasonCode: 'approved_version_gone', errorMessage: why });
  } catch (error) {
    failure = error;
    await settleAfterError(context, record, error, reasonOfError(error));
  }
  const report = reportOfCycle(record.cycle, claimed.amount ?? new Decimal(0), 'approved_version_gone');
  const errorCode = failure === undefined ? null : errorCodeOf(failure);
  return announceCycle(
    context,
    report,
    factsOf(claimed.trigger, startTick, timing, claimed.id, errorCode),
    failure,
  );
}

async function driveClaimed(
  context: AccountContext,
  strategy: Strategy,
  claimed: Cycle,
  approval: ApprovalState,
  startTick: number,
  timing: CycleTiming,
  read?: FiguresRead,
): Promise<CycleReport> {
  const record = new CycleRecord(context, claimed);
  let failure: unknown;
  let fallbackReason: EngineReason = 'internal_error';
  context.cyclesInFlight.add(claimed.id);
  try {
    await driveCycle(context, strategy, record, timing, approval, read);
  } catch (error) {
    failure = error;
    fallbackReason = reasonOfError(error);
    await settleAfterError(context, record, error, fallbackReason);
  } finally {
    // A cycle left `submitting` after its order left stays known as sent, so that recovery waits for its
    // outcome instead of settling it as never sent (recovery.ts).
    if (!(record.orderSent && record.state === 'submitting')) context.cyclesInFlight.delete(claimed.id);
  }
  const report = reportOfCycle(record.cycle, strategy.amount, fallbackReason);
  const errorCode = record.cycle.errorCode ?? (failure === undefined ? null : errorCodeOf(failure));
  const facts = factsOf(claimed.trigger, startTick, timing, record.cycle.id, errorCode, isSuccessful(report));
  return announceCycle(context, report, facts, failure);
}

function factsOf(
  trigger: CycleTrigger,
  startTick: number,
  timing: CycleTiming,
  cycleId: number | null,
  errorCode: string | null,
  successful = false,
) {
  return { trigger, cycleId, errorCode, ...timing, cycleMs: performance.now() - startTick, successful };
}

async function driveCycle(
  context: AccountContext,
  strategy: Strategy,
  record: CycleRecord,
  timing: CycleTiming,
  approval: ApprovalState,
  read: FiguresRead | undefined,
): Promise<void> {
  if (await withDatabase(context, 'kill_switch', () => context.killSwitch.isPaused())) {
    await record.move('skipped', { reasonCode: 'paused' });
    return;
  }
  const inputs = await readCycleInputs(context, strategy, record.cycle, read);
  if (inputs.halted) {
    await record.move('skipped', { reasonCode: 'strategy_halted' });
    return;
  }
  // A target's slot buys the slice its progress calls for (target.ts); one people approved buys what they
  // approved (strategyOfParkedVersion), judged again by the same rules.
  const plan =
    isTarget(strategy) && approval === undefined && inputs.target && planSlice(strategy, inputs.target);
  const sized = plan && plan.action === 'buy' ? { ...strategy, amount: plan.amount } : strategy;
  const before = evaluateBeforeQuote({
    strategy: sized,
    now: context.clock(),
    balance: inputs.balance,
    spent: inputs.spent,
    lastSubmittedAt: inputs.lastSubmittedAt,
    ...(inputs.target === undefined ? {} : { target: inputs.target }),
  });
  const reasonCode =
    before.action === 'skip' ? before.reason : plan && plan.action === 'skip' ? plan.reason : undefined;
  if (reasonCode !== undefined) {
    await record.move('skipped', {
      reasonCode,
      trace: traceAsJson(before.trace),
      balanceSnapshotId: inputs.balanceSnapshotId ?? null,
      errorCode: inputs.balanceErrorCode ?? null,
    });
    return;
  }
  await placeWithFreshQuotes({ context, strategy: sized, record, inputs, timing, approval, resized: false });
}

function reasonOfError(error: unknown): EngineReason {
  const code = errorCodeOf(error);
  if (code === 'DB_UNAVAILABLE') return 'database_unavailable';
  if (code === 'DB_TIMEOUT') return 'database_timeout';
  if (code === 'DB_ERROR') return 'database_error';
  if (code === 'STATE_CONFLICT') return 'state_conflict';
  return 'internal_error';
}

/**
 * After an unexpected error: a cycle that sent nothing ends failed, `submitting` included (its intent is
 * undone at once: nothing left the process); one that may have sent an order ends unsure. A conflict (another
 * process moved the row) or a statement cut by the time limit (it may have landed) is read back first, and
 * the cycle settled from what is recorded. When even that cannot be written (the database is gone),
 * recovery finishes the job later.
 */
async function settleAfterError(
  context: EngineContext,
  record: CycleRecord,
  error: unknown,
  reasonCode: EngineReason,
): Promise<void> {
  const patch = { errorCode: errorCodeOf(error), errorMessage: messageOf(error) };
  try {
    if (reasonCode === 'state_conflict' || reasonCode === 'database_timeout') await record.reload();
    const ours = record.cycle.owner === context.replicaId;
    if (record.state === 'submitting' && !record.orderSent && ours) {
      await record.move('failed', { ...patch, reasonCode: 'order_not_sent' });
    } else if (reasonCode === 'state_conflict') {
      // Another process moved it and answers for it.
    } else if (record.state === 'claimed' || record.state === 'quoted') {
      await record.move('failed', { ...patch, reasonCode });
    } else if (record.state === 'submitting') {
      await record.move('unsure', { ...patch, reasonCode: 'outcome_unknown' });
      context.metrics.unsureCycles.inc();
    }
  } catch (second) {
    context.logger.error(
      { cycleId: record.cycle.id, state: record.state, errorCode: errorCodeOf(second), err: second },
      'cycle outcome could not be recorded; recovery will settle it',
    );
  }
}

/** Placed, dry-run, or skipped by one of the strategy's rules: the automation did its job. */
function isSuccessful(report: CycleReport): boolean {
  if (report.outcome === 'placed' || report.outcome === 'dry-run') return true;
  if (report.outcome === 'awaiting-approval') return true;
  return report.outcome === 'skipped' && (REASON_CODES as readonly string[]).includes(report.reason);
}
