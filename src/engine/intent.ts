/**
 * The intent to order, committed before the order request leaves (the repository's commitIntent). Budgets
 * and cooldowns depend on what the strategy's other cycles did, credit guards on what every cycle of the
 * account did. The figures read before quoting may be stale by the time of the commit: another replica may
 * be working an adjacent slot (or a missed one) of the same strategy at the same moment, and both would pass
 * a cap that fits one order. So for such a strategy the commit waits for the lock(s), reads the figures
 * again and runs the same pure decision on them; strategies without these rules keep the decision taken on
 * the quote and the single-statement commit.
 */
import type {
  ApprovalNeed,
  IntentDecision,
  IntentGuard,
  IntentPatch,
  IntentVerdict,
  JsonValue,
  QuoteInput,
} from '../db/index.js';
import { type Decimal, toDecimalText } from '../money.js';
import {
  budgetPeriods,
  defaultApprovedMaxPrice,
  evaluateQuote,
  isTarget,
  needsApproval,
  needsBalance,
  type RuleResult,
  type Strategy,
} from '../strategy/index.js';
import type { AccountContext } from './context.js';
import type { CycleInputs } from './cycle-inputs.js';
import type { CycleRecord } from './cycle-record.js';

/**
 * How approval applies to this attempt: a cycle people already approved carries the highest price its fresh
 * quote may have and needs no approval again; any other cycle needs it when the strategy's rule says so.
 */
export type ApprovalState = { approvedMaxPrice: Decimal } | undefined;

/**
 * Commits the intent or, when a rule fails on the fresh figures, finishes the cycle as skipped; an order
 * that needs approval is charged to an envelope or parks the cycle for people. `failed`: the commit was cut
 * by the time limit before it landed (CycleRecord.commitIntent read the row back).
 */
export async function commitIntent(
  context: AccountContext,
  strategy: Strategy,
  record: CycleRecord,
  quote: QuoteInput,
  inputs: CycleInputs,
  decided: IntentPatch,
  timeoutMs: number,
  approval: ApprovalState,
): Promise<IntentVerdict['action'] | 'failed'> {
  const approvalNeed =
    approval === undefined && needsApproval(strategy, quote.totalCost)
      ? approvalNeedOf(strategy, quote)
      : undefined;
  const decision: IntentDecision =
    approvalNeed !== undefined || dependsOnOtherCycles(strategy)
      ? { recheck: guardOf(context, strategy, quote, inputs, timeoutMs, approval, approvalNeed) }
      : { stands: decided };
  const action = await record.commitIntent(quote, decision, timeoutMs);
  if (action === 'park') {
    context.logger.info(
      {
        strategy: strategy.name,
        slot: record.cycle.slot,
        cycleId: record.cycle.id,
        totalCost: quote.totalCost,
      },
      'the order needs approval and fits no active envelope: the cycle waits for people',
    );
  } else if (action === 'skip') {
    // Logged after the transaction: nothing slow while other replicas wait for the lock.
    context.logger.info(
      { strategy: strategy.name, slot: record.cycle.slot, reason: record.cycle.reasonCode },
      'the re-check under the strategy lock skips this slot (another cycle of the strategy committed first)',
    );
  }
  return action;
}

function dependsOnOtherCycles(strategy: Strategy): boolean {
  const { budget, cooldownMs } = strategy;
  return (
    isTarget(strategy) ||
    budget?.perDay !== undefined ||
    budget?.perMonth !== undefined ||
    cooldownMs !== undefined ||
    needsBalance(strategy)
  );
}

/** What parking records when no envelope fits: the strategy's approval rule as it is now. */
function approvalNeedOf(strategy: Strategy, quote: QuoteInput): ApprovalNeed {
  const rule = strategy.approval!;
  return {
    cost: quote.totalCost,
    price: quote.price,
    park: {
      approversRequired: rule.approvers,
      timeoutMs: rule.timeoutMs,
      defaultMaxPrice: defaultApprovedMaxPrice(quote.price, rule.priceTolerancePct),
      // The decision's trace, with the reason it waits: every other rule passed.
      trace: (trace) => [
        ...(Array.isArray(trace) ? trace : []),
        {
          rule: 'approval',
          passed: false,
          reason: 'approval_required',
          detail: {
            required: rule.required,
            ...(rule.above === undefined ? {} : { above: toDecimalText(rule.above) }),
            cost: toDecimalText(quote.totalCost),
            envelope: 'none active fits',
            approvers: String(rule.approvers),
          },
        },
      ],
    },
  };
}

function guardOf(
  context: AccountContext,
  strategy: Strategy,
  quote: QuoteInput,
  inputs: CycleInputs,
  timeoutMs: number,
  approval: ApprovalState,
  approvalNeed: ApprovalNeed | undefined,
): IntentGuard {
  const balanceSnapshotId = inputs.balanceSnapshotId ?? null;
  return {
    strategy: strategy.name,
    account: context.account.name,
    ...(approvalNeed === undefined ? {} : { approval: approvalNeed }),
    periodsAt: (at) => budgetPeriods(strategy.timezone, at),
    ...(isTarget(strategy) ? { targetWindow: strategy.target } : {}),
    // Credit guards: serialized per account, judged on the balance less what it may not show yet. "Since the
    // read" is widened by the clock skew allowed between replicas: another replica stamped submitted_at.
    ...(inputs.balanceAskedAt && needsBalance(strategy)
      ? {
          balanceReadAt: new Date(inputs.balanceAskedAt.getTime() - context.settings.reconcile.clockSkewMs),
        }
      : {}),
    timeoutMs,
    decide(figures) {
      // Either may have changed while this cycle quoted and waited for the lock.
      if (figures.paused || figures.halted) {
        const reasonCode = figures.paused ? 'paused' : 'strategy_halted';
        return { action: 'skip', reasonCode, trace: [], balanceSnapshotId };
      }
      const decision = evaluateQuote({
        strategy,
        // The cooldown counts to the moment the order may leave, not to the quote's arrival.
        now: context.clock(),
        quote: { ...quote },
        balance: inputs.balance && { ...inputs.balance, pendingCost: figures.creditPending ?? undefined },
        spent: { day: figures.spentDay, month: figures.spentMonth },
        lastSubmittedAt: figures.lastSubmittedAt ?? undefined,
        tolerances: context.tolerances,
        // What every cycle of the target committed before this lock was granted, never more than its total.
        ...(inputs.target && figures.target
          ? { target: { ...inputs.target, progress: figures.target } }
          : {}),
        ...(approval === undefined ? {} : { approvedMaxPrice: approval.approvedMaxPrice }),
      });
      const trace = traceAsJson(decision.trace);
      if (decision.action === 'place') return { action: 'commit', patch: { trace, balanceSnapshotId } };
      return { action: 'skip', reasonCode: decision.reason, trace, balanceSnapshotId };
    },
  };
}

/** A decision's trace as stored (jsonb): every rule's verdict, its reason when it failed, its details. */
export function traceAsJson(trace: readonly RuleResult[]): JsonValue {
  return trace.map(({ rule, passed, reason, detail }): JsonValue => {
    const verdict = { rule, passed, detail: { ...detail } };
    return reason === undefined ? verdict : { ...verdict, reason };
  });
}
