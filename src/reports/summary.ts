/**
 * `treasury-bot report`: what was bought in a period, per day, week, month or strategy, and what the
 * price-threshold strategies saved against buying at every quote they saw. The sums come from the database
 * as exact decimals; the only rounding is in the averages and the savings, stated in `rounding`.
 */
import type { Database, OrderAggregate } from '../db/index.js';
import { reportQueries } from '../db/index.js';
import { Decimal, formatMoney, ZERO } from '../money.js';
import { type Grouping, type LabelledPeriod, type Period, periodsOf } from './periods.js';

/** Decimal places of the averages (cost and quoted price): the quote's 4 and two more. */
export const AVERAGE_SCALE = 6;
/** Decimal places of savings in fiat: cents. */
export const FIAT_SCALE = 2;
export const ROUNDING_NOTE = `average cost = fiat spent / crypto bought, rounded half-even to ${AVERAGE_SCALE} decimals; savings rounded half-even to ${FIAT_SCALE} decimals; sums exact`;

/** Orders of no strategy (found at the service, placed by no cycle of ours) are grouped under this name. */
export const EXTERNAL = '(external)';

export interface ReportGroup {
  /** The period's label (`2026-03-08`, `2026-03`) or the strategy's name. */
  group: string;
  from: Date;
  to: Date;
  orders: number;
  spent: Decimal;
  bought: Decimal;
  /** Null when no order of the group has a known quantity. */
  averageCost: Decimal | null;
  lowestPrice: Decimal | null;
  highestPrice: Decimal | null;
  settledSpent: Decimal;
  unsettledSpent: Decimal;
  /** External orders whose crypto quantity is not known yet (nothing withdrawn): left out of the average. */
  ordersWithoutQuantity: number;
  skipped: Record<string, number>;
}

export interface SavingsLine {
  strategy: string;
  quotesSeen: number;
  /** The mean of every price quoted to the strategy in the period: what buying at each slot would average. */
  averageQuotedPrice: Decimal;
  averageCost: Decimal | null;
  bought: Decimal;
  spent: Decimal;
  /** The crypto bought, priced at the average quoted price. */
  plainDcaCost: Decimal;
  /** plainDcaCost − spent: positive when the thresholds bought cheaper. */
  savings: Decimal;
  savingsPct: Decimal | null;
}

export interface Report {
  from: Date;
  to: Date;
  timeZone: string;
  by: Grouping;
  rounding: string;
  groups: ReportGroup[];
  total: ReportGroup;
  savings: SavingsLine[];
}

/**
 * A group's running figures: the group's own, before it has a label, a period and an average, plus the cost
 * of the orders whose quantity is known (the average's numerator).
 */
interface Sums extends Omit<ReportGroup, 'group' | 'from' | 'to' | 'averageCost'> {
  spentWithQuantity: Decimal;
}

const emptySums = (): Sums => ({
  orders: 0,
  spent: ZERO,
  bought: ZERO,
  spentWithQuantity: ZERO,
  lowestPrice: null,
  highestPrice: null,
  settledSpent: ZERO,
  unsettledSpent: ZERO,
  ordersWithoutQuantity: 0,
  skipped: {},
});

function addOrders(sums: Sums, row: OrderAggregate): void {
  const low = new Decimal(row.lowestPrice);
  const high = new Decimal(row.highestPrice);
  sums.orders += row.orders;
  sums.spent = sums.spent.plus(row.spent);
  sums.bought = sums.bought.plus(row.bought);
  sums.spentWithQuantity = sums.spentWithQuantity.plus(row.spentWithQuantity);
  sums.lowestPrice = sums.lowestPrice === null || low.lt(sums.lowestPrice) ? low : sums.lowestPrice;
  sums.highestPrice = sums.highestPrice === null || high.gt(sums.highestPrice) ? high : sums.highestPrice;
  sums.settledSpent = sums.settledSpent.plus(row.settledSpent);
  sums.unsettledSpent = sums.unsettledSpent.plus(row.unsettledSpent);
  sums.ordersWithoutQuantity += row.ordersWithoutQuantity;
}

function addSkips(sums: Sums, reason: string, cycles: number): void {
  sums.skipped[reason] = (sums.skipped[reason] ?? 0) + cycles;
}

/** The same order on every machine, whatever its locale. */
function byCodePoint(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export function averageOf(spent: Decimal, bought: Decimal): Decimal | null {
  if (bought.isZero()) return null;
  return new Decimal(formatMoney(spent.dividedBy(bought), AVERAGE_SCALE, 'halfEven'));
}

function toGroup(group: string, period: Period, sums: Sums): ReportGroup {
  const { spentWithQuantity, ...rest } = sums;
  return {
    group,
    from: period.start,
    to: period.end,
    ...rest,
    averageCost: averageOf(spentWithQuantity, sums.bought),
  };
}

export async function buildReport(
  database: Database,
  range: Period,
  by: Grouping,
  timeZone: string,
): Promise<Report> {
  const periods = periodsOf(range, by, timeZone);
  const bounds = [...periods.map((period) => period.start), range.end];
  const queries = reportQueries(database);
  const [orderRows, skipRows, quotesSeen] = await Promise.all([
    queries.orderAggregates(range, bounds),
    queries.skipAggregates(range, bounds),
    queries.quotesSeen(range),
  ]);

  const total = emptySums();
  const byStrategy = new Map<string, Sums>();
  const byPeriod = periods.map(emptySums);
  const strategySums = (name: string) => {
    const sums = byStrategy.get(name) ?? emptySums();
    byStrategy.set(name, sums);
    return sums;
  };
  // width_bucket numbers the periods from 1; rows outside [start, end) cannot occur (the query's range).
  const periodSums = (bucket: number) => byPeriod[bucket - 1] ?? emptySums();
  for (const row of orderRows) {
    addOrders(total, row);
    addOrders(strategySums(row.strategy ?? EXTERNAL), row);
    addOrders(periodSums(row.bucket), row);
  }
  for (const row of skipRows) {
    addSkips(total, row.reason, row.cycles);
    addSkips(strategySums(row.strategy), row.reason, row.cycles);
    addSkips(periodSums(row.bucket), row.reason, row.cycles);
  }

  const groups =
    by === 'strategy'
      ? [...byStrategy.entries()]
          .sort(([a], [b]) => byCodePoint(a, b))
          .map(([name, sums]) => toGroup(name, range, sums))
      : periods.map((period: LabelledPeriod, index) =>
          toGroup(period.label, period, byPeriod[index] ?? emptySums()),
        );

  const savings = quotesSeen
    .filter((seen) => seen.hasPriceThreshold && seen.quotes > 0)
    .sort((a, b) => byCodePoint(a.strategy, b.strategy))
    .map((seen) => savingsOf(seen.strategy, seen.quotes, new Decimal(seen.priceSum), byStrategy));

  return {
    from: range.start,
    to: range.end,
    timeZone,
    by,
    rounding: ROUNDING_NOTE,
    groups,
    total: toGroup('total', range, total),
    savings,
  };
}

function savingsOf(
  strategy: string,
  quotes: number,
  priceSum: Decimal,
  byStrategy: ReadonlyMap<string, Sums>,
): SavingsLine {
  const sums = byStrategy.get(strategy) ?? emptySums();
  const averageQuotedPrice = new Decimal(formatMoney(priceSum.dividedBy(quotes), AVERAGE_SCALE, 'halfEven'));
  const plainDcaCost = new Decimal(
    formatMoney(sums.bought.times(averageQuotedPrice), FIAT_SCALE, 'halfEven'),
  );
  const savings = plainDcaCost.minus(sums.spentWithQuantity);
  return {
    strategy,
    quotesSeen: quotes,
    averageQuotedPrice,
    averageCost: averageOf(sums.spentWithQuantity, sums.bought),
    bought: sums.bought,
    spent: sums.spent,
    plainDcaCost,
    savings,
    savingsPct: plainDcaCost.isZero()
      ? null
      : new Decimal(formatMoney(savings.dividedBy(plainDcaCost).times(100), FIAT_SCALE, 'halfEven')),
  };
}
