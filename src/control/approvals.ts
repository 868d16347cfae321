/**
 * What people do about four-eyes control, for the command line and the web console alike: list, approve and
 * reject parked cycles; add, approve, revoke and list envelopes. Each operation takes the acting person as
 * an argument (the CLI's `--by` or TREASURY_ACTOR, the console's logged-in person), checks what was asked,
 * and is written with its audit row in one transaction by the repository. Refusals are ApprovalErrors with
 * a stable code (APPROVER_IS_REQUESTER, ALREADY_APPROVED_BY_PERSON, APPROVAL_EXPIRED, …).
 */
import {
  type AccountScope,
  ApprovalError,
  type Cycle,
  type CycleApprovalResult,
  type Database,
  type Envelope,
  type EnvelopeInput,
  type ParkedCycle,
} from '../db/index.js';
import type { Decimal } from '../money.js';

/** A person's name, as the console's people are named (letters, digits, `.`, `_`, `-`, `@`; up to 64). */
export const PERSON_NAME = /^[A-Za-z0-9._@-]{1,64}$/;

/** Longest rejection reason kept. */
const REASON_MAX = 500;

export interface ApprovalControl {
  /** The scope's parked cycles waiting for people, oldest first, with who approved so far. */
  listParked(scope: AccountScope): Promise<ParkedCycle[]>;
  /**
   * One person's approval of a parked cycle. The last one needed moves it to `approved`: a worker then runs
   * it on a fresh quote whose price may be at most the lowest of every approver's `maxPrice`, where an
   * approver who names none agrees to the default: the parked quote's price plus `approval.priceTolerancePct`.
   */
  approve(cycleId: number, person: string, options?: { maxPrice?: Decimal }): Promise<CycleApprovalResult>;
  reject(cycleId: number, person: string, reason: string): Promise<Cycle>;
  /** A new envelope, inactive until the strategy's `approval.approvers` people other than `person` approve it. */
  addEnvelope(input: EnvelopeInput, person: string): Promise<Envelope>;
  approveEnvelope(id: number, person: string): Promise<Envelope>;
  revokeEnvelope(id: number, person: string): Promise<Envelope>;
  /** The scope's envelopes, newest first, with their spend and room left. */
  listEnvelopes(scope: AccountScope): Promise<Envelope[]>;
}

export function createApprovalControl(database: Database): ApprovalControl {
  const { approvals } = database;
  return {
    listParked: (scope) => approvals.listParked(scope),

    async approve(cycleId, person, options = {}) {
      checkPerson(person);
      if (options.maxPrice !== undefined && !options.maxPrice.greaterThan(0)) {
        throw invalid(`the maximum price must be above 0 (got ${options.maxPrice.toString()})`);
      }
      return approvals.approveCycle(cycleId, person, options.maxPrice ?? null);
    },

    async reject(cycleId, person, reason) {
      checkPerson(person);
      const why = reason.trim();
      if (why === '') throw invalid('a rejection needs a reason');
      return approvals.rejectCycle(cycleId, person, why.slice(0, REASON_MAX));
    },

    async addEnvelope(input, person) {
      checkPerson(person);
      for (const [field, value] of [
        ['max order', input.maxOrder],
        ['max total', input.maxTotal],
        ['max price', input.maxPrice],
      ] as const) {
        if (value !== null && !value.greaterThan(0)) {
          throw invalid(`the ${field} must be above 0 (got ${value.toString()})`);
        }
      }
      if (input.maxTotal.lessThan(input.maxOrder)) {
        throw invalid(
          `the max total ${input.maxTotal.toString()} is below the max order ${input.maxOrder.toString()}`,
        );
      }
      if (input.validUntil.getTime() <= input.validFrom.getTime()) {
        throw invalid(
          `the envelope must end after it starts (from ${input.validFrom.toISOString()} until ${input.validUntil.toISOString()})`,
        );
      }
      return approvals.addEnvelope(input, person);
    },

    async approveEnvelope(id, person) {
      checkPerson(person);
      return approvals.approveEnvelope(id, person);
    },

    async revokeEnvelope(id, person) {
      checkPerson(person);
      return approvals.revokeEnvelope(id, person);
    },

    listEnvelopes: (scope) => approvals.listEnvelopes(scope),
  };
}

/** The one rule for a person's name, for every decision recorded from the command line or the console. */
export function checkPerson(person: string): void {
  if (!PERSON_NAME.test(person)) {
    throw new ApprovalError(
      'PERSON_INVALID',
      `the person must be 1 to 64 letters, digits, ., _, - or @ (got ${JSON.stringify(person)})`,
    );
  }
}

function invalid(message: string): ApprovalError {
  return new ApprovalError('INVALID_REQUEST', message);
}
