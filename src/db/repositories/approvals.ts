/**
 * Four-eyes control in the database: parked cycles and their approvals, envelopes and theirs. Every decision
 * a person takes is written with its audit row (and, for a parked cycle, its `approval_decided` message) in
 * one transaction, on the subject's row locked FOR UPDATE, so that two people approving at once are counted
 * one after the other and a decision never lands on a cycle that has moved on.
 *
 * Who may approve: a person of the people table (`user add`), enabled, with a role that holds the approve
 * permission, named case-insensitively; every decision is recorded under the person's stored name. An
 * envelope's creator never counts as one of its approvers, and a person counts once per envelope or parked
 * cycle. A parked cycle is requested by the automation (the strategy), not by a person, so for it the rule is
 * that the same person cannot approve twice. Approvals count while their person is enabled: what is not
 * bought yet (an approved cycle not claimed, an envelope's next charge) needs the count again without them.
 */
import { and, asc, desc, eq, inArray, isNull, lte, type SQL, sql } from 'drizzle-orm';
import type { AnyPgColumn } from 'drizzle-orm/pg-core';
import { TreasuryError } from '../../errors.js';
import { Decimal } from '../../money.js';
import { type AccountScope, accountCondition } from '../account-scope.js';
import type { DrizzleExecutor, DrizzleHandle } from '../connection.js';
import { MONEY_MAY_HAVE_LEFT } from '../cycle-transitions.js';
import { approvalRequests, approvals, cycles, envelopes, strategies, users } from '../schema.js';
import type { Cycle } from '../types.js';
import { appendAudit } from './audit.js';
import { toCycle } from './cycle-rows.js';
import { approvalDecided, type Outbox } from './notification-events.js';
import { APPROVER_ROLES, foldedName } from './people.js';

export type ApprovalErrorCode =
  | 'CYCLE_NOT_FOUND'
  | 'CYCLE_NOT_AWAITING_APPROVAL'
  | 'APPROVAL_EXPIRED'
  | 'ALREADY_APPROVED_BY_PERSON'
  | 'APPROVER_IS_REQUESTER'
  | 'ENVELOPE_NOT_FOUND'
  | 'ENVELOPE_REVOKED'
  | 'STRATEGY_NOT_FOUND'
  | 'PERSON_INVALID'
  | 'PERSON_UNKNOWN'
  | 'PERSON_DISABLED'
  | 'PERSON_CANNOT_APPROVE'
  | 'INVALID_REQUEST';

/** A refusal of what a person asked: the code says which rule, the message what to do. */
export class ApprovalError extends TreasuryError {
  override readonly name = 'ApprovalError';
  constructor(
    readonly code: ApprovalErrorCode,
    message: string,
  ) {
    super(message);
  }
}

export interface ParkedCycle {
  cycle: Cycle;
  approversRequired: number;
  parkedAt: Date;
  expiresAt: Date;
  parkedPrice: Decimal;
  defaultMaxPrice: Decimal;
  approvedBy: string[];
}

export interface CycleApprovalResult {
  cycle: Cycle;
  approvedBy: string[];
  approversRequired: number;
  /** Set once the last approval came in: the highest price the fresh quote may have. */
  approvedMaxPrice: Decimal | null;
}

export interface EnvelopeInput {
  strategy: string;
  maxOrder: Decimal;
  maxTotal: Decimal;
  maxPrice: Decimal | null;
  validFrom: Date;
  validUntil: Date;
}

export interface Envelope extends EnvelopeInput {
  id: number;
  /** Its strategy's account: an envelope covers the cycles of one strategy, so of one account. */
  account: string;
  approversRequired: number;
  createdBy: string;
  createdAt: Date;
  activeAt: Date | null;
  revokedAt: Date | null;
  revokedBy: string | null;
  approvedBy: string[];
  /** The cost of the orders charged to it that may have left (in flight, placed or unsure). */
  spent: Decimal;
  /** maxTotal − spent, never below 0. */
  room: Decimal;
}

/** A cycle's approval record, open or decided: what it waited for and what people did about it. */
export interface CycleApproval {
  approversRequired: number;
  parkedAt: Date;
  expiresAt: Date;
  parkedPrice: Decimal;
  defaultMaxPrice: Decimal;
  approvedMaxPrice: Decimal | null;
  decision: 'approved' | 'rejected' | 'expired' | null;
  decidedAt: Date | null;
  decidedBy: string | null;
  reason: string | null;
  /** Each approval given, oldest first, with the maximum price its person named. */
  approvals: { person: string; at: Date; maxPrice: Decimal | null }[];
}

/** An approved cycle a replica just claimed back to run, with the approved maximum price. */
export interface ClaimedApproval {
  cycle: Cycle;
  approvedMaxPrice: Decimal;
}

export interface ApprovalsRepository {
  /** The scope's parked cycles waiting for people, oldest first. */
  listParked(scope: AccountScope): Promise<ParkedCycle[]>;
  approveCycle(cycleId: number, person: string, maxPrice: Decimal | null): Promise<CycleApprovalResult>;
  rejectCycle(cycleId: number, person: string, reason: string): Promise<Cycle>;
  /**
   * Parked cycles past their deadline (by the database's clock) end `approval_expired`, whether still waiting for people or approved
   * and never claimed by a replica; returns how many.
   */
  expireDue(now: Date): Promise<number>;
  /**
   * Moves up to `limit` approved cycles of these strategies (the ones the replica runs) to `claimed` for
   * `owner`: each is claimed by exactly one replica.
   */
  claimApproved(owner: string, strategyNames: readonly string[], limit: number): Promise<ClaimedApproval[]>;
  /** Whether any cycle is approved and not yet claimed: one probe of the state index, polled often. */
  anyApproved(): Promise<boolean>;
  addEnvelope(input: EnvelopeInput, person: string): Promise<Envelope>;
  approveEnvelope(id: number, person: string): Promise<Envelope>;
  revokeEnvelope(id: number, person: string): Promise<Envelope>;
  /** The scope's envelopes, newest first. */
  listEnvelopes(scope: AccountScope): Promise<Envelope[]>;
  /** The cycle's approval record, or null when it never needed a person. */
  forCycle(cycleId: number): Promise<CycleApproval | null>;
}

type RequestRow = typeof approvalRequests.$inferSelect;
type EnvelopeRow = typeof envelopes.$inferSelect;

export function createApprovalsRepository(
  db: DrizzleHandle,
  clock: () => Date,
  outbox: Outbox,
): ApprovalsRepository {
  return {
    async listParked(scope) {
      const rows = await db
        .select({ request: approvalRequests, cycle: cycles })
        .from(approvalRequests)
        .innerJoin(cycles, eq(cycles.id, approvalRequests.cycleId))
        .where(and(isNull(approvalRequests.decision), accountCondition(cycles.account, scope)))
        .orderBy(asc(approvalRequests.parkedAt), asc(approvalRequests.cycleId));
      const approvers = await approversOf(
        db,
        'cycle',
        rows.map((row) => row.request.cycleId),
      );
      return rows.map(({ request, cycle }) => ({
        cycle: toCycle(cycle),
        approversRequired: request.approversRequired,
        parkedAt: request.parkedAt,
        expiresAt: request.expiresAt,
        parkedPrice: request.parkedPrice,
        defaultMaxPrice: request.defaultMaxPrice,
        approvedBy: approvers.get(request.cycleId) ?? [],
      }));
    },

    approveCycle: (cycleId, person, maxPrice) =>
      db.transaction(async (tx) => {
        const now = clock();
        const approver = await approverNamed(tx, person);
        const request = await openRequest(tx, cycleId);
        const before = await approversOf(tx, 'cycle', [cycleId]);
        const approvedBy = before.get(cycleId) ?? [];
        if (approvedBy.some((given) => foldedName(given) === approver)) {
          throw new ApprovalError(
            'ALREADY_APPROVED_BY_PERSON',
            `${approver} already approved cycle ${cycleId}: another person must approve it`,
          );
        }
        await tx
          .insert(approvals)
          .values({ subjectKind: 'cycle', subjectId: cycleId, person: approver, at: now, maxPrice });
        approvedBy.push(approver);
        const complete = (await countApprovers(tx, 'cycle', cycleId)) >= request.approversRequired;
        let approvedMaxPrice: Decimal | null = null;
        let cycle = await cycleRow(tx, cycleId);
        if (complete) {
          approvedMaxPrice = await lowestMaxPrice(tx, cycleId, request.defaultMaxPrice);
          await tx
            .update(approvalRequests)
            .set({ decision: 'approved', decidedAt: now, decidedBy: approver, approvedMaxPrice })
            .where(eq(approvalRequests.cycleId, cycleId));
          cycle = await moveParked(tx, cycleId, 'approved', now, null);
          await outbox.enqueue(
            tx,
            approvalDecided(cycle, {
              decision: 'approved',
              by: approvedBy,
              reason: null,
              maxPrice: approvedMaxPrice,
            }),
          );
        }
        await appendAudit(
          tx,
          {
            actor: approver,
            action: 'approval.approve',
            subject: `cycle:${cycleId}`,
            before: { state: 'awaiting_approval', approvedBy: approvedBy.slice(0, -1) },
            after: {
              state: cycle.state,
              approvedBy,
              approversRequired: request.approversRequired,
              maxPrice,
              approvedMaxPrice,
            },
          },
          now,
        );
        return {
          cycle: toCycle(cycle),
          approvedBy,
          approversRequired: request.approversRequired,
          approvedMaxPrice,
        };
      }),

    rejectCycle: (cycleId, given, reason) =>
      db.transaction(async (tx) => {
        const now = clock();
        const person = await approverNamed(tx, given);
        await openRequest(tx, cycleId);
        const approvedBy = (await approversOf(tx, 'cycle', [cycleId])).get(cycleId) ?? [];
        await tx
          .update(approvalRequests)
          .set({ decision: 'rejected', decidedAt: now, decidedBy: person, reason })
          .where(eq(approvalRequests.cycleId, cycleId));
        const cycle = await moveParked(tx, cycleId, 'rejected', now, 'approval_rejected');
        await outbox.enqueue(
          tx,
          approvalDecided(cycle, { decision: 'rejected', by: [person], reason, maxPrice: null }),
        );
        await appendAudit(
          tx,
          {
            actor: person,
            action: 'approval.reject',
            subject: `cycle:${cycleId}`,
            before: { state: 'awaiting_approval', approvedBy },
            after: { state: 'rejected', reason },
          },
          now,
        );
        return toCycle(cycle);
      }),

    async expireDue(now) {
      // SKIP LOCKED: a request a person is deciding right now is left to them; the next pass sees it again.
      return db.transaction(async (tx) => {
        const due = await tx
          .select({ cycleId: approvalRequests.cycleId })
          .from(approvalRequests)
          .where(and(isNull(approvalRequests.decision), lte(approvalRequests.expiresAt, sql`now()`)))
          .orderBy(asc(approvalRequests.expiresAt))
          .limit(500)
          .for('update', { skipLocked: true });
        for (const { cycleId } of due) {
          await tx
            .update(approvalRequests)
            .set({ decision: 'expired', decidedAt: now })
            .where(eq(approvalRequests.cycleId, cycleId));
          const cycle = await moveParked(tx, cycleId, 'approval_expired', now, 'approval_expired');
          await outbox.enqueue(
            tx,
            approvalDecided(cycle, { decision: 'expired', by: [], reason: null, maxPrice: null }),
          );
        }
        // Approved, but no replica running the strategy claimed it before the deadline: the approval was for
        // a purchase then, and its reserved cost must not hold the budget any longer.
        const unclaimed = await tx
          .select({ id: cycles.id })
          .from(cycles)
          .innerJoin(approvalRequests, eq(approvalRequests.cycleId, cycles.id))
          .where(and(eq(cycles.state, 'approved'), lte(approvalRequests.expiresAt, sql`now()`)))
          .limit(500)
          .for('update', { of: cycles, skipLocked: true });
        let expiredApproved = 0;
        for (const { id } of unclaimed) {
          const [cycle] = await tx
            .update(cycles)
            .set({
              state: 'approval_expired',
              reasonCode: 'approval_expired',
              updatedAt: now,
              finishedAt: now,
            })
            .where(and(eq(cycles.id, id), eq(cycles.state, 'approved')))
            .returning();
          if (!cycle) continue;
          expiredApproved += 1;
          await tx
            .update(approvalRequests)
            .set({ decision: 'expired' })
            .where(eq(approvalRequests.cycleId, id));
          await outbox.enqueue(
            tx,
            approvalDecided(cycle, { decision: 'expired', by: [], reason: null, maxPrice: null }),
          );
        }
        return due.length + expiredApproved;
      });
    },

    async claimApproved(owner, strategyNames, limit) {
      if (strategyNames.length === 0) return [];
      const now = clock();
      // Only before the deadline, by the database's clock in this very statement: no replica buys a cycle
      // outside its time, whatever its own clock says.
      // A CTE (one holding FOR UPDATE is never folded into the statement), so the due rows are read once: as
      // a subquery of the UPDATE, PostgreSQL may rescan it per row, and cycles moved at one clock reading
      // (equal updated_at) then came back in another order on each rescan, claiming all of them, not `limit`.
      const due = db.$with('due').as(
        db
          .select({ id: cycles.id })
          .from(cycles)
          .innerJoin(approvalRequests, eq(approvalRequests.cycleId, cycles.id))
          .where(
            and(
              eq(cycles.state, 'approved'),
              inArray(cycles.strategy, [...strategyNames]),
              sql`${approvalRequests.expiresAt} > now()`,
            ),
          )
          .orderBy(asc(cycles.updatedAt), asc(cycles.id))
          .limit(limit)
          .for('update', { of: cycles, skipLocked: true }),
      );
      // A compare-and-set on the state: a cycle another replica claimed first is no longer `approved`.
      const claimed = await db
        .with(due)
        .update(cycles)
        .set({ state: 'claimed', owner, updatedAt: now })
        .where(and(inArray(cycles.id, db.select({ id: due.id }).from(due)), eq(cycles.state, 'approved')))
        .returning();
      if (claimed.length === 0) return [];
      const prices = await db
        .select({ cycleId: approvalRequests.cycleId, maxPrice: approvalRequests.approvedMaxPrice })
        .from(approvalRequests)
        .where(
          inArray(
            approvalRequests.cycleId,
            claimed.map((row) => row.id),
          ),
        );
      const priceOf = new Map(prices.map((row) => [row.cycleId, row.maxPrice]));
      return claimed.map((row) => {
        const approvedMaxPrice = priceOf.get(row.id);
        if (!approvedMaxPrice) throw new Error(`approved cycle ${row.id} has no approved maximum price`);
        return { cycle: toCycle(row), approvedMaxPrice };
      });
    },

    async anyApproved() {
      const [row] = await db
        .select({ id: cycles.id })
        .from(cycles)
        .where(eq(cycles.state, 'approved'))
        .limit(1);
      return row !== undefined;
    },

    addEnvelope: (input, given) =>
      db.transaction(async (tx) => {
        const now = clock();
        const person = await approverNamed(tx, given);
        const [strategy] = await tx
          .select({ config: strategies.config })
          .from(strategies)
          .where(eq(strategies.name, input.strategy));
        if (!strategy) {
          throw new ApprovalError(
            'STRATEGY_NOT_FOUND',
            `no strategy named "${input.strategy}" was ever recorded (run the worker or \`once\` with it first)`,
          );
        }
        const [row] = await tx
          .insert(envelopes)
          .values({
            ...input,
            approversRequired: approversInConfig(strategy.config),
            createdBy: person,
            createdAt: now,
          })
          .returning();
        if (!row) throw new Error('insert into envelopes returned no row');
        const envelope = await envelopeOf(tx, row);
        await appendAudit(
          tx,
          {
            actor: person,
            action: 'envelope.add',
            subject: `envelope:${row.id}`,
            after: envelopeView(envelope),
          },
          now,
        );
        return envelope;
      }),

    approveEnvelope: (id, given) =>
      db.transaction(async (tx) => {
        const now = clock();
        const person = await approverNamed(tx, given);
        const row = await lockedEnvelope(tx, id);
        if (row.revokedAt !== null) {
          throw new ApprovalError('ENVELOPE_REVOKED', `envelope ${id} was revoked by ${row.revokedBy}`);
        }
        if (foldedName(row.createdBy) === person) {
          throw new ApprovalError(
            'APPROVER_IS_REQUESTER',
            `${person} created envelope ${id} and cannot approve it: another person must`,
          );
        }
        const before = await envelopeOf(tx, row);
        if (before.approvedBy.some((approver) => foldedName(approver) === person)) {
          throw new ApprovalError(
            'ALREADY_APPROVED_BY_PERSON',
            `${person} already approved envelope ${id}: another person must approve it`,
          );
        }
        await tx.insert(approvals).values({ subjectKind: 'envelope', subjectId: id, person, at: now });
        let current = row;
        const counted = await countApprovers(tx, 'envelope', id, row.createdBy);
        if (row.activeAt === null && counted >= (await envelopeApproversRequired(tx, row))) {
          const [activated] = await tx
            .update(envelopes)
            .set({ activeAt: now })
            .where(eq(envelopes.id, id))
            .returning();
          if (activated) current = activated;
        }
        const after = await envelopeOf(tx, current);
        await appendAudit(
          tx,
          {
            actor: person,
            action: 'envelope.approve',
            subject: `envelope:${id}`,
            before: envelopeView(before),
            after: envelopeView(after),
          },
          now,
        );
        return after;
      }),

    revokeEnvelope: (id, given) =>
      db.transaction(async (tx) => {
        const now = clock();
        const person = await approverNamed(tx, given);
        const row = await lockedEnvelope(tx, id);
        if (row.revokedAt !== null) {
          throw new ApprovalError(
            'ENVELOPE_REVOKED',
            `envelope ${id} was already revoked by ${row.revokedBy}`,
          );
        }
        const before = await envelopeOf(tx, row);
        const [revoked] = await tx
          .update(envelopes)
          .set({ revokedAt: now, revokedBy: person })
          .where(eq(envelopes.id, id))
          .returning();
        if (!revoked) throw new Error('update of envelopes returned no row');
        const after = await envelopeOf(tx, revoked);
        await appendAudit(
          tx,
          {
            actor: person,
            action: 'envelope.revoke',
            subject: `envelope:${id}`,
            before: envelopeView(before),
            after: envelopeView(after),
          },
          now,
        );
        return after;
      }),

    async listEnvelopes(scope) {
      const rows = await db
        .select({ envelope: envelopes, account: strategies.account })
        .from(envelopes)
        .innerJoin(strategies, eq(strategies.name, envelopes.strategy))
        .where(accountCondition(strategies.account, scope))
        .orderBy(desc(envelopes.id));
      const ids = rows.map((row) => row.envelope.id);
      const spent = await spentOf(db, ids);
      const approvers = await approversOf(db, 'envelope', ids);
      return rows.map(({ envelope, account }) =>
        toEnvelope(
          envelope,
          account,
          spent.get(envelope.id) ?? new Decimal(0),
          approvers.get(envelope.id) ?? [],
        ),
      );
    },

    async forCycle(cycleId) {
      const [request] = await db.select().from(approvalRequests).where(eq(approvalRequests.cycleId, cycleId));
      if (!request) return null;
      const given = await db
        .select({ person: approvals.person, at: approvals.at, maxPrice: approvals.maxPrice })
        .from(approvals)
        .where(and(eq(approvals.subjectKind, 'cycle'), eq(approvals.subjectId, cycleId)))
        .orderBy(asc(approvals.id));
      return {
        approversRequired: request.approversRequired,
        parkedAt: request.parkedAt,
        expiresAt: request.expiresAt,
        parkedPrice: request.parkedPrice,
        defaultMaxPrice: request.defaultMaxPrice,
        approvedMaxPrice: request.approvedMaxPrice,
        // The table's check constraint holds it to these three.
        decision: request.decision as CycleApproval['decision'],
        decidedAt: request.decidedAt,
        decidedBy: request.decidedBy,
        reason: request.reason,
        approvals: given,
      };
    },
  };
}

/**
 * The parked cycle's open request, locked; refused when it is decided, gone, or past its deadline by the
 * database's clock (a replica's may differ).
 */
async function openRequest(tx: DrizzleExecutor, cycleId: number): Promise<RequestRow> {
  const [found] = await tx
    .select({ request: approvalRequests, expired: sql<boolean>`${approvalRequests.expiresAt} <= now()` })
    .from(approvalRequests)
    .where(eq(approvalRequests.cycleId, cycleId))
    .for('update');
  const request = found?.request;
  if (!request) {
    const [cycle] = await tx.select({ state: cycles.state }).from(cycles).where(eq(cycles.id, cycleId));
    if (!cycle) throw new ApprovalError('CYCLE_NOT_FOUND', `no cycle with id ${cycleId}`);
    throw new ApprovalError(
      'CYCLE_NOT_AWAITING_APPROVAL',
      `cycle ${cycleId} is '${cycle.state}' and never waited for approval`,
    );
  }
  if (request.decision !== null) {
    throw new ApprovalError(
      'CYCLE_NOT_AWAITING_APPROVAL',
      `cycle ${cycleId} no longer waits for approval: it was ${request.decision}${request.decidedBy ? ` by ${request.decidedBy}` : ''}`,
    );
  }
  if (found.expired) {
    throw new ApprovalError(
      'APPROVAL_EXPIRED',
      `cycle ${cycleId} waited past its deadline ${request.expiresAt.toISOString()}: it can no longer be approved`,
    );
  }
  return request;
}

async function cycleRow(tx: DrizzleExecutor, cycleId: number) {
  const [row] = await tx.select().from(cycles).where(eq(cycles.id, cycleId));
  if (!row) throw new ApprovalError('CYCLE_NOT_FOUND', `no cycle with id ${cycleId}`);
  return row;
}

/** The parked cycle's move out of `awaiting_approval`; its open request proves it is still there. */
async function moveParked(
  tx: DrizzleExecutor,
  cycleId: number,
  to: 'approved' | 'rejected' | 'approval_expired',
  now: Date,
  reasonCode: string | null,
) {
  const [row] = await tx
    .update(cycles)
    .set({
      state: to,
      updatedAt: now,
      ...(reasonCode === null ? {} : { reasonCode }),
      ...(to === 'approved' ? {} : { finishedAt: now }),
    })
    .where(and(eq(cycles.id, cycleId), eq(cycles.state, 'awaiting_approval')))
    .returning();
  if (!row) throw new Error(`cycle ${cycleId} has an open approval request but is not awaiting approval`);
  return row;
}

/**
 * The lowest of every approver's limit, where an approver who named none agreed to the default (the parked
 * price plus the tolerance): no approver's limit is ever above what the cycle may be bought at.
 */
async function lowestMaxPrice(tx: DrizzleExecutor, cycleId: number, fallback: Decimal): Promise<Decimal> {
  const named = await tx
    .select({ maxPrice: approvals.maxPrice })
    .from(approvals)
    .where(and(eq(approvals.subjectKind, 'cycle'), eq(approvals.subjectId, cycleId)));
  return Decimal.min(fallback, ...named.map((row) => row.maxPrice ?? fallback));
}

async function approversOf(
  executor: DrizzleExecutor,
  kind: 'cycle' | 'envelope',
  ids: readonly number[],
): Promise<Map<number, string[]>> {
  const byId = new Map<number, string[]>();
  if (ids.length === 0) return byId;
  const rows = await executor
    .select({ subjectId: approvals.subjectId, person: approvals.person })
    .from(approvals)
    .where(and(eq(approvals.subjectKind, kind), inArray(approvals.subjectId, [...ids])))
    .orderBy(asc(approvals.id));
  for (const row of rows) byId.set(row.subjectId, [...(byId.get(row.subjectId) ?? []), row.person]);
  return byId;
}

async function spentOf(executor: DrizzleExecutor, ids: readonly number[]): Promise<Map<number, Decimal>> {
  const byId = new Map<number, Decimal>();
  if (ids.length === 0) return byId;
  const rows = await executor
    .select({
      envelopeId: cycles.envelopeId,
      spent: sql<string>`coalesce(sum(${cycles.totalCost}), 0)::text`,
    })
    .from(cycles)
    .where(and(inArray(cycles.envelopeId, [...ids]), inArray(cycles.state, [...MONEY_MAY_HAVE_LEFT])))
    .groupBy(cycles.envelopeId);
  for (const row of rows) if (row.envelopeId !== null) byId.set(row.envelopeId, new Decimal(row.spent));
  return byId;
}

async function lockedEnvelope(tx: DrizzleExecutor, id: number): Promise<EnvelopeRow> {
  const [row] = await tx.select().from(envelopes).where(eq(envelopes.id, id)).for('update');
  if (!row) throw new ApprovalError('ENVELOPE_NOT_FOUND', `no envelope with id ${id}`);
  return row;
}

async function envelopeOf(executor: DrizzleExecutor, row: EnvelopeRow): Promise<Envelope> {
  const spent = (await spentOf(executor, [row.id])).get(row.id) ?? new Decimal(0);
  const approvers = (await approversOf(executor, 'envelope', [row.id])).get(row.id) ?? [];
  const [strategy] = await executor
    .select({ account: strategies.account })
    .from(strategies)
    .where(eq(strategies.name, row.strategy));
  if (!strategy) throw new Error(`envelope ${row.id} names strategy ${row.strategy}, which has no row`);
  return toEnvelope(row, strategy.account, spent, approvers);
}

function toEnvelope(row: EnvelopeRow, account: string, spent: Decimal, approvedBy: string[]): Envelope {
  return {
    id: row.id,
    account,
    strategy: row.strategy,
    maxOrder: row.maxOrder,
    maxTotal: row.maxTotal,
    maxPrice: row.maxPrice,
    validFrom: row.validFrom,
    validUntil: row.validUntil,
    approversRequired: row.approversRequired,
    createdBy: row.createdBy,
    createdAt: row.createdAt,
    activeAt: row.activeAt,
    revokedAt: row.revokedAt,
    revokedBy: row.revokedBy,
    approvedBy,
    spent,
    room: Decimal.max(row.maxTotal.minus(spent), 0),
  };
}

/** What the audit row keeps of an envelope: its limits and how far it got. */
function envelopeView(envelope: Envelope) {
  const { id, strategy, maxOrder, maxTotal, maxPrice, validFrom, validUntil } = envelope;
  const { approversRequired, approvedBy, activeAt, revokedAt, spent } = envelope;
  return {
    id,
    strategy,
    maxOrder,
    maxTotal,
    maxPrice,
    validFrom,
    validUntil,
    approversRequired,
    approvedBy,
    activeAt,
    revokedAt,
    spent,
  };
}

/** `approval.approvers` of the strategy's recorded configuration (1 when it has no approval block). */
function approversInConfig(config: unknown): number {
  const approval = (config as { approval?: { approvers?: unknown } } | null)?.approval;
  return typeof approval?.approvers === 'number' ? approval.approvers : 1;
}

/**
 * The stored name of the person `name` (any case) when they may decide on approvals: a person of the people
 * table, enabled, with a role that holds the approve permission. Their row is locked FOR SHARE until the
 * decision commits, so that disabling them waits for it and then sees it (reopenUncountedApprovals).
 */
export async function approverNamed(tx: DrizzleExecutor, name: string): Promise<string> {
  const [person] = await tx
    .select({ name: users.name, role: users.role, disabledAt: users.disabledAt })
    .from(users)
    .where(eq(users.name, foldedName(name)))
    .for('share');
  if (!person) {
    throw new ApprovalError(
      'PERSON_UNKNOWN',
      `no person named "${name}": approvals are given by people added with \`treasury-bot user add NAME --role approver\``,
    );
  }
  if (person.disabledAt !== null) {
    throw new ApprovalError(
      'PERSON_DISABLED',
      `${person.name} was disabled at ${person.disabledAt.toISOString()} and can no longer decide on approvals`,
    );
  }
  if (!(APPROVER_ROLES as readonly string[]).includes(person.role)) {
    throw new ApprovalError(
      'PERSON_CANNOT_APPROVE',
      `${person.name} is ${/^[aeiou]/.test(person.role) ? 'an' : 'a'} ${person.role}: only an ${APPROVER_ROLES.join(' or an ')} may decide on approvals`,
    );
  }
  return person.name;
}

/**
 * How many distinct people's approvals of the subject count now: enabled people with the approve
 * permission, names compared case-insensitively, never the envelope's creator. A SQL expression, so that
 * the envelope charge in the intent commit judges it in the same statement that locks the envelopes.
 */
export function countedApprovers(
  kind: 'cycle' | 'envelope',
  subjectId: AnyPgColumn | number,
  creator?: AnyPgColumn | string,
): SQL<number> {
  const notCreator = creator === undefined ? sql`` : sql` and ${users.name} <> lower(${creator})`;
  return sql<number>`(select count(distinct ${users.name})::int from ${approvals}
    inner join ${users} on ${users.name} = lower(${approvals.person})
    where ${approvals.subjectKind} = ${kind} and ${approvals.subjectId} = ${subjectId}
      and ${users.disabledAt} is null and ${users.role} in ${[...APPROVER_ROLES]}${notCreator})`;
}

async function countApprovers(
  tx: DrizzleExecutor,
  kind: 'cycle' | 'envelope',
  subjectId: number,
  creator?: string,
): Promise<number> {
  const [row] = await tx
    .select({ count: countedApprovers(kind, subjectId, creator) })
    .from(sql`(select 1) as one`);
  return Number(row?.count ?? 0);
}

/**
 * An envelope needs the larger of the approver count it was made with and its strategy's count now: raising
 * `approval.approvers` applies to the envelopes already made, lowering it does not loosen them.
 */
async function envelopeApproversRequired(tx: DrizzleExecutor, row: EnvelopeRow): Promise<number> {
  const [strategy] = await tx
    .select({ config: strategies.config })
    .from(strategies)
    .where(eq(strategies.name, row.strategy));
  return Math.max(row.approversRequired, approversInConfig(strategy?.config ?? null));
}

/**
 * After `person` was disabled (in the same transaction): each approved cycle not yet claimed whose approvals
 * no longer reach the count goes back to waiting for people, its decision cleared, with an audit row.
 */
export async function reopenUncountedApprovals(
  tx: DrizzleExecutor,
  person: string,
  actor: string,
  now: Date,
): Promise<number> {
  const approved = await tx
    .select({ cycleId: cycles.id, required: approvalRequests.approversRequired })
    .from(cycles)
    .innerJoin(approvalRequests, eq(approvalRequests.cycleId, cycles.id))
    .innerJoin(
      approvals,
      and(
        eq(approvals.subjectKind, 'cycle'),
        eq(approvals.subjectId, cycles.id),
        eq(sql`lower(${approvals.person})`, person),
      ),
    )
    .where(eq(cycles.state, 'approved'))
    .for('update', { of: cycles });
  let reopened = 0;
  for (const { cycleId, required } of approved) {
    if ((await countApprovers(tx, 'cycle', cycleId)) >= required) continue;
    const [moved] = await tx
      .update(cycles)
      .set({ state: 'awaiting_approval', updatedAt: now })
      .where(and(eq(cycles.id, cycleId), eq(cycles.state, 'approved')))
      .returning({ id: cycles.id });
    if (!moved) continue;
    await tx
      .update(approvalRequests)
      .set({ decision: null, decidedAt: null, decidedBy: null, approvedMaxPrice: null })
      .where(eq(approvalRequests.cycleId, cycleId));
    await appendAudit(
      tx,
      {
        actor,
        action: 'approval.reopen',
        subject: `cycle:${cycleId}`,
        before: { state: 'approved' },
        after: {
          state: 'awaiting_approval',
          reason: `${person} was disabled: their approval no longer counts`,
        },
      },
      now,
    );
    reopened += 1;
  }
  return reopened;
}
