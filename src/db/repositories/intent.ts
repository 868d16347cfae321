/**
 * The intent commit: the quote recorded and the cycle moved to `submitting` (money that may have left)
 * before the order request leaves. One operation with two ways through it:
 * - the decision taken on the figures read before quoting stands (no rule depends on other cycles): ONE
 *   statement, prepared once, because it sits inside the quote's window;
 * - the decision depends on the strategy's other cycles (budgets, cooldown) or on every cycle of the account
 *   (credit guards): two replicas working two slots at once could each pass a cap with figures read before
 *   the other committed. The commit then takes the transaction-scoped advisory lock(s), reads the figures
 *   again (a new statement under READ COMMITTED sees every intent committed before the lock was granted)
 *   and lets the caller decide on them, all in one transaction.
 * A cycle that needs approval always takes the second way: under the same locks it is charged to the first
 * active envelope it fits (the envelope rows locked FOR UPDATE, so that a revoke and a charge, or two charges
 * of the last room, never interleave), or, when none fits, parked for people with its quote.
 */
import { and, eq, getTableColumns, type SQL, sql } from 'drizzle-orm';
import { Decimal, toDecimalText } from '../../money.js';
import { advisoryLockKey } from '../advisory-key.js';
import { arrayPlaceholder as arr } from '../bulk.js';
import {
  type Connection,
  type DrizzleExecutor,
  type DrizzleHandle,
  encodedPlaceholder as encoded,
  rowsOf,
} from '../connection.js';
import { assertLegalTransition, MONEY_MAY_HAVE_LEFT } from '../cycle-transitions.js';
import { GroupCommit } from '../group-commit.js';
import { approvalRequests, cycles, envelopes, quotes } from '../schema.js';
import type { Cycle, CyclePatch, JsonValue, QuoteInput } from '../types.js';
import { countedApprovers } from './approvals.js';
import { type CycleRow, patchColumns, toCycle } from './cycle-rows.js';
import { approvalNeeded, NO_OUTBOX, type Outbox } from './notification-events.js';
import { quotePlaceholders } from './quotes.js';
import {
  type Period,
  readManySpendFigures,
  readSpendFigures,
  type SpendFigures,
  spendFiguresManyStatement,
  spendFiguresStatement,
} from './spend-figures.js';

/** What the decision adds to the intent: every rule's result and the balance it saw. */
export interface IntentPatch {
  trace: JsonValue;
  balanceSnapshotId: number | null;
}

export type IntentVerdict =
  | { action: 'commit'; patch: IntentPatch }
  | { action: 'park'; patch: IntentPatch; approval: ParkedApproval }
  | { action: 'skip'; reasonCode: string; trace: JsonValue; balanceSnapshotId: number | null };

export interface IntentGuard {
  /** Intents of one strategy are serialized across replicas; other strategies never wait. */
  strategy: string;
  /** The strategy's account: its credit-guarded intents take that account's lock, never another's. */
  account: string;
  /**
   * The budget periods (day within month) that contain an instant: called with the moment the intent is
   * written, which is the moment its money is charged to (`submitted_at`).
   */
  periodsAt(at: Date): { day: Period; month: Period };
  /** Set for a target: its window, whose progress the decision reads again under the strategy's lock. */
  targetWindow?: Period;
  /**
   * Set for a strategy with credit guards: the moment its balance was read. The commit then also takes the
   * account's lock (every guarded cycle of every strategy and replica waits for it) and passes the cost of
   * our orders that balance may not show (`creditPending`).
   */
  balanceReadAt?: Date;
  /** Runs under the lock(s) on the fresh figures: pure and quick, since every other replica waits for it. */
  decide(figures: SpendFigures & { creditPending: Decimal | null }): IntentVerdict;
  /**
   * Set when the order needs approval: it is charged to an envelope it fits, or parked for people. The cost
   * and price are the quote's.
   */
  approval?: ApprovalNeed;
  /** Bound on the lock wait and on each statement, in milliseconds (the quote's time left). */
  timeoutMs: number;
}

export interface ApprovalNeed {
  cost: Decimal;
  price: Decimal;
  /** What the parked cycle's request records when no envelope fits; `trace` replaces the decision's trace. */
  park: Omit<ParkedApproval, 'trace'> & { trace: (patchTrace: JsonValue) => JsonValue };
}

export interface ParkedApproval {
  approversRequired: number;
  /** From the moment it parks, by the database's clock (a replica's may differ). */
  timeoutMs: number;
  defaultMaxPrice: Decimal;
  trace: JsonValue;
}

/** Either the decision stands as taken, or it is taken again under the locks. */
export type IntentDecision = { stands: IntentPatch } | { recheck: IntentGuard };

export interface IntentMove {
  id: number;
  from: 'claimed' | 'quoted';
  quote: QuoteInput;
}

export interface IntentResult {
  action: IntentVerdict['action'];
  /** The envelope the order was charged to, for a commit that needed approval. */
  envelopeId?: number;
  /** The cycle after the move (submitting or skipped); null when it was no longer in `from`. */
  cycle: Cycle | null;
}

/** Hashed once per strategy: a recheck takes its strategy's key on every intent. */
const intentLockKeys = new Map<string, string>();

export function lockKeyOfIntent(strategy: string): string {
  let key = intentLockKeys.get(strategy);
  if (key === undefined) {
    key = advisoryLockKey(`intent:${strategy}`);
    intentLockKeys.set(strategy, key);
  }
  return key;
}

/**
 * Credit guards judge one account's credit line: their intents are serialized across the account's
 * strategies and every replica, and two accounts never wait on each other.
 */
const creditLockKeys = new Map<string, string>();

export function lockKeyOfCredit(account: string): string {
  let key = creditLockKeys.get(account);
  if (key === undefined) {
    key = advisoryLockKey(`intent:credit-account:${account}`);
    creditLockKeys.set(account, key);
  }
  return key;
}

const p = sql.placeholder;

/** Every column of a cycle but its trace. */
const { trace: _written, ...RETURNED_WITHOUT_TRACE } = getTableColumns(cycles);

/**
 * The intent as ONE statement: the quote row and the move to `submitting`, in a CTE. Prepared, on the pool
 * and on each of the recheck's transaction handles, once (statement-transactions.ts): unprepared, postgres.js
 * would spend a round trip describing it before binding it, inside the quote's window (spend-figures.ts says
 * why, bench/README.md "Round trips per cycle" gives the figures). The moved row comes back without its
 * trace, which is the one this statement writes: decoding every rule's result again was the largest value
 * a cycle read back, inside the quote's window.
 */
function submitStatement(executor: DrizzleHandle) {
  const insertQuote = executor.insert(quotes).values(quotePlaceholders('id')).returning({ id: quotes.id });
  const intentQuote = executor.$with('intent_quote', { id: quotes.id }).as(insertQuote.getSQL());
  return executor
    .with(intentQuote)
    .update(cycles)
    .set({
      state: 'submitting',
      quoteRecordId: sql`(select id from ${intentQuote})`,
      quoteId: encoded(cycles.quoteId, 'quoteId'),
      amount: encoded(cycles.amount, 'amount'),
      price: encoded(cycles.price, 'price'),
      totalCost: encoded(cycles.totalCost, 'totalCost'),
      trace: encoded(cycles.trace, 'trace'),
      balanceSnapshotId: encoded(cycles.balanceSnapshotId, 'balanceSnapshotId'),
      envelopeId: encoded(cycles.envelopeId, 'envelopeId'),
      reasonCode: null,
      errorCode: null,
      errorMessage: null,
      attempts: sql`${cycles.attempts} + 1`,
      submittedAt: encoded(cycles.submittedAt, 'now'),
      updatedAt: encoded(cycles.updatedAt, 'now'),
    })
    .where(and(eq(cycles.id, p('id')), eq(cycles.state, p('from'))))
    .returning(RETURNED_WITHOUT_TRACE)
    .prepare('intent_submit');
}

async function submit(
  statement: ReturnType<typeof submitStatement>,
  move: IntentMove,
  patch: IntentPatch,
  now: Date,
  envelopeId: number | null = null,
) {
  const [row] = await statement.execute({
    ...move.quote,
    id: move.id,
    from: move.from,
    trace: patch.trace,
    balanceSnapshotId: patch.balanceSnapshotId,
    envelopeId,
    now,
  });
  return row ? toCycle({ ...row, trace: patch.trace }) : null;
}

/** The most intents one statement carries. */
const INTENTS_PER_STATEMENT = 200;

const moneyTexts = (values: readonly (Decimal | null)[]) =>
  values.map((value) => (value === null ? null : toDecimalText(value)));

/**
 * Intents that stand (no rule depends on other cycles), several as ONE statement: the same quote rows and
 * compare-and-set moves as submitStatement, each intent's values an element of an array, unnested into rows.
 * A cycle no longer in its `from` state is not moved (its quote is still recorded, as the single statement's
 * is) and answers no row.
 */
function submitManyStatement(db: DrizzleHandle) {
  // Its other columns are read by name in the statement's text.
  const input = db.$with('i', { id: cycles.id }).as(
    // One array per column (db/bulk.ts arrayPlaceholder), unnested into rows.
    sql`select * from unnest(${arr('ids', 'bigint')}, ${arr('froms', 'text')}, ${arr('quoteIds', 'text')},
        ${arr('symbols', 'text')}, ${arr('amounts', 'numeric')}, ${arr('prices', 'numeric')},
        ${arr('totalCosts', 'numeric')}, ${arr('totalFilleds', 'numeric')},
        ${arr('expiresIns', 'numeric')}, ${arr('requestedAts', 'timestamptz')},
        ${arr('receivedAts', 'timestamptz')}, ${arr('deadlineAts', 'timestamptz')},
        ${arr('traces', 'jsonb')}, ${arr('balanceSnapshotIds', 'bigint')})
      as intents(id, from_state, quote_id, symbol, amount, price, total_cost, total_filled, expires_in,
        requested_at, received_at, deadline_at, trace, balance_snapshot_id)`,
  );
  const quote = db.$with('q', { id: quotes.id }).as(
    sql`insert into ${quotes} (cycle_id, quote_id, symbol, amount, price, total_cost, total_filled, expires_in,
        requested_at, received_at, deadline_at)
      select id, quote_id, symbol, amount, price, total_cost, total_filled, expires_in, requested_at, received_at,
        deadline_at from ${input}
      returning id, cycle_id`,
  );
  const moved = db.$with('moved', RETURNED_WITHOUT_TRACE).as(
    sql`update ${cycles} set state = 'submitting', quote_record_id = q.id, quote_id = i.quote_id,
        amount = i.amount, price = i.price, total_cost = i.total_cost, trace = i.trace,
        balance_snapshot_id = i.balance_snapshot_id, envelope_id = null, reason_code = null, error_code = null,
        error_message = null, attempts = ${cycles.attempts} + 1, submitted_at = ${p('now')}::timestamptz,
        updated_at = ${p('now')}::timestamptz
      from ${input} join ${quote} on q.cycle_id = i.id
      where ${cycles.id} = i.id and ${cycles.state} = i.from_state
      returning ${cycles}.*`,
  );
  return db.with(input, quote, moved).select().from(moved).prepare('intent_submit_many');
}

/** submitManyStatement for these intents: each one's moved cycle, or null when it was no longer in `from`. */
async function submitMany(
  statement: ReturnType<typeof submitManyStatement>,
  intents: readonly { move: IntentMove; patch: IntentPatch }[],
  now: Date,
): Promise<(Cycle | null)[]> {
  const quotesOf = intents.map(({ move }) => move.quote);
  const rows = await statement.execute({
    ids: intents.map(({ move }) => String(move.id)),
    froms: intents.map(({ move }) => move.from),
    quoteIds: quotesOf.map((quote) => quote.quoteId),
    symbols: quotesOf.map((quote) => quote.symbol),
    amounts: moneyTexts(quotesOf.map((quote) => quote.amount)),
    prices: moneyTexts(quotesOf.map((quote) => quote.price)),
    totalCosts: moneyTexts(quotesOf.map((quote) => quote.totalCost)),
    totalFilleds: moneyTexts(quotesOf.map((quote) => quote.totalFilled)),
    expiresIns: moneyTexts(quotesOf.map((quote) => quote.expiresIn)),
    requestedAts: quotesOf.map((quote) => quote.requestedAt.toISOString()),
    receivedAts: quotesOf.map((quote) => quote.receivedAt.toISOString()),
    deadlineAts: quotesOf.map((quote) => quote.deadlineAt.toISOString()),
    traces: intents.map(({ patch }) => JSON.stringify(patch.trace)),
    balanceSnapshotIds: intents.map(({ patch }) => patch.balanceSnapshotId?.toString() ?? null),
    now: now.toISOString(),
  });
  const movedById = new Map(rows.map((row) => [row.id, row]));
  return intents.map(({ move, patch }) => {
    const row = movedById.get(move.id);
    return row ? toCycle({ ...row, trace: patch.trace }) : null;
  });
}

/**
 * The time limits of a re-check's transaction: statement_timeout bounds the statements after the one that
 * sets it (the re-read and the commit), lock_timeout each lock wait, so that a transaction the caller gave up
 * on ends by itself instead of committing an intent later. 0 would mean "no limit". A single re-check sets
 * them and takes its two locks in one statement, its select list evaluated left to right (lock_timeout is
 * read when a wait begins); a group's many locks come in a statement after, which statement_timeout then
 * bounds as a whole.
 *
 * Integers written into the text, without parameters: postgres.js parses, binds and runs a statement without
 * parameters in one exchange, where an unprepared one with parameters takes two, and a prepared one would
 * need a statement per timeout. Both kinds of value are integers by construction (a millisecond count, a
 * signed 64-bit key), checked again by BigInt, which accepts nothing else.
 */
function timeLimits(timeoutMs: number): SQL {
  const timeout = sql.raw(`'${BigInt(Math.max(1, Math.ceil(timeoutMs)))}'`);
  return sql`set_config('statement_timeout', ${timeout}, true), set_config('lock_timeout', ${timeout}, true)`;
}

/** The advisory locks, in the order given: see lockOrder for the one order every commit takes them in. */
function locks(keys: readonly string[]): SQL {
  return sql.join(
    keys.map((key) => sql`pg_advisory_xact_lock(${sql.raw(BigInt(key).toString())}::bigint)`),
    sql`, `,
  );
}

export function createIntentCommit(
  connection: Pick<Connection, 'drizzle' | 'statementTransactions'>,
  clock: () => Date,
  outbox: Outbox = NO_OUTBOX,
) {
  const submitOnPool = submitStatement(connection.drizzle);
  const submitManyOnPool = submitManyStatement(connection.drizzle);
  // Intents that stand and arrive while one is in flight are committed together (group-commit.ts): each is
  // durable before its caller sends its order, as a single one is.
  const standing = new GroupCommit<{ move: IntentMove; patch: IntentPatch }, Cycle | null>({
    maxBatch: INTENTS_PER_STATEMENT,
    // One statement moves a cycle once: the same cycle twice waits for the next.
    fits: (taken, next) => !taken.some(({ move }) => move.id === next.move.id),
    one: ({ move, patch }) => submit(submitOnPool, move, patch, clock()),
    many: (intents) => submitMany(submitManyOnPool, intents, clock()),
  });
  const recheck = connection.statementTransactions((tx) => ({
    figures: spendFiguresStatement(tx, false),
    targetFigures: spendFiguresStatement(tx, true),
    submit: submitStatement(tx),
    figuresMany: spendFiguresManyStatement(tx),
    submitMany: submitManyStatement(tx),
  }));
  const commitIntent = async (move: IntentMove, decision: IntentDecision): Promise<IntentResult> => {
    assertLegalTransition(move.from, 'submitting');
    if ('stands' in decision) {
      return { action: 'commit', cycle: await standing.run({ move, patch: decision.stands }) };
    }
    const guard = decision.recheck;
    // An approval (envelopes, parking) or a target's progress is re-checked alone.
    if (guard.approval || guard.targetWindow) return recheckOne(move, guard);
    return rechecksOf(guard.account).run({ move, guard, deadline: performance.now() + guard.timeoutMs });
  };

  /**
   * Re-checks in groups (group-commit.ts), one group per account: the locks of a group are its account's
   * (its credit line and its strategies'), so that an account's intents never wait on another account's
   * locks. The intents that arrive while one is in flight commit together in ONE transaction (recheckTogether)
   * when they fit (fitsTogether): each is judged on figures read after every intent before it committed.
   */
  const rechecks = new Map<string, GroupCommit<Recheck, IntentResult>>();
  const rechecksOf = (account: string) => {
    let group = rechecks.get(account);
    if (!group) {
      group = new GroupCommit<Recheck, IntentResult>({
        maxBatch: INTENTS_PER_STATEMENT,
        fits: fitsTogether,
        // The time spent waiting for the group counts against the caller's limit.
        one: ({ move, guard, deadline }) => recheckOne(move, { ...guard, timeoutMs: timeLeft(deadline) }),
        many: recheckTogether,
      });
      rechecks.set(account, group);
    }
    return group;
  };

  /**
   * One transaction for intents that fit together: the time limit of the one with the least time left, set
   * before the locks so that it bounds their wait as a whole; every lock in the one order every commit takes
   * them (lockOrder); the figures of all re-read in one statement after the grant; each decided on its own;
   * the commits in one statement, and a skip each (rare in a burst).
   */
  const recheckTogether = (calls: readonly Recheck[]): Promise<IntentResult[]> =>
    recheck(async (tx, statements) => {
      await tx.execute(
        sql`select ${timeLimits(Math.min(...calls.map(({ deadline }) => timeLeft(deadline))))}`,
      );
      await tx.execute(sql`select ${locks(lockOrder(calls.map(({ guard }) => guard)))}`);
      const now = clock();
      const figures = await readManySpendFigures(
        statements.figuresMany,
        calls.map(({ guard }) => ({
          strategy: guard.strategy,
          account: guard.account,
          periods: guard.periodsAt(now),
          ...(guard.balanceReadAt ? { creditSince: guard.balanceReadAt } : {}),
        })),
      );
      const verdicts = calls.map(({ guard }) => {
        const read = figures.get(guard.strategy);
        if (!read) throw new Error(`the spend figures of ${guard.strategy} were not read`);
        return guard.decide(read);
      });
      const commits = calls.flatMap((call, index) => {
        const verdict = verdicts[index]!;
        return verdict.action === 'commit' ? [{ move: call.move, patch: verdict.patch }] : [];
      });
      const committed = commits.length > 0 ? await submitMany(statements.submitMany, commits, now) : [];
      const results: IntentResult[] = [];
      for (const [index, call] of calls.entries()) {
        const verdict = verdicts[index]!;
        if (verdict.action === 'commit') {
          results.push({ action: 'commit', cycle: committed.shift() ?? null });
        } else if (verdict.action === 'skip') {
          results.push({ action: 'skip', cycle: await skipWithQuote(tx, now, call.move, verdict) });
        } else {
          // Parking comes only from an approval, which is re-checked alone.
          throw new Error(`an intent of ${call.guard.strategy} without approval was parked`);
        }
      }
      return results;
    });

  // Every statement below runs on `tx`: on PGlite the transaction holds the only connection, and a
  // statement sent to the pool meanwhile would wait for it forever.
  const recheckOne = (move: IntentMove, guard: IntentGuard): Promise<IntentResult> =>
    recheck(async (tx, statements) => {
      const now = clock();
      // The locks cannot join the re-read: that statement's snapshot would predate their grant and miss an
      // intent committed while it waited.
      const keys = [
        ...(guard.balanceReadAt ? [lockKeyOfCredit(guard.account)] : []),
        lockKeyOfIntent(guard.strategy),
      ];
      await tx.execute(sql`select ${timeLimits(guard.timeoutMs)}, ${locks(keys)}`);
      const figures = await readSpendFigures(
        guard.targetWindow ? statements.targetFigures : statements.figures,
        {
          strategy: guard.strategy,
          account: guard.account,
          periods: guard.periodsAt(now),
          ...(guard.balanceReadAt ? { creditSince: guard.balanceReadAt } : {}),
          ...(guard.targetWindow ? { targetWindow: guard.targetWindow } : {}),
        },
      );
      let verdict = guard.decide(figures);
      let envelopeId: number | null = null;
      if (verdict.action === 'commit' && guard.approval) {
        envelopeId = await envelopeWithRoom(tx, guard.strategy, guard.approval);
        if (envelopeId === null) {
          const { trace, ...park } = guard.approval.park;
          verdict = {
            action: 'park',
            patch: verdict.patch,
            approval: { ...park, trace: trace(verdict.patch.trace) },
          };
        }
      }
      if (verdict.action === 'commit') {
        const cycle = await submit(statements.submit, move, verdict.patch, now, envelopeId);
        return { action: 'commit', cycle, ...(envelopeId === null ? {} : { envelopeId }) };
      }
      if (verdict.action === 'park')
        return { action: 'park', cycle: await park(tx, now, move, verdict, outbox) };
      return { action: 'skip', cycle: await skipWithQuote(tx, now, move, verdict) };
    });

  return commitIntent;
}

interface Recheck {
  move: IntentMove;
  guard: IntentGuard;
  /** performance.now() by which the caller gives up on the commit (guard.timeoutMs from its call). */
  deadline: number;
}

/** Below this much time left an intent commits alone: a short limit would cut every intent sharing it. */
const ALONE_BELOW_MS = 1_000;

const timeLeft = (deadline: number) => Math.max(1, Math.ceil(deadline - performance.now()));

/**
 * Whether an intent may commit in one transaction with those taken: not one of the same strategy (it would be
 * judged on figures without the other's commit), nor a second with credit guards (the same for the account's
 * credit pending), nor one of the same cycle; and only intents with time to spare, since they share the
 * shortest limit among them. One that does not fit waits for the next transaction, which reads figures that
 * hold this one's commit.
 */
function fitsTogether(taken: readonly Recheck[], next: Recheck): boolean {
  if (timeLeft(next.deadline) < ALONE_BELOW_MS || timeLeft(taken[0]!.deadline) < ALONE_BELOW_MS) return false;
  return !taken.some(
    ({ move, guard }) =>
      move.id === next.move.id ||
      guard.strategy === next.guard.strategy ||
      (guard.balanceReadAt !== undefined && next.guard.balanceReadAt !== undefined),
  );
}

/**
 * The locks of several intents in the one order every commit takes them: the accounts' credit locks first,
 * then the strategies', each kind by key. A single commit takes its account's then its strategy's, which is
 * the same order, so no two commits ever wait for each other in a circle.
 */
function lockOrder(guards: readonly IntentGuard[]): string[] {
  const byKey = (a: string, b: string) => (BigInt(a) < BigInt(b) ? -1 : BigInt(a) > BigInt(b) ? 1 : 0);
  const credit = new Set(
    guards.flatMap((guard) => (guard.balanceReadAt ? [lockKeyOfCredit(guard.account)] : [])),
  );
  const strategies = new Set(guards.map((guard) => lockKeyOfIntent(guard.strategy)));
  return [...[...credit].sort(byKey), ...[...strategies].sort(byKey)];
}

/** The quote kept for the audit trail and the cycle finished as skipped with the rule's reason and trace. */
async function skipWithQuote(
  tx: DrizzleExecutor,
  now: Date,
  move: IntentMove,
  verdict: Extract<IntentVerdict, { action: 'skip' }>,
): Promise<Cycle | null> {
  const row = await stopWithQuote(tx, move, verdict, { state: 'skipped', updatedAt: now, finishedAt: now });
  return row ? toCycle(row) : null;
}

/**
 * A cycle that stops before any order, skipped or parked: its quote kept for the audit trail, then the
 * cycle moved with the decision, if it is still where the move starts.
 */
async function stopWithQuote(
  tx: DrizzleExecutor,
  move: IntentMove,
  decision: Pick<CyclePatch, 'reasonCode' | 'trace' | 'balanceSnapshotId'>,
  set: Partial<CycleRow>,
): Promise<CycleRow | undefined> {
  const { id, from, quote } = move;
  const [stored] = await tx
    .insert(quotes)
    .values({ ...quote, cycleId: id })
    .returning({ id: quotes.id });
  if (!stored) throw new Error('insert into quotes returned no row');
  const columns = patchColumns({ ...decision, quote: { ...quote, id: stored.id, cycleId: id } });
  const [row] = await tx
    .update(cycles)
    .set({ ...columns, ...set })
    .where(and(eq(cycles.id, id), eq(cycles.state, from)))
    .returning();
  return row;
}

/**
 * The first active envelope of the strategy the order fits (order ≤ max order, price ≤ max price, spent in
 * it + order ≤ max total, its window holding the database's now()), soonest to end first; null when none does. Active: not revoked, and approved by
 * as many people who still count (enabled approvers other than its creator) as the larger of its own count
 * and the strategy's `approval.approvers` now. Every active envelope of the strategy
 * is locked until the transaction ends: its spend is read and charged (the cycle's envelope_id, committed
 * with the intent) while no other transaction can charge or revoke it.
 */
async function envelopeWithRoom(
  tx: DrizzleExecutor,
  strategy: string,
  need: ApprovalNeed,
): Promise<number | null> {
  const candidates = rowsOf(
    await tx.execute(sql`select ${envelopes.id} as id,
        ${envelopes.maxOrder}::text as max_order, ${envelopes.maxTotal}::text as max_total,
        ${envelopes.maxPrice}::text as max_price,
        (select coalesce(sum(${cycles.totalCost}), 0) from ${cycles}
          where ${cycles.envelopeId} = ${envelopes.id} and ${cycles.state} in ${[...MONEY_MAY_HAVE_LEFT]})::text as spent
      from ${envelopes}
      where ${envelopes.strategy} = ${strategy} and ${envelopes.activeAt} is not null
        and ${envelopes.revokedAt} is null
        and ${countedApprovers('envelope', envelopes.id, envelopes.createdBy)}
          >= greatest(${envelopes.approversRequired}, ${need.park.approversRequired}::int)
        and ${envelopes.validFrom} <= now() and ${envelopes.validUntil} > now()
      order by ${envelopes.validUntil}, ${envelopes.id}
      for update of ${envelopes}`),
  );
  for (const row of candidates) {
    const fits =
      need.cost.lessThanOrEqualTo(new Decimal(String(row.max_order))) &&
      (row.max_price === null || need.price.lessThanOrEqualTo(new Decimal(String(row.max_price)))) &&
      new Decimal(String(row.spent)).plus(need.cost).lessThanOrEqualTo(new Decimal(String(row.max_total)));
    if (fits) return Number(row.id);
  }
  return null;
}

/**
 * No envelope fits: the quote kept, the cycle parked in `awaiting_approval` with its decision, its request
 * for approval, and the `approval_needed` message, in the intent's transaction. No order leaves.
 */
async function park(
  tx: DrizzleExecutor,
  now: Date,
  move: IntentMove,
  verdict: Extract<IntentVerdict, { action: 'park' }>,
  outbox: Outbox,
): Promise<Cycle | null> {
  const { id, quote } = move;
  const row = await stopWithQuote(
    tx,
    move,
    {
      reasonCode: 'approval_required',
      trace: verdict.approval.trace,
      balanceSnapshotId: verdict.patch.balanceSnapshotId,
    },
    { state: 'awaiting_approval', updatedAt: now },
  );
  if (!row) return null;
  const { approversRequired, timeoutMs, defaultMaxPrice } = verdict.approval;
  const [request] = await tx
    .insert(approvalRequests)
    .values({
      cycleId: id,
      approversRequired,
      parkedAt: now,
      expiresAt: sql`now() + ${timeoutMs}::bigint * interval '1 millisecond'`,
      parkedPrice: quote.price,
      defaultMaxPrice,
    })
    .returning({ expiresAt: approvalRequests.expiresAt });
  if (!request) throw new Error('insert into approval_requests returned no row');
  const { expiresAt } = request;
  await outbox.enqueue(tx, approvalNeeded(row, { approversRequired, expiresAt, defaultMaxPrice }));
  return toCycle(row);
}
