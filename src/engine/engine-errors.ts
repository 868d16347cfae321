/**
 * Errors the engine raises itself. Database failures are wrapped once, at the call, so that every cycle
 * records the same code for them and the outage shows in the metric; the driver's error stays as `cause`.
 */
import { isPurchaseApiError } from '../api/index.js';
import { DatabaseError, sqlStateOf, withinDatabaseTimeout } from '../db/index.js';
import type { Metrics } from '../observability/metrics.js';

export type EngineErrorCode = 'DB_UNAVAILABLE' | 'DB_ERROR' | 'STATE_CONFLICT';

export class EngineError extends Error {
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
 * Runs one database operation; any failure counts in treasury_database_errors_total and becomes
 * DB_UNAVAILABLE (the connection failed: no SQLSTATE, or a connection-class one) or DB_ERROR (the server
 * refused the statement).
 */
export async function withDatabase<T>(
  context: DatabaseCallContext,
  operation: string,
  work: () => Promise<T>,
  timeoutMs: number = context.settings.databaseTimeoutMs,
): Promise<T> {
  try {
    // A statement that lands after the timeout is harmless here: every move is a compare-and-set and
    // recovery settles what was left half-way.
    return await withinDatabaseTimeout(work, timeoutMs);
  } catch (error) {
    // A refused state move is a bug in the caller, not an outage: keep its own code.
    if (error instanceof DatabaseError && error.code === 'ILLEGAL_TRANSITION') throw error;
    context.metrics.databaseErrors.inc({ operation });
    const code = isConnectionFailure(error) ? 'DB_UNAVAILABLE' : 'DB_ERROR';
    throw new EngineError(code, `database operation ${operation} failed: ${messageOf(rootCause(error))}`, {
      cause: error,
    });
  }
}

export interface DatabaseCallContext {
  metrics: Metrics;
  settings: { databaseTimeoutMs: number };
}

/** SQLSTATE classes of a lost or refused connection: 08 connection exception, 57P admin shutdown, 53 resources. */
function isConnectionFailure(error: unknown): boolean {
  const state = sqlStateOf(error);
  return state === undefined || /^(08|57P|53)/.test(state);
}

function rootCause(error: unknown): unknown {
  let current = error;
  for (let depth = 0; depth < 5 && current instanceof Error && current.cause !== undefined; depth++) {
    current = current.cause;
  }
  return current;
}

/** The stable code of any error the engine may meet, for the cycle record and the log line. */
export function errorCodeOf(error: unknown): string {
  if (isPurchaseApiError(error)) return error.code;
  if (error instanceof EngineError || error instanceof DatabaseError) return error.code;
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : 'INTERNAL_ERROR';
}

export function messageOf(error: unknown): string {
  if (error instanceof Error) {
    const cause = error.cause instanceof Error && error.message === '' ? error.cause.message : '';
    return (error.message || cause || error.name).slice(0, 500);
  }
  return String(error).slice(0, 500);
}
