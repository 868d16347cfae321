import type { cycles } from '../schema.js';
import type { Cycle, CyclePatch, CycleState, CycleTrigger, FigureDifference, JsonValue } from '../types.js';

export type CycleRow = typeof cycles.$inferSelect;

export function toCycle(row: CycleRow): Cycle {
  return {
    id: row.id,
    strategy: row.strategy,
    slot: row.slot,
    // The CHECK constraints on these columns hold them to the unions.
    trigger: row.trigger as CycleTrigger,
    state: row.state as CycleState,
    owner: row.owner,
    attempts: row.attempts,
    reasonCode: row.reasonCode,
    errorCode: row.errorCode,
    errorMessage: row.errorMessage,
    quoteRecordId: row.quoteRecordId,
    quoteId: row.quoteId,
    amount: row.amount,
    price: row.price,
    totalCost: row.totalCost,
    balanceSnapshotId: row.balanceSnapshotId,
    trace: (row.trace ?? null) as JsonValue | null,
    serviceOrderId: row.serviceOrderId,
    claimedAt: row.claimedAt,
    updatedAt: row.updatedAt,
    submittedAt: row.submittedAt,
    finishedAt: row.finishedAt,
    leaseOwner: row.leaseOwner,
    leaseUntil: row.leaseUntil,
    discrepancy: (row.discrepancy ?? null) as FigureDifference[] | null,
    envelopeId: row.envelopeId,
    strategyVersion: row.strategyVersion,
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
