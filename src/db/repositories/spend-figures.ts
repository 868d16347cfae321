/**
 * What the rules of one strategy need from its other cycles, in one statement: its spend in a calendar day
 * and month (each cycle counted in the period of its intent, `submitted_at`: when its money was committed),
 * the last moment an order request left, whether it is halted, the kill switch and, for credit guards, the
 * cost of our orders a balance may not show yet. Read before quoting and again under the intent locks
 * (intent.ts).
 *
 * The sums walk only the month's intents (a cycles_strategy_submitted_idx range) and the last-sent read is
 * one step of the same index, so the cost stays flat however long the strategy has been running.
 */
import { and, eq, gte, inArray, lt, max, sql } from 'drizzle-orm';
import type { Decimal } from '../../money.js';
import type { DrizzleExecutor } from '../connection.js';
import { MONEY_MAY_HAVE_LEFT, ORDER_UNCONFIRMED } from '../cycle-transitions.js';
import { control, cycles, strategies } from '../schema.js';

/** A half-open range [start, end) of instants. */
export interface Period {
  start: Date;
  end: Date;
}

export interface SpendFigures {
  /** Sum of totalCost of the cycles whose money may have left (submitting, placed, unsure). */
  spentDay: Decimal;
  spentMonth: Decimal;
  /** When the strategy's latest order request left (its newest intent), for the cooldown. */
  lastSubmittedAt: Date | null;
  halted: boolean;
  /** The kill switch as of this read: under the lock it is fresher than the switch's cache. */
  paused: boolean;
  /**
   * Only when asked for with `creditSince`: the cost of our cycles whose order may exist but may not yet be
   * in a balance read at that moment.
   */
  creditPending: Decimal | null;
}

export interface FiguresQuery {
  strategy: string;
  /** `day` must lie within `month`, as a calendar day lies within its calendar month. */
  periods: { day: Period; month: Period };
  creditSince?: Date;
}

const p = sql.placeholder;
const moneyMayHaveLeft = inArray(cycles.state, [...MONEY_MAY_HAVE_LEFT]);
const asBoolean = (value: unknown) => value === true || value === 't';

/**
 * The figures statement with placeholders, for `.prepare()` on the pool or `.execute(values)` on a
 * transaction. Credit pending is account-wide (the credit line is one for every strategy): every cycle in
 * flight or unsure counts in full until resolved, and every one placed since the balance read. Placed
 * cycles are found through cycles_state_idx (a placed cycle's updated_at is at or after its submitted_at).
 */
export function selectSpendFigures(executor: DrizzleExecutor) {
  const lastSubmitted = executor
    .select({ at: max(cycles.submittedAt) })
    .from(cycles)
    .where(and(eq(cycles.strategy, p('strategy')), moneyMayHaveLeft));
  const inFlight = executor
    .select({ cost: sql`sum(${cycles.totalCost})` })
    .from(cycles)
    .where(inArray(cycles.state, [...ORDER_UNCONFIRMED]));
  const placedSince = executor
    .select({ cost: sql`sum(${cycles.totalCost})` })
    .from(cycles)
    .where(
      and(
        eq(cycles.state, 'placed'),
        gte(cycles.updatedAt, sql`${p('creditSince')}::timestamptz`),
        gte(cycles.submittedAt, sql`${p('creditSince')}::timestamptz`),
      ),
    );
  return executor
    .select({
      spentDay:
        sql`coalesce(sum(${cycles.totalCost}) filter (where ${cycles.submittedAt} >= ${p('dayStart')}::timestamptz and ${cycles.submittedAt} < ${p('dayEnd')}::timestamptz), 0)`.mapWith(
          cycles.totalCost,
        ),
      spentMonth: sql`coalesce(sum(${cycles.totalCost}), 0)`.mapWith(cycles.totalCost),
      lastSubmittedAt: sql`(${lastSubmitted})`.mapWith(cycles.submittedAt),
      halted:
        sql`coalesce((select ${strategies.haltedAt} is not null from ${strategies} where ${strategies.name} = ${p('strategy')}), false)`.mapWith(
          asBoolean,
        ),
      paused:
        sql`coalesce((select ${control.paused} from ${control} where ${control.id} = 1), false)`.mapWith(
          asBoolean,
        ),
      creditPending: sql`case when ${p('creditSince')}::timestamptz is null then null
        else coalesce((${inFlight}), 0) + coalesce((${placedSince}), 0) end`.mapWith(cycles.totalCost),
    })
    .from(cycles)
    .where(
      and(
        eq(cycles.strategy, p('strategy')),
        moneyMayHaveLeft,
        gte(cycles.submittedAt, sql`${p('monthStart')}::timestamptz`),
        lt(cycles.submittedAt, sql`${p('monthEnd')}::timestamptz`),
      ),
    );
}

/** The placeholder values of selectSpendFigures. */
export function figuresValues({ strategy, periods, creditSince }: FiguresQuery) {
  return {
    strategy,
    dayStart: periods.day.start.toISOString(),
    dayEnd: periods.day.end.toISOString(),
    monthStart: periods.month.start.toISOString(),
    monthEnd: periods.month.end.toISOString(),
    creditSince: creditSince?.toISOString() ?? null,
  };
}

export function firstFigures(rows: SpendFigures[]): SpendFigures {
  const [figures] = rows;
  // An aggregate without GROUP BY answers exactly one row.
  if (!figures) throw new Error('the spend figures statement returned no row');
  return figures;
}
