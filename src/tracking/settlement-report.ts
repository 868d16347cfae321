import type { OrderRecord, SettlementSource, TrackingApplied } from '../db/index.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { classifyApplied, describeChange, type SettlementOutcome } from './transitions.js';

export interface ReportDeps {
  logger: Logger;
  metrics: Metrics;
}

/**
 * Tells operators about one applied tracking report: one log line per settlement change or update (the
 * audit trail an operator greps for an order), a warning per anomaly, and the settlement series.
 */
export function reportApplied(
  deps: ReportDeps,
  before: OrderRecord,
  applied: TrackingApplied,
  source: SettlementSource,
): SettlementOutcome {
  const outcome = classifyApplied(applied.event);
  if (outcome.kind === 'unchanged') return outcome;
  const line = describeChange(applied.order, outcome.event, source);
  if (outcome.kind === 'anomaly') {
    deps.metrics.settlementAnomalies.inc();
    deps.logger.warn(
      { ...line, anomaly: outcome.anomaly, kept: applied.order.status },
      'settlement anomaly: report recorded, not applied',
    );
    return outcome;
  }
  // Same status with new details (amounts received so far, the withdrawal's progress) reads differently
  // from a step, so an operator counting steps in the log does not count these.
  deps.logger.info(line, outcome.kind === 'advanced' ? 'settlement changed' : 'settlement details updated');
  if (outcome.kind === 'advanced') {
    deps.metrics.settlementChanges.inc({ status: outcome.event.toStatus, source });
    if (applied.order.settledAt !== null && before.settledAt === null) {
      const seconds = (applied.order.settledAt.getTime() - applied.order.createdAt.getTime()) / 1000;
      deps.metrics.settlementDuration.observe(Math.max(0, seconds));
    }
  }
  return outcome;
}
