import { type Decimal, parseDecimal } from '../money.js';
import { type Order, OrderLedger } from './ledger.js';
import type { Lifecycle } from './lifecycle.js';
import type { PriceSource } from './market.js';
import { badRequest, notFound, SandboxHttpError } from './protocol.js';
import { type IssuedQuote, QuoteBook } from './quotes.js';
import { balanceRecord, computeCredit, orderRecord } from './records.js';
import type { WebhookHub } from './webhooks.js';

export interface SimulatorSettings {
  /** The account's name. */
  name: string;
  /** The market: shared by every account. */
  feed: PriceSource;
  /** Shared too: the withdrawals of every account land in one chain's blocks. */
  lifecycle: Lifecycle;
  webhooks: WebhookHub;
  creditLimit: Decimal;
  stepMs: number;
  now: () => number;
}

/**
 * One account's business state at the service, without HTTP: its quotes, orders and their lifecycle, credit
 * and webhooks. Only the price feed is shared between accounts. With stepMs > 0
 * each order advances one state every stepMs from its creation; otherwise only explicit steps move it.
 */
export class Simulator {
  readonly quotes: QuoteBook;
  readonly ledger = new OrderLedger();
  readonly webhooks: WebhookHub;
  readonly creditLimit: Decimal;
  readonly name: string;
  private readonly lifecycle: Lifecycle;
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private stopped = false;

  constructor(private readonly settings: SimulatorSettings) {
    this.quotes = new QuoteBook(settings.feed, settings.now);
    this.webhooks = settings.webhooks;
    this.creditLimit = settings.creditLimit;
    this.name = settings.name;
    this.lifecycle = settings.lifecycle;
  }

  private now(): number {
    return this.settings.now();
  }

  issueQuote(symbol: string, amount: Decimal): IssuedQuote {
    const quote = this.quotes.issue(symbol, amount);
    if (this.webhooks.isActive('quote')) this.webhooks.publish('quote', this.quotes.toRecord(quote));
    return quote;
  }

  /**
   * Redeems the quote and books the order. fxRate, when sent, must equal the quote's price: it is the rate
   * the client agreed to, and a mismatch means the client priced a different quote.
   */
  createOrder(quoteId: string, fxRate: string | undefined): Order {
    const quote = this.quotes.redeem(quoteId);
    if (fxRate !== undefined && !parseDecimal(fxRate, 'fxRate').equals(quote.price)) {
      this.quotes.release(quoteId);
      throw badRequest(`fxRate ${fxRate} does not match the quote price ${quote.price.toFixed(4)}`);
    }
    const credit = computeCredit(this.ledger.holdings(), this.creditLimit);
    if (quote.totalCost.greaterThan(credit.available)) {
      this.quotes.release(quoteId);
      throw badRequest(
        `insufficient credit: order costs ${quote.totalCost.toFixed(2)}, available ${credit.available.toFixed(2)}`,
      );
    }
    const order = this.ledger.create(quote, this.now());
    this.webhooks.publish('order', orderRecord(order));
    this.scheduleStep(order);
    return order;
  }

  /** The balance record of GET /client/balance. */
  balance(): Record<string, unknown> {
    return balanceRecord(this.ledger.holdings(), this.creditLimit);
  }

  getOrder(id: string): Order {
    const order = this.ledger.get(id);
    if (order === undefined) throw notFound(`order ${id} not found`);
    return order;
  }

  /** Advances the order one state and publishes the event of that step; 409 once it is settled. */
  step(id: string): Order {
    const order = this.getOrder(id);
    if (order.status === 'settled') throw new SandboxHttpError(409, `order ${id} is already settled`);
    const event = this.ledger.change(order, () => this.lifecycle.advance(order, this.now()));
    this.webhooks.publish(event.kind, event.data);
    this.scheduleStep(order);
    return order;
  }

  stop(): void {
    this.stopped = true;
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
  }

  private scheduleStep(order: Order): void {
    const previous = this.timers.get(order.id);
    if (previous !== undefined) clearTimeout(previous);
    this.timers.delete(order.id);
    if (this.settings.stepMs <= 0 || this.stopped || order.status === 'settled') return;
    const timer = setTimeout(() => {
      this.timers.delete(order.id);
      if (order.status !== 'settled') this.step(order.id);
    }, this.settings.stepMs);
    this.timers.set(order.id, timer);
  }
}
