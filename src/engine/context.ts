import type { PurchaseClient } from '../api/index.js';
import type { EngineSettings } from '../config/index.js';
import type { Database } from '../db/index.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { QuoteTolerances } from '../strategy/index.js';
import type { KillSwitch } from './kill-switch.js';

/** Everything the engine's parts need, built once by the composition root (src/app.ts) or by a test. */
export interface EngineContext {
  database: Database;
  /** Every call but quotes and orders: balance, reconciliation, the external scan, readiness. */
  client: PurchaseClient;
  /**
   * Quotes and orders, on a connection pool of their own sized to the cycle concurrency: an order request
   * queued behind tracking or reconciliation traffic could leave after its quote's deadline. Defaults to
   * `client` (tests, one-shot commands).
   */
  tradingClient?: PurchaseClient;
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
   * The pace the replica's requests to the service keep (api/service-gate.ts), in requests per second;
   * undefined while it has none. Bounds the cycles in flight (concurrency.ts) and goes out with the heartbeat.
   */
  apiPace: () => number | undefined;
  killSwitch: KillSwitch;
  tolerances: QuoteTolerances;
}
