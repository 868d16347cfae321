import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { classifyDatabaseFailure, type DatabaseFailure } from '../db/index.js';
import type { Decimal } from '../money.js';

/**
 * Every Prometheus series the worker exports, on a registry of its own (not prom-client's global one) so that
 * several workers can live in one process in tests. Label values are bounded sets (strategy names, outcome
 * and reason codes, operation names, order statuses); never ids or amounts.
 */
export function createMetrics(options: { defaultMetrics?: boolean } = {}) {
  const registry = new Registry();
  const registers = [registry];
  if (options.defaultMetrics ?? true) {
    collectDefaultMetrics({ register: registry });
    // prom-client names three gauges `*_total`, a suffix Prometheus keeps for counters (promtool check
    // metrics complains); the same counts stay available as nodejs_active_resources{type}.
    for (const name of MISNAMED_DEFAULT_GAUGES) registry.removeSingleMetric(name);
  }

  const apiBuckets = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10];
  const metrics = {
    registry,
    cycles: new Counter({
      name: 'treasury_cycles_total',
      help: 'Cycles finished, by strategy, outcome (placed, skipped, dry-run, failed, unsure) and reason code',
      labelNames: ['strategy', 'outcome', 'reason'] as const,
      registers,
    }),
    cycleDuration: new Histogram({
      name: 'treasury_cycle_duration_seconds',
      help: 'Whole cycle duration, from slot claim to the recorded outcome',
      labelNames: ['outcome'] as const,
      buckets: apiBuckets,
      registers,
    }),
    lastSuccessfulCycle: new Gauge({
      name: 'treasury_last_successful_cycle_timestamp_seconds',
      help: 'Unix time of the last cycle of the strategy that ended as placed, skipped by a rule, or dry-run',
      labelNames: ['strategy'] as const,
      registers,
    }),
    strategyInterval: new Gauge({
      name: 'treasury_strategy_interval_seconds',
      help: 'Longest gap between two consecutive slots of the strategy in the coming week (for alerting)',
      labelNames: ['strategy'] as const,
      registers,
    }),
    apiRequestDuration: new Histogram({
      name: 'treasury_api_request_duration_seconds',
      help: 'Purchase service request latency by operation (quote, createOrder, tracking, …) and HTTP status',
      labelNames: ['operation', 'status'] as const,
      buckets: apiBuckets,
      registers,
    }),
    apiErrors: new Counter({
      name: 'treasury_api_errors_total',
      help: 'Purchase service errors by operation and stable error code',
      labelNames: ['operation', 'code'] as const,
      registers,
    }),
    quoteToOrder: new Histogram({
      name: 'treasury_quote_to_order_seconds',
      help: "The worker's own time between receiving a quote and sending the order request",
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 4],
      registers,
    }),
    quotesExpired: new Counter({
      name: 'treasury_quotes_expired_total',
      help: 'Quotes given up on: refused by the service as expired, or past the local deadline before sending',
      labelNames: ['strategy', 'where'] as const,
      registers,
    }),
    apiRateLimited: new Counter({
      name: 'treasury_api_rate_limited_total',
      help: 'Pauses the service asked for with a 429 (Retry-After), by the operation that met it: every request of the replica waits them out',
      labelNames: ['operation'] as const,
      registers,
    }),
    apiPace: new Gauge({
      name: 'treasury_api_pace_requests_per_second',
      help: 'The pace of this replica’s requests to the service, learnt from its 429s and capped by api.rateLimit; 0 while it has none',
      registers,
    }),
    unsureCycles: new Gauge({
      name: 'treasury_unsure_cycles',
      help: 'Cycles whose order request has an unknown outcome and awaits reconciliation',
      registers,
    }),
    reconciledCycles: new Counter({
      name: 'treasury_reconciled_cycles_total',
      help: 'Unsure cycles settled by reconciliation, by result (adopted, not_placed, ambiguous)',
      labelNames: ['result'] as const,
      registers,
    }),
    externalOrders: new Counter({
      name: 'treasury_external_orders_total',
      help: 'Orders found at the service that no cycle owns, recorded as external',
      registers,
    }),
    discrepancies: new Counter({
      name: 'treasury_order_discrepancies_total',
      help: 'Orders of ours that the service reports with figures (symbol, side, amount, price) other than asked and quoted; each halts its strategy',
      registers,
    }),
    orderListsTruncated: new Counter({
      name: 'treasury_order_list_truncated_total',
      help: 'Order lists read only in part (more pages than engine.reconcile.maxPages), by scan: an unsure cycle kept unsure (reconcile), a scan resumed below what it read (external)',
      labelNames: ['scan'] as const,
      registers,
    }),
    parkedCycles: new Gauge({
      name: 'treasury_parked_cycles',
      help: 'Cycles parked for approval (awaiting people, or approved and about to run on a fresh quote)',
      registers,
    }),
    approvalsWaitingLong: new Gauge({
      name: 'treasury_approvals_waiting_long',
      help: 'Cycles awaiting approval for longer than engine.approvals.waitingAlertMs',
      registers,
    }),
    envelopeRoom: new Gauge({
      name: 'treasury_envelope_room',
      help: 'Room left in each active envelope: max total less the cost of the orders charged to it (fiat)',
      labelNames: ['envelope', 'strategy'] as const,
      registers,
    }),
    haltedStrategies: new Gauge({
      name: 'treasury_halted_strategies',
      help: 'Strategies whose automation is stopped until an operator clears them (ambiguous reconciliation)',
      registers,
    }),
    openOrders: new Gauge({
      name: 'treasury_open_orders',
      help: 'Orders not yet settled, by settlement status',
      labelNames: ['status'] as const,
      registers,
    }),
    settlementChanges: new Counter({
      name: 'treasury_settlement_changes_total',
      help: 'Settlement status changes recorded, by new status and source (poll, webhook, reconcile)',
      labelNames: ['status', 'source'] as const,
      registers,
    }),
    settlementAnomalies: new Counter({
      name: 'treasury_settlement_anomalies_total',
      help: 'Tracking records refused as illegal status jumps (recorded and flagged, not applied)',
      registers,
    }),
    settlementDuration: new Histogram({
      name: 'treasury_settlement_duration_seconds',
      help: 'Time from order placement to settled',
      buckets: [1, 5, 15, 30, 60, 300, 900, 3600, 4 * 3600, 24 * 3600],
      registers,
    }),
    stuckOrders: new Gauge({
      name: 'treasury_stuck_orders',
      help: 'Open orders with no settlement progress for longer than the configured limit',
      registers,
    }),
    balance: new Gauge({
      name: 'treasury_balance',
      help: 'Account balance from the last snapshot, by currency (approximate: for dashboards, not accounting)',
      labelNames: ['currency'] as const,
      registers,
    }),
    credit: new Gauge({
      name: 'treasury_credit',
      help: 'Credit limit from the last snapshot, by kind (total, used, available)',
      labelNames: ['kind'] as const,
      registers,
    }),
    canWithdraw: new Gauge({
      name: 'treasury_can_withdraw',
      help: '1 when the service reports that withdrawals may be made',
      registers,
    }),
    consoleLoginsRefused: new Counter({
      name: 'treasury_console_logins_refused_total',
      help: 'Console logins refused, by reason: password (no such active person with that password), code (a wrong or replayed second-factor code), name_invalid, name_delayed (the name waits after wrong passwords), address_capped, busy (too many password checks at once)',
      labelNames: ['reason'] as const,
      registers,
    }),
    webhookEvents: new Counter({
      name: 'treasury_webhook_events_total',
      help: 'Webhook deliveries received, by event kind and result (stored, duplicate, rejected)',
      labelNames: ['kind', 'result'] as const,
      registers,
    }),
    databaseErrors: new Counter({
      name: 'treasury_database_errors_total',
      help: 'Database operations that failed (unreachable, or refused by the server), by operation',
      labelNames: ['operation'] as const,
      registers,
    }),
    databaseTimeouts: new Counter({
      name: 'treasury_database_timeouts_total',
      help: 'Database operations the worker stopped waiting for (engine.databaseTimeoutMs or the quote window): outcome unknown, read back; not an outage',
      labelNames: ['operation'] as const,
      registers,
    }),
    internalErrors: new Counter({
      name: 'treasury_internal_errors_total',
      help: 'Errors no layer classified: bugs in the worker, by where they surfaced',
      labelNames: ['where'] as const,
      registers,
    }),
    paused: new Gauge({
      name: 'treasury_paused',
      help: '1 while the kill switch is on (shared by every replica through the database)',
      registers,
    }),
    notifications: new Counter({
      name: 'treasury_notifications_total',
      help: 'Notification delivery attempts, by channel and result (sent, retry, rejected, expired)',
      labelNames: ['channel', 'result'] as const,
      registers,
    }),
    notificationsDead: new Counter({
      name: 'treasury_notifications_dead_total',
      help: 'Notifications given up (a definite refusal, or older than notifications.delivery.maxAgeMs), by channel',
      labelNames: ['channel'] as const,
      registers,
    }),
  };
  // A labelled series is absent until its first increment, and rate() over an absent series sees nothing
  // when the first one arrives: where the label set is fixed, every series starts at zero.
  for (const result of RECONCILE_RESULTS) metrics.reconciledCycles.inc({ result }, 0);
  for (const scan of ['reconcile', 'external'] as const) metrics.orderListsTruncated.inc({ scan }, 0);
  return metrics;
}

const RECONCILE_RESULTS = ['adopted', 'not_placed', 'ambiguous'] as const;

const MISNAMED_DEFAULT_GAUGES = [
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
];

export type Metrics = ReturnType<typeof createMetrics>;

/** What a database call counts its failures in (countDatabaseFailure). */
export type DatabaseFailureMetrics = Pick<Metrics, 'databaseErrors' | 'databaseTimeouts' | 'internalErrors'>;

/**
 * Gauges are floats by nature. This is the single place where a Decimal becomes a JS number, and only for
 * display in dashboards; nothing reads it back into a decision.
 */
export function gaugeValue(value: Decimal): number {
  return Number(value.toFixed(8));
}

/**
 * Counts one failed database call where an operator sees it: an outage or a refused statement in
 * treasury_database_errors_total{operation}, a call cut by our own time limit (outcome unknown, not an
 * outage) in treasury_database_timeouts_total{operation}, a bug in treasury_internal_errors_total{where},
 * so that neither a programming error nor our own impatience hides among outages. The engine (withDatabase)
 * and tracking (callDatabase) both count through here.
 */
export function countDatabaseFailure(
  metrics: DatabaseFailureMetrics,
  operation: string,
  error: unknown,
): DatabaseFailure {
  const failure = classifyDatabaseFailure(error);
  if (failure === 'INTERNAL') metrics.internalErrors.inc({ where: operation });
  else if (failure === 'DB_TIMEOUT') metrics.databaseTimeouts.inc({ operation });
  else metrics.databaseErrors.inc({ operation });
  return failure;
}
