import type { EngineContext } from './context.js';
import type { CycleFacts, CycleReport } from './outcomes.js';

/**
 * The one log line and the metrics of a finished cycle. A slot another replica claimed is not our cycle:
 * it is logged at debug and counted nowhere, or every replica would count every slot.
 */
export function announceCycle(
  context: EngineContext,
  report: CycleReport,
  facts: CycleFacts,
  error?: unknown,
): CycleReport {
  const { logger, metrics } = context;
  const line = {
    ...report,
    trigger: facts.trigger,
    cycleId: facts.cycleId,
    errorCode: facts.errorCode,
    quotes: facts.quotes,
    quoteMs: rounded(facts.quoteMs),
    quoteToOrderMs: rounded(facts.quoteToOrderMs),
    cycleMs: rounded(facts.cycleMs),
    ...(error === undefined ? {} : { err: error }),
  };
  if (report.reason === 'slot_already_claimed') {
    logger.debug(line, 'slot already claimed');
    return report;
  }
  if (report.outcome === 'unsure')
    logger.error(line, 'cycle unsure: the order may exist; reconciliation will tell');
  else if (report.outcome === 'failed') logger.warn(line, 'cycle failed');
  else logger.info(line, `cycle ${report.outcome}`);

  metrics.cycles.inc({ strategy: report.strategy, outcome: report.outcome, reason: report.reason });
  metrics.cycleDuration.observe({ outcome: report.outcome }, facts.cycleMs / 1000);
  if (facts.successful) metrics.lastSuccessfulCycle.set({ strategy: report.strategy }, Date.now() / 1000);
  return report;
}

function rounded(ms: number | null): number | null {
  return ms === null ? null : Math.round(ms * 10) / 10;
}
