/**
 * What a cycle reports: the outcome vocabulary of `once --json`, the log line and the metrics. Reason codes
 * are the strategy's decision codes plus the engine's own below; both are stable (stored and labelled).
 */
import type { Cycle, CycleState, CycleTrigger } from '../db/index.js';
import { type Decimal, toDecimalText } from '../money.js';

export const ENGINE_REASONS = [
  'slot_already_claimed',
  'paused',
  'strategy_halted',
  'quote_unavailable',
  'quote_deadline_exceeded',
  'quote_expired',
  'rate_limited',
  'quote_unusable',
  'order_rejected',
  'order_not_sent',
  'outcome_unknown',
  'state_conflict',
  'database_unavailable',
  'database_timeout',
  'database_error',
  'internal_error',
  'abandoned',
  'reconciled',
  'not_found_at_service',
  'operator_resolved',
  'approval_required',
  'approval_rejected',
  'approval_expired',
  'approved_version_gone',
] as const;
export type EngineReason = (typeof ENGINE_REASONS)[number];

export type CycleOutcome = 'placed' | 'skipped' | 'dry-run' | 'failed' | 'unsure' | 'awaiting-approval';

const OUTCOME_OF_STATE: Record<CycleState, CycleOutcome> = {
  placed: 'placed',
  skipped: 'skipped',
  dry_run: 'dry-run',
  failed: 'failed',
  not_placed: 'failed',
  unsure: 'unsure',
  // A cycle the engine had to leave mid-way (the database went away): no order left from it, or we would
  // be in submitting; recovery will mark it failed.
  claimed: 'failed',
  quoted: 'failed',
  // The order may have left and we could not record what happened.
  submitting: 'unsure',
  // Parked for people: nothing was bought yet, and nothing failed.
  awaiting_approval: 'awaiting-approval',
  approved: 'awaiting-approval',
  rejected: 'skipped',
  approval_expired: 'skipped',
};

export function outcomeOfState(state: CycleState): CycleOutcome {
  return OUTCOME_OF_STATE[state];
}

/** One cycle's result; decimals as text, as `once --json` prints it. */
export interface CycleReport {
  strategy: string;
  slot: string;
  outcome: CycleOutcome;
  reason: string;
  quoteId: string | null;
  orderId: string | null;
  price: string | null;
  amount: string | null;
  totalCost: string | null;
}

/** Extra facts for the log line and metrics, not part of the printed report. */
export interface CycleFacts {
  trigger: CycleTrigger;
  cycleId: number | null;
  errorCode: string | null;
  quotes: number;
  quoteMs: number | null;
  quoteToOrderMs: number | null;
  cycleMs: number;
  /** Placed, dry-run, or skipped by a strategy rule (not paused, halted or an error). */
  successful: boolean;
}

export function reportOfCycle(cycle: Cycle, requestedAmount: Decimal, fallbackReason: string): CycleReport {
  return {
    strategy: cycle.strategy,
    slot: cycle.slot.toISOString(),
    outcome: outcomeOfState(cycle.state),
    reason: cycle.reasonCode ?? fallbackReason,
    quoteId: cycle.quoteId,
    orderId: cycle.serviceOrderId,
    price: textOf(cycle.price),
    amount: textOf(cycle.amount ?? requestedAmount),
    totalCost: textOf(cycle.totalCost),
  };
}

export function unrecordedReport(
  strategy: string,
  slot: Date,
  outcome: CycleOutcome,
  reason: string,
  amount: Decimal,
): CycleReport {
  return {
    strategy,
    slot: slot.toISOString(),
    outcome,
    reason,
    quoteId: null,
    orderId: null,
    price: null,
    amount: textOf(amount),
    totalCost: null,
  };
}

function textOf(value: Decimal | null): string | null {
  return value === null ? null : toDecimalText(value);
}

export function isOkOutcome(outcome: CycleOutcome): boolean {
  return (
    outcome === 'placed' || outcome === 'skipped' || outcome === 'dry-run' || outcome === 'awaiting-approval'
  );
}
