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

  // Every metric on this registry; inc/set/observe calls are checked against the label names' literal types.
  const counter = <L extends string = string>(name: string, help: string, labelNames: readonly L[] = []) =>
    new Counter<L>({ name, help, labelNames, registers });
  const gauge = <L extends string = string>(name: string, help: string, labelNames: readonly L[] = []) =>
    new Gauge<L>({ name, help, labelNames, registers });
  const histogram = <L extends string = string>(
    name: string,
    help: string,
    buckets: number[],
    labelNames: readonly L[] = [],
  ) => new Histogram<L>({ name, help, buckets, labelNames, registers });

  const apiBuckets = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10];
  const metrics = {
    registry,
    cycles: counter(
      'treasury_cycles_total',
      'Cycles finished, by strategy, outcome (placed, skipped, dry-run, failed, unsure) and reason code',
      ['strategy', 'outcome', 'reason'],
    ),
    cycleDuration: histogram(
      'treasury_cycle_duration_seconds',
      'Whole cycle duration, from slot claim to the recorded outcome',
      apiBuckets,
      ['outcome'],
    ),
    lastSuccessfulCycle: gauge(
      'treasury_last_successful_cycle_timestamp_seconds',
      'Unix time of the last cycle of the strategy that ended as placed, skipped by a rule, or dry-run',
      ['strategy'],
    ),
    strategyInterval: gauge(
      'treasury_strategy_interval_seconds',
      'Longest gap between two consecutive slots of the strategy in the coming week (for alerting)',
      ['strategy'],
    ),
    apiRequestDuration: histogram(
      'treasury_api_request_duration_seconds',
      'Purchase service request latency by account, operation (quote, createOrder, tracking, …) and HTTP status',
      apiBuckets,
      ['account', 'operation', 'status'],
    ),
    apiErrors: counter(
      'treasury_api_errors_total',
      'Purchase service errors by account, operation and stable error code',
      ['account', 'operation', 'code'],
    ),
    quoteToOrder: histogram(
      'treasury_quote_to_order_seconds',
      "The worker's own time between receiving a quote and sending the order request",
      [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 4],
    ),
    quotesExpired: counter(
      'treasury_quotes_expired_total',
      'Quotes given up on: refused by the service as expired, or past the local deadline before sending',
      ['strategy', 'where'],
    ),
    apiRateLimited: counter(
      'treasury_api_rate_limited_total',
      'Pauses the service asked for with a 429 (Retry-After), by account and the operation that met it: every request of the replica to that account waits them out',
      ['account', 'operation'],
    ),
    apiPace: gauge(
      'treasury_api_pace_requests_per_second',
      'The pace of this replica’s requests to an account’s service, learnt from its 429s and capped by its api.rateLimit; 0 while it has none',
      ['account'],
    ),
    unsureCycles: gauge(
      'treasury_unsure_cycles',
      'Cycles whose order request has an unknown outcome and awaits reconciliation',
    ),
    reconciledCycles: counter(
      'treasury_reconciled_cycles_total',
      'Unsure cycles settled by reconciliation, by result (adopted, not_placed, ambiguous)',
      ['result'],
    ),
    externalOrders: counter(
      'treasury_external_orders_total',
      'Orders found at the service that no cycle owns, recorded as external',
    ),
    discrepancies: counter(
      'treasury_order_discrepancies_total',
      'Orders of ours that the service reports with figures (symbol, side, amount, price) other than asked and quoted; each halts its strategy',
    ),
    orderListsTruncated: counter(
      'treasury_order_list_truncated_total',
      'Order lists read only in part (more pages than engine.reconcile.maxPages), by scan: an unsure cycle kept unsure (reconcile), a scan resumed below what it read (external)',
      ['scan'],
    ),
    parkedCycles: gauge(
      'treasury_parked_cycles',
      'Cycles parked for approval (awaiting people, or approved and about to run on a fresh quote)',
    ),
    approvalsWaitingLong: gauge(
      'treasury_approvals_waiting_long',
      'Cycles awaiting approval for longer than engine.approvals.waitingAlertMs',
    ),
    databaseClockSkew: gauge(
      'treasury_database_clock_skew_seconds',
      "This replica's clock less the database's (which judges approval deadlines and envelope windows), at the last readiness check",
    ),
    envelopeRoom: gauge(
      'treasury_envelope_room',
      'Room left in each active envelope: max total less the cost of the orders charged to it (fiat)',
      ['envelope', 'strategy'],
    ),
    targetProgress: gauge(
      'treasury_target_progress_ratio',
      "A loaded target's progress: done ÷ total in its measure (fiat spent or crypto received), at most 1",
      ['strategy'],
    ),
    targetBehind: gauge(
      'treasury_target_behind_ratio',
      'How far an active target is behind its straight line from start to end, as a share of its total; 0 when on or ahead of it, and outside its window',
      ['strategy'],
    ),
    targetWindowLeft: gauge(
      'treasury_target_window_left_ratio',
      "The share of a target's window slots still to come: 1 before it opens, 0 once it has ended",
      ['strategy'],
    ),
    haltedStrategies: gauge(
      'treasury_halted_strategies',
      'Strategies whose automation is stopped until an operator clears them (ambiguous reconciliation)',
    ),
    openOrders: gauge('treasury_open_orders', 'Orders not yet settled, by account and settlement status', [
      'account',
      'status',
    ]),
    settlementChanges: counter(
      'treasury_settlement_changes_total',
      'Settlement status changes recorded, by new status and source (poll, webhook, reconcile)',
      ['status', 'source'],
    ),
    settlementAnomalies: counter(
      'treasury_settlement_anomalies_total',
      'Tracking records refused as illegal status jumps (recorded and flagged, not applied)',
    ),
    settlementDuration: histogram(
      'treasury_settlement_duration_seconds',
      'Time from order placement to settled',
      [1, 5, 15, 30, 60, 300, 900, 3600, 4 * 3600, 24 * 3600],
    ),
    stuckOrders: gauge(
      'treasury_stuck_orders',
      'Open orders of the account with no settlement progress for longer than the configured limit',
      ['account'],
    ),
    balance: gauge(
      'treasury_balance',
      'Account balance from the last snapshot, by account and currency (approximate: for dashboards, not accounting)',
      ['account', 'currency'],
    ),
    credit: gauge(
      'treasury_credit',
      'Credit limit from the last snapshot, by account and kind (total, used, available)',
      ['account', 'kind'],
    ),
    canWithdraw: gauge(
      'treasury_can_withdraw',
      '1 when the service reports that withdrawals may be made from the account',
      ['account'],
    ),
    consoleLoginsRefused: counter(
      'treasury_console_logins_refused_total',
      'Console logins refused, by reason: password (no such active person with that password), code (a wrong or replayed second-factor code), name_invalid, name_delayed (the name waits after wrong passwords), address_capped, busy (too many password checks at once)',
      ['reason'],
    ),
    webhookEvents: counter(
      'treasury_webhook_events_total',
      'Webhook deliveries received, by account (empty when the path names none of ours), event kind and result (stored, duplicate, rejected, failed)',
      ['account', 'kind', 'result'],
    ),
    databaseErrors: counter(
      'treasury_database_errors_total',
      'Database operations that failed (unreachable, or refused by the server), by operation',
      ['operation'],
    ),
    databaseTimeouts: counter(
      'treasury_database_timeouts_total',
      'Database operations the worker stopped waiting for (engine.databaseTimeoutMs or the quote window): outcome unknown, read back; not an outage',
      ['operation'],
    ),
    internalErrors: counter(
      'treasury_internal_errors_total',
      'Errors no layer classified: bugs in the worker, by where they surfaced',
      ['where'],
    ),
    paused: gauge(
      'treasury_paused',
      '1 while the kill switch is on (shared by every replica through the database)',
    ),
    notifications: counter(
      'treasury_notifications_total',
      'Notification delivery attempts, by channel and result (sent, retry, rejected, expired)',
      ['channel', 'result'],
    ),
    notificationsDead: counter(
      'treasury_notifications_dead_total',
      'Notifications given up (a definite refusal, or older than notifications.delivery.maxAgeMs), by channel',
      ['channel'],
    ),
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
