import { type Decimal, ZERO } from '../money.js';
import {
  type BudgetPeriods,
  budgetPeriods,
  type CronSchedule,
  DEFAULT_QUOTE_TOLERANCES,
  isTarget,
  needsApproval,
  needsBalance,
  nextSlotAfter,
  parseCron,
  type QuoteDecisionInput,
  type QuoteTolerances,
  type QuoteView,
  type Strategy,
  slotsBetween,
  verdictBeforeQuote,
  verdictQuote,
} from '../strategy/index.js';
import { SimulatedCreditLine } from './credit-line.js';
import { BacktestInputError } from './input-error.js';
import type { PriceSeries } from './price-series.js';
import { QuoteBook } from './quote-book.js';
import { Tally } from './tally.js';
import { type SlotJudgement, TargetPace, twapAmountAt } from './target-pace.js';

/**
 * The backtest: every strategy's slots in the range, in time order across strategies (they share one credit
 * line), each decided as a worker cycle decides it (engine/cycle.ts, engine/placement.ts) by the same pure
 * rules: the before-quote phase on the figures before quoting, then a quote at the series' price, then
 * the quote phase. It takes the rules' verdicts without their traces (the same rules in the same order,
 * stopping at the failure that decides): the report needs the outcome and reason of every slot, not the
 * figures of every rule. A cycle runs at its slot's instant, so the cooldown, the budget periods and the credit line
 * are read at that instant. Missed policies do not apply: no slot is ever missed here. A target runs only the
 * slots of its window, as the worker's scheduler does, each judged by target-pace.ts.
 */

export interface BacktestOptions {
  /** First and last instant (ms, inclusive) whose slots run; the range is clipped to the series. */
  from?: number;
  to?: number;
  creditTotal: Decimal;
  settleDelayMs: number;
  tolerances?: QuoteTolerances;
  /**
   * An order that needs approval (and, with no envelopes here, would park for people) is bought at the
   * parked quote's price, as if people approved it at once; otherwise it stays parked and buys nothing.
   */
  assumeApproved?: boolean;
  /** Called with every slot's decision, in order; for tests and the chart. */
  onDecision?: (decision: SlotDecision) => void;
}

/** One slot as the worker would have recorded it: the cycle's outcome, reason code and figures. */
export interface SlotDecision {
  strategy: string;
  slot: Date;
  /** As the cycle's state would be: `awaiting_approval` for a slot parked for people (never bought here). */
  outcome: 'placed' | 'skipped' | 'failed' | 'awaiting_approval';
  reason: string;
  /** The quote's, when one was taken: the amount it was asked for (a target's sized slice), price and figures. */
  amount?: Decimal;
  price?: Decimal;
  cost?: Decimal;
  filled?: Decimal;
}

export interface StrategyRun {
  strategy: Strategy;
  result: Tally;
  /**
   * Every slot buys, no rule applies: plain DCA on the same schedule and amount, or for a target plain TWAP,
   * its total in equal slices over its window's slots (twapAmountAt).
   */
  baseline: Tally;
  /** A target's own record at the end of the run, and the number of slots in its whole window. */
  target?: { pace: TargetPace; windowSlots: number };
}

export interface BacktestRun {
  from: Date;
  to: Date;
  strategies: StrategyRun[];
}

interface Book {
  strategy: Strategy;
  run: StrategyRun;
  slots: SlotStream;
  quotes: QuoteBook;
  target?: TargetPace;
  periods?: BudgetPeriods;
  spentDay: Decimal;
  spentMonth: Decimal;
  lastSubmittedAt?: Date;
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
  // The earliest pending slot runs first; of one instant, the strategy given first. Each strategy's slots
  // come a few hours at a time: a year of minutes never sits in memory at once.
  let row = 0;
  for (;;) {
    let next: Book | undefined;
    for (const book of books) {
      const slot = book.slots.peek();
      if (slot !== undefined && (next === undefined || slot.getTime() < next.slots.peek()!.getTime()))
        next = book;
    }
    if (next === undefined) break;
    const slot = next.slots.take();
    row = series.indexFrom(row, slot.getTime());
    const decision = decideSlot(next, slot, series.prices[row]!, credit, tolerances, options.assumeApproved);
    options.onDecision?.(decision);
  }
  for (const book of books) book.quotes.flushBaseline();
  return { from: new Date(from), to: new Date(to), strategies: books.map((book) => book.run) };
}

function openBook(strategy: Strategy, from: number, to: number): Book {
  const cron = parseCron(strategy.schedule);
  // A target's slots outside its window are none of its slots: the worker's scheduler never runs them.
  const targetWindow = isTarget(strategy) ? strategy.target : undefined;
  const first = Math.max(from, targetWindow?.start.getTime() ?? from);
  const last = Math.min(to, targetWindow === undefined ? to : targetWindow.end.getTime() - 1);
  const firstSlot = nextSlotAfter(cron, strategy.timezone, new Date(first - 1));
  if (firstSlot === undefined || firstSlot.getTime() > last) {
    const within = targetWindow
      ? ` within its window ${iso(targetWindow.start.getTime())} to ${iso(targetWindow.end.getTime())}`
      : '';
    throw new BacktestInputError(
      `strategy ${strategy.name} (${strategy.source.file}:${strategy.source.line}): schedule "${strategy.schedule}" in ${strategy.timezone} has no slot from ${iso(from)} to ${iso(to)}${within}`,
    );
  }
  const baseline = new Tally();
  const run: StrategyRun = { strategy, result: new Tally(), baseline };
  const slots = new SlotStream(cron, strategy.timezone, first, last);
  const common = { strategy, run, slots, spentDay: ZERO, spentMonth: ZERO };
  if (!isTarget(strategy)) return { ...common, quotes: new QuoteBook(() => strategy.amount, baseline) };
  // The baseline's slices are the whole window's, whatever part of it the prices cover.
  const { start, end } = strategy.target;
  const windowSlots = countSlots(cron, strategy.timezone, start.getTime(), end.getTime() - 1);
  const pace = new TargetPace(strategy);
  run.target = { pace, windowSlots };
  return { ...common, quotes: new QuoteBook(twapAmountAt(strategy, windowSlots), baseline), target: pace };
}

function decideSlot(
  book: Book,
  slot: Date,
  /** The series' price at the slot, as the file has it. */
  priceText: string,
  credit: SimulatedCreditLine,
  tolerances: QuoteTolerances,
  assumeApproved = false,
): SlotDecision {
  const { strategy, run, target } = book;
  const now = slot.getTime();
  const periods = periodsAt(book, slot);
  // Looked up first: it also counts the baseline's slot, and gives a target the slot's price.
  const slotQuote = book.quotes.quoteSlot(priceText);
  // One input of one shape for both phases: a target takes the figures from it and quotes its own slices.
  const input: QuoteDecisionInput = {
    strategy,
    now: slot,
    spent: { day: book.spentDay, month: book.spentMonth },
    balance: needsBalance(strategy) ? credit.balanceAt(now) : undefined,
    lastSubmittedAt: book.lastSubmittedAt,
    quote: slotQuote,
    tolerances,
  };
  const judged = target ? target.judgeSlot(slot, input) : judgeSlot(input);
  if (judged.action === 'skip') {
    return skipped(book, slot, periods, judged.reason, judged.quote && figuresOf(judged.quote));
  }
  if (judged.action === 'fail') {
    run.result.notPlaced('failed', judged.reason);
    return { strategy: strategy.name, slot, outcome: 'failed', reason: judged.reason };
  }
  const { quote } = judged;
  const figures = figuresOf(quote);
  if (needsApproval(strategy, quote.totalCost)) {
    run.result.parkedForApproval(quote.totalCost);
    if (!assumeApproved) {
      // Parked, its cost reserved against the strategy's budgets (and a target's total) as the worker
      // reserves it; nobody approves.
      book.spentDay = book.spentDay.plus(quote.totalCost);
      book.spentMonth = book.spentMonth.plus(quote.totalCost);
      target?.bought(quote);
      run.result.notPlaced('skipped', 'approval_required');
      return {
        strategy: strategy.name,
        slot,
        outcome: 'awaiting_approval',
        reason: 'approval_required',
        ...figures,
      };
    }
  }
  // The service refuses an order beyond the available credit, whether or not the strategy guards it.
  if (!credit.covers(now, quote.totalCost)) {
    run.result.notPlaced('failed', 'order_rejected');
    return { strategy: strategy.name, slot, outcome: 'failed', reason: 'order_rejected', ...figures };
  }
  credit.hold(now, quote.totalCost);
  book.spentDay = book.spentDay.plus(quote.totalCost);
  book.spentMonth = book.spentMonth.plus(quote.totalCost);
  book.lastSubmittedAt = slot;
  target?.bought(quote);
  run.result.placed(quote.price, quote.totalCost, quote.totalFilled);
  return { strategy: strategy.name, slot, outcome: 'placed', reason: 'ok', ...figures };
}

/** A DCA's or threshold's slot: the rules before the quote, then with the quote at the strategy's amount. */
function judgeSlot(input: QuoteDecisionInput): SlotJudgement {
  const before = verdictBeforeQuote(input);
  if (before.action === 'skip') return { action: 'skip', reason: before.reason };
  const { quote } = input;
  // The service answers 400 to a quote that buys nothing; the cycle fails without a quote.
  if (quote.totalCost.isZero()) return { action: 'fail', reason: 'quote_unavailable' };
  const verdict = verdictQuote(input);
  return verdict.action === 'skip'
    ? { action: 'skip', reason: verdict.reason, quote }
    : { action: 'place', quote };
}

function figuresOf(quote: QuoteView): Pick<SlotDecision, 'amount' | 'price' | 'cost' | 'filled'> {
  return { amount: quote.amount, price: quote.price, cost: quote.totalCost, filled: quote.totalFilled };
}

function skipped(
  book: Book,
  slot: Date,
  periods: BudgetPeriods,
  reason: string,
  figures?: Pick<SlotDecision, 'amount' | 'price' | 'cost' | 'filled'>,
): SlotDecision {
  const { result } = book.run;
  result.notPlaced('skipped', reason);
  if (reason === 'budget_day_exceeded') result.budgetLimitedDays.add(periods.day.start.getTime());
  if (reason === 'budget_month_exceeded') result.budgetLimitedMonths.add(periods.month.start.getTime());
  return { strategy: book.strategy.name, slot, outcome: 'skipped', reason, ...figures };
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

/** How many slots the schedule has in [from, to], counted a window at a time. */
function countSlots(cron: CronSchedule, timeZone: string, from: number, to: number): number {
  const slots = new SlotStream(cron, timeZone, from, to);
  let count = 0;
  while (slots.peek() !== undefined) {
    slots.take();
    count++;
  }
  return count;
}

/** A strategy's slots in [from, to], in order, computed a window at a time (slotsBetween). */
class SlotStream {
  private buffer: Date[] = [];
  private cursor = 0;
  /** The slots up to this instant are in the buffer or were taken. */
  private through: number;

  constructor(
    private readonly cron: CronSchedule,
    private readonly timeZone: string,
    from: number,
    private readonly to: number,
  ) {
    this.through = from - 1;
  }

  peek(): Date | undefined {
    while (this.cursor >= this.buffer.length) {
      if (this.through >= this.to) return undefined;
      const until = Math.min(this.through + SLOT_WINDOW_MS, this.to);
      this.buffer = slotsBetween(this.cron, this.timeZone, new Date(this.through), new Date(until));
      this.cursor = 0;
      this.through = until;
    }
    return this.buffer[this.cursor];
  }

  take(): Date {
    const slot = this.peek()!;
    this.cursor++;
    return slot;
  }
}

const SLOT_WINDOW_MS = 6 * 3_600_000;
