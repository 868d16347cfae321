/**
 * Settings of settlement tracking (src/tracking/): the poller, the webhook receiver, the webhook-log
 * backfill and the balance snapshots. Durations are milliseconds; every default is here.
 */
import { z } from 'zod';

const positiveMs = z.number().int().positive();
const positiveCount = (max: number) => z.number().int().min(1).max(max);

const pollSchema = z.strictObject({
  /** false: no periodic polling; orders then move only through webhook nudges (and reconciliation). */
  enabled: z.boolean().default(true),
  /** How often the poller looks for orders due a check when the previous look found few. */
  intervalMs: positiveMs.default(1_000),
  /** Orders leased per look. */
  batchSize: positiveCount(500).default(20),
  /** Tracking requests in flight at once per replica. */
  concurrency: positiveCount(64).default(4),
  /** How long a replica owns the orders it leased; must outlast a batch. */
  leaseMs: positiveMs.default(60_000),
  /** Delay before the next check: time since the last progress × ageFactor, clamped to [min, max]. */
  minDelayMs: positiveMs.default(2_000),
  maxDelayMs: positiveMs.default(300_000),
  ageFactor: z.number().positive().max(10).default(0.25),
  /** Upper bound of tracking requests per second from this replica, nudges included. */
  maxRequestsPerSecond: z.number().positive().max(1_000).default(5),
});

const receiverSchema = z.strictObject({
  /** Largest webhook body accepted; a larger one is answered 413. */
  bodyLimitBytes: z
    .number()
    .int()
    .min(1_024)
    .max(16 * 1024 * 1024)
    .default(256 * 1024),
  /** How often stored events still waiting for their order (or for processing) are looked at again. */
  sweepIntervalMs: positiveMs.default(10_000),
  /** How long an event for an order we do not know yet is retried before it is left for review. */
  unknownOrderRetryMs: positiveMs.default(3_600_000),
});

const backfillSchema = z.strictObject({
  enabled: z.boolean().default(true),
  intervalMs: positiveMs.default(60_000),
  /** Most recent pages of GET /client/webhook/logs read per pass. */
  pages: positiveCount(20).default(2),
  pageSize: positiveCount(100).default(100),
});

const balanceSchema = z.strictObject({
  enabled: z.boolean().default(true),
  intervalMs: positiveMs.default(60_000),
});

export const trackingSettingsSchema = z.strictObject({
  poll: pollSchema.prefault({}),
  /** An open order without any settlement progress for this long is flagged as stuck. */
  stuckAfterMs: positiveMs.default(2 * 3_600_000),
  /** How often open orders are surveyed for stuck ones and the open-order gauges refreshed. */
  surveyIntervalMs: positiveMs.default(15_000),
  receiver: receiverSchema.prefault({}),
  backfill: backfillSchema.prefault({}),
  balance: balanceSchema.prefault({}),
});

export type TrackingSettings = z.output<typeof trackingSettingsSchema>;
