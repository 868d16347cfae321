/**
 * What the console shows of a strategy, read from the configuration the worker recorded (decimals as
 * text). The console may run without the strategy files, so the database's copy is its source.
 */
import type { Database, StrategyRecord } from '../db/index.js';
import { Decimal } from '../money.js';
import { budgetPeriods, nextSlotAfter } from '../strategy/index.js';

export interface StrategyView {
  record: StrategyRecord;
  schedule: string | null;
  timezone: string;
  enabled: boolean;
  perDay: Decimal | null;
  perMonth: Decimal | null;
  minCreditAvailable: Decimal | null;
  maxCreditUsedPct: Decimal | null;
}

const member = (value: unknown, key: string): unknown =>
  value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)[key]
    : undefined;

function decimalOf(value: unknown): Decimal | null {
  if (typeof value !== 'string' && typeof value !== 'number') return null;
  try {
    const decimal = new Decimal(value);
    return decimal.isFinite() ? decimal : null;
  } catch {
    return null;
  }
}

export function viewOf(record: StrategyRecord): StrategyView {
  const { config } = record;
  const schedule = member(config, 'schedule');
  const timezone = member(config, 'timezone');
  const budget = member(config, 'budget');
  const guards = member(config, 'guards');
  return {
    record,
    schedule: typeof schedule === 'string' ? schedule : null,
    timezone: typeof timezone === 'string' ? timezone : 'UTC',
    enabled: member(config, 'enabled') !== false,
    perDay: decimalOf(member(budget, 'perDay')),
    perMonth: decimalOf(member(budget, 'perMonth')),
    minCreditAvailable: decimalOf(member(guards, 'minCreditAvailable')),
    maxCreditUsedPct: decimalOf(member(guards, 'maxCreditUsedPct')),
  };
}

/** The next slot the strategy buys at: a target's (`window` given) only within its window. */
export function nextSlotOf(view: StrategyView, now: Date, window?: { start: Date; end: Date }): Date | null {
  if (!view.schedule || !view.enabled) return null;
  const after = window && window.start > now ? new Date(window.start.getTime() - 1) : now;
  try {
    const next = nextSlotAfter(view.schedule, view.timezone, after) ?? null;
    return window && next && next >= window.end ? null : next;
  } catch {
    return null;
  }
}

export interface StrategySpend {
  view: StrategyView;
  spentDay: Decimal;
  spentMonth: Decimal;
  month: { start: Date; end: Date };
}

/** Today's and this month's spend in the strategy's own calendar, as its budget rules count it. */
export async function spendOf(database: Database, view: StrategyView, now: Date): Promise<StrategySpend> {
  const periods = budgetPeriods(view.timezone, now);
  const figures = await database.cycles.spendFigures({
    strategy: view.record.name,
    account: view.record.account,
    periods,
  });
  return { view, spentDay: figures.spentDay, spentMonth: figures.spentMonth, month: periods.month };
}
