import { type Decimal, ZERO } from '../money.js';
import {
  type BudgetPeriods,
  budgetPeriods,
  type CronSchedule,
  DEFAULT_QUOTE_TOLERANCES,
  evaluateBeforeQuote,
  evaluateQuote,
  needsBalance,
  nextSlotAfter,
  parseCron,
  type QuoteTolerances,
  type Strategy,
  slotsBetween,
} from '../strategy/index.js';
import { SimulatedCreditLine } from './credit-line.js';
import { quoteFill, servicePrice } from './fill.js';
import { BacktestInputError } from './input-error.js';
import type { PriceSeries } from './price-series.js';
import { Tally } from './tally.js';

/**
 * The backtest: every strategy's slots in the range, in time order across strategies (they share one credit
 * line), each decided as a worker cycle decides it (engine/cycle.ts, engine/placement.ts) by the same pure
 * rules: evaluateBeforeQuote on the figures before quoting, then a quote at the series' price, then
 * evaluateQuote. A cycle runs at its slot's instant, so the cooldown, the budget periods and the credit line
 * are read at that instant. Missed policies do not apply: no slot is ever missed here.
 */

export interface BacktestOptions {
  /** First and last instant (ms, inclusive) whose slots run; the range is clipped to the series. */
  from?: number;
  to?: number;
  creditTotal: Decimal;
  settleDelayMs: number;
  tolerances?: QuoteTolerances;
  /** Called with every slot's decision, in order; for tests and the chart. */
  onDecision?: (decision: SlotDecision) => void;
}

/** One slot as the worker would have recorded it: the cycle's outcome, reason code and figures. */
export interface SlotDecision {
  strategy: string;
  slot: Date;
  outcome: 'placed' | 'skipped' | 'failed';
  reason: string;
  /** The quote's, when one was taken. */
  price?: Decimal;
  cost?: Decimal;
  filled?: Decimal;
}

export interface StrategyRun {
  strategy: Strategy;
  result: Tally;
  /** Plain DCA on the same schedule and amount: every slot buys, no rule applies. */
  baseline: Tally;
}

export interface BacktestRun {
  from: Date;
  to: Date;
  strategies: StrategyRun[];
}

/** Slots are generated a week at a time, so a minutely schedule over a year never sits in memory at once. */
const WINDOW_MS = 7 * 86_400_000;

interface Book {
  strategy: Strategy;
  cron: CronSchedule;
  run: StrategyRun;
  periods?: BudgetPeriods;
  spentDay: Decimal;
  spentMonth: Decimal;
  lastPlacedAt?: Date;
}

export function runBacktest(
  strategies: readonly Strategy[],
  series: PriceSeries,
  options: BacktestOptions,
): BacktestRun {
  const from = Math.max(options.from ?? series.first, series.first);
  const to = Math.min(options.to ?? series.last, series.last);
  if (from > to) {
    throw new BacktestInputError(
      `the range ${iso(options.from ?? from)} to ${iso(options.to ?? to)} has no prices: ${series.file} covers ${iso(series.first)} to ${iso(series.last)}`,
    );
  }
  const books = strategies.map((strategy) => openBook(strategy, from, to));
  const credit = new SimulatedCreditLine(options.creditTotal, options.settleDelayMs);
  const tolerances = options.tolerances ?? DEFAULT_QUOTE_TOLERANCES;
  for (let start = from; start <= to; start += WINDOW_MS) {
    const until = Math.min(start + WINDOW_MS - 1, to);
    for (const [slot, book] of slotsOfWindow(books, start, until)) {
      const decision = decideSlot(book, slot, series, credit, tolerances);
      options.onDecision?.(decision);
    }
  }
  return { from: new Date(from), to: new Date(to), strategies: books.map((book) => book.run) };
}

function openBook(strategy: Strategy, from: number, to: number): Book {
  const cron = parseCron(strategy.schedule);
  const first = nextSlotAfter(cron, strategy.timezone, new Date(from - 1));
  if (first === undefined || first.getTime() > to) {
    throw new BacktestInputError(
      `strategy ${strategy.name} (${strategy.source.file}:${strategy.source.line}): schedule "${strategy.schedule}" in ${strategy.timezone} has no slot from ${iso(from)} to ${iso(to)}`,
    );
  }
  return {
    strategy,
    cron,
    run: { strategy, result: new Tally(), baseline: new Tally() },
    spentDay: ZERO,
    spentMonth: ZERO,
  };
}

/** The slots of [start, until] of every strategy, by time, then in the order the strategies were given. */
function slotsOfWindow(books: Book[], start: number, until: number): [Date, Book][] {
  const events: [Date, Book, number][] = [];
  books.forEach((book, order) => {
    for (const slot of slotsBetween(
      book.cron,
      book.strategy.timezone,
      new Date(start - 1),
      new Date(until),
    )) {
      events.push([slot, book, order]);
    }
  });
  if (books.length > 1) events.sort((a, b) => a[0].getTime() - b[0].getTime() || a[2] - b[2]);
  return events.map(([slot, book]) => [slot, book]);
}

function decideSlot(
  book: Book,
  slot: Date,
  series: PriceSeries,
  credit: SimulatedCreditLine,
  tolerances: QuoteTolerances,
): SlotDecision {
  const { strategy, run } = book;
  const now = slot.getTime();
  const price = servicePrice(series.priceAt(now)!);
  const fill = quoteFill(strategy.amount, price);
  run.baseline.placed(price, fill.totalCost, fill.totalFilled);

  const periods = periodsAt(book, slot);
  const inputs = {
    strategy,
    now: slot,
    spent: { day: book.spentDay, month: book.spentMonth },
    ...(needsBalance(strategy) && { balance: credit.balanceAt(now) }),
    ...(book.lastPlacedAt && { lastPlacedAt: book.lastPlacedAt }),
  };
  const skip = (reason: string, quoted: boolean): SlotDecision => {
    run.result.notPlaced('skipped', reason);
    if (reason === 'budget_day_exceeded') run.result.budgetLimitedDays.add(periods.day.start.getTime());
    if (reason === 'budget_month_exceeded') run.result.budgetLimitedMonths.add(periods.month.start.getTime());
    return { strategy: strategy.name, slot, outcome: 'skipped', reason, ...(quoted && quotedFigures()) };
  };
  const quotedFigures = () => ({ price, cost: fill.totalCost, filled: fill.totalFilled });

  const before = evaluateBeforeQuote(inputs);
  if (before.action === 'skip') return skip(before.reason, false);
  // The service answers 400 to a quote that buys nothing; the cycle fails without a quote.
  if (fill.totalCost.isZero()) {
    run.result.notPlaced('failed', 'quote_unavailable');
    return { strategy: strategy.name, slot, outcome: 'failed', reason: 'quote_unavailable' };
  }
  const decision = evaluateQuote({
    ...inputs,
    quote: { price, totalCost: fill.totalCost, totalFilled: fill.totalFilled, amount: strategy.amount },
    tolerances,
  });
  if (decision.action === 'skip') return skip(decision.reason, true);
  // The service refuses an order beyond the available credit, whether or not the strategy guards it.
  if (!credit.covers(now, fill.totalCost)) {
    run.result.notPlaced('failed', 'order_rejected');
    return { strategy: strategy.name, slot, outcome: 'failed', reason: 'order_rejected', ...quotedFigures() };
  }
  credit.hold(now, fill.totalCost);
  book.spentDay = book.spentDay.plus(fill.totalCost);
  book.spentMonth = book.spentMonth.plus(fill.totalCost);
  book.lastPlacedAt = slot;
  run.result.placed(price, fill.totalCost, fill.totalFilled);
  return { strategy: strategy.name, slot, outcome: 'placed', reason: 'ok', ...quotedFigures() };
}

/**
 * The budget periods of the instant, as the engine reads them at a cycle's start. Time only moves forward
 * here and every order is charged to the period of its own slot, so a new period starts with nothing spent.
 */
function periodsAt(book: Book, slot: Date): BudgetPeriods {
  const now = slot.getTime();
  const current = book.periods;
  if (current !== undefined && now < current.day.end.getTime()) return current;
  const next = budgetPeriods(book.strategy.timezone, slot);
  book.spentDay = ZERO;
  if (current === undefined || now >= current.month.end.getTime()) book.spentMonth = ZERO;
  book.periods = next;
  return next;
}

function iso(instant: number): string {
  return new Date(instant).toISOString();
}
