import type { RequestEvent, ServiceGateOptions } from '../api/index.js';
import type { Logger } from '../observability/logger.js';
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

/**
 * What the replica's gate tells: each pause a 429 asks for (counted, logged) and each change of the pace it
 * learns (the gauge; the heartbeat reads the gate itself).
 */
export function observeGate(
  metrics: Metrics,
  logger: Logger,
): Required<Pick<ServiceGateOptions, 'onPause' | 'onPace'>> {
  return {
    onPause: ({ operation, ms }) => {
      metrics.apiRateLimited.inc({ operation });
      logger.warn({ operation, pauseMs: ms }, 'the service asked to slow down (429): requests paused');
    },
    onPace: (ratePerSecond) => {
      metrics.apiPace.set(ratePerSecond);
      logger.info({ ratePerSecond }, 'pace of requests to the service changed');
    },
  };
}
