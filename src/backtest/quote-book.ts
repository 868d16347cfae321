import { Decimal } from '../money.js';
import type { QuoteView } from '../strategy/index.js';
import { quoteFill, servicePrice } from './fill.js';
import type { Tally } from './tally.js';

/**
 * One strategy's quotes, by the series' price text. A year of minutes holds a few thousand distinct prices,
 * so each is turned into figures once rather than at every slot; the baseline, which buys at every slot,
 * only counts the slots at each price and is summed once at the end (count × figures, exact). The amount
 * quoted is a function of the price: a strategy's fixed amount, or a TWAP slice of a `receive` target
 * converted at the slot's price (target-pace.ts).
 */
export class QuoteBook {
  private readonly entries = new Map<string, PriceEntry>();

  constructor(
    private readonly amountAt: (price: Decimal) => Decimal,
    private readonly baseline: Tally,
  ) {}

  /** The quote of a slot at this price; the slot counts for the baseline too (one lookup for both). */
  quoteSlot(priceText: string): QuoteView {
    let entry = this.entries.get(priceText);
    if (entry === undefined) {
      // A series of many distinct prices (another market, more decimals) must not grow without bound.
      if (this.entries.size >= MAX_CACHED) this.flushBaseline();
      const price = servicePrice(new Decimal(priceText));
      entry = { quote: quoteOf(this.amountAt(price), price), baselineSlots: 0 };
      this.entries.set(priceText, entry);
    }
    entry.baselineSlots++;
    return entry.quote;
  }

  /** Adds the baseline's slots to its tally: every one of them buys at its price. */
  flushBaseline(): void {
    for (const { quote, baselineSlots } of this.entries.values()) {
      const { price, totalCost, totalFilled } = quote;
      if (totalCost.isZero()) this.baseline.notPlaced('failed', 'quote_unavailable', baselineSlots);
      else this.baseline.placed(price, totalCost, totalFilled, baselineSlots);
    }
    this.entries.clear();
  }
}

/** The service's quote for `amount` at `price` (already at the service's scale). */
export function quoteOf(amount: Decimal, price: Decimal): QuoteView {
  return { price, amount, ...quoteFill(amount, price) };
}

interface PriceEntry {
  quote: QuoteView;
  baselineSlots: number;
}

const MAX_CACHED = 50_000;
