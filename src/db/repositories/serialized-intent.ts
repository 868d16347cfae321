/**
 * The intent commit of a strategy whose decision depends on its other cycles (budgets, cooldown). Two
 * replicas working two slots of one strategy at once could each pass a cap with figures read before the
 * other committed; so the commit takes the strategy's transaction-scoped advisory lock, reads the figures
 * again (a new statement under READ COMMITTED sees every intent committed before the lock was granted) and
 * lets the caller decide on them, all in one transaction.
 */
import { and, eq } from 'drizzle-orm';
import type { Decimal } from '../../money.js';
import { advisoryLockKey } from '../advisory-key.js';
import type { DrizzleExecutor, DrizzleHandle } from '../connection.js';
import { bindBuiltStatement, defineRawStatement } from '../raw-prepared.js';
import { cycles, quotes } from '../schema.js';
import type { Cycle, JsonValue, QuoteInput } from '../types.js';
import { patchColumns, toCycle } from './cycle-rows.js';
import type { IntentPatch } from './cycles.js';
import { buildCommitIntent } from './intent-statement.js';
import { type Period, readCreditPending, readSpendFigures, type SpendFigures } from './spend-figures.js';

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
  decide(figures: SpendFigures & { creditPending?: Decimal }): IntentVerdict;
  /** Bound on the lock wait and on each statement, in milliseconds (the quote's time left). */
  timeoutMs: number;
}

export interface GuardedIntentResult {
  action: IntentVerdict['action'];
  /** The cycle after the move (submitting or skipped); null when it was no longer in `from`. */
  cycle: Cycle | null;
}

export function lockKeyOfIntent(strategy: string): string {
  return advisoryLockKey(`intent:${strategy}`);
}

/** Credit guards judge one account: their intents are serialized across strategies and replicas. */
const CREDIT_ACCOUNT_LOCK_KEY = advisoryLockKey('intent:credit-account');

export function commitIntentSerialized(
  db: DrizzleHandle,
  now: Date,
  move: { id: number; from: 'claimed' | 'quoted'; quote: QuoteInput },
  guard: IntentGuard,
): Promise<GuardedIntentResult> {
  // Every statement below runs on `tx`: on PGlite the transaction holds the only connection, and a
  // statement sent to the pool meanwhile would wait for it forever.
  return db.transaction(async (tx) => {
    // Bounds the lock wait too, so that a transaction the caller gave up on ends by itself instead of
    // committing an intent later. 0 would mean "no limit".
    const timeout = String(Math.max(1, Math.ceil(guard.timeoutMs)));
    // Two statements, not one: a statement_timeout set by a statement only bounds the statements after it,
    // and the lock wait is what it must bound.
    await setStatementTimeout.execute(tx, { timeout });
    // Nor can the lock join the re-read: that statement's snapshot would predate the lock's grant and miss
    // an intent committed while it waited.
    // The account's lock first, then the strategy's: one order everywhere, so two commits never deadlock.
    if (guard.balanceReadAt) await takeIntentLock.execute(tx, { key: CREDIT_ACCOUNT_LOCK_KEY });
    await takeIntentLock.execute(tx, { key: lockKeyOfIntent(guard.strategy) });
    const figures = await readSpendFigures(tx, guard.strategy, guard.periodsAt(now));
    const verdict = guard.decide(
      guard.balanceReadAt
        ? { ...figures, creditPending: await readCreditPending(tx, guard.balanceReadAt) }
        : figures,
    );
    const { id, from, quote } = move;
    if (verdict.action === 'commit') {
      const rows = await commitIntentStatement(tx).execute(tx, { ...quote, ...verdict.patch, id, from, now });
      return { action: 'commit', cycle: rows[0] ? toCycle(rows[0]) : null };
    }
    return { action: 'skip', cycle: await skipWithQuote(tx, now, move, verdict) };
  });
}

const setStatementTimeout = defineRawStatement(
  'intent_statement_timeout',
  "select set_config('statement_timeout', $1, true)",
  ['timeout'],
  () => undefined,
);

const takeIntentLock = defineRawStatement(
  'intent_advisory_lock',
  'select pg_advisory_xact_lock($1::bigint)',
  ['key'],
  () => undefined,
);

type CycleRow = typeof cycles.$inferSelect;
let commitIntentOnAnyExecutor: ReturnType<typeof bindBuiltStatement<CycleRow[]>> | undefined;

/** The intent commit is built once (its text depends on the schema alone) and bound to each transaction. */
function commitIntentStatement(tx: DrizzleExecutor) {
  commitIntentOnAnyExecutor ??= bindBuiltStatement<CycleRow[]>(
    buildCommitIntent(tx).prepare('cycles_commit_intent_serialized'),
    'cycles_commit_intent_serialized',
  );
  return commitIntentOnAnyExecutor;
}

/** The quote kept for the audit trail and the cycle finished as skipped with the rule's reason and trace. */
async function skipWithQuote(
  tx: DrizzleExecutor,
  now: Date,
  move: { id: number; from: 'claimed' | 'quoted'; quote: QuoteInput },
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
