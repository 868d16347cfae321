/**
 * One logical call: send, read, retry safe requests on transient failures, and report every attempt to
 * the optional observer. Which requests are safe is decided by the operation (`safe`), which failures are
 * transient by the retry policy table.
 */
import type { z } from 'zod';
import { backoffDelayMs } from '../runtime/backoff.js';
import { readAnswer } from './answers.js';
import {
  ApiRateLimitedError,
  ApiUnavailableError,
  isPurchaseApiError,
  type PurchaseApiError,
} from './errors.js';
import { type RetrySettings, shouldRetry } from './retry-policy.js';
import { scrubErrorChain } from './secret-scrub.js';
import type { ServiceGate } from './service-gate.js';
import type { Transport, WireRequest } from './transport.js';

/** What the observer hook receives after each attempt; enough for request metrics, nothing secret. */
export interface RequestEvent {
  operation: string;
  method: 'GET' | 'POST';
  /** HTTP status when the service answered. */
  status?: number;
  durationMs: number;
  errorCode?: string;
  /** 1 for the first try. */
  attempt: number;
}

export type RequestObserver = (event: RequestEvent) => void;

export interface ExchangeContext {
  transport: Transport;
  token: string;
  retry: RetrySettings;
  onRequest?: RequestObserver | undefined;
  random: () => number;
  sleep: (ms: number) => Promise<void>;
  /** The replica's pace and the service's pauses; absent: requests leave at once. */
  gate?: ServiceGate | undefined;
}

export interface CallSpec extends WireRequest {
  /** A safe request changes nothing at the service and may be repeated. */
  safe: boolean;
}

export async function exchange<T>(
  context: ExchangeContext,
  spec: CallSpec,
  schema: z.ZodType<T>,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    if (spec.signal?.aborted) {
      // Checked before every attempt, so an expired deadline never sends (and never re-sends) anything.
      throw new ApiUnavailableError(`${spec.operation}: aborted at the caller's deadline before sending`, {
        operation: spec.operation,
        cause: spec.signal.reason,
      });
    }
    await context.gate?.admit(spec.operation, spec.signal);
    const started = performance.now();
    let status: number | undefined;
    try {
      const answer = await context.transport.send(spec);
      status = answer.status;
      // What the service accepts is what it answers otherwise than with a 429: the gate learns its pace.
      if (status !== 429) context.gate?.answered();
      const value = readAnswer(answer, schema, {
        request: spec,
        format: context.transport.format,
        token: context.token,
      });
      report(context, spec, attempt, started, status);
      return value;
    } catch (error) {
      if (!isPurchaseApiError(error)) throw error;
      scrubErrorChain(error, context.token);
      report(context, spec, attempt, started, status ?? error.status, error);
      // The service asked for a pause: every request of this replica waits it out, not only this one.
      if (error instanceof ApiRateLimitedError) {
        context.gate?.pause(spec.operation, error.retryAfterMs ?? retryDelayMs(context, attempt));
        if (
          spec.safe &&
          !spec.signal?.aborted &&
          context.gate &&
          shouldRetry(error.code, attempt, context.retry)
        )
          continue;
      }
      if (!spec.safe || spec.signal?.aborted || !shouldRetry(error.code, attempt, context.retry)) throw error;
      await context.sleep(retryDelayMs(context, attempt));
    }
  }
}

function retryDelayMs({ retry, random }: ExchangeContext, attempt: number): number {
  return backoffDelayMs(attempt, { baseMs: retry.baseDelayMs, maxMs: retry.maxDelayMs }, random);
}

function report(
  context: ExchangeContext,
  spec: CallSpec,
  attempt: number,
  started: number,
  status: number | undefined,
  error?: PurchaseApiError,
): void {
  if (!context.onRequest) return;
  const event: RequestEvent = {
    operation: spec.operation,
    method: spec.method,
    durationMs: performance.now() - started,
    attempt,
  };
  if (status !== undefined) event.status = status;
  if (error) event.errorCode = error.code;
  try {
    context.onRequest(event);
  } catch {
    // A faulty metrics hook must not turn a successful order into a failure.
  }
}
