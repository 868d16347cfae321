/**
 * The one backoff of the project: how long to wait before trying again after failures, for the client's
 * retries of safe requests, for tracking an order the service cannot answer for, for notification
 * deliveries and for a worker waiting at start for its database.
 */
export interface BackoffSettings {
  /** Ceiling of the first wait; it doubles per attempt. */
  baseMs: number;
  maxMs: number;
}

/**
 * The wait before attempt `attempt + 1` (1 = after the first failure): exponential, capped, with "equal
 * jitter": half the window is fixed, half random, so replicas that failed together spread out, yet no
 * attempt comes back immediately. `random` is injectable for tests.
 */
export function backoffDelayMs(attempt: number, settings: BackoffSettings, random = Math.random): number {
  const doublings = Math.min(Math.max(attempt, 1) - 1, 30);
  const window = Math.min(settings.maxMs, settings.baseMs * 2 ** doublings);
  return Math.round(window / 2 + random() * (window / 2));
}
