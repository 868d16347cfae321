/**
 * What this replica may send to the service, shared by all its clients: its pace (requests per second) and
 * the pause the service asks for with a 429 and `Retry-After`. A request waits at the gate, but never past
 * its caller's deadline: a quote's window rules.
 *
 * The pace is learnt from the service's 429s, as TCP learns a connection's rate (additive increase,
 * multiplicative decrease), so that a replica needs no one to know the service's limit:
 * - before any 429, without `TREASURY_API_RATE_LIMIT`, there is no pace: requests leave at once;
 * - a 429 cuts the pace to DECREASE times the rate the service accepted in the last second (the requests it
 *   answered otherwise), or, when none came back yet, the rate sent. Once a second at most: the 429s of
 *   requests already on their way say nothing new;
 * - every INCREASE_EVERY_MS during which requests queued for the pace add one request a second: idle time
 *   earns nothing, so a quiet hour does not unlearn the limit. Slow on purpose: each probe past the limit
 *   costs a refused request (an order refused costs its quote) and a pause of every request;
 * - never above `TREASURY_API_RATE_LIMIT` when it is set, which is also where the pace starts.
 */
import { ApiUnavailableError } from './errors.js';

export interface ServiceGateOptions {
  /** Requests per second this replica sends at most (TREASURY_API_RATE_LIMIT); undefined: no cap of its own. */
  ratePerSecond?: number;
  /** Told of every pause the service asks for (metrics, logs). */
  onPause?: (pause: { operation: string; ms: number }) => void;
  /** Told when the pace changes, in requests per second (metrics, the replica's heartbeat). */
  onPace?: (ratePerSecond: number) => void;
  now?: () => number;
}

export interface ServiceGate {
  /** Resolves when the request may leave; rejects (API_UNAVAILABLE) if the signal aborts first. */
  admit(operation: string, signal?: AbortSignal): Promise<void>;
  /** The service answered a request with anything but a 429: it accepted that much. */
  answered(): void;
  /** A 429: no new request leaves before `ms` from now, and the pace is cut. */
  pause(operation: string, ms: number): void;
  /** The pace in force, in requests per second; undefined while there is none. */
  pace(): number | undefined;
}

/** The multiplicative decrease: a 429 leaves this share of the rate the service accepted. */
const DECREASE = 0.8;
/** The additive increase: one request per second more after this long with requests queued for the pace. */
const INCREASE_EVERY_MS = 5_000;
/** Never slower than this: one request a second still lets a quote and its order through. */
const SLOWEST = 1;
const SECOND = 1_000;

export function createServiceGate(options: ServiceGateOptions = {}): ServiceGate {
  const now = options.now ?? Date.now;
  const cap = options.ratePerSecond;
  let pace = cap;
  let pausedUntil = 0;
  /** The earliest moment the next request may leave under the pace (a schedule, one slot per request). */
  let nextSlot = 0;
  /** When the pace last changed: it changes at most once a second. */
  let changedAt = Number.NEGATIVE_INFINITY;
  /** When requests left and were answered, within the last second: the rates sent and accepted. */
  const sent: number[] = [];
  const accepted: number[] = [];

  const lastSecond = (times: number[], at: number) => {
    while (times.length > 0 && times[0]! <= at - SECOND) times.shift();
    return times.length;
  };
  const setPace = (value: number, at: number) => {
    // In tenths: a pace is shown (metric, status) and 3.2000000000000006 requests a second says nothing more.
    const rounded = Math.round(value * 10) / 10;
    const next = Math.max(SLOWEST, cap === undefined ? rounded : Math.min(cap, rounded));
    changedAt = at;
    if (next === pace) return;
    pace = next;
    options.onPace?.(next);
  };

  return {
    async admit(operation, signal) {
      const at = now();
      // Slots are handed out in order, one interval apart: a burst is spread at the pace, and idle time is
      // not banked (a slot is never earlier than now).
      let slot = Math.max(at, pausedUntil, nextSlot);
      if (pace !== undefined && slot > at && at - changedAt >= INCREASE_EVERY_MS) {
        setPace(pace + 1, at);
        slot = Math.max(at, pausedUntil, nextSlot);
      }
      if (pace !== undefined) nextSlot = slot + SECOND / pace;
      lastSecond(sent, at);
      sent.push(slot);
      const waitMs = slot - at;
      if (waitMs <= 0) return;
      await waitUnlessAborted(waitMs, operation, signal);
    },
    answered() {
      const at = now();
      lastSecond(accepted, at);
      accepted.push(at);
    },
    pause(operation, ms) {
      const at = now();
      if (at - changedAt >= SECOND) {
        const acceptedRate = lastSecond(accepted, at);
        const base = Math.min(pace ?? Number.POSITIVE_INFINITY, acceptedRate || lastSecond(sent, at));
        setPace(base * DECREASE, at);
      }
      const until = at + ms;
      if (until <= pausedUntil) return;
      pausedUntil = until;
      options.onPause?.({ operation, ms });
    },
    pace: () => pace,
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
