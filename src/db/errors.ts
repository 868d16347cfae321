/**
 * Errors of the persistence layer, each with a stable `code` the engine can branch on and log. Connection
 * strings are never part of a message: they may carry a password.
 */

export type DatabaseErrorCode = 'DB_UNAVAILABLE' | 'DB_MIGRATION_FAILED' | 'ILLEGAL_TRANSITION';

export class DatabaseError extends Error {
  override readonly name: string = 'DatabaseError';
  constructor(
    readonly code: DatabaseErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** A programming error: the caller asked for a move the cycle state machine does not allow. */
export class IllegalTransitionError extends DatabaseError {
  override readonly name = 'IllegalTransitionError';
  constructor(
    readonly from: string,
    readonly to: string,
  ) {
    super('ILLEGAL_TRANSITION', `cycle state cannot move from '${from}' to '${to}'`);
  }
}

/** The SQLSTATE of a server's error response in the chain (drizzle wraps the driver's error as `cause`). */
export function sqlStateOf(error: unknown): string | undefined {
  for (let current = error, depth = 0; current && depth < 5; depth++) {
    const { code, severity } = current as { code?: unknown; severity?: unknown };
    if (typeof code === 'string' && typeof severity === 'string') return code;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}
