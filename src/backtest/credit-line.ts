import { Decimal, ZERO } from '../money.js';
import type { BalanceView } from '../strategy/index.js';

/**
 * The account's credit line as the backtest sees it: every order, of whatever strategy, holds its totalCost
 * from the moment it is placed until it settles `settleDelayMs` later. The balance is what the service's
 * would show: available is total less used, and withdrawals are allowed while the line is not overdrawn.
 */
export class SimulatedCreditLine {
  private used = ZERO;
  /** total less used, kept with it: the guards of every slot read it. */
  private available: Decimal;
  /** Orders not yet settled, oldest first (the delay is one for all, so they settle in placing order). */
  private readonly holds: { settlesAt: number; cost: Decimal }[] = [];
  private head = 0;

  constructor(
    readonly total: Decimal,
    private readonly settleDelayMs: number,
  ) {
    this.available = total;
  }

  balanceAt(now: number): BalanceView {
    this.settle(now);
    const { total, used, available } = this;
    return { credit: { total, used, available }, canWithdraw: !available.isNegative() };
  }

  /** Whether the service would take an order of this cost now (it refuses one beyond the available credit). */
  covers(now: number, cost: Decimal): boolean {
    this.settle(now);
    return cost.lessThanOrEqualTo(this.available);
  }

  hold(now: number, cost: Decimal): void {
    this.holds.push({ settlesAt: now + this.settleDelayMs, cost });
    this.used = this.used.plus(cost);
    this.available = this.total.minus(this.used);
  }

  private settle(now: number): void {
    const { holds } = this;
    const settledFrom = this.head;
    while (this.head < holds.length && holds[this.head]!.settlesAt <= now) {
      this.used = this.used.minus(holds[this.head]!.cost);
      this.head++;
    }
    if (this.head !== settledFrom) this.available = this.total.minus(this.used);
    // Drop the settled prefix now and then rather than shifting the array at every settlement.
    if (this.head > 1024 && this.head * 2 > holds.length) {
      holds.splice(0, this.head);
      this.head = 0;
    }
  }
}

export const DEFAULT_CREDIT_TOTAL = new Decimal('1000000.00');
export const DEFAULT_SETTLE_DELAY_MS = 86_400_000;
