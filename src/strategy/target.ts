import { Decimal, ZERO } from '../money.js';
import { decimalDetail, type RuleLog } from './rule-result.js';
import { eachSlotBetween } from './slots.js';
import type { Strategy, TargetStrategy } from './types.js';

/**
 * Targets: a known total bought by a date, a slot at a time. Each slot buys what keeps the purchase on the
 * straight line from where it stands to the window's end, `remaining ÷ slots left` (this one included),
 * within `slice` and never more than is left; more when the quote is well below the window's running average
 * (`opportunistic`). Nothing here remembers anything: progress is what the record says the target's orders
 * spent and received (the engine's spend figures, the backtest's tally), so a restart, another replica or a
 * new version of the file picks the pace up from the same figures. The engine sizes the slot from the figures
 * its claim read, and the rule `target_total` judges the quote again on the figures read under the strategy's
 * lock at the intent's commit: a target never buys beyond its total (DESIGN.md, invariant 17).
 */

/** What a target's orders in its window did, from the record. */
export interface TargetProgress {
  /** Fiat: the summed totalCost of its cycles whose money may have left or is reserved for approval. */
  spent: Decimal;
  /** Crypto: the summed totalFilled of the same cycles' quotes. */
  received: Decimal;
  /** The mean price of every quote its cycles took in the window; absent before the first. */
  quoteAverage?: Decimal;
}

/** What the rules need to judge a target's slot: the slot and the progress read for it. */
export interface TargetFigures {
  slot: Date;
  progress: TargetProgress;
}

/** The service's smallest fiat step: amounts are whole cents, and an order below one cent buys nothing. */
export const FIAT_STEP = new Decimal('0.01');

/**
 * What an order's rounding leaves of the slice it was sized to: its quantity is rounded down to the micro-unit
 * and its cost down to the cent, under a cent each. A target with less than this left (in fiat) is reached:
 * the last order sized to finish it left only its own rounding.
 */
export const LAST_ORDER_ROUNDING = new Decimal('0.02');

/**
 * Slots are counted one by one up to this many; a longer run is extrapolated at the rate of those counted (a
 * cadence that fine is regular at that scale), so that a window of every-second slots stays cheap to size
 * and to show. The count sits between the quote and the order: 20,000 slots walk in about 15 ms.
 */
const MAX_SLOTS_COUNTED = 20_000;

export function isTarget(strategy: Strategy): strategy is TargetStrategy {
  return strategy.kind === 'target';
}

/** What the target counts done: fiat spent or crypto received. */
export function doneOf(strategy: TargetStrategy, progress: TargetProgress): Decimal {
  return strategy.target.measure === 'spend' ? progress.spent : progress.received;
}

/** What is left to buy, in the target's measure; zero once reached (or passed, which the rules prevent). */
export function remainingOf(strategy: TargetStrategy, progress: TargetProgress): Decimal {
  const left = strategy.target.total.minus(doneOf(strategy, progress));
  return left.isPositive() ? left : ZERO;
}

/**
 * What is left in fiat at `price`, or at the window's quote average; undefined for crypto before any price
 * is known.
 */
export function leftInFiat(
  strategy: TargetStrategy,
  progress: TargetProgress,
  price?: Decimal,
): Decimal | undefined {
  const left = remainingOf(strategy, progress);
  if (strategy.target.measure === 'spend') return left;
  const rate = price ?? progress.quoteAverage;
  return rate && left.times(rate);
}

/** Nothing is left to buy but the last order's rounding (LAST_ORDER_ROUNDING). */
export function isReached(strategy: TargetStrategy, progress: TargetProgress, price?: Decimal): boolean {
  const leftFiat = leftInFiat(strategy, progress, price);
  return leftFiat === undefined
    ? remainingOf(strategy, progress).isZero()
    : leftFiat.lessThan(LAST_ORDER_ROUNDING);
}

export function slotInWindow(strategy: TargetStrategy, slot: Date): boolean {
  const at = slot.getTime();
  return at >= strategy.target.start.getTime() && at < strategy.target.end.getTime();
}

/**
 * The slots of the schedule in [from, until), counted up to `cap` (beyond the count at which the paced slice
 * falls below `slice.min`, every count sizes the same slice), and past MAX_SLOTS_COUNTED extrapolated by time.
 */
function countSlots(
  strategy: TargetStrategy,
  from: number,
  until: number,
  cap = Number.POSITIVE_INFINITY,
): number {
  let count = 0;
  let first = from;
  for (const slot of eachSlotBetween(
    strategy.schedule,
    strategy.timezone,
    new Date(from - 1),
    new Date(until - 1),
  )) {
    if (count === 0) first = slot;
    count++;
    if (count >= cap) return cap;
    if (count >= MAX_SLOTS_COUNTED) {
      // The rest at the mean distance between the slots counted.
      const rest = Math.floor(((until - 1 - slot) * (count - 1)) / (slot - first));
      return Math.min(cap, count + rest);
    }
  }
  return count;
}

/** The slots of the window from `slot` on, it included (see countSlots for `cap`). */
export function slotsLeft(strategy: TargetStrategy, slot: Date, cap?: number): number {
  return countSlots(strategy, slot.getTime(), strategy.target.end.getTime(), cap);
}

export type SlicePlan =
  | { action: 'buy'; amount: Decimal }
  | { action: 'skip'; reason: 'target_outside_window' | 'target_reached' };

/**
 * The fiat amount of a slot's order. `price`: the quote's when judging one, otherwise absent (then a
 * `receive` target converts at the window's quote average, or quotes `slice.min` when it has seen none,
 * and resizeForQuote corrects the amount on the real price).
 */
export function planSlice(strategy: TargetStrategy, figures: TargetFigures, price?: Decimal): SlicePlan {
  const { slot, progress } = figures;
  if (!slotInWindow(strategy, slot)) return { action: 'skip', reason: 'target_outside_window' };
  if (isReached(strategy, progress, price)) return { action: 'skip', reason: 'target_reached' };
  const left = remainingOf(strategy, progress);
  const { measure, slice, opportunistic } = strategy.target;
  const rate = price ?? progress.quoteAverage;
  const leftFiat = leftInFiat(strategy, progress, price);
  const boost = opportunistic && price && isBargain(strategy, price, progress.quoteAverage);
  const upTo = boost ? opportunistic.upTo : ONE;
  // A count of slots, not money: past it the paced slice is below slice.min whatever the count.
  const cap = leftFiat ? leftFiat.times(upTo).dividedBy(slice.min).ceil().toNumber() + 1 : undefined;
  const paced = left.dividedBy(Math.max(1, slotsLeft(strategy, slot, cap))).times(upTo);
  const pacedFiat = measure === 'spend' ? paced : rate ? paced.times(rate) : slice.min;
  let amount = Decimal.min(Decimal.max(pacedFiat, slice.min), slice.max);
  if (leftFiat) amount = Decimal.min(amount, leftFiat);
  amount = amount.toDecimalPlaces(2, Decimal.ROUND_DOWN);
  if (amount.lessThan(FIAT_STEP)) return { action: 'skip', reason: 'target_reached' };
  return { action: 'buy', amount };
}

/**
 * The amount to quote again for, once a quote's price is known, or undefined to judge this quote as it is:
 * smaller when this quote would take the target past its total (a `receive` target sized on an estimated
 * price), larger when the real price sizes a slice more than 1% above the quoted one (an opportunity, or an
 * estimate that was low). The engine and the backtest ask it once per slot.
 */
export function resizeForQuote(
  strategy: TargetStrategy,
  figures: TargetFigures,
  quote: { amount: Decimal; price: Decimal; totalCost: Decimal; totalFilled: Decimal },
): Decimal | undefined {
  // Without `opportunistic` a spend target's slice does not depend on the price: planSlice would size the very
  // amount quoted again, after a second walk of the window's slots inside the quote's five seconds.
  if (strategy.target.measure === 'spend' && strategy.target.opportunistic === undefined) return undefined;
  const plan = planSlice(strategy, figures, quote.price);
  if (plan.action === 'skip') return undefined;
  if (exceedsTotal(strategy, figures.progress, quote) && plan.amount.lessThan(quote.amount))
    return plan.amount;
  if (plan.amount.greaterThan(quote.amount.times(GROWTH_WORTH_A_QUOTE))) return plan.amount;
  return undefined;
}

const ONE = new Decimal(1);
const HUNDRED = new Decimal(100);
const GROWTH_WORTH_A_QUOTE = new Decimal('1.01');

function isBargain(strategy: TargetStrategy, price: Decimal, average: Decimal | undefined): boolean {
  const rule = strategy.target.opportunistic;
  if (rule === undefined || average === undefined) return false;
  const limit = average.times(HUNDRED.minus(rule.belowAveragePct)).dividedBy(HUNDRED);
  return price.lessThanOrEqualTo(limit);
}

function exceedsTotal(
  strategy: TargetStrategy,
  progress: TargetProgress,
  quote: { totalCost: Decimal; totalFilled: Decimal },
): boolean {
  return afterOrder(strategy, progress, quote).greaterThan(strategy.target.total);
}

function afterOrder(
  strategy: TargetStrategy,
  progress: TargetProgress,
  quote: { totalCost: Decimal; totalFilled: Decimal },
): Decimal {
  const added = strategy.target.measure === 'spend' ? quote.totalCost : quote.totalFilled;
  return doneOf(strategy, progress).plus(added);
}

/**
 * Before quoting: the slot lies in the window, the purchase is not after its end (an approval given late, a
 * missed slot run after a restart, a `once` with a past slot: after `end` nothing), and something is left
 * to buy. A target strategy judged without its figures fails closed.
 */
export function checkTargetBeforeQuote(
  log: RuleLog,
  strategy: Strategy,
  figures: TargetFigures | undefined,
  now: Date,
): boolean {
  if (!isTarget(strategy)) return true;
  if (figures === undefined) {
    return log.check('target_left', false, 'target_progress_unknown', () => ({ progress: 'not read' }));
  }
  const { start, end, total } = strategy.target;
  const inWindow = slotInWindow(strategy, figures.slot) && now.getTime() < end.getTime();
  const windowOpen = log.check('target_window', inWindow, 'target_outside_window', () => ({
    slot: figures.slot.toISOString(),
    now: now.toISOString(),
    start: start.toISOString(),
    end: end.toISOString(),
  }));
  if (!windowOpen) return false;
  const left = remainingOf(strategy, figures.progress);
  return log.check('target_left', !isReached(strategy, figures.progress), 'target_reached', () => ({
    total: decimalDetail(total),
    done: decimalDetail(doneOf(strategy, figures.progress)),
    left: decimalDetail(left),
  }));
}

/** With the quote: its cost (spend) or quantity (receive) keeps the target within its total. */
export function checkTargetTotal(
  log: RuleLog,
  strategy: Strategy,
  figures: TargetFigures | undefined,
  quote: { totalCost: Decimal; totalFilled: Decimal },
  now: Date,
): boolean {
  if (!isTarget(strategy)) return true;
  // A trace log goes on after a failure: the total is judged only with figures.
  if (!checkTargetBeforeQuote(log, strategy, figures, now) || figures === undefined) return false;
  const { progress } = figures;
  const after = afterOrder(strategy, progress, quote);
  const { total, measure } = strategy.target;
  return log.check('target_total', after.lessThanOrEqualTo(total), 'target_would_exceed', () => ({
    measure,
    total: decimalDetail(total),
    done: decimalDetail(doneOf(strategy, progress)),
    order: decimalDetail(measure === 'spend' ? quote.totalCost : quote.totalFilled),
    after: decimalDetail(after),
  }));
}

/** Where a target stands at an instant: what `status`, the console, the metrics and the notices show. */
export interface TargetStanding {
  /** `scheduled` before the window, `active` in it, then `completed` (reached, at any time) or `missed`. */
  state: 'scheduled' | 'active' | 'completed' | 'missed';
  measure: 'spend' | 'receive';
  total: Decimal;
  /** In the target's measure. */
  done: Decimal;
  left: Decimal;
  spent: Decimal;
  received: Decimal;
  /** done ÷ total, at most 1. */
  ratio: Decimal;
  /**
   * Where the straight line from start to end stands at the instant: total × the share of the window's slots
   * before it.
   */
  line: Decimal;
  /** done − line, in the measure: positive ahead of the line, negative behind it. */
  ahead: Decimal;
  /** The share of the window's slots still to come (at or after the instant), 0 to 1. */
  windowLeft: Decimal;
  /** What was paid per unit so far (spent ÷ received); absent before the first order. */
  averagePrice?: Decimal;
  /** The mean of the quotes seen in the window; absent before the first. */
  quoteAverage?: Decimal;
  /**
   * The slot by which the pace so far (per slot passed) buys the total; absent when nothing is bought yet,
   * when not active, or beyond a year after the window.
   */
  projectedFinish?: Date;
}

export function targetStanding(
  strategy: TargetStrategy,
  progress: TargetProgress,
  now: Date,
): TargetStanding {
  const { total, measure, start, end } = strategy.target;
  const done = doneOf(strategy, progress);
  // The line is paced by slots, as the slices are: a schedule of business hours is not behind at night.
  const at = Math.min(Math.max(now.getTime(), start.getTime()), end.getTime());
  const slots = countSlots(strategy, start.getTime(), end.getTime());
  const passed = at === end.getTime() ? slots : countSlots(strategy, start.getTime(), at);
  const passedShare = slots === 0 ? ONE : new Decimal(passed).dividedBy(slots);
  const line = total.times(passedShare);
  const reached = isReached(strategy, progress);
  const state = reached
    ? 'completed'
    : now.getTime() >= end.getTime()
      ? 'missed'
      : now.getTime() < start.getTime()
        ? 'scheduled'
        : 'active';
  const standing: TargetStanding = {
    state,
    measure,
    total,
    done,
    left: remainingOf(strategy, progress),
    spent: progress.spent,
    received: progress.received,
    ratio: Decimal.min(done.dividedBy(total), ONE),
    line,
    ahead: done.minus(line),
    windowLeft: ONE.minus(passedShare),
  };
  if (progress.received.greaterThan(0)) standing.averagePrice = progress.spent.dividedBy(progress.received);
  if (progress.quoteAverage !== undefined) standing.quoteAverage = progress.quoteAverage;
  if (state === 'active' && done.greaterThan(0) && passed > 0) {
    // At the pace so far per slot: the slot by which the rest would be bought.
    // A count of slots, not money.
    const more = remainingOf(strategy, progress).times(passed).dividedBy(done).ceil().toNumber();
    const finish = nthSlotFrom(strategy, now, more);
    if (finish !== undefined) standing.projectedFinish = finish;
  }
  return standing;
}

/**
 * The `n`th slot of the schedule at or after `from` (within a year after the window's end, and counted no
 * further than MAX_SLOTS_COUNTED); undefined beyond either.
 */
function nthSlotFrom(strategy: TargetStrategy, from: Date, n: number): Date | undefined {
  if (n < 1 || n > MAX_SLOTS_COUNTED) return undefined;
  const until = new Date(strategy.target.end.getTime() + 366 * 86_400_000);
  let count = 0;
  for (const slot of eachSlotBetween(
    strategy.schedule,
    strategy.timezone,
    new Date(from.getTime() - 1),
    until,
  )) {
    if (++count === n) return new Date(slot);
  }
  return undefined;
}
