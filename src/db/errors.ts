/**
 * Errors of the persistence layer, each with a stable `code` the engine can branch on and log, and the one
 * classifier of a failed database call. Connection strings are never part of a message: they may carry a
 * password.
 */
import { errorCodeOf, INTERNAL, TreasuryError } from '../errors.js';
import { DatabaseTimeoutError } from './call-timeout.js';

export type DatabaseErrorCode =
  | 'DB_UNAVAILABLE'
  | 'DB_MIGRATION_FAILED'
  /** The database lacks migrations this version needs, and the command may not apply them (not `migrate`). */
  | 'DB_SCHEMA_BEHIND'
  | 'ILLEGAL_TRANSITION';

export class DatabaseError extends TreasuryError {
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

/**
 * What a failed database call means:
 * - DB_UNAVAILABLE: the database could not be reached or the session was lost; worth waiting for;
 * - DB_TIMEOUT: we stopped waiting (our own time limit, call-timeout.ts): the statement's outcome is unknown,
 *   it may have landed or may still land, so the caller reads back what is recorded. Not an outage: a
 *   statement that waited on a lock, or one given only the rest of a quote's window, ends the same way;
 * - DB_ERROR: the server refused the statement (a SQLSTATE outside the connection classes), or a layer of
 *   ours raised a database error (a changed migration); retrying would fail the same way;
 * - INTERNAL: neither the driver nor the server said anything: the failure is a bug in our code (a
 *   TypeError in a repository, an illegal state move), and is reported as one, never as an outage.
 */
export type DatabaseFailure = 'DB_UNAVAILABLE' | 'DB_TIMEOUT' | 'DB_ERROR' | typeof INTERNAL;

export function classifyDatabaseFailure(error: unknown): DatabaseFailure {
  if (error instanceof IllegalTransitionError) return INTERNAL;
  // Also when an engine error carries it on: a read-back cut short is as unknown as the statement before it.
  if (error instanceof DatabaseTimeoutError || errorCodeOf(error) === 'DB_TIMEOUT') return 'DB_TIMEOUT';
  if (isConnectionLoss(error)) return 'DB_UNAVAILABLE';
  if (sqlStateOf(error) !== undefined || error instanceof DatabaseError) return 'DB_ERROR';
  return INTERNAL;
}

/** postgres.js codes and socket errnos of a connection that was lost or never made. */
const CONNECTION_CODES = new Set([
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * True when an error (or one of its causes) says the database could not be reached or the session was lost:
 * worth waiting for. A statement the server refused (a SQLSTATE outside the connection classes 08, 57P and 53)
 * or a changed migration is not: retrying would fail the same way.
 */
export function isConnectionLoss(error: unknown): boolean {
  for (let current = error, depth = 0; current && depth < 6; depth++) {
    if (current instanceof DatabaseError && current.code === 'DB_UNAVAILABLE') return true;
    const { code, severity, errno } = current as { code?: unknown; severity?: unknown; errno?: unknown };
    if (typeof code === 'string') {
      if (typeof severity === 'string') return /^(08|57P|53)/.test(code);
      if (CONNECTION_CODES.has(code)) return true;
    }
    if (typeof errno === 'string' && CONNECTION_CODES.has(errno)) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
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
