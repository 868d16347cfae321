/**
 * `treasury-bot report`: what was bought in a period, per day, week, month or strategy, and what the
 * price-threshold strategies saved against buying at every quote they saw. The sums come from the database
 * as exact decimals; the only rounding is in the averages and the savings, stated in `rounding`.
 *
 * Each account's figures stand apart (an account is one legal entity's books): a group is one account's
 * period or strategy, the accounts in name order, and only the total adds the accounts of the scope up.
 */
import type { AccountScope, Database, OrderAggregate } from '../db/index.js';
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
  /** The account whose figures these are; null for the total of a report over several accounts. */
  account: string | null;
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
  account: string;
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
  /** The accounts the report covers: the scope's with a strategy or a row in the period, in name order. */
  accounts: string[];
  groups: ReportGroup[];
  total: ReportGroup;
  savings: SavingsLine[];
}

/**
 * A group's running figures: the group's own, before it has a label, a period and an average, plus the cost
 * of the orders whose quantity is known (the average's numerator).
 */
interface Sums extends Omit<ReportGroup, 'account' | 'group' | 'from' | 'to' | 'averageCost'> {
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

function toGroup(account: string | null, group: string, period: Period, sums: Sums): ReportGroup {
  const { spentWithQuantity, ...rest } = sums;
  return {
    account,
    group,
    from: period.start,
    to: period.end,
    ...rest,
    averageCost: averageOf(spentWithQuantity, sums.bought),
  };
}

/** One account's running figures: per strategy (external orders under EXTERNAL) and per period. */
interface AccountSums {
  byStrategy: Map<string, Sums>;
  byPeriod: Sums[];
}

export async function buildReport(
  database: Database,
  scope: AccountScope,
  range: Period,
  by: Grouping,
  timeZone: string,
): Promise<Report> {
  const periods = periodsOf(range, by, timeZone);
  const bounds = [...periods.map((period) => period.start), range.end];
  const queries = reportQueries(database);
  const [orderRows, skipRows, quotesSeen, strategyAccounts] = await Promise.all([
    queries.orderAggregates(scope, range, bounds),
    queries.skipAggregates(scope, range, bounds),
    queries.quotesSeen(scope, range),
    queries.strategyAccounts(scope),
  ]);

  // An account asked for by name is listed even when it has nothing yet: its empty periods are an answer.
  const accounts = [
    ...new Set([
      ...(scope.accounts ?? []),
      ...strategyAccounts,
      ...orderRows.map((row) => row.account),
      ...skipRows.map((row) => row.account),
    ]),
  ].sort(byCodePoint);
  const byAccount = new Map<string, AccountSums>(
    accounts.map((account) => [account, { byStrategy: new Map(), byPeriod: periods.map(emptySums) }]),
  );
  const total = emptySums();
  const strategySums = (account: string, name: string) => {
    const { byStrategy } = byAccount.get(account)!;
    const sums = byStrategy.get(name) ?? emptySums();
    byStrategy.set(name, sums);
    return sums;
  };
  // width_bucket numbers the periods from 1; rows outside [start, end) cannot occur (the query's range).
  const periodSums = (account: string, bucket: number) =>
    byAccount.get(account)!.byPeriod[bucket - 1] ?? emptySums();
  for (const row of orderRows) {
    addOrders(total, row);
    addOrders(strategySums(row.account, row.strategy ?? EXTERNAL), row);
    addOrders(periodSums(row.account, row.bucket), row);
  }
  for (const row of skipRows) {
    addSkips(total, row.reason, row.cycles);
    addSkips(strategySums(row.account, row.strategy), row.reason, row.cycles);
    addSkips(periodSums(row.account, row.bucket), row.reason, row.cycles);
  }

  const groups = [...byAccount].flatMap(([account, { byStrategy, byPeriod }]) =>
    by === 'strategy'
      ? [...byStrategy.entries()]
          .sort(([a], [b]) => byCodePoint(a, b))
          .map(([name, sums]) => toGroup(account, name, range, sums))
      : periods.map((period: LabelledPeriod, index) =>
          toGroup(account, period.label, period, byPeriod[index] ?? emptySums()),
        ),
  );

  const savings = quotesSeen
    .filter((seen) => seen.hasPriceThreshold && seen.quotes > 0)
    .sort((a, b) => byCodePoint(a.account, b.account) || byCodePoint(a.strategy, b.strategy))
    .map((seen) =>
      savingsOf(
        seen.account,
        seen.strategy,
        seen.quotes,
        new Decimal(seen.priceSum),
        byAccount.get(seen.account)?.byStrategy,
      ),
    );

  return {
    from: range.start,
    to: range.end,
    timeZone,
    by,
    rounding: ROUNDING_NOTE,
    accounts,
    groups,
    total: toGroup(accounts.length === 1 ? accounts[0]! : null, 'total', range, total),
    savings,
  };
}

function savingsOf(
  account: string,
  strategy: string,
  quotes: number,
  priceSum: Decimal,
  byStrategy: ReadonlyMap<string, Sums> | undefined,
): SavingsLine {
  const sums = byStrategy?.get(strategy) ?? emptySums();
  const averageQuotedPrice = new Decimal(formatMoney(priceSum.dividedBy(quotes), AVERAGE_SCALE, 'halfEven'));
  const plainDcaCost = new Decimal(
    formatMoney(sums.bought.times(averageQuotedPrice), FIAT_SCALE, 'halfEven'),
  );
  const savings = plainDcaCost.minus(sums.spentWithQuantity);
  return {
    account,
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
