import { DatabaseError } from './errors.js';

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
