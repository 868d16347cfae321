import { and, asc, desc, eq, inArray, isNotNull, isNull, lt, or, sql } from 'drizzle-orm';
import { type AccountScope, accountCondition } from '../account-scope.js';
import { arrayPlaceholder as arr } from '../bulk.js';
import type { Connection, DrizzleHandle } from '../connection.js';
import { assertLegalTransition, isFinalState } from '../cycle-transitions.js';
import { GroupCommit } from '../group-commit.js';
import { cycles } from '../schema.js';
import type { ClaimSlotInput, Cycle, CyclePatch, CycleState } from '../types.js';
import { type AuditEntry, appendAudit } from './audit.js';
import { claimedCycle, patchColumns, toCycle } from './cycle-rows.js';
import { createIntentCommit, type IntentDecision, type IntentMove, type IntentResult } from './intent.js';
import { announcesMove, cycleMoved, NO_OUTBOX, type Outbox } from './notification-events.js';
import {
  type FiguresQuery,
  figuresFields,
  figuresParameters,
  keysOfInputRow,
  type Period,
  readSpendFigures,
  type SpendFigures,
  spendFiguresQuery,
  spendFiguresStatement,
  type TargetFigures,
  toSpendFigures,
} from './spend-figures.js';

export interface CyclesRepository {
  /** Claims a strategy slot for this replica; null when it was already claimed (by anyone, ever). */
  claimSlot(input: ClaimSlotInput): Promise<Cycle | null>;
  /** claimSlot, and in the same statement the strategy's spend figures in these periods (spendFigures). */
  claimSlotWithFigures(
    input: ClaimSlotInput,
    periods: FiguresQuery['periods'],
    targetWindow?: FiguresQuery['targetWindow'],
  ): Promise<{ cycle: Cycle; figures: SpendFigures } | null>;
  /**
   * Compare-and-set move `from → to`. Throws IllegalTransitionError (ILLEGAL_TRANSITION) for a move the
   * state machine forbids; returns null when the cycle is no longer in `from` (someone else moved it).
   * `audit`: a person's decision, appended in the move's transaction when the move happened.
   */
  transition(
    id: number,
    from: CycleState,
    to: CycleState,
    patch?: CyclePatch,
    options?: { audit?: AuditEntry },
  ): Promise<Cycle | null>;
  /**
   * Commits the intent to order on a quote (intent.ts): records the quote and moves the cycle from
   * `claimed` (through `quoted`, atomically) or from `quoted` to `submitting`, or, when the decision taken
   * again under the locks says so, finishes it as skipped. `cycle` is null when it was no longer in `from`.
   */
  commitIntent(move: IntentMove, decision: IntentDecision): Promise<IntentResult>;
  get(id: number): Promise<Cycle | null>;
  getBySlot(strategy: string, slot: Date): Promise<Cycle | null>;
  /** The scope's cycles, newest claim first. */
  listRecent(scope: AccountScope, options?: { limit?: number; strategy?: string }): Promise<Cycle[]>;
  /** The scope's cycles in the state, the longest untouched first. */
  listByState(scope: AccountScope, state: CycleState, limit?: number): Promise<Cycle[]>;
  /**
   * The cycles of ours for the account, in any state, that acted on these quoteIds: quoteId → the cycle's id
   * and state. A quote id is one account's: the same text at another account is another quote.
   */
  ownersOfQuotes(
    account: string,
    quoteIds: readonly string[],
  ): Promise<Map<string, { cycleId: number; state: CycleState }>>;
  /** The scope's cycles whose order the service reports with other figures than asked, newest first. */
  listWithDiscrepancy(scope: AccountScope, limit?: number): Promise<Cycle[]>;
  /** How many cycles are in the state, without reading them (the maintenance gauges, every pass). */
  countByState(state: CycleState): Promise<number>;
  /** Leases up to `limit` unsure cycles of the account whose lease is free or expired; others skip them. */
  claimUnsure(account: string, owner: string, leaseMs: number, limit: number, now?: Date): Promise<Cycle[]>;
  /** The latest slot of the strategy that any replica claimed (handled or in progress), for the missed policy. */
  latestSlot(strategy: string): Promise<Date | null>;
  /** Which of these strategies have a cycle of the slot, in any state: their claim would be lost. */
  claimedAmong(slot: Date, strategies: readonly string[]): Promise<string[]>;
  /**
   * Exact spend of the strategy in the day and month (slot ranges the caller computes in the strategy's
   * zone), the latest moment an order request left (for cooldowns), its halt and the kill switch.
   */
  spendFigures(query: FiguresQuery): Promise<SpendFigures>;
  /** What a target's cycles in its window spent, received and were quoted (spend-figures.ts), and nothing else. */
  targetProgress(query: { strategy: string; account: string; window: Period }): Promise<TargetFigures>;
}

const p = sql.placeholder;

type ClaimWithFigures = { cycle: Cycle; figures: SpendFigures } | null;

interface ClaimCall {
  input: ClaimSlotInput;
  periods: FiguresQuery['periods'];
}

/** The most slots one claim statement carries. */
const CLAIMS_PER_STATEMENT = 200;

const slotKey = (strategy: string, slot: Date) => `${slot.getTime()} ${strategy}`;

/**
 * The claim of several slots as ONE statement: the slots come as arrays (one element per slot, unnested into
 * rows), the insert claims those nobody holds, and each claimed slot returns its strategy's figures, read by
 * the same select as a single claim's (spend-figures.ts) with the slot's own keys, laterally. A slot
 * another replica holds answers no row, as a single claim's does; two replicas claiming the same slots at
 * once wait for each other on the unique index, and the second finds them taken. Rows are inserted in one
 * order everywhere (strategy, slot): two batches that took their slots in opposite orders would each wait
 * for the other's (test/db/group-commit.test.ts found that deadlock).
 */
function claimSlotsStatement(db: DrizzleHandle) {
  const input = db
    // Its other columns are read by name (i.account, i.day_start, ...) in the statement's text.
    .$with('i', { strategy: cycles.strategy, slot: cycles.slot })
    .as(
      // One array per column (db/bulk.ts arrayPlaceholder), unnested into rows.
      sql`select * from unnest(${arr('strategies', 'text')}, ${arr('accounts', 'text')}, ${arr('versions', 'integer')},
        ${arr('slots', 'timestamptz')}, ${arr('triggers', 'text')}, ${arr('owners', 'text')},
        ${arr('dayStarts', 'timestamptz')}, ${arr('dayEnds', 'timestamptz')},
        ${arr('monthStarts', 'timestamptz')}, ${arr('monthEnds', 'timestamptz')})
        as slots(strategy, account, strategy_version, slot, trigger, owner, day_start, day_end, month_start, month_end)`,
    );
  const claim = db.$with('claim', { id: cycles.id, strategy: cycles.strategy, slot: cycles.slot }).as(
    sql`insert into ${cycles} (strategy, account, strategy_version, slot, trigger, owner, state, claimed_at, updated_at)
      select strategy, account, strategy_version, slot, trigger, owner, 'claimed', ${p('now')}::timestamptz,
        ${p('now')}::timestamptz from ${input} order by strategy, slot
      on conflict (strategy, slot) do nothing
      returning id, strategy, slot`,
  );
  const figures = spendFiguresQuery(db, false, keysOfInputRow(false)).as('figures');
  return db
    .with(input, claim)
    .select({
      claim: { id: claim.id, strategy: claim.strategy, slot: claim.slot },
      figures: figuresFields(figures),
    })
    .from(claim)
    .innerJoin(input, sql`i.strategy = ${claim.strategy} and i.slot = ${claim.slot}`)
    .crossJoinLateral(figures)
    .prepare('cycles_claim_slots');
}

export function createCyclesRepository(
  connection: Pick<Connection, 'drizzle' | 'statementTransactions'>,
  clock: () => Date,
  outbox: Outbox = NO_OUTBOX,
): CyclesRepository {
  const db = connection.drizzle;
  // The claim and the figures the cycle's rules read first, in one exchange: the figures are of the
  // strategy's other cycles (the statement's snapshot does not hold the row it inserts), and a lost claim
  // answers no row at all. The claimed row answers only its id: every other column is a value given here or
  // the column's default (claimedCycle), which reading back all 28 decoded again on every claim.
  const claim = db.$with('claim').as(
    db
      .insert(cycles)
      .values({
        strategy: p('strategy'),
        account: p('account'),
        strategyVersion: p('strategyVersion'),
        slot: p('slot'),
        trigger: p('trigger'),
        owner: p('owner'),
        state: 'claimed',
        claimedAt: p('now'),
        updatedAt: p('now'),
      })
      .onConflictDoNothing({ target: [cycles.strategy, cycles.slot] })
      .returning({ id: cycles.id }),
  );
  // A target's claim returns its progress too, in a statement of its own (spend-figures.ts says why).
  const claimStatement = (withTarget: boolean) =>
    db
      .with(claim)
      .select()
      .from(claim)
      .crossJoin(spendFiguresQuery(db, withTarget).as('figures'))
      .prepare(withTarget ? 'cycles_claim_slot_target' : 'cycles_claim_slot');
  const insertClaim = claimStatement(false);
  const insertTargetClaim = claimStatement(true);
  const insertClaims = claimSlotsStatement(db);

  const commitIntent = createIntentCommit(connection, clock, outbox);
  const figures = spendFiguresStatement(db, false);
  const targetFigures = spendFiguresStatement(db, true);

  const selectById = db
    .select()
    .from(cycles)
    .where(eq(cycles.id, p('id')))
    .prepare('cycles_get');
  const selectBySlot = db
    .select()
    .from(cycles)
    .where(and(eq(cycles.strategy, p('strategy')), eq(cycles.slot, p('slot'))))
    .prepare('cycles_get_by_slot');

  const unsureDue = db
    .select({ id: cycles.id })
    .from(cycles)
    .where(
      and(
        eq(cycles.account, p('account')),
        eq(cycles.state, 'unsure'),
        or(isNull(cycles.leaseUntil), lt(cycles.leaseUntil, p('now'))),
      ),
    )
    .orderBy(asc(cycles.updatedAt))
    .limit(p('limit'))
    .for('update', { skipLocked: true });
  const leaseUnsure = db
    .update(cycles)
    .set({ leaseOwner: sql`${p('owner')}`, leaseUntil: sql`${p('leaseUntil')}` })
    .where(inArray(cycles.id, unsureDue))
    .returning()
    .prepare('cycles_claim_unsure');

  const selectLatestSlot = db
    .select({ at: sql`max(${cycles.slot})`.mapWith(cycles.slot) })
    .from(cycles)
    .where(eq(cycles.strategy, p('strategy')))
    .prepare('cycles_latest_slot');

  const selectClaimedAmong = db
    .select({ strategy: cycles.strategy })
    .from(cycles)
    .where(and(eq(cycles.slot, p('slot')), sql`${cycles.strategy} = any(${arr('strategies', 'text')})`))
    .prepare('cycles_claimed_among');

  const first = (rows: (typeof cycles.$inferSelect)[]) => (rows[0] ? toCycle(rows[0]) : null);

  const claimOne = async (
    input: ClaimSlotInput,
    periods: FiguresQuery['periods'],
    targetWindow: FiguresQuery['targetWindow'],
  ): Promise<ClaimWithFigures> => {
    const now = clock();
    const [row] = await (targetWindow === undefined ? insertClaim : insertTargetClaim).execute({
      ...figuresParameters({
        strategy: input.strategy,
        account: input.account,
        periods,
        ...(targetWindow === undefined ? {} : { targetWindow }),
      }),
      account: input.account,
      strategyVersion: input.strategyVersion ?? null,
      slot: input.slot,
      trigger: input.trigger,
      owner: input.owner,
      now,
    });
    return row
      ? { cycle: claimedCycle(row.claim.id, input, now), figures: toSpendFigures(row.figures) }
      : null;
  };

  // Claims that arrive while one is in flight go together (group-commit.ts); a target's, which reads its
  // window's progress too, always alone.
  const claims = new GroupCommit<ClaimCall, ClaimWithFigures>({
    maxBatch: CLAIMS_PER_STATEMENT,
    // A slot asked for twice goes in a later statement, which finds it claimed.
    fits: (taken, next) =>
      !taken.some(
        ({ input }) =>
          input.strategy === next.input.strategy && input.slot.getTime() === next.input.slot.getTime(),
      ),
    one: ({ input, periods }) => claimOne(input, periods, undefined),
    async many(calls) {
      const now = clock();
      const rows = await insertClaims.execute({
        strategies: calls.map((call) => call.input.strategy),
        accounts: calls.map((call) => call.input.account),
        versions: calls.map((call) => call.input.strategyVersion?.toString() ?? null),
        slots: calls.map((call) => call.input.slot.toISOString()),
        triggers: calls.map((call) => call.input.trigger),
        owners: calls.map((call) => call.input.owner),
        dayStarts: calls.map((call) => call.periods.day.start.toISOString()),
        dayEnds: calls.map((call) => call.periods.day.end.toISOString()),
        monthStarts: calls.map((call) => call.periods.month.start.toISOString()),
        monthEnds: calls.map((call) => call.periods.month.end.toISOString()),
        now: now.toISOString(),
      });
      const claimed = new Map(rows.map((row) => [slotKey(row.claim.strategy, row.claim.slot), row]));
      return calls.map((call) => {
        const row = claimed.get(slotKey(call.input.strategy, call.input.slot));
        return row
          ? { cycle: claimedCycle(row.claim.id, call.input, now), figures: toSpendFigures(row.figures) }
          : null;
      });
    },
  });

  const claimWithFigures: CyclesRepository['claimSlotWithFigures'] = (input, periods, targetWindow) =>
    targetWindow === undefined ? claims.run({ input, periods }) : claimOne(input, periods, targetWindow);

  return {
    async claimSlot(input) {
      // Periods of no length: the figures, unused here, read no intent.
      const now = clock();
      const none = { start: now, end: now };
      return (await claimWithFigures(input, { day: none, month: none }))?.cycle ?? null;
    },

    claimSlotWithFigures: claimWithFigures,

    async transition(id, from, to, patch = {}, { audit } = {}) {
      assertLegalTransition(from, to);
      const now = clock();
      const move = (executor: Pick<DrizzleHandle, 'update'>) =>
        executor
          .update(cycles)
          .set({
            ...patchColumns(patch),
            state: to,
            updatedAt: now,
            ...(to === 'submitting' ? { submittedAt: now, attempts: sql`${cycles.attempts} + 1` } : {}),
            ...(isFinalState(to) ? { finishedAt: now } : {}),
            ...(from === 'unsure' ? { leaseOwner: null, leaseUntil: null } : {}),
          })
          .where(and(eq(cycles.id, id), eq(cycles.state, from)))
          .returning();
      // A move that people are told about writes its message in the same transaction (the outbox), and a
      // move a person decided its audit row.
      const announced = announcesMove(to, patch.reasonCode);
      if (!announced && !audit) return first(await move(db));
      return db.transaction(async (tx) => {
        const rows = await move(tx);
        if (rows[0] && announced) await outbox.enqueue(tx, cycleMoved(rows[0]));
        if (rows[0] && audit) await appendAudit(tx, audit, now);
        return first(rows);
      });
    },

    commitIntent,

    async get(id) {
      return first(await selectById.execute({ id }));
    },

    async getBySlot(strategy, slot) {
      return first(await selectBySlot.execute({ strategy, slot: slot.toISOString() }));
    },

    async listRecent(scope, { limit = 50, strategy } = {}) {
      const rows = await db
        .select()
        .from(cycles)
        .where(
          and(
            strategy === undefined ? undefined : eq(cycles.strategy, strategy),
            accountCondition(cycles.account, scope),
          ),
        )
        .orderBy(desc(cycles.claimedAt), desc(cycles.id))
        .limit(limit);
      return rows.map(toCycle);
    },

    async countByState(state) {
      const [row] = await db
        .select({ count: sql<number>`count(*)::int` })
        .from(cycles)
        .where(eq(cycles.state, state));
      return row?.count ?? 0;
    },

    async ownersOfQuotes(account, quoteIds) {
      const owners = new Map<string, { cycleId: number; state: CycleState }>();
      if (quoteIds.length === 0) return owners;
      const rows = await db
        .select({ quoteId: cycles.quoteId, cycleId: cycles.id, state: cycles.state })
        .from(cycles)
        .where(and(eq(cycles.account, account), inArray(cycles.quoteId, [...quoteIds])));
      for (const row of rows) {
        if (row.quoteId !== null)
          owners.set(row.quoteId, { cycleId: row.cycleId, state: row.state as CycleState });
      }
      return owners;
    },

    async listWithDiscrepancy(scope, limit = 100) {
      const rows = await db
        .select()
        .from(cycles)
        .where(and(isNotNull(cycles.discrepancy), accountCondition(cycles.account, scope)))
        .orderBy(desc(cycles.updatedAt), desc(cycles.id))
        .limit(limit);
      return rows.map(toCycle);
    },

    async listByState(scope, state, limit = 100) {
      const rows = await db
        .select()
        .from(cycles)
        .where(and(eq(cycles.state, state), accountCondition(cycles.account, scope)))
        .orderBy(asc(cycles.updatedAt), asc(cycles.id))
        .limit(limit);
      return rows.map(toCycle);
    },

    async claimUnsure(account, owner, leaseMs, limit, now = clock()) {
      const rows = await leaseUnsure.execute({
        account,
        owner,
        leaseUntil: new Date(now.getTime() + leaseMs).toISOString(),
        now: now.toISOString(),
        limit,
      });
      return rows.map(toCycle);
    },

    async latestSlot(strategy) {
      const [row] = await selectLatestSlot.execute({ strategy });
      return row?.at ?? null;
    },

    async claimedAmong(slot, strategies) {
      const rows = await selectClaimedAmong.execute({ slot: slot.toISOString(), strategies });
      return rows.map((row) => row.strategy);
    },

    spendFigures(query) {
      return readSpendFigures(query.targetWindow === undefined ? figures : targetFigures, query);
    },

    async targetProgress({ strategy, account, window }) {
      // Budget periods of no length: the statement's spend sums read no intent here.
      const none = { start: window.start, end: window.start };
      const read = await readSpendFigures(targetFigures, {
        strategy,
        account,
        periods: { day: none, month: none },
        targetWindow: window,
      });
      // Asked for with a window, the figures always carry the target's.
      return read.target!;
    },
  };
}
