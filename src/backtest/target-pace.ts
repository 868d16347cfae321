import { Decimal, ZERO } from '../money.js';
import {
  planSlice,
  type QuoteDecisionInput,
  type QuoteView,
  resizeForQuote,
  type TargetFigures,
  type TargetProgress,
  type TargetStrategy,
  verdictBeforeQuote,
  verdictQuote,
} from '../strategy/index.js';
import { quoteOf } from './quote-book.js';

/**
 * A target in the backtest. Its progress is kept as the worker reads it from the record
 * (db/repositories/spend-figures.ts): what its orders spent and received, counting the ones that park for
 * approval, and the mean price of every quote its cycles took in the window, a resized slice's first quote
 * and the quotes of skipped slots included. Each slot is judged as engine/cycle.ts and engine/placement.ts
 * judge it, by target.ts's own functions: the slice planned before quoting, the rules before the quote on
 * the sized strategy, one resize on the quote's price, then the rules with the quote. The pacing itself is
 * target.ts's; nothing here sizes a slice.
 */
export class TargetPace {
  private spent = ZERO;
  private received = ZERO;
  private quoteSum = ZERO;
  private quoteCount = 0;

  constructor(readonly strategy: TargetStrategy) {}

  progress(): TargetProgress {
    // The mean is exact here; PostgreSQL's avg rounds it to some 16 significant digits, far below anything
    // the rules compare it with (a tick of the price, a cent of a slice).
    const progress: TargetProgress = { spent: this.spent, received: this.received };
    if (this.quoteCount > 0) progress.quoteAverage = this.quoteSum.dividedBy(this.quoteCount);
    return progress;
  }

  /** An order whose money may have left or is reserved for approval: it counts towards the total. */
  bought(quote: QuoteView): void {
    this.spent = this.spent.plus(quote.totalCost);
    this.received = this.received.plus(quote.totalFilled);
  }

  private quoted(price: Decimal): void {
    this.quoteSum = this.quoteSum.plus(price);
    this.quoteCount++;
  }

  /**
   * One slot. `input`: the figures the worker reads before quoting, with the target as written and the
   * slot's quote for its plain-TWAP slice, whose price (at the service's scale) the target's slices are
   * quoted at.
   */
  judgeSlot(slot: Date, input: QuoteDecisionInput): SlotJudgement {
    const { strategy } = this;
    const { price } = input.quote;
    const figures: TargetFigures = { slot, progress: this.progress() };
    const plan = planSlice(strategy, figures);
    let sized = plan.action === 'buy' ? { ...strategy, amount: plan.amount } : strategy;
    const before = verdictBeforeQuote({ ...input, strategy: sized, target: figures });
    if (before.action === 'skip') return { action: 'skip', reason: before.reason };
    if (plan.action === 'skip') return { action: 'skip', reason: plan.reason };
    let quote = quoteOf(sized.amount, price);
    // The service answers 400 to a quote that buys nothing: the cycle fails and records no quote.
    if (quote.totalCost.isZero()) return QUOTE_UNAVAILABLE;
    const resized = resizeForQuote(sized, figures, quote);
    if (resized !== undefined) {
      this.quoted(quote.price);
      sized = { ...sized, amount: resized };
      quote = quoteOf(resized, price);
      if (quote.totalCost.isZero()) return QUOTE_UNAVAILABLE;
    }
    const judged = { ...input, strategy: sized, quote, target: figures };
    let verdict = verdictQuote(judged);
    // The worker judges the quote again under the strategy's lock on figures read afresh: the same here but
    // for the quote average, which by then holds a resized slice's first quote (the final one is stored
    // after that read).
    if (verdict.action === 'place' && resized !== undefined) {
      verdict = verdictQuote({ ...judged, target: { slot, progress: this.progress() } });
    }
    this.quoted(quote.price);
    return verdict.action === 'skip'
      ? { action: 'skip', reason: verdict.reason, quote }
      : { action: 'place', quote };
  }
}

/** What a slot's rules made of it, before the order: skipped (with the quote judged, if any), failed, or to place. */
export type SlotJudgement =
  | { action: 'skip'; reason: string; quote?: QuoteView }
  | { action: 'fail'; reason: 'quote_unavailable' }
  | { action: 'place'; quote: QuoteView };

const QUOTE_UNAVAILABLE: SlotJudgement = { action: 'fail', reason: 'quote_unavailable' };

/**
 * The amount of a slot of the target's baseline, plain TWAP: the total in equal slices over the window's
 * slots, every slot buying its slice; a `receive` slice converted at the slot's price. Cut to whole cents,
 * as the service takes amounts.
 */
export function twapAmountAt(strategy: TargetStrategy, windowSlots: number): (price: Decimal) => Decimal {
  const { measure, total } = strategy.target;
  const slice = total.dividedBy(windowSlots);
  if (measure === 'spend') {
    const amount = toCents(slice);
    return () => amount;
  }
  return (price) => toCents(slice.times(price));
}

function toCents(amount: Decimal): Decimal {
  return amount.toDecimalPlaces(2, Decimal.ROUND_DOWN);
}
