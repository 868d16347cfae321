/**
 * How far a quote's figures may stray before the worker refuses it (`engine.quoteChecks`): the
 * tolerances the pure quote-sanity rule takes as an argument. The defaults are the rule's own, so a worker
 * without settings decides as the rule's tests describe. Values are decimal text like all money here: a
 * YAML number such as 0.1 has already become a binary approximation by the time it is read.
 */
import { z } from 'zod';
import { Decimal } from '../money.js';
import { DEFAULT_QUOTE_TOLERANCES } from '../strategy/index.js';

const nonNegativeDecimal = z
  .string({ error: 'expected decimal text in quotes, such as "0.5"' })
  .regex(/^\d+(\.\d+)?$/, { error: 'expected decimal text of zero or more, such as "0.5"' })
  .transform((text) => new Decimal(text));

export const quoteChecksSchema = z.strictObject({
  /** |totalCost − price × totalFilled| may be up to this percent of totalCost ... */
  costMismatchPct: nonNegativeDecimal.default(DEFAULT_QUOTE_TOLERANCES.costMismatchPct),
  /** ... or up to this fiat amount, whichever is larger (the service rounds totalCost to cents). */
  costMismatchAbsolute: nonNegativeDecimal.default(DEFAULT_QUOTE_TOLERANCES.costMismatchAbsolute),
  /** totalCost may exceed the strategy's amount by at most this percent: the service's fees. */
  feeAllowancePct: nonNegativeDecimal.default(DEFAULT_QUOTE_TOLERANCES.feeAllowancePct),
});
