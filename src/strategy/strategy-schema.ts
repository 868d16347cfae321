import { z } from 'zod';
import {
  cronText,
  duration,
  money,
  optionalMoney,
  percentage,
  strategyName,
  symbol,
  timezone,
} from './field-schemas.js';

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

const common = {
  name: strategyName,
  symbol,
  amount: money('positive'),
  timezone,
  maxPrice: optionalMoney('positive'),
  cooldown: duration({ allowZero: false }).optional(),
  budget: budget.optional(),
  guards: guards.optional(),
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
});

export const STRATEGY_KINDS = ['dca', 'threshold'] as const;
export type StrategyKind = (typeof STRATEGY_KINDS)[number];

/** Keys each kind accepts, for "did you mean" hints on unknown keys. */
export const KNOWN_KEYS: Record<StrategyKind | 'budget' | 'guards', readonly string[]> = {
  dca: Object.keys(dcaDocument.shape),
  threshold: Object.keys(thresholdDocument.shape),
  budget: Object.keys(budget.shape),
  guards: Object.keys(guards.shape),
};

export type DcaDocument = z.output<typeof dcaDocument>;
export type ThresholdDocument = z.output<typeof thresholdDocument>;
