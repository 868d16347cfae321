import type { ApiErrorCode } from './errors.js';

/**
 * What the client retries, as data. Only requests marked `safe` in the operation table (the GETs) are
 * retried at all: `POST /client/order` could create a second order, and the webhook config POST is left to
 * the caller so a failed registration is visible rather than silently repeated.
 * Within safe requests, only transient failures are retried; a 4xx or a malformed body will not fix itself.
 */
export const RETRIED_ERROR_CODES: Readonly<Record<ApiErrorCode, boolean>> = {
  API_UNAVAILABLE: true,
  API_RATE_LIMITED: true,
  API_SERVER_ERROR: true,
  API_REJECTED: false,
  QUOTE_EXPIRED: false,
  API_UNAUTHORIZED: false,
  API_FORBIDDEN: false,
  API_NOT_FOUND: false,
  OUTCOME_UNKNOWN: false,
  API_BAD_RESPONSE: false,
  API_INVALID_ARGUMENT: false,
};

export interface RetrySettings {
  /** Total attempts including the first; 1 disables retries. */
  maxAttempts: number;
  /** Ceiling of the first backoff; doubles each attempt (src/runtime/backoff.ts). */
  baseDelayMs: number;
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetrySettings = { maxAttempts: 3, baseDelayMs: 100, maxDelayMs: 2_000 };

export function shouldRetry(code: ApiErrorCode, attempt: number, settings: RetrySettings): boolean {
  return RETRIED_ERROR_CODES[code] && attempt < settings.maxAttempts;
}
