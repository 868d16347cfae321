import type { RequestEvent, ServiceGateOptions } from '../api/index.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';

/**
 * Connects each account's client observer hook to the request metrics (labelled with the account), and
 * remembers when each account's service last answered at all (any HTTP status), for readiness.
 */
export function createApiObserver(metrics: Metrics, clock: () => Date = () => new Date()) {
  const lastAnswers = new Map<string, Date>();
  return {
    forAccount(account: string): (event: RequestEvent) => void {
      return (event) => {
        const { operation } = event;
        const status = event.status === undefined ? 'none' : String(event.status);
        metrics.apiRequestDuration.observe({ account, operation, status }, event.durationMs / 1000);
        if (event.errorCode !== undefined)
          metrics.apiErrors.inc({ account, operation, code: event.errorCode });
        if (event.status !== undefined) lastAnswers.set(account, clock());
      };
    },
    lastAnswerAt: (account: string): Date | undefined => lastAnswers.get(account),
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
  account: string,
): Required<Pick<ServiceGateOptions, 'onPause' | 'onPace'>> {
  return {
    onPause: ({ operation, ms }) => {
      metrics.apiRateLimited.inc({ account, operation });
      logger.warn(
        { account, operation, pauseMs: ms },
        'the service asked to slow down (429): requests paused',
      );
    },
    onPace: (ratePerSecond) => {
      metrics.apiPace.set({ account }, ratePerSecond);
      logger.info({ account, ratePerSecond }, 'pace of requests to the service changed');
    },
  };
}
