import type { OidcSettings } from '../config/schema.js';
import type { ConsoleSession, ConsoleStore, Database } from '../db/index.js';
import type { AccountLink } from '../engine/index.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { ProcessFacts } from '../observability/process-facts.js';

/** What every page and action of the console works with. */
export interface ConsoleContext {
  database: Database;
  store: ConsoleStore;
  clock: () => Date;
  logger: Pick<Logger, 'error' | 'warn' | 'info'>;
  /**
   * Each account's purchase service, for adopting an order (read from its account's service before it is
   * recorded) and the reconciliation report. Empty where nothing real can be read: `console` without
   * TREASURY_API_URL.
   */
  accounts: ReadonlyMap<string, AccountLink>;
  /**
   * Host names the console answers to besides loopback's (TREASURY_CONSOLE_URL's, the ops address's): any
   * other Host header is refused, so that a page of a rebound DNS name cannot read the console.
   */
  hosts?: readonly string[];
  /** The report routes (/api/reports/*) in the console's scope, days and months in reports.timezone. */
  reports?: { timeZone: string };
  /** console.requireTotp: a password alone never opens a session; a person without a second factor enrols. */
  requireTotp?: boolean;
  /** Single sign-on through the company's OpenID provider (`console.oidc`); absent: local passwords only. */
  oidc?: OidcSettings;
  /** false: no local passwords, single sign-on only (`console.localLogin`); absent: true. */
  localLogin?: boolean;
  /** Where refused logins are counted (the worker's registry in `run`). */
  metrics?: Pick<Metrics, 'consoleLoginsRefused'>;
  /** The worker's own metrics and their recent history, where the console runs in the worker (`run`). */
  processFacts?: ProcessFacts;
}

/** A page's request as the handlers see it: the checked session and the query string. */
export interface PageRequest {
  session: ConsoleSession;
  query: Record<string, string | undefined>;
}
