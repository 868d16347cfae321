import type { Metrics } from './metrics.js';

/**
 * Runs one database call of a background component (tracking) and counts its failure in
 * treasury_database_errors_total before passing it on unchanged: an outage must show in that series even
 * while no cycle is due (the engine counts its own calls in withDatabase, with its error codes).
 */
export async function countDatabaseErrors<T>(
  metrics: Pick<Metrics, 'databaseErrors'>,
  operation: string,
  work: () => Promise<T>,
): Promise<T> {
  try {
    return await work();
  } catch (error) {
    metrics.databaseErrors.inc({ operation });
    throw error;
  }
}
