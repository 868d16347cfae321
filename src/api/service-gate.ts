/**
 * What this replica may send to the service, shared by all its clients: an optional pace of its own
 * (`TREASURY_API_RATE_LIMIT`, requests per second) and the pause the service asks for with a 429 and
 * `Retry-After`. A request waits at the gate, but never past its caller's deadline: a quote's window rules.
 */
import { ApiUnavailableError } from './errors.js';

export interface ServiceGateOptions {
  /** Requests per second this replica sends at most; undefined: no pace of its own. */
  ratePerSecond?: number;
  /** Told of every pause the service asks for (metrics, logs). */
  onPause?: (pause: { operation: string; ms: number }) => void;
  now?: () => number;
}

export interface ServiceGate {
  /** Resolves when the request may leave; rejects (API_UNAVAILABLE) if the signal aborts first. */
  admit(operation: string, signal?: AbortSignal): Promise<void>;
  /** No new request leaves before `ms` from now. */
  pause(operation: string, ms: number): void;
}

export function createServiceGate(options: ServiceGateOptions = {}): ServiceGate {
  const now = options.now ?? Date.now;
  const interval = options.ratePerSecond ? 1000 / options.ratePerSecond : 0;
  let pausedUntil = 0;
  /** The earliest moment the next request may leave under the pace (a schedule, one slot per request). */
  let nextSlot = 0;

  return {
    async admit(operation, signal) {
      const at = now();
      // Slots are handed out in order, one interval apart: a burst is spread at the pace, and idle time is
      // not banked (a slot is never earlier than now).
      const slot = Math.max(at, pausedUntil, nextSlot);
      if (interval > 0) nextSlot = slot + interval;
      const waitMs = slot - at;
      if (waitMs <= 0) return;
      await waitUnlessAborted(waitMs, operation, signal);
    },
    pause(operation, ms) {
      const until = now() + ms;
      if (until <= pausedUntil) return;
      pausedUntil = until;
      options.onPause?.({ operation, ms });
    },
  };
}

function waitUnlessAborted(ms: number, operation: string, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const fail = () => {
      clearTimeout(timer);
      reject(
        new ApiUnavailableError(
          `${operation}: the caller's deadline passed while waiting for the service's rate limit`,
          {
            operation,
            cause: signal?.reason,
          },
        ),
      );
    };
    if (signal?.aborted) return fail();
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', fail);
      resolve();
    }, ms);
    signal?.addEventListener('abort', fail, { once: true });
  });
}
