import type { ConsoleSession, ConsoleStore, Database } from '../db/index.js';
import type { Logger } from '../observability/logger.js';

/** What every page and action of the console works with. */
export interface ConsoleContext {
  database: Database;
  store: ConsoleStore;
  clock: () => Date;
  logger: Pick<Logger, 'error' | 'warn' | 'info'>;
}

/** A page's request as the handlers see it: the checked session and the query string. */
export interface PageRequest {
  session: ConsoleSession;
  query: Record<string, string | undefined>;
}
