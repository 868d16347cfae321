import { IllegalTransitionError } from './errors.js';

/**
 * The states of a cycle: the one place they are spelled. The schema's CHECK constraint is built from this
 * list and the legal moves below cover every state, so a state added here must be given its moves.
 */
export const CYCLE_STATES = [
  'claimed',
  'quoted',
  'submitting',
  'placed',
  'skipped',
  'failed',
  'unsure',
  'dry_run',
  'not_placed',
  'awaiting_approval',
  'approved',
  'rejected',
  'approval_expired',
] as const;
export type CycleState = (typeof CYCLE_STATES)[number];

/**
 * The legal moves of a cycle: the one source of them. `claimed → submitting` is the intent committed with
 * the quote in one statement; `submitting → quoted` is the fresh quote after the service answered 400 for
 * an expired one; `unsure` waits for reconciliation to find the order or prove it absent (`not_placed`).
 * A cycle that needs a person's approval and fits no envelope parks in `awaiting_approval` with the quote it
 * saw (no order, no intent); the last approval moves it to `approved`, and the replica that claims it back
 * (`approved → claimed`, a compare-and-set) runs it again on a fresh quote. `rejected` and `approval_expired`
 * end a parked cycle without an order (an approved one expires too when no replica claims it in time); an
 * approved one waits for people again when an approval stops counting (its person disabled before the purchase). Every state with no move is final. The database refuses any other move too (migration
 * 0003_cycle_legal_moves, whose pairs a test holds equal to this table), so no statement can bypass it.
 */
export const LEGAL_MOVES: Readonly<Record<CycleState, readonly CycleState[]>> = {
  claimed: ['quoted', 'submitting', 'skipped', 'failed', 'awaiting_approval'],
  quoted: ['submitting', 'skipped', 'failed', 'dry_run', 'awaiting_approval'],
  submitting: ['placed', 'failed', 'unsure', 'quoted'],
  unsure: ['placed', 'not_placed'],
  placed: [],
  skipped: [],
  failed: [],
  dry_run: [],
  not_placed: [],
  awaiting_approval: ['approved', 'rejected', 'approval_expired'],
  approved: ['claimed', 'approval_expired', 'awaiting_approval'],
  rejected: [],
  approval_expired: [],
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

/** States whose order may exist without the service having confirmed it: credit guards count them in full. */
/**
 * Parked cycles: no money has left, but their quote's cost is reserved against the strategy's budgets until
 * they end, so that approving one cannot overrun a cap that other cycles filled meanwhile.
 */
export const RESERVED_FOR_APPROVAL: readonly CycleState[] = ['awaiting_approval', 'approved'];

export const ORDER_UNCONFIRMED: readonly CycleState[] = ['submitting', 'unsure'];
