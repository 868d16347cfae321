import type { PurchaseClient } from '../api/index.js';
import type { EngineSettings } from '../config/index.js';
import type { Database } from '../db/index.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { QuoteTolerances } from '../strategy/index.js';
import type { KillSwitch } from './kill-switch.js';

/** One account at the service as the engine reaches it (settings `accounts`). */
export interface AccountLink {
  name: string;
  /** Every call but quotes and orders: balance, reconciliation, the external scan, readiness. */
  client: PurchaseClient;
  /**
   * Quotes and orders, on a connection pool of their own sized to the cycle concurrency: an order request
   * queued behind tracking or reconciliation traffic could leave after its quote's deadline. Defaults to
   * `client` (tests, one-shot commands).
   */
  tradingClient?: PurchaseClient;
}

/** Everything the engine's parts need, built once by the composition root (src/app.ts) or by a test. */
export interface EngineContext {
  database: Database;
  /** Every account of the deployment, by name; each has its own clients (and token, pace, 429 pause). */
  accounts: ReadonlyMap<string, AccountLink>;
  metrics: Metrics;
  logger: Logger;
  settings: EngineSettings;
  /** TREASURY_DRY_RUN: decide and record, never place an order. */
  dryRun: boolean;
  /** Owner of the slots and leases this process takes. */
  replicaId: string;
  /**
   * The cycles this process drives now, and those it left `submitting` after their order left: a
   * `submitting` cycle of this replica that is in neither sent nothing, and recovery settles it at once.
   */
  cyclesInFlight: Set<number>;
  clock: () => Date;
  /**
   * The pace the replica's requests to the service keep (api/service-gate.ts), summed over its accounts, in
   * requests per second; undefined while one has none. Bounds the cycles in flight (concurrency.ts) and goes
   * out with the heartbeat.
   */
  apiPace: () => number | undefined;
  killSwitch: KillSwitch;
  tolerances: QuoteTolerances;
}

/**
 * The engine working for one account: made once where the account is known (a cycle's strategy, a
 * maintenance pass over each account), and read from there by everything below that talks to the service
 * or records a row of the account.
 */
export interface AccountContext extends EngineContext {
  account: AccountLink;
}

/** An account the deployment does not have: a strategy's or a row's, named in the message. */
export class UnknownAccountError extends Error {
  override readonly name = 'UnknownAccountError';
  readonly code = 'ACCOUNT_UNKNOWN';
  constructor(account: string, known: Iterable<string>) {
    super(`account ${JSON.stringify(account)} is not configured (accounts: ${[...known].join(', ')})`);
  }
}

export function inAccount(context: EngineContext, name: string): AccountContext {
  const account = context.accounts.get(name);
  if (!account) throw new UnknownAccountError(name, context.accounts.keys());
  return { ...context, account };
}
