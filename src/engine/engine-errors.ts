/**
 * Errors the engine raises itself, and the engine's database calls. A database failure is wrapped once, at
 * the call, so that every cycle records the same code for it and the outage shows in the metric; the
 * driver's error stays as `cause`. A failure the classifier cannot attribute to the database is a bug: it
 * passes on unchanged (its code, INTERNAL for an unclassified error) and counts as one.
 */
import { withinDatabaseTimeout } from '../db/index.js';
import { messageOf, TreasuryError } from '../errors.js';
import { countDatabaseFailure, type DatabaseFailureMetrics } from '../observability/metrics.js';

export type EngineErrorCode = 'DB_UNAVAILABLE' | 'DB_TIMEOUT' | 'DB_ERROR' | 'STATE_CONFLICT';

export class EngineError extends TreasuryError {
  override readonly name = 'EngineError';
  constructor(
    readonly code: EngineErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * Runs one database operation; a failure becomes DB_UNAVAILABLE (unreachable or lost) or DB_ERROR (the
 * server refused the statement), counted in treasury_database_errors_total, or DB_TIMEOUT (cut by the time
 * limit: its outcome is unknown, and the caller reads back what is recorded), counted in
 * treasury_database_timeouts_total; anything else is a bug, counted in treasury_internal_errors_total and
 * thrown as it was.
 */
export async function withDatabase<T>(
  context: DatabaseCallContext,
  operation: string,
  work: () => Promise<T>,
  timeoutMs: number = context.settings.databaseTimeoutMs,
): Promise<T> {
  try {
    // A statement that lands after the timeout is harmless here: every move is a compare-and-set, the cycle
    // reads its row back (cycle.ts, cycle-record.ts), and recovery settles what was left half-way.
    return await withinDatabaseTimeout(work, timeoutMs);
  } catch (error) {
    const failure = countDatabaseFailure(context.metrics, operation, error);
    if (failure === 'INTERNAL') throw error;
    throw new EngineError(failure, `database operation ${operation} failed: ${messageOf(rootCause(error))}`, {
      cause: error,
    });
  }
}

export interface DatabaseCallContext {
  metrics: DatabaseFailureMetrics;
  settings: { databaseTimeoutMs: number };
}

function rootCause(error: unknown): unknown {
  let current = error;
  for (let depth = 0; depth < 5 && current instanceof Error && current.cause !== undefined; depth++) {
    current = current.cause;
  }
  return current;
}
