import type { RequestEvent } from '../api/index.js';
import type { Metrics } from '../observability/metrics.js';

/**
 * Connects the client's observer hook to the request metrics, and remembers when the service last
 * answered at all (any HTTP status), for readiness.
 */
export function createApiObserver(metrics: Metrics, clock: () => Date = () => new Date()) {
  let lastAnswerAt: Date | undefined;
  return {
    onRequest(event: RequestEvent): void {
      const status = event.status === undefined ? 'none' : String(event.status);
      metrics.apiRequestDuration.observe({ operation: event.operation, status }, event.durationMs / 1000);
      if (event.errorCode !== undefined)
        metrics.apiErrors.inc({ operation: event.operation, code: event.errorCode });
      if (event.status !== undefined) lastAnswerAt = clock();
    },
    lastAnswerAt: (): Date | undefined => lastAnswerAt,
  };
}

export type ApiObserver = ReturnType<typeof createApiObserver>;
