import { compact, detached } from './kept-values.js';
import type { DcaDocument, ThresholdDocument } from './strategy-schema.js';
import type { Strategy, StrategyApproval, StrategyBudget, StrategyGuards } from './types.js';

/**
 * Turns a validated document into the domain record. Optional settings that were not written are left
 * out entirely (not set to undefined), so that the record, its JSON form and its hash only carry what the
 * operator configured.
 */
export function toStrategy(
  document: DcaDocument | ThresholdDocument,
  source: { file: string; line: number },
): Strategy {
  // Detached: the worker keeps these for its life, and a slice would keep the whole file's text with them.
  const common = {
    name: detached(document.name),
    symbol: detached(document.symbol),
    amount: compact(document.amount),
    timezone: detached(document.timezone),
    ...(document.maxPrice !== undefined && { maxPrice: compact(document.maxPrice) }),
    ...(document.cooldown !== undefined && { cooldownMs: document.cooldown }),
    ...(document.budget !== undefined && { budget: toBudget(document.budget) }),
    ...(document.guards !== undefined && { guards: toGuards(document.guards) }),
    ...(document.approval !== undefined && { approval: toApproval(document.approval) }),
    missed: document.missed,
    missedGraceMs: document.missedGrace,
    enabled: document.enabled,
    dryRun: document.dryRun,
    ...(document.note !== undefined && { note: detached(document.note) }),
    source,
  };
  if (document.kind === 'dca') return { kind: 'dca', schedule: detached(document.schedule), ...common };
  return {
    kind: 'threshold',
    schedule: detached(document.checkEvery),
    buyBelow: compact(document.buyBelow),
    ...common,
  };
}

function toBudget(budget: NonNullable<DcaDocument['budget']>): StrategyBudget {
  return {
    ...(budget.perDay !== undefined && { perDay: compact(budget.perDay) }),
    ...(budget.perMonth !== undefined && { perMonth: compact(budget.perMonth) }),
  };
}

function toGuards(guards: NonNullable<DcaDocument['guards']>): StrategyGuards {
  return {
    ...(guards.minCreditAvailable !== undefined && {
      minCreditAvailable: compact(guards.minCreditAvailable),
    }),
    ...(guards.maxCreditUsedPct !== undefined && { maxCreditUsedPct: guards.maxCreditUsedPct }),
    requireCanWithdraw: guards.requireCanWithdraw,
  };
}

function toApproval(approval: NonNullable<DcaDocument['approval']>): StrategyApproval {
  return {
    required: approval.required,
    ...(approval.above !== undefined && { above: compact(approval.above) }),
    approvers: approval.approvers,
    timeoutMs: approval.timeout,
    priceTolerancePct: compact(approval.priceTolerancePct),
  };
}
