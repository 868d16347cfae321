import { withinDatabaseTimeout } from '../db/index.js';
import { countDatabaseFailure, type DatabaseFailureMetrics } from '../observability/metrics.js';

export interface DatabaseCallDeps {
  metrics: DatabaseFailureMetrics;
  /** engine.databaseTimeoutMs: the one bound on a database call, shared with the engine. */
  databaseTimeoutMs: number;
}

/**
 * One database call of tracking, bounded like the engine's: a statement the driver waits on forever would
 * otherwise hold a poll, a sweep, and with them the worker's stop. Every tracking write is a lease, a
 * reschedule, an idempotent store or a status mark, so one that lands after the timeout does no harm.
 * Failures count in treasury_database_errors_total, the timeout in treasury_database_timeouts_total (its
 * outcome is unknown: every such write is safe to repeat on the next pass), a bug in
 * treasury_internal_errors_total; they pass on unchanged.
 */
export async function callDatabase<T>(
  deps: DatabaseCallDeps,
  operation: string,
  work: () => Promise<T>,
): Promise<T> {
  try {
    return await withinDatabaseTimeout(work, deps.databaseTimeoutMs);
  } catch (error) {
    countDatabaseFailure(deps.metrics, operation, error);
    throw error;
  }
}
