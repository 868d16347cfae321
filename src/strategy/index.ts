/**
 * The strategy module's public surface: strategy files, schedule slots, budget periods and the pure
 * decision rules. Everything here is free of network, database and clock; time comes in as an argument.
 */
export { type CatchUpInput, slotToCatchUp } from './catch-up.js';
export { type CronSchedule, CronSyntaxError, parseCron } from './cron-expression.js';
export { formatDuration, parseDuration } from './duration.js';
export {
  type BeforeQuoteDecisionInput,
  evaluateBeforeQuote,
  evaluateQuote,
  type QuoteDecisionInput,
  verdictBeforeQuote,
  verdictQuote,
} from './evaluate.js';
export { ACCOUNT_NAME } from './field-schemas.js';
export {
  accountOf,
  DEFAULT_ACCOUNT,
  type LoadResult,
  loadStrategies,
  loadStrategiesOrThrow,
  resolveStrategiesPath,
  StrategyLoadError,
  type ValidLoad,
} from './loader.js';
export { parseStrategyText } from './parse-documents.js';
export { type BudgetPeriods, budgetPeriods, type Period } from './periods.js';
export { formatProblem, type StrategyProblem } from './problems.js';
export {
  type Decision,
  REASON_CODES,
  type ReasonCode,
  type RuleName,
  type RuleResult,
  type Verdict,
} from './rule-result.js';
export { checkApprovedMaxPrice, defaultApprovedMaxPrice, needsApproval } from './rules-approval.js';
export { needsBalance } from './rules-credit.js';
export { DEFAULT_QUOTE_TOLERANCES } from './rules-quote.js';
export { latestSlotAtOrBefore, nextSlotAfter, slotsBetween } from './slots.js';
export { strategyHash } from './strategy-hash.js';
export { DEFAULT_APPROVAL_TIMEOUT_MS, DEFAULT_MISSED_GRACE_MS } from './strategy-schema.js';
export {
  checkTargetBeforeQuote,
  doneOf,
  FIAT_STEP,
  isReached,
  isTarget,
  LAST_ORDER_ROUNDING,
  leftInFiat,
  planSlice,
  remainingOf,
  resizeForQuote,
  type SlicePlan,
  slotInWindow,
  slotsLeft,
  type TargetFigures,
  type TargetProgress,
  type TargetStanding,
  targetStanding,
} from './target.js';
export { type DiffLabels, unifiedDiff } from './text-diff.js';
export type {
  ApprovalRequirement,
  BalanceView,
  DcaStrategy,
  MissedPolicy,
  QuoteTolerances,
  QuoteView,
  SpentSoFar,
  Strategy,
  StrategyApproval,
  StrategyBudget,
  StrategyGuards,
  StrategyTarget,
  TargetStrategy,
  ThresholdStrategy,
} from './types.js';
export { dateTimeTextOf } from './wall-clock.js';
