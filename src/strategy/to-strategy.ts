import { compact, detached } from './kept-values.js';
import type { DcaDocument, StrategyDocument, TargetDocument } from './strategy-schema.js';
import type { Strategy, StrategyApproval, StrategyBudget, StrategyGuards, StrategyTarget } from './types.js';
import { instantOfDateTimeText } from './wall-clock.js';

/**
 * Turns a validated document into the domain record. Optional settings that were not written are left
 * out entirely (not set to undefined), so that the record, its JSON form and its hash only carry what the
 * operator configured.
 */
export function toStrategy(document: StrategyDocument, source: { file: string; line: number }): Strategy {
  // Detached: the worker keeps these for its life, and a slice would keep the whole file's text with them.
  const common = {
    name: detached(document.name),
    ...(document.account !== undefined && { account: detached(document.account) }),
    symbol: detached(document.symbol),
    amount: compact(document.kind === 'target' ? document.slice.max : document.amount),
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
  if (document.kind === 'target') {
    return { kind: 'target', schedule: detached(document.every), target: toTarget(document), ...common };
  }
  return {
    kind: 'threshold',
    schedule: detached(document.checkEvery),
    buyBelow: compact(document.buyBelow),
    ...common,
  };
}

// Built a property at a time, not by spreading optional parts: once the spread site has seen objects of
// several shapes, V8 gives every object it spreads into a hidden class of its own (measured: 9,995 classes
// for 10,000 budgets), about 200 bytes more per object, kept for the worker's life.
function toBudget(budget: NonNullable<DcaDocument['budget']>): StrategyBudget {
  const kept: StrategyBudget = {};
  if (budget.perDay !== undefined) kept.perDay = compact(budget.perDay);
  if (budget.perMonth !== undefined) kept.perMonth = compact(budget.perMonth);
  return kept;
}

function toGuards(guards: NonNullable<DcaDocument['guards']>): StrategyGuards {
  const kept: StrategyGuards = { requireCanWithdraw: guards.requireCanWithdraw };
  if (guards.minCreditAvailable !== undefined) kept.minCreditAvailable = compact(guards.minCreditAvailable);
  if (guards.maxCreditUsedPct !== undefined) kept.maxCreditUsedPct = guards.maxCreditUsedPct;
  return kept;
}

function toTarget(document: TargetDocument): StrategyTarget {
  const { target, window, slice, opportunistic, timezone } = document;
  // The cross-checks refused a document with both totals or neither, and windows that do not read.
  const measure = target.spend === undefined ? 'receive' : 'spend';
  const instant = (text: string) => new Date(instantOfDateTimeText(text, timezone)!);
  const kept: StrategyTarget = {
    measure,
    total: compact((target.spend ?? target.receive)!),
    start: instant(window.start),
    end: instant(window.end),
    slice: { min: compact(slice.min), max: compact(slice.max) },
  };
  if (opportunistic !== undefined) {
    kept.opportunistic = {
      belowAveragePct: compact(opportunistic.belowAveragePct),
      upTo: compact(opportunistic.upTo),
    };
  }
  return kept;
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
