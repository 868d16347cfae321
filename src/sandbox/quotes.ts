import { randomBytes } from 'node:crypto';
import { quoteFill } from '../backtest/fill.js';
import { type Decimal, formatMoney } from '../money.js';
import type { PriceSource } from './market.js';
import { badRequest } from './protocol.js';

export const QUOTE_WINDOW_MS = 5_000;
/**
 * Expired quotes are kept a while so that a late order gets "quote expired" rather than "unknown quoteId";
 * the count cap bounds memory when a benchmark asks for tens of thousands of quotes a second.
 */
const RETENTION_MS = 2 * 60_000;
const MAX_RETAINED = 100_000;
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const QUOTE_ID_LENGTH = 9;
/**
 * Tracking carries the crypto quantity as a JSON number (the reference's type). A double keeps 15
 * significant digits, so a quote whose totalFilled needs more is refused rather than tracked rounded.
 */
const MAX_WIRE_NUMBER_DIGITS = 15;

/** What a quote fixes and the order made from it keeps: its id, what it buys and its figures. */
export interface QuoteTerms {
  quoteId: string;
  symbol: string;
  amount: Decimal;
  price: Decimal;
  totalCost: Decimal;
  totalFilled: Decimal;
}

export interface IssuedQuote extends QuoteTerms {
  issuedAt: number;
  used: boolean;
}

/** The quote record on the wire: decimal text, `expiresIn` in seconds left at issue. */
export interface QuoteRecord {
  symbol: string;
  price: string;
  totalCost: string;
  totalFilled: string;
  quoteId: string;
  expiresIn: number;
}

/** Issues quotes (figures by the service's arithmetic, backtest/fill.ts) and redeems them once. */
export class QuoteBook {
  private readonly quotes = new Map<string, IssuedQuote>();
  private idPool = Buffer.alloc(0);
  private idPoolOffset = 0;

  constructor(
    private readonly feed: PriceSource,
    private readonly now: () => number,
  ) {}

  issue(symbol: string, amount: Decimal): IssuedQuote {
    const price = this.feed.nextPrice();
    const { totalFilled, totalCost } = quoteFill(amount, price);
    if (totalCost.isZero()) throw badRequest(`amount ${amount.toFixed()} is too small to buy any ${symbol}`);
    if (totalFilled.precision(true) > MAX_WIRE_NUMBER_DIGITS) {
      throw badRequest(
        `amount ${amount.toFixed()} is too large: its ${symbol} quantity would not survive as a number`,
      );
    }
    const issuedAt = this.now();
    this.forgetOldQuotes(issuedAt);
    const quote: IssuedQuote = {
      quoteId: this.newQuoteId(),
      symbol,
      amount,
      price,
      totalCost,
      totalFilled,
      issuedAt,
      used: false,
    };
    this.quotes.set(quote.quoteId, quote);
    return quote;
  }

  /** Marks the quote used; 400 when it is unknown, already used or older than the window. */
  redeem(quoteId: string): IssuedQuote {
    const quote = this.quotes.get(quoteId);
    if (quote === undefined) throw badRequest(`unknown quoteId ${quoteId}`);
    if (quote.used) throw badRequest(`quote ${quoteId} was already used`);
    if (this.now() - quote.issuedAt >= QUOTE_WINDOW_MS) throw badRequest(`quote expired: ${quoteId}`);
    quote.used = true;
    return quote;
  }

  /** Undoes a redeem when the order could not be created after all (for example, not enough credit). */
  release(quoteId: string): void {
    const quote = this.quotes.get(quoteId);
    if (quote !== undefined) quote.used = false;
  }

  toRecord(quote: IssuedQuote): QuoteRecord {
    const secondsLeft = Math.ceil((quote.issuedAt + QUOTE_WINDOW_MS - this.now()) / 1000);
    return {
      symbol: quote.symbol,
      price: formatMoney(quote.price, 4, 'halfEven'),
      totalCost: formatMoney(quote.totalCost, 2, 'down'),
      totalFilled: formatMoney(quote.totalFilled, 6, 'down'),
      quoteId: quote.quoteId,
      expiresIn: Math.max(0, secondsLeft),
    };
  }

  // Map iteration follows insertion order, which is issue order, so the oldest quotes sit at the front.
  private forgetOldQuotes(now: number): void {
    for (const [id, quote] of this.quotes) {
      if (now - quote.issuedAt < RETENTION_MS && this.quotes.size < MAX_RETAINED) return;
      this.quotes.delete(id);
    }
  }

  // Random rather than seeded: ids must not repeat across sandbox restarts against the same worker database.
  private newQuoteId(): string {
    if (this.idPoolOffset + QUOTE_ID_LENGTH > this.idPool.length) {
      this.idPool = randomBytes(QUOTE_ID_LENGTH * 512);
      this.idPoolOffset = 0;
    }
    let id = '';
    for (let i = 0; i < QUOTE_ID_LENGTH; i++) {
      id += ALPHABET[this.idPool[this.idPoolOffset++]! % ALPHABET.length];
    }
    return id;
  }
}
