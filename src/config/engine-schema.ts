/**
 * Settings of the worker engine (`engine:` in the settings file): scheduling, the buy cycle's deadlines,
 * crash recovery and reconciliation. Defaults live here; config/default.yaml shows them to operators.
 */
import { z } from 'zod';
import { quoteChecksSchema } from './quote-checks-schema.js';

const ms = z.number().int().nonnegative();
const positiveMs = z.number().int().positive();

export const engineSchema = z.strictObject({
  /** Cycles in flight at once; quotes and orders travel on a pool of this many connections of their own. */
  concurrency: z.number().int().min(1).max(256).default(8),
  /** How long a quote lives at the service (the reference says 5 seconds). */
  quoteWindowMs: positiveMs.default(5_000),
  /** The worker stops using a quote this long before its window closes (clock skew, network). */
  deadlineMarginMs: ms.default(1_000),
  /** Fresh quotes a slot may take after an expired or late one. */
  maxFreshQuotes: z.number().int().min(0).max(10).default(2),
  /** Wait for the answer to an order request; after it the outcome is unknown (never re-sent). */
  orderTimeoutMs: positiveMs.default(10_000),
  /** Wait for GET /client/balance when a strategy's guards need it. */
  balanceTimeoutMs: positiveMs.default(3_000),
  /** The kill switch is re-read from the database at most this long after the last read. */
  killSwitchCacheMs: z.number().int().min(0).max(1_000).default(1_000),
  /** Slots node-cron did not fire (DST gaps, a blocked event loop) are caught up this often. */
  catchUpIntervalMs: positiveMs.default(15_000),
  /** ...for slots at least this old, so the sweep never races node-cron's own tick. */
  catchUpLagMs: ms.default(2_000),
  /** `run` waits this long for an unreachable database at start (a deploy, a failover) before giving up. */
  startupDatabaseWaitMs: ms.default(60_000),
  /** The engine, and tracking, give up on a database statement after this (the driver may wait forever). */
  databaseTimeoutMs: positiveMs.default(10_000),
  /** Graceful stop waits this long for in-flight cycles. */
  drainTimeoutMs: positiveMs.default(30_000),
  recovery: z
    .strictObject({
      /** A cycle in `submitting` older than the order timeout plus this belongs to a dead process: unsure. */
      submittingMarginMs: positiveMs.default(30_000),
      /** A cycle in claimed/quoted older than this belongs to a dead process: failed (abandoned). */
      abandonAfterMs: positiveMs.default(120_000),
    })
    .prefault({}),
  reconcile: z
    .strictObject({
      /** Recovery, reconciliation of unsure cycles and the external-order scan run this often. */
      intervalMs: positiveMs.default(30_000),
      /** How long an order may take to show in the service's order list. */
      visibilityLagMs: ms.default(30_000),
      /** Allowed difference between our clock and the service's order timestamps. */
      clockSkewMs: ms.default(5_000),
      /** A replica holds an unsure cycle this long while matching it. */
      leaseMs: positiveMs.default(60_000),
      batchSize: z.number().int().min(1).max(1_000).default(50),
      /** The external-order scan looks this far back. */
      externalLookbackMs: positiveMs.default(24 * 3_600_000),
      /** Pages of 100 orders read per list call at most. */
      maxPages: z.number().int().min(1).max(1_000).default(20),
    })
    .prefault({}),
  /** Tolerances of the quote-sanity rule, fees included (see quote-checks-schema.ts). */
  quoteChecks: quoteChecksSchema.prefault({}),
  reload: z
    .strictObject({
      /** Watch the strategy files and apply valid changes without a restart. */
      watch: z.boolean().default(true),
      debounceMs: ms.default(300),
    })
    .prefault({}),
});

export type EngineSettings = z.output<typeof engineSchema>;
