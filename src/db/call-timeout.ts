/**
 * A client-side bound on one database call. A database that accepted a connection and then went silent
 * (a half-open TCP connection, a failover, a statement stuck behind a lock) makes the driver wait without
 * end; the engine's cycles and tracking's background work give up instead, so that neither a slot nor a
 * worker's stop waits on it forever. The statement itself is not cancelled and may still land later, so a
 * caller uses this only where a late write is harmless (compare-and-set moves, idempotent upserts), and
 * treats the outcome as unknown (DB_TIMEOUT, never DB_UNAVAILABLE: db/errors.ts): it reads back what is
 * recorded and goes on from there.
 */
import { TreasuryError } from '../errors.js';

export class DatabaseTimeoutError extends TreasuryError {
  override readonly name = 'DatabaseTimeoutError';
  readonly code = 'DB_TIMEOUT';
}

export async function withinDatabaseTimeout<T>(work: () => Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(
      () => reject(new DatabaseTimeoutError(`no answer within ${timeoutMs} ms`)),
      Math.max(1, timeoutMs),
    );
  });
  try {
    return await Promise.race([work(), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
