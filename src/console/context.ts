import type { PurchaseClient } from '../api/index.js';
import type { OidcSettings } from '../config/schema.js';
import type { AccountScope, ConsoleSession, ConsoleStore, Database, Person } from '../db/index.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { ProcessFacts } from '../observability/process-facts.js';

/**
 * An account of the deployment (settings `accounts`) as the console reaches it. `client` reads its service,
 * for adopting an order (read from the service before it is recorded) and the reconciliation report; absent
 * where nothing real can be read: `console` without the account's url and token. The engine's AccountLink
 * is one.
 */
export interface ConsoleAccount {
  name: string;
  client?: PurchaseClient;
}

/** What every page and action of the console works with. */
export interface ConsoleContext {
  database: Database;
  store: ConsoleStore;
  clock: () => Date;
  logger: Pick<Logger, 'error' | 'warn' | 'info'>;
  /** Every account of the deployment, by name, in the settings' order. */
  accounts: ReadonlyMap<string, ConsoleAccount>;
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

/**
 * Who asks: the checked session, and the accounts whose rows they see and act on, made once from the person
 * (scopeOf) where the request comes in and read from here by every page, download and action.
 */
export interface ConsoleRequest {
  session: ConsoleSession;
  scope: AccountScope;
}

/** A page's request as the handlers see it: who asks, and the query string. */
export interface PageRequest extends ConsoleRequest {
  query: Record<string, string | undefined>;
}

/** The accounts a person sees: an admin every one; anyone else those of `user add --accounts` (none: all). */
export function scopeOf(person: Person): AccountScope {
  return { accounts: person.role === 'admin' ? null : person.accounts };
}

/** A request the person made that the console does not understand: a 400 naming the field. */
export class ConsoleInputError extends Error {
  override readonly name = 'ConsoleInputError';
}

/**
 * A 404: no such record, or one of an account the person does not see, which must not be told apart from
 * one that does not exist.
 */
export class PageNotFound extends Error {
  override readonly name = 'PageNotFound';
}
