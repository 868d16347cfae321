import { Decimal } from '../money.js';
import type { QuoteView } from '../strategy/index.js';
import { quoteFill, servicePrice } from './fill.js';
import type { Tally } from './tally.js';

/**
 * One strategy's quotes, by the series' price text. A year of minutes holds a few thousand distinct prices,
 * so each is turned into figures once rather than at every slot; the plain-DCA baseline, which buys at
 * every slot, only counts the slots at each price and is summed once at the end (count × figures, exact).
 */
export class QuoteBook {
  private readonly quotes = new Map<string, QuoteView>();
  private readonly baselineSlots = new Map<string, number>();

  constructor(private readonly amount: Decimal) {}

  quote(priceText: string): QuoteView {
    let quote = this.quotes.get(priceText);
    if (quote === undefined) {
      // A series of many distinct prices (another market, more decimals) must not grow without bound.
      if (this.quotes.size >= MAX_CACHED) this.quotes.clear();
      const price = servicePrice(new Decimal(priceText));
      quote = { price, amount: this.amount, ...quoteFill(this.amount, price) };
      this.quotes.set(priceText, quote);
    }
    return quote;
  }

  countBaseline(priceText: string): void {
    this.baselineSlots.set(priceText, (this.baselineSlots.get(priceText) ?? 0) + 1);
  }

  /** Adds the baseline's slots to its tally: every one of them buys at its price. */
  flushBaseline(baseline: Tally): void {
    for (const [priceText, slots] of this.baselineSlots) {
      const { price, totalCost, totalFilled } = this.quote(priceText);
      if (totalCost.isZero()) baseline.notPlaced('failed', 'quote_unavailable', slots);
      else baseline.placed(price, totalCost, totalFilled, slots);
    }
    this.baselineSlots.clear();
  }
}

const MAX_CACHED = 50_000;
