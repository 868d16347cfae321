import { type Balance, isPurchaseApiError } from '../api/index.js';
import type { Cycle, SpendFigures } from '../db/index.js';
import { errorCodeOf } from '../errors.js';
import { withTimeLimit } from '../runtime/time-limit.js';
import {
  type BudgetPeriods,
  budgetPeriods,
  isTarget,
  needsBalance,
  type SpentSoFar,
  type Strategy,
  type TargetFigures,
} from '../strategy/index.js';
import type { AccountContext } from './context.js';
import { withDatabase } from './engine-errors.js';

/** What the decision rules need besides the quote, read before quoting. */
export interface CycleInputs {
  halted: boolean;
  /** Absent when the strategy has no guards, or when the balance could not be read (the guards then fail closed). */
  balance?: Balance;
  /** When the balance was asked for: orders of ours placed since may not be in it. */
  balanceAskedAt?: Date;
  balanceSnapshotId?: number;
  balanceErrorCode?: string;
  /** The budget periods of the moment these inputs were read, in which `spent` was summed. */
  periods: BudgetPeriods;
  spent: SpentSoFar;
  lastSubmittedAt?: Date;
  /** A target's slot and what its window's cycles bought so far, read with the other figures. */
  target?: TargetFigures;
}

/** The spend figures the slot's claim read with it (cycle.ts), and the periods they were summed in. */
export interface FiguresRead {
  periods: BudgetPeriods;
  figures: SpendFigures;
}

/** `read`: the figures the claim returned; absent (a cycle approved and claimed back), they are read now. */
export async function readCycleInputs(
  context: AccountContext,
  strategy: Strategy,
  cycle: Cycle,
  read?: FiguresRead,
): Promise<CycleInputs> {
  const { database } = context;
  const { periods, figures } = read ?? (await readFigures(context, strategy));
  const inputs: CycleInputs = {
    halted: figures.halted,
    periods,
    spent: { day: figures.spentDay, month: figures.spentMonth },
  };
  if (figures.lastSubmittedAt !== null) inputs.lastSubmittedAt = figures.lastSubmittedAt;
  if (figures.target !== null) inputs.target = { slot: cycle.slot, progress: figures.target };
  if (inputs.halted || !needsBalance(strategy)) return inputs;

  const askedAt = context.clock();
  try {
    inputs.balance = await withTimeLimit(context.settings.balanceTimeoutMs, (signal) =>
      context.account.client.getBalance({ signal }),
    );
  } catch (error) {
    // Refused credentials are a configuration fault for an operator, not a passing outage: the cycle fails
    // (and `once` exits 1) instead of looking like a routine skip.
    if (!isPurchaseApiError(error) || error.code === 'API_UNAUTHORIZED' || error.code === 'API_FORBIDDEN') {
      throw error;
    }
    inputs.balanceErrorCode = errorCodeOf(error);
    context.logger.warn(
      { strategy: strategy.name, slot: cycle.slot, errorCode: inputs.balanceErrorCode, err: error },
      'balance unavailable: the strategy guards will skip this slot',
    );
    return inputs;
  }
  inputs.balanceAskedAt = askedAt;
  const snapshot = await withDatabase(context, 'balance_record', () =>
    database.balances.record({
      ...inputs.balance!,
      account: context.account.name,
      takenAt: context.clock(),
      cycleId: cycle.id,
    }),
  );
  inputs.balanceSnapshotId = snapshot.id;
  return inputs;
}

async function readFigures(context: AccountContext, strategy: Strategy): Promise<FiguresRead> {
  // A cycle is charged to the budget period of its intent's moment; these are the figures of now, and the
  // commit re-reads them for its own instant.
  const periods = budgetPeriods(strategy.timezone, context.clock());
  const figures = await withDatabase(context, 'cycle_inputs', () =>
    context.database.cycles.spendFigures({
      strategy: strategy.name,
      account: context.account.name,
      periods,
      ...(isTarget(strategy) ? { targetWindow: strategy.target } : {}),
    }),
  );
  return { periods, figures };
}
