/**
 * Budgets and cooldowns depend on what the strategy's other cycles did, credit guards on what every cycle of
 * the account did. The figures read before quoting
 * may be stale by the time of the commit: another replica may be working an adjacent slot (or a missed one)
 * of the same strategy at the same moment, and both would pass a cap that fits one order. So for such a
 * strategy the intent commit waits for the strategy's lock, reads the figures again and runs the same pure
 * decision on them; strategies without these rules keep the single-statement commit.
 */
import type { IntentGuard, IntentVerdict, JsonValue, QuoteInput } from '../db/index.js';
import { budgetPeriods, evaluateQuote, needsBalance, type Strategy } from '../strategy/index.js';
import type { EngineContext } from './context.js';
import type { CycleInputs } from './cycle-inputs.js';
import type { CycleRecord } from './cycle-record.js';

export function needsSerializedIntent(strategy: Strategy): boolean {
  const { budget, cooldownMs } = strategy;
  return (
    budget?.perDay !== undefined ||
    budget?.perMonth !== undefined ||
    cooldownMs !== undefined ||
    needsBalance(strategy)
  );
}

/** Commits the intent or, when a rule fails on the fresh figures, finishes the cycle as skipped. */
export async function commitIntentSerialized(
  context: EngineContext,
  strategy: Strategy,
  record: CycleRecord,
  quote: QuoteInput,
  inputs: CycleInputs,
  timeoutMs: number,
): Promise<IntentVerdict['action']> {
  const balanceSnapshotId = inputs.balanceSnapshotId ?? null;
  const guard: IntentGuard = {
    strategy: strategy.name,
    periodsAt: (at) => budgetPeriods(strategy.timezone, at),
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
        return { action: 'skip', reasonCode, trace: [] as JsonValue, balanceSnapshotId };
      }
      const decision = evaluateQuote({
        strategy,
        // The cooldown counts to the moment the order may leave, not to the quote's arrival.
        now: context.clock(),
        quote: { ...quote },
        balance: inputs.balance && { ...inputs.balance, pendingCost: figures.creditPending },
        spent: { day: figures.spentDay, month: figures.spentMonth },
        lastPlacedAt: figures.lastPlacedAt ?? undefined,
        tolerances: context.tolerances,
      });
      const trace = decision.trace as unknown as JsonValue;
      if (decision.action === 'place') return { action: 'commit', patch: { trace, balanceSnapshotId } };
      return { action: 'skip', reasonCode: decision.reason, trace, balanceSnapshotId };
    },
  };
  const action = await record.commitIntentSerialized(quote, guard, timeoutMs);
  if (action === 'skip') {
    // Logged after the transaction: nothing slow while other replicas wait for the lock.
    context.logger.info(
      { strategy: strategy.name, slot: record.cycle.slot, reason: record.cycle.reasonCode },
      'the re-check under the strategy lock skips this slot (another cycle of the strategy committed first)',
    );
  }
  return action;
}
