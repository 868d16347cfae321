/**
 * The worker's one error taxonomy. Every error it raises itself is a TreasuryError with a stable `code`
 * that is persisted, logged and branched on (the purchase service's API_* codes, DB_UNAVAILABLE, DB_ERROR,
 * DB_TIMEOUT, STATE_CONFLICT, …); a vendor's error is converted where it enters and kept as `cause`. An
 * error that is none of these is a bug in our code and is reported as INTERNAL, never as an outage.
 */
export abstract class TreasuryError extends Error {
  abstract readonly code: string;
}

/** The code of an error that no layer classified: a programming error, counted in treasury_internal_errors_total. */
export const INTERNAL = 'INTERNAL';

/** The stable code of any error, for the cycle record and the log line. */
export function errorCodeOf(error: unknown): string {
  return error instanceof TreasuryError ? error.code : INTERNAL;
}

export function messageOf(error: unknown): string {
  if (error instanceof Error) {
    const cause = error.cause instanceof Error && error.message === '' ? error.cause.message : '';
    return (error.message || cause || error.name).slice(0, 500);
  }
  return String(error).slice(0, 500);
}
