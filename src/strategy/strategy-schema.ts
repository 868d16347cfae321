import { z } from 'zod';
import { Decimal } from '../money.js';
import {
  accountName,
  cronText,
  dateTimeText,
  duration,
  money,
  multiplier,
  optionalMoney,
  percentage,
  strategyName,
  symbol,
  timezone,
} from './field-schemas.js';
import { describeValue } from './problems.js';

/**
 * The shape of one strategy document. Objects are strict: a misspelt key is an error rather than a
 * silently ignored setting. Defaults live here and nowhere else.
 */

export const DEFAULT_MISSED_GRACE_MS = 10 * 60_000;

const budget = z.strictObject({
  perDay: optionalMoney('positive'),
  perMonth: optionalMoney('positive'),
});

const guards = z.strictObject({
  minCreditAvailable: optionalMoney('nonNegative'),
  maxCreditUsedPct: percentage.optional(),
  requireCanWithdraw: z.boolean().default(false),
});

/** Parked cycles expire after this unless an approval block says otherwise. */
export const DEFAULT_APPROVAL_TIMEOUT_MS = 3_600_000;

/** Distinct people an approval needs: a small whole number (YAML numbers are fine, it is not money). */
const approverCount = z.unknown().transform((value, ctx): number => {
  if (typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= 10) return value;
  const message =
    value === undefined
      ? 'is required'
      : `expected a whole number from 1 to 10 (got ${describeValue(value)})`;
  ctx.addIssue({ code: 'custom', message });
  return z.NEVER;
});

/**
 * Four-eyes control. `required: above` needs `above`, the order cost (the quote's totalCost) above which an
 * envelope or people must approve. `priceTolerancePct`: how far above the parked quote's price the fresh
 * quote of an approved cycle may be, unless an approver names a maximum price.
 */
const approval = z.strictObject({
  required: z.enum(['never', 'always', 'above']),
  above: optionalMoney('positive'),
  approvers: approverCount.default(1),
  timeout: duration({ allowZero: false }).default(DEFAULT_APPROVAL_TIMEOUT_MS),
  priceTolerancePct: money('nonNegative').default(new Decimal('0.5')),
});

const common = {
  name: strategyName,
  /** Required once the deployment has several accounts (checked against the settings by the loader). */
  account: accountName.optional(),
  symbol,
  amount: money('positive'),
  timezone,
  maxPrice: optionalMoney('positive'),
  cooldown: duration({ allowZero: false }).optional(),
  budget: budget.optional(),
  guards: guards.optional(),
  approval: approval.optional(),
  missed: z.enum(['skip', 'once']).default('skip'),
  missedGrace: duration({ allowZero: false }).default(DEFAULT_MISSED_GRACE_MS),
  enabled: z.boolean().default(true),
  dryRun: z.boolean().default(false),
  note: z.string().optional(),
};

export const dcaDocument = z.strictObject({
  ...common,
  kind: z.literal('dca'),
  schedule: cronText,
});

export const thresholdDocument = z.strictObject({
  ...common,
  kind: z.literal('threshold'),
  /** How often to look at the price. */
  checkEvery: cronText,
  buyBelow: money('positive'),
});

/** `spend` or `receive`, not both (cross-checks.ts): the total a target buys. */
const targetTotal = z.strictObject({
  spend: optionalMoney('positive'),
  receive: optionalMoney('positive'),
});

const targetWindow = z.strictObject({ start: dateTimeText, end: dateTimeText });

const slice = z.strictObject({ min: money('positive'), max: money('positive') });

const opportunistic = z.strictObject({ belowAveragePct: percentage, upTo: multiplier });

/** A target sizes each slot's order itself (target.ts): it has no `amount`. */
const { amount: _sizedPerSlot, ...targetCommon } = common;

export const targetDocument = z.strictObject({
  ...targetCommon,
  kind: z.literal('target'),
  target: targetTotal,
  window: targetWindow,
  /** The slicing cadence. */
  every: cronText,
  slice,
  opportunistic: opportunistic.optional(),
});

/**
 * Used only to keep reporting problems in a document whose kind is missing or unknown: every key of
 * either kind is accepted, so the other keys still get checked.
 */
export const anyKindDocument = z.strictObject({
  ...common,
  kind: z.unknown().optional(),
  schedule: cronText.optional(),
  checkEvery: cronText.optional(),
  buyBelow: optionalMoney('positive'),
  target: targetTotal.optional(),
  window: targetWindow.optional(),
  every: cronText.optional(),
  slice: slice.optional(),
  opportunistic: opportunistic.optional(),
});

export const STRATEGY_KINDS = ['dca', 'threshold', 'target'] as const;
export type StrategyKind = (typeof STRATEGY_KINDS)[number];

/** Keys each kind accepts, for "did you mean" hints on unknown keys. */
export const KNOWN_KEYS: Record<
  StrategyKind | 'budget' | 'guards' | 'approval' | 'targetTotal' | 'window' | 'slice' | 'opportunistic',
  readonly string[]
> = {
  dca: Object.keys(dcaDocument.shape),
  threshold: Object.keys(thresholdDocument.shape),
  target: Object.keys(targetDocument.shape),
  targetTotal: Object.keys(targetTotal.shape),
  window: Object.keys(targetWindow.shape),
  slice: Object.keys(slice.shape),
  opportunistic: Object.keys(opportunistic.shape),
  budget: Object.keys(budget.shape),
  guards: Object.keys(guards.shape),
  approval: Object.keys(approval.shape),
};

export type DcaDocument = z.output<typeof dcaDocument>;
export type ThresholdDocument = z.output<typeof thresholdDocument>;
export type TargetDocument = z.output<typeof targetDocument>;
export type StrategyDocument = DcaDocument | ThresholdDocument | TargetDocument;
