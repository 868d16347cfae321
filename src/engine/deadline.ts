/**
 * The worker's own deadline for a quote. The service's `expiresIn` is not trusted (its unit is not even
 * documented): a quote counts from the moment the request for it left, which is earlier than the moment the
 * service issued it, so the deadline errs on the safe side. The margin covers clock skew and the time the
 * order request needs to arrive.
 */

export interface DeadlineSettings {
  quoteWindowMs: number;
  deadlineMarginMs: number;
}

export interface QuoteDeadline {
  requestedAt: Date;
  deadlineAt: Date;
  /** Aborts the quote request when the deadline passes: a late answer is useless. */
  signal: AbortSignal;
  hasPassed(now: Date): boolean;
}

export function startQuoteDeadline(requestedAt: Date, settings: DeadlineSettings): QuoteDeadline {
  const budgetMs = Math.max(0, settings.quoteWindowMs - settings.deadlineMarginMs);
  const deadlineAt = new Date(requestedAt.getTime() + budgetMs);
  return {
    requestedAt,
    deadlineAt,
    signal: AbortSignal.timeout(Math.max(1, budgetMs)),
    hasPassed: (now) => now.getTime() >= deadlineAt.getTime(),
  };
}
