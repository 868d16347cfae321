import { type Decimal, formatMoney, ZERO } from '../money.js';

/**
 * The figures of one strategy's run (or of its plain-DCA baseline): what was bought, at what cost, and why
 * the other slots bought nothing.
 */
export class Tally {
  slots = 0;
  orders = 0;
  spent: Decimal = ZERO;
  bought: Decimal = ZERO;
  lowest: Decimal | undefined;
  /** Slots whose order needed approval (they would have parked for people), and what they would have cost. */
  parked = 0;
  parkedCost: Decimal = ZERO;
  highest: Decimal | undefined;
  readonly skipped = new Map<string, number>();
  readonly failed = new Map<string, number>();
  /** Start instants of the calendar days and months in which a budget turned a slot away. */
  readonly budgetLimitedDays = new Set<number>();
  readonly budgetLimitedMonths = new Set<number>();

  /** `count` orders at this price (the baseline adds all of one price at once). */
  placed(price: Decimal, cost: Decimal, filled: Decimal, count = 1): void {
    this.slots += count;
    this.orders += count;
    this.spent = this.spent.plus(count === 1 ? cost : cost.times(count));
    this.bought = this.bought.plus(count === 1 ? filled : filled.times(count));
    if (this.lowest === undefined || price.lessThan(this.lowest)) this.lowest = price;
    if (this.highest === undefined || price.greaterThan(this.highest)) this.highest = price;
  }

  parkedForApproval(cost: Decimal): void {
    this.parked += 1;
    this.parkedCost = this.parkedCost.plus(cost);
  }

  notPlaced(outcome: 'skipped' | 'failed', reason: string, count = 1): void {
    this.slots += count;
    const counts = outcome === 'skipped' ? this.skipped : this.failed;
    counts.set(reason, (counts.get(reason) ?? 0) + count);
  }

  summary(): TallySummary {
    return {
      slots: this.slots,
      orders: this.orders,
      spent: formatMoney(this.spent, 2, 'halfEven'),
      bought: formatMoney(this.bought, 6, 'halfEven'),
      // BRL per USDT over the whole run; rounded for display only, the sums above stay exact.
      averageCost: this.bought.isZero()
        ? null
        : formatMoney(this.spent.dividedBy(this.bought), 4, 'halfEven'),
      lowestPrice: this.lowest === undefined ? null : formatMoney(this.lowest, 4, 'halfEven'),
      highestPrice: this.highest === undefined ? null : formatMoney(this.highest, 4, 'halfEven'),
      skipped: sortedCounts(this.skipped),
      failed: sortedCounts(this.failed),
      budgetLimited: { days: this.budgetLimitedDays.size, months: this.budgetLimitedMonths.size },
      parked: { cycles: this.parked, cost: formatMoney(this.parkedCost, 2, 'halfEven') },
    };
  }
}

/** A tally as printed and as `--json` carries it: money as decimal text. */
export interface TallySummary {
  slots: number;
  orders: number;
  spent: string;
  bought: string;
  averageCost: string | null;
  lowestPrice: string | null;
  highestPrice: string | null;
  skipped: Record<string, number>;
  failed: Record<string, number>;
  budgetLimited: { days: number; months: number };
  /** Slots that would have parked for approval, and their cost (bought or not, per --assume-approved). */
  parked: { cycles: number; cost: string };
}

/** Most frequent first, then by name, so that two runs print the same order. */
function sortedCounts(counts: Map<string, number>): Record<string, number> {
  const entries = [...counts].sort(([a, x], [b, y]) => y - x || a.localeCompare(b));
  return Object.fromEntries(entries);
}
