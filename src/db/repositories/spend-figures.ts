/**
 * What the rules of one strategy need from its other cycles, in one statement: its spend in a calendar day
 * and month (each cycle counted in the period of its intent, `submitted_at`: when its money was committed),
 * the cost reserved by its parked cycles (awaiting approval; counted in every period until they end, since
 * their money would be charged to the period in which they are finally placed), the last moment an order
 * request left, whether it is halted, the kill switch and, for credit guards, the
 * cost of our orders a balance may not show yet. Read before quoting and again under the intent locks
 * (intent.ts).
 *
 * The sums walk only the month's intents (a cycles_strategy_submitted_idx range) and the last-sent read is
 * one step of the same index, so the cost stays flat however long the strategy has been running.
 */
import { type SQL, sql } from 'drizzle-orm';
import { Decimal } from '../../money.js';
import { arrayPlaceholder as arr } from '../bulk.js';
import type { DrizzleHandle } from '../connection.js';
import { MONEY_MAY_HAVE_LEFT, ORDER_UNCONFIRMED, RESERVED_FOR_APPROVAL } from '../cycle-transitions.js';
import { control, cycles, quotes, strategies } from '../schema.js';

/** A half-open range [start, end) of instants. */
export interface Period {
  start: Date;
  end: Date;
}

export interface SpendFigures {
  /**
   * Sum of totalCost of the cycles whose money may have left (submitting, placed, unsure) in the period,
   * plus `reserved`.
   */
  spentDay: Decimal;
  spentMonth: Decimal;
  /** The quoted cost of the strategy's parked cycles (awaiting approval, or approved and not yet run). */
  reserved: Decimal;
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
  /** Only when asked for with `targetWindow`: what the target's cycles in its window bought and quoted. */
  target: TargetFigures | null;
}

/** A target's progress from the record (strategy/target.ts, TargetProgress). */
export interface TargetFigures {
  /** totalCost of its cycles whose money may have left or is reserved for approval, slots in the window. */
  spent: Decimal;
  /** The same cycles' quoted totalFilled. */
  received: Decimal;
  /** Mean price of every quote its cycles in the window took; absent before the first. */
  quoteAverage?: Decimal;
}

export interface FiguresQuery {
  strategy: string;
  /** The strategy's account: credit pending is that account's (each account has its own credit line). */
  account: string;
  /** `day` must lie within `month`, as a calendar day lies within its calendar month. */
  periods: { day: Period; month: Period };
  creditSince?: Date;
  /** A target's window: its slots there count towards it, whichever version of the file they ran under. */
  targetWindow?: Period;
}

const p = sql.placeholder;

/**
 * The statement, prepared once: on the pool per repository (spendFiguresStatement(db)), and on each of the
 * intent's transaction handles (statement-transactions.ts: a prepared query is bound to the handle that built
 * it). Prepared because postgres.js runs a statement drizzle sends unprepared (every `execute` and every
 * builder query without `.prepare`) in two round trips, a Parse and Describe first to learn its parameter
 * types, then the Bind and Execute; a prepared one is described on its first use on each connection and bound
 * in one exchange after that (bench/README.md, "Round trips per cycle").
 *
 * Every figure comes back as text, the same from both drivers. Credit pending is account-wide (the credit
 * line is one for every strategy of the account, and only of it): every cycle of the account in flight or
 * unsure counts in full until resolved, and every one placed since the balance read. Placed cycles are found through cycles_state_idx (a placed cycle's
 * updated_at is at or after its submitted_at).
 */
export function spendFiguresStatement(executor: DrizzleHandle, withTarget: boolean) {
  return spendFiguresQuery(executor, withTarget).prepare(
    withTarget ? 'spend_figures_target' : 'spend_figures',
  );
}

/**
 * Which strategy, account and periods the figures are of: parameters of the statement, or, in a claim of
 * several slots (cycles.ts), the columns of each claimed slot's input row.
 */
export interface FiguresKeys {
  strategy: SQL;
  account: SQL;
  dayStart: SQL;
  dayEnd: SQL;
  monthStart: SQL;
  monthEnd: SQL;
  creditSince: SQL;
}

/**
 * The keys of a row of a statement's input named `i`, with these columns: strategy, account, day_start,
 * day_end, month_start, month_end, and credit_since (or no credit pending to read).
 */
export function keysOfInputRow(withCredit: boolean): FiguresKeys {
  return {
    strategy: sql`i.strategy`,
    account: sql`i.account`,
    dayStart: sql`i.day_start`,
    dayEnd: sql`i.day_end`,
    monthStart: sql`i.month_start`,
    monthEnd: sql`i.month_end`,
    creditSince: withCredit ? sql`i.credit_since` : sql`null::timestamptz`,
  };
}

/** The figures' fields of spendFiguresQuery as a subquery, for a select that reads them with other columns. */
export function figuresFields(figures: ReturnType<ReturnType<typeof spendFiguresQuery>['as']>) {
  return {
    spentDay: figures.spentDay,
    spentMonth: figures.spentMonth,
    lastSubmittedAt: figures.lastSubmittedAt,
    reserved: figures.reserved,
    halted: figures.halted,
    paused: figures.paused,
    creditPending: figures.creditPending,
    targetSpent: figures.targetSpent,
    targetReceived: figures.targetReceived,
    targetQuoteAverage: figures.targetQuoteAverage,
  };
}

const PLACEHOLDER_KEYS: FiguresKeys = {
  strategy: sql`${p('strategy')}`,
  account: sql`${p('account')}`,
  dayStart: sql`${p('dayStart')}::timestamptz`,
  dayEnd: sql`${p('dayEnd')}::timestamptz`,
  monthStart: sql`${p('monthStart')}::timestamptz`,
  monthEnd: sql`${p('monthEnd')}::timestamptz`,
  creditSince: sql`${p('creditSince')}::timestamptz`,
};

/**
 * The select itself, for the statement above and as the subquery the slot's claim returns with the claimed
 * row (cycles.ts): every figure aliased, as a subquery's raw fields must be.
 */
export function spendFiguresQuery(
  executor: DrizzleHandle,
  withTarget: boolean,
  {
    strategy,
    account,
    dayStart,
    dayEnd,
    monthStart,
    monthEnd,
    creditSince: since,
  }: FiguresKeys = PLACEHOLDER_KEYS,
) {
  const moneyLeft = sql`${cycles.state} in ${[...MONEY_MAY_HAVE_LEFT]}`;
  const windowStart = sql`${p('windowStart')}::timestamptz`;
  return executor
    .select({
      spentDay:
        sql<string>`coalesce(sum(${cycles.totalCost}) filter (where ${cycles.submittedAt} >= ${dayStart}
        and ${cycles.submittedAt} < ${dayEnd}), 0)::text`.as('spent_day'),
      spentMonth: sql<string>`coalesce(sum(${cycles.totalCost}), 0)::text`.as('spent_month'),
      // The latest intent of all time: the month's rows are at hand, later ones can only come from a clock
      // ahead of ours, and earlier ones matter only when the month has none (COALESCE does not run the last
      // subquery then). One subquery over every intent of the strategy read them all when the planner had no
      // statistics yet (bench/README.md, "The spend figures grow with the month").
      lastSubmittedAt: sql<string | null>`coalesce(greatest(max(${cycles.submittedAt}),
        (select max(${cycles.submittedAt}) from ${cycles} where ${cycles.strategy} = ${strategy} and ${moneyLeft}
          and ${cycles.submittedAt} >= ${monthEnd})),
        (select max(${cycles.submittedAt}) from ${cycles} where ${cycles.strategy} = ${strategy} and ${moneyLeft}
          and ${cycles.submittedAt} < ${monthStart}))::text`.as('last_submitted_at'),
      reserved: sql<string>`(select coalesce(sum(${cycles.totalCost}), 0) from ${cycles}
        where ${cycles.strategy} = ${strategy} and ${cycles.state} in ${[...RESERVED_FOR_APPROVAL]})::text`.as(
        'reserved',
      ),
      halted: sql<string>`coalesce((select ${strategies.haltedAt} is not null from ${strategies}
        where ${strategies.name} = ${strategy}), false)::text`.as('halted'),
      paused:
        sql<string>`coalesce((select ${control.paused} from ${control} where ${control.id} = 1), false)::text`.as(
          'paused',
        ),
      creditPending: sql<string | null>`case when ${since} is null then null else (
        coalesce((select sum(${cycles.totalCost}) from ${cycles} where ${cycles.state} in ${[...ORDER_UNCONFIRMED]}
            and ${cycles.account} = ${account}), 0)
        + coalesce((select sum(${cycles.totalCost}) from ${cycles} where ${cycles.state} = 'placed'
            and ${cycles.account} = ${account}
            and ${cycles.updatedAt} >= ${since} and ${cycles.submittedAt} >= ${since}), 0)
      )::text end`.as('credit_pending'),
      // A target's progress: in its own variant of the statement, since three subqueries more (never run with
      // a null window, but planned) made every claim of every strategy some 20% dearer in PostgreSQL.
      ...(withTarget ? targetColumns(windowStart) : NO_TARGET_COLUMNS),
    })
    .from(cycles)
    .where(
      sql`${cycles.strategy} = ${strategy} and ${moneyLeft}
        and ${cycles.submittedAt} >= ${monthStart} and ${cycles.submittedAt} < ${monthEnd}`,
    );
}

/** The target's figures over its window (see spendFiguresQuery), aliased as a subquery's fields must be. */
function targetColumns(windowStart: SQL) {
  // A target's cycles of the window (aliased: in the claim's subquery, columns print without their table); a
  // parked slice counts as bought until people decide, like a budget's.
  const targetCycles = sql`tc.strategy = ${p('strategy')}
    and tc.slot >= ${windowStart} and tc.slot < ${p('windowEnd')}::timestamptz`;
  const targetCounted = sql`${targetCycles} and tc.state in ${[...MONEY_MAY_HAVE_LEFT, ...RESERVED_FOR_APPROVAL]}`;
  return {
    targetSpent: sql<string | null>`case when ${windowStart} is null then null else
      (select coalesce(sum(tc.total_cost), 0) from ${cycles} tc where ${targetCounted})::text end`.as(
      'target_spent',
    ),
    targetReceived: sql<string | null>`case when ${windowStart} is null then null else
      (select coalesce(sum(tq.total_filled), 0) from ${cycles} tc
        join ${quotes} tq on tq.id = tc.quote_record_id where ${targetCounted})::text end`.as(
      'target_received',
    ),
    targetQuoteAverage: sql<string | null>`case when ${windowStart} is null then null else
      (select avg(tq.price) from ${quotes} tq join ${cycles} tc on tc.id = tq.cycle_id
        where ${targetCycles})::text end`.as('target_quote_average'),
  };
}

/** The same fields for every other strategy: constants, which cost the planner nothing. */
const NO_TARGET_COLUMNS = {
  targetSpent: sql<string | null>`null::text`.as('target_spent'),
  targetReceived: sql<string | null>`null::text`.as('target_received'),
  targetQuoteAverage: sql<string | null>`null::text`.as('target_quote_average'),
};

/**
 * The figures of several strategies, each with its own periods and credit, in ONE statement: the intents
 * committed together (intent.ts) re-read theirs with it under their locks. Each row answers its strategy.
 */
export function spendFiguresManyStatement(executor: DrizzleHandle) {
  const input = executor.$with('i', { strategy: cycles.strategy }).as(
    // One array per column (db/bulk.ts arrayPlaceholder), unnested into rows.
    sql`select * from unnest(${arr('strategies', 'text')}, ${arr('accounts', 'text')},
        ${arr('dayStarts', 'timestamptz')}, ${arr('dayEnds', 'timestamptz')},
        ${arr('monthStarts', 'timestamptz')}, ${arr('monthEnds', 'timestamptz')},
        ${arr('creditSinces', 'timestamptz')})
      as asked(strategy, account, day_start, day_end, month_start, month_end, credit_since)`,
  );
  const figures = spendFiguresQuery(executor, false, keysOfInputRow(true)).as('figures');
  return executor
    .with(input)
    .select({ strategy: input.strategy, figures: figuresFields(figures) })
    .from(input)
    .crossJoinLateral(figures)
    .prepare('spend_figures_many');
}

/** spendFiguresManyStatement for these queries (no target's among them): each strategy's figures. */
export async function readManySpendFigures(
  statement: ReturnType<typeof spendFiguresManyStatement>,
  queries: readonly FiguresQuery[],
): Promise<Map<string, SpendFigures>> {
  const rows = await statement.execute({
    strategies: queries.map((query) => query.strategy),
    accounts: queries.map((query) => query.account),
    dayStarts: queries.map((query) => query.periods.day.start.toISOString()),
    dayEnds: queries.map((query) => query.periods.day.end.toISOString()),
    monthStarts: queries.map((query) => query.periods.month.start.toISOString()),
    monthEnds: queries.map((query) => query.periods.month.end.toISOString()),
    creditSinces: queries.map((query) => query.creditSince?.toISOString() ?? null),
  });
  return new Map(rows.map((row) => [row.strategy, toSpendFigures(row.figures)]));
}

export type SpendFiguresRow = Awaited<ReturnType<typeof spendFiguresQuery>>[number];

export type SpendFiguresStatement = ReturnType<typeof spendFiguresStatement>;

export async function readSpendFigures(
  statement: SpendFiguresStatement,
  query: FiguresQuery,
): Promise<SpendFigures> {
  const rows = await statement.execute(figuresParameters(query));
  // An aggregate without GROUP BY answers exactly one row.
  const [row] = rows;
  if (!row) throw new Error('the spend figures statement returned no row');
  return toSpendFigures(row);
}

/** The placeholders' values of spendFiguresQuery. */
export function figuresParameters({ strategy, account, periods, creditSince, targetWindow }: FiguresQuery) {
  return {
    strategy,
    account,
    dayStart: periods.day.start.toISOString(),
    dayEnd: periods.day.end.toISOString(),
    monthStart: periods.month.start.toISOString(),
    monthEnd: periods.month.end.toISOString(),
    creditSince: creditSince?.toISOString() ?? null,
    windowStart: targetWindow?.start.toISOString() ?? null,
    windowEnd: targetWindow?.end.toISOString() ?? null,
  };
}

export function toSpendFigures(row: SpendFiguresRow): SpendFigures {
  const reserved = new Decimal(row.reserved);
  return {
    spentDay: new Decimal(row.spentDay).plus(reserved),
    spentMonth: new Decimal(row.spentMonth).plus(reserved),
    reserved,
    lastSubmittedAt: row.lastSubmittedAt === null ? null : new Date(row.lastSubmittedAt),
    halted: row.halted === 'true',
    paused: row.paused === 'true',
    creditPending: row.creditPending === null ? null : new Decimal(row.creditPending),
    target: row.targetSpent === null ? null : toTargetFigures(row),
  };
}

function toTargetFigures(row: SpendFiguresRow): TargetFigures {
  const figures: TargetFigures = {
    spent: new Decimal(row.targetSpent!),
    received: new Decimal(row.targetReceived!),
  };
  if (row.targetQuoteAverage !== null) figures.quoteAverage = new Decimal(row.targetQuoteAverage);
  return figures;
}
