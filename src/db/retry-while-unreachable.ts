import { setTimeout as sleep } from 'node:timers/promises';
import { type BackoffSettings, backoffDelayMs } from '../runtime/backoff.js';
import { isConnectionLoss } from './errors.js';

export interface StartupWait {
  /** Keep trying this long while the database is unreachable or drops the session (0: fail at once). */
  waitMs: number;
  /** Stops the waiting (a stop signal during start): the last error is thrown at once. */
  signal?: AbortSignal;
  /** Told about each failed attempt before the next one. */
  onRetry?: (error: unknown, attempt: number, delayMs: number) => void;
}

/** A database coming back from a restart or failover is usually reachable within seconds. */
const STARTUP_BACKOFF: BackoffSettings = { baseMs: 250, maxMs: 5_000 };

/**
 * Runs `work` again, with backoff, while it fails because the database is out of reach: a worker started
 * during a deploy or a failover waits for its database instead of exiting. Any other failure, or running
 * out of `waitMs`, throws the last error.
 */
export async function retryWhileUnreachable<T>(work: () => Promise<T>, wait: StartupWait): Promise<T> {
  const giveUpAt = Date.now() + wait.waitMs;
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      const delayMs = backoffDelayMs(attempt, STARTUP_BACKOFF);
      if (!isConnectionLoss(error) || Date.now() + delayMs > giveUpAt || wait.signal?.aborted) throw error;
      wait.onRetry?.(error, attempt, delayMs);
      await sleep(delayMs, undefined, { signal: wait.signal }).catch(() => {
        throw error;
      });
    }
  }
}
