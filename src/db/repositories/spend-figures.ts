/**
 * What the rules of one strategy need from its other cycles, in one statement: its spend in a calendar day
 * and month (each cycle counted in the period of its intent, `submitted_at`: when its money was committed), the last moment an order request left, whether it is halted, and the kill switch. Read before
 * quoting and again under the strategy's lock when the intent is committed (serialized-intent.ts).
 *
 * The sums walk only the month's intents (a cycles_strategy_submitted_idx range) and the last-sent read is
 * one step of the same index, so the cost stays flat however long the strategy has been running.
 */
import { Decimal } from '../../money.js';
import type { DrizzleExecutor } from '../connection.js';
import { MONEY_MAY_HAVE_LEFT } from '../cycle-transitions.js';
import { defineRawStatement } from '../raw-prepared.js';

/** A half-open range [start, end) of instants. */
export interface Period {
  start: Date;
  end: Date;
}

export interface SpendFigures {
  /** Sum of totalCost of the cycles whose money may have left (submitting, placed, unsure). */
  spentDay: Decimal;
  spentMonth: Decimal;
  lastPlacedAt: Date | null;
  halted: boolean;
  /** The kill switch as of this read: under the lock it is fresher than the switch's cache. */
  paused: boolean;
}

const moneyMayHaveLeft = MONEY_MAY_HAVE_LEFT.map((state) => `'${state}'`).join(', ');

const selectFigures = defineRawStatement(
  'strategy_spend_figures',
  `select
     coalesce(sum(total_cost) filter (where submitted_at >= $2 and submitted_at < $3), 0)::text,
     coalesce(sum(total_cost), 0)::text,
     (select max(submitted_at) from cycles where strategy = $1 and state in (${moneyMayHaveLeft})),
     coalesce((select halted_at is not null from strategies where name = $1), false),
     coalesce((select paused from control where id = 1), false)
   from cycles
   where strategy = $1 and state in (${moneyMayHaveLeft}) and submitted_at >= $4 and submitted_at < $5`,
  ['strategy', 'dayStart', 'dayEnd', 'monthStart', 'monthEnd'],
  (rows): SpendFigures => {
    const [day, month, last, halted, paused] = rows[0] ?? [];
    return {
      spentDay: new Decimal(String(day ?? '0')),
      spentMonth: new Decimal(String(month ?? '0')),
      // Both drivers hand timestamps to drizzle as text (its parsers); the column would map it the same way.
      lastPlacedAt: last === null || last === undefined ? null : new Date(last as string),
      halted: isTrue(halted),
      paused: isTrue(paused),
    };
  },
);

/** `day` must lie within `month`, as a calendar day lies within its calendar month. */
export function readSpendFigures(
  executor: DrizzleExecutor,
  strategy: string,
  periods: { day: Period; month: Period },
): Promise<SpendFigures> {
  return selectFigures.execute(executor, {
    strategy,
    dayStart: periods.day.start.toISOString(),
    dayEnd: periods.day.end.toISOString(),
    monthStart: periods.month.start.toISOString(),
    monthEnd: periods.month.end.toISOString(),
  });
}

function isTrue(value: unknown): boolean {
  return value === true || value === 't';
}

/**
 * The cost of our cycles whose order may exist but may not yet be in a balance read at `since`: every cycle
 * in flight or unsure (counted in full until resolved), and every one placed since then. Account-wide: the
 * credit line is one for every strategy. Placed cycles are found through cycles_state_idx (a placed cycle's
 * updated_at is at or after its submitted_at).
 */
const selectCreditPending = defineRawStatement(
  'credit_pending_cost',
  `select (
     coalesce((select sum(total_cost) from cycles where state in ('submitting', 'unsure')), 0)
     + coalesce((select sum(total_cost) from cycles
                 where state = 'placed' and updated_at >= $1 and submitted_at >= $1), 0)
   )::text`,
  ['since'],
  (rows): Decimal => new Decimal(String(rows[0]?.[0] ?? '0')),
);

export function readCreditPending(executor: DrizzleExecutor, since: Date): Promise<Decimal> {
  return selectCreditPending.execute(executor, { since: since.toISOString() });
}
