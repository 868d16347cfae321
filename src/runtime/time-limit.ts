/**
 * The one way a call gets a time limit as an AbortSignal: the engine's balance, quote and order requests,
 * the readiness probe, notification deliveries. Unlike AbortSignal.timeout, its timer is cleared as soon
 * as the call is over: AbortSignal.timeout's cannot be, so every call of every cycle left one behind that
 * fired seconds later and built a DOMException with its stack (bench/README.md, 26 November 2026, second
 * session).
 */
export interface TimeLimit {
  /** Aborts with a TimeoutError when the limit passes, or with the parent's reason when it aborts first. */
  signal: AbortSignal;
  /** The call is over: clears the timer and lets go of the parent. */
  release(): void;
}

export function startTimeLimit(ms: number, parent?: AbortSignal): TimeLimit {
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')),
    Math.max(1, ms),
  );
  const onParentAbort = () => controller.abort(parent?.reason);
  if (parent?.aborted) onParentAbort();
  else parent?.addEventListener('abort', onParentAbort, { once: true });
  return {
    signal: controller.signal,
    release() {
      clearTimeout(timer);
      parent?.removeEventListener('abort', onParentAbort);
    },
  };
}

/** Runs `call` under a time limit of `ms`, released when it settles. */
export async function withTimeLimit<T>(
  ms: number,
  call: (signal: AbortSignal) => Promise<T>,
  parent?: AbortSignal,
): Promise<T> {
  const limit = startTimeLimit(ms, parent);
  try {
    return await call(limit.signal);
  } finally {
    limit.release();
  }
}
