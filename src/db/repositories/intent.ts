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
 */
import { type AnyColumn, and, eq, type SQL, sql } from 'drizzle-orm';
import type { Decimal } from '../../money.js';
import { advisoryLockKey } from '../advisory-key.js';
import { type DrizzleExecutor, type DrizzleHandle, decodeRow, rowsOf } from '../connection.js';
import { assertLegalTransition } from '../cycle-transitions.js';
import { cycles, quotes } from '../schema.js';
import type { Cycle, JsonValue, QuoteInput } from '../types.js';
import { patchColumns, toCycle } from './cycle-rows.js';
import { type Period, readSpendFigures, type SpendFigures } from './spend-figures.js';

/** What the decision adds to the intent: every rule's result and the balance it saw. */
export interface IntentPatch {
  trace: JsonValue;
  balanceSnapshotId: number | null;
}

export type IntentVerdict =
  | { action: 'commit'; patch: IntentPatch }
  | { action: 'skip'; reasonCode: string; trace: JsonValue; balanceSnapshotId: number | null };

export interface IntentGuard {
  /** Intents of one strategy are serialized across replicas; other strategies never wait. */
  strategy: string;
  /**
   * The budget periods (day within month) that contain an instant: called with the moment the intent is
   * written, which is the moment its money is charged to (`submitted_at`).
   */
  periodsAt(at: Date): { day: Period; month: Period };
  /**
   * Set for a strategy with credit guards: the moment its balance was read. The commit then also takes the
   * account's lock (every guarded cycle of every strategy and replica waits for it) and passes the cost of
   * our orders that balance may not show (`creditPending`).
   */
  balanceReadAt?: Date;
  /** Runs under the lock(s) on the fresh figures: pure and quick, since every other replica waits for it. */
  decide(figures: SpendFigures & { creditPending: Decimal | null }): IntentVerdict;
  /** Bound on the lock wait and on each statement, in milliseconds (the quote's time left). */
  timeoutMs: number;
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
  /** The cycle after the move (submitting or skipped); null when it was no longer in `from`. */
  cycle: Cycle | null;
}

export function lockKeyOfIntent(strategy: string): string {
  return advisoryLockKey(`intent:${strategy}`);
}

/** Credit guards judge one account: their intents are serialized across strategies and replicas. */
const CREDIT_ACCOUNT_LOCK_KEY = advisoryLockKey('intent:credit-account');

/**
 * The intent as ONE statement: the quote row and the move to `submitting`, in a CTE. A `sql` template
 * through `execute`, on the pool or on the recheck's transaction alike: the query builder's version cost
 * about 1 ms of CPU per cycle to build and render on the loaded bench machine inside the transaction (a
 * prepared builder statement is bound to the pool), more than any other statement of the cycle
 * (bench/README.md, "Where the cycle's time goes"). Values go through their columns' encoders.
 */
function submitStatement(move: IntentMove, patch: IntentPatch, now: Date): SQL {
  const { id, from, quote } = move;
  const v = (value: unknown, column: AnyColumn) => sql.param(value, column);
  return sql`with intent_quote as (
      insert into ${quotes} (cycle_id, quote_id, symbol, amount, price, total_cost, total_filled, expires_in,
        requested_at, received_at, deadline_at)
      values (${id}, ${quote.quoteId}, ${quote.symbol}, ${v(quote.amount, quotes.amount)},
        ${v(quote.price, quotes.price)}, ${v(quote.totalCost, quotes.totalCost)},
        ${v(quote.totalFilled, quotes.totalFilled)}, ${quote.expiresIn}, ${v(quote.requestedAt, quotes.requestedAt)},
        ${v(quote.receivedAt, quotes.receivedAt)}, ${v(quote.deadlineAt, quotes.deadlineAt)})
      returning id)
    update ${cycles} set state = 'submitting', quote_record_id = (select id from intent_quote),
      quote_id = ${quote.quoteId}, amount = ${v(quote.amount, cycles.amount)}, price = ${v(quote.price, cycles.price)},
      total_cost = ${v(quote.totalCost, cycles.totalCost)}, trace = ${v(patch.trace, cycles.trace)},
      balance_snapshot_id = ${patch.balanceSnapshotId}, reason_code = null, error_code = null,
      error_message = null, attempts = attempts + 1, submitted_at = ${v(now, cycles.submittedAt)},
      updated_at = ${v(now, cycles.updatedAt)}
    where id = ${id} and state = ${from}
    returning *`;
}

async function submit(executor: DrizzleExecutor, move: IntentMove, patch: IntentPatch, now: Date) {
  const [raw] = rowsOf(await executor.execute(submitStatement(move, patch, now)));
  return raw ? toCycle(decodeRow(cycles, raw)) : null;
}

export function createIntentCommit(db: DrizzleHandle, clock: () => Date) {
  return async function commitIntent(move: IntentMove, decision: IntentDecision): Promise<IntentResult> {
    assertLegalTransition(move.from, 'submitting');
    if ('stands' in decision) {
      return { action: 'commit', cycle: await submit(db, move, decision.stands, clock()) };
    }
    const guard = decision.recheck;
    // Every statement below runs on `tx`: on PGlite the transaction holds the only connection, and a
    // statement sent to the pool meanwhile would wait for it forever.
    return db.transaction(async (tx) => {
      const now = clock();
      // Bounds the statements after the locks (the re-read and the commit) and, through lock_timeout, the
      // lock wait itself, so that a transaction the caller gave up on ends by itself instead of committing
      // an intent later. 0 would mean "no limit". One statement, its select list evaluated left to right:
      // a statement_timeout set by a statement bounds only the statements after it, where lock_timeout is
      // read when a lock wait begins. The account's lock first, then the strategy's: one order everywhere,
      // so two commits never deadlock. The locks cannot join the re-read: that statement's snapshot would
      // predate their grant and miss an intent committed while it waited.
      const timeout = String(Math.max(1, Math.ceil(guard.timeoutMs)));
      const keys = [
        ...(guard.balanceReadAt ? [CREDIT_ACCOUNT_LOCK_KEY] : []),
        lockKeyOfIntent(guard.strategy),
      ];
      const locks = sql.join(
        keys.map((key) => sql`pg_advisory_xact_lock(${key}::bigint)`),
        sql`, `,
      );
      await tx.execute(
        sql`select set_config('statement_timeout', ${timeout}, true), set_config('lock_timeout', ${timeout}, true), ${locks}`,
      );
      const figures = await readSpendFigures(tx, {
        strategy: guard.strategy,
        periods: guard.periodsAt(now),
        ...(guard.balanceReadAt ? { creditSince: guard.balanceReadAt } : {}),
      });
      const verdict = guard.decide(figures);
      if (verdict.action === 'commit') {
        return { action: 'commit', cycle: await submit(tx, move, verdict.patch, now) };
      }
      return { action: 'skip', cycle: await skipWithQuote(tx, now, move, verdict) };
    });
  };
}

/** The quote kept for the audit trail and the cycle finished as skipped with the rule's reason and trace. */
async function skipWithQuote(
  tx: DrizzleExecutor,
  now: Date,
  move: IntentMove,
  verdict: Extract<IntentVerdict, { action: 'skip' }>,
): Promise<Cycle | null> {
  const { id, from, quote } = move;
  const [stored] = await tx
    .insert(quotes)
    .values({ ...quote, cycleId: id })
    .returning({ id: quotes.id });
  if (!stored) throw new Error('insert into quotes returned no row');
  const columns = patchColumns({
    quote: { ...quote, id: stored.id, cycleId: id },
    reasonCode: verdict.reasonCode,
    trace: verdict.trace,
    balanceSnapshotId: verdict.balanceSnapshotId,
  });
  const [row] = await tx
    .update(cycles)
    .set({ ...columns, state: 'skipped', updatedAt: now, finishedAt: now })
    .where(and(eq(cycles.id, id), eq(cycles.state, from)))
    .returning();
  return row ? toCycle(row) : null;
}
