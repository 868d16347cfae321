import { IllegalTransitionError } from './errors.js';
import type { CycleState } from './types.js';

/**
 * The legal moves of a cycle. `submitting → quoted` is the fresh quote after the service answered 400 for
 * an expired one; `unsure` waits for reconciliation to find the order or prove it absent (`not_placed`).
 * Every state missing on the left is final.
 */
const LEGAL_MOVES: Readonly<Record<CycleState, readonly CycleState[]>> = {
  claimed: ['quoted', 'skipped', 'failed'],
  quoted: ['submitting', 'skipped', 'failed', 'dry_run'],
  submitting: ['placed', 'failed', 'unsure', 'quoted'],
  unsure: ['placed', 'not_placed'],
  placed: [],
  skipped: [],
  failed: [],
  dry_run: [],
  not_placed: [],
};

export function isLegalTransition(from: CycleState, to: CycleState): boolean {
  return LEGAL_MOVES[from]?.includes(to) ?? false;
}

export function assertLegalTransition(from: CycleState, to: CycleState): void {
  if (!isLegalTransition(from, to)) throw new IllegalTransitionError(from, to);
}

export function isFinalState(state: CycleState): boolean {
  return LEGAL_MOVES[state].length === 0;
}

/** States in which money may have left: the conservative base of budgets and cooldowns. */
export const MONEY_MAY_HAVE_LEFT: readonly CycleState[] = ['submitting', 'placed', 'unsure'];
