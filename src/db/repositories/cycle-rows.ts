import type { cycles } from '../schema.js';
import type {
  ClaimSlotInput,
  Cycle,
  CyclePatch,
  CycleState,
  CycleTrigger,
  FigureDifference,
  JsonValue,
} from '../types.js';

export type CycleRow = typeof cycles.$inferSelect;

/**
 * The record is the row with its unions narrowed: the table's columns and the record's fields are one set,
 * in the same order (money already `Decimal` through the column type). A column that is not a field would
 * show in the record: test/db/cycles.test.ts compares a claim's record, written out below, with the row
 * read back.
 */
export function toCycle(row: CycleRow): Cycle {
  return {
    ...row,
    // The CHECK constraints on these columns hold them to the unions.
    trigger: row.trigger as CycleTrigger,
    state: row.state as CycleState,
    trace: (row.trace ?? null) as JsonValue | null,
    discrepancy: (row.discrepancy ?? null) as FigureDifference[] | null,
  };
}

/**
 * The row a claim inserts, as the claim's statement wrote it: the values given, the columns' defaults
 * (`attempts` 0, null elsewhere) and the id the database gave it. Checked against the row read back in
 * test/db/cycles.test.ts.
 */
export function claimedCycle(id: number, input: ClaimSlotInput, now: Date): Cycle {
  return {
    id,
    strategy: input.strategy,
    account: input.account,
    slot: input.slot,
    trigger: input.trigger,
    state: 'claimed',
    owner: input.owner,
    attempts: 0,
    reasonCode: null,
    errorCode: null,
    errorMessage: null,
    quoteRecordId: null,
    quoteId: null,
    amount: null,
    price: null,
    totalCost: null,
    balanceSnapshotId: null,
    trace: null,
    serviceOrderId: null,
    claimedAt: now,
    updatedAt: now,
    submittedAt: null,
    finishedAt: null,
    leaseOwner: null,
    leaseUntil: null,
    discrepancy: null,
    envelopeId: null,
    strategyVersion: input.strategyVersion ?? null,
  };
}

/** The columns a patch sets, by schema property name; `undefined` entries are left out. */
export function patchColumns(patch: CyclePatch): Partial<CycleRow> {
  const columns: Partial<CycleRow> = {};
  if (patch.reasonCode !== undefined) columns.reasonCode = patch.reasonCode;
  if (patch.errorCode !== undefined) columns.errorCode = patch.errorCode;
  if (patch.errorMessage !== undefined) columns.errorMessage = patch.errorMessage;
  if (patch.balanceSnapshotId !== undefined) columns.balanceSnapshotId = patch.balanceSnapshotId;
  if (patch.trace !== undefined) columns.trace = patch.trace;
  if (patch.serviceOrderId !== undefined) columns.serviceOrderId = patch.serviceOrderId;
  if (patch.quote !== undefined) {
    columns.quoteRecordId = patch.quote.id;
    columns.quoteId = patch.quote.quoteId;
    columns.amount = patch.quote.amount;
    columns.price = patch.quote.price;
    columns.totalCost = patch.quote.totalCost;
  }
  return columns;
}
