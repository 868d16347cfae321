/**
 * The worker's own deadline for a quote. The service's `expiresIn` is not trusted (its unit is not even
 * documented): a quote counts from the moment the request for it left, which is earlier than the moment the
 * service issued it, so the deadline errs on the safe side. The margin covers clock skew and the time the
 * order request needs to arrive.
 */
import { startTimeLimit } from '../runtime/time-limit.js';

export interface DeadlineSettings {
  quoteWindowMs: number;
  deadlineMarginMs: number;
}

export interface QuoteDeadline {
  requestedAt: Date;
  deadlineAt: Date;
  /** Aborts the quote request when the deadline passes: a late answer is useless. */
  signal: AbortSignal;
  /** The quote request is over: its signal's timer is cleared. */
  release(): void;
  hasPassed(now: Date): boolean;
}

export function startQuoteDeadline(requestedAt: Date, settings: DeadlineSettings): QuoteDeadline {
  const budgetMs = Math.max(0, settings.quoteWindowMs - settings.deadlineMarginMs);
  const deadlineAt = new Date(requestedAt.getTime() + budgetMs);
  const limit = startTimeLimit(budgetMs);
  return {
    requestedAt,
    deadlineAt,
    signal: limit.signal,
    release: limit.release,
    hasPassed: (now) => now.getTime() >= deadlineAt.getTime(),
  };
}
