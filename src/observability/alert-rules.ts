/**
 * The Prometheus alert rules, defined once: `deploy/prometheus/alerts.yml` is written from this table
 * (`npm run alert-rules`; a test fails while the file differs), and the console's "firing now" panel
 * (src/console/firing-alerts.ts) evaluates the same conditions with the same numbers from the database and
 * this process's metrics. A threshold changed here changes both.
 */

const MINUTE_MS = 60_000;

export type AlertSeverity = 'page' | 'ticket';

export interface AlertRule {
  alert: string;
  /** Why the expression is what it is, written above it in the rules file. */
  comment?: string;
  expr: string;
  /** How long the expression must hold before the alert fires. */
  forMs?: number;
  severity: AlertSeverity;
  summary: string;
}

/** Prometheus' duration text of a whole number of minutes or hours (`5m`, `2h`). */
export function promDuration(ms: number): string {
  if (ms % (60 * MINUTE_MS) === 0) return `${ms / (60 * MINUTE_MS)}h`;
  if (ms % MINUTE_MS === 0) return `${ms / MINUTE_MS}m`;
  throw new Error(`${ms} ms is not a whole number of minutes`);
}

/** A strategy alerts once it has gone this many of its longest slot gaps without a successful cycle. */
export const MISSED_INTERVALS = 2;
/** The window over which counted events (discrepancies, unknown outcomes, dead notifications, bugs) alert. */
export const EVENT_WINDOW_MS = 15 * MINUTE_MS;
/** The window of the error rates, and the rate of service errors per second that is too many. */
export const RATE_WINDOW_MS = 5 * MINUTE_MS;
export const API_ERRORS_PER_SECOND = '0.05';

const UNSURE_FOR_MS = 10 * MINUTE_MS;
/** engine.databaseClockSkewMs's default: the alert's threshold, and the console's. */
export const CLOCK_SKEW_MS = 2_000;
const PAUSED_FOR_MS = 2 * 60 * MINUTE_MS;
/**
 * engine.targets.behindShare's default, and under what share of its window left a target is late: the
 * alert's thresholds, the console's, and the worker's for its `target_behind` notice (target-watch.ts).
 */
export const TARGET_BEHIND_SHARE = 0.1;
export const TARGET_LATE_WINDOW_LEFT = 0.25;
const events = promDuration(EVENT_WINDOW_MS);
const rate = promDuration(RATE_WINDOW_MS);

export const ALERT_RULES = {
  workerDown: {
    alert: 'TreasuryWorkerDown',
    expr: 'up{job="treasury-bot"} == 0',
    forMs: 2 * MINUTE_MS,
    severity: 'page',
    summary: 'treasury-bot replica {{ $labels.instance }} is not answering /metrics',
  },
  noSuccessfulCycle: {
    alert: 'TreasuryNoSuccessfulCycle',
    comment:
      'A strategy has gone longer than twice its longest expected gap between slots without a cycle\nthat ended as placed, skipped by a rule, or dry-run.',
    expr: `time() - max by (strategy) (treasury_last_successful_cycle_timestamp_seconds)\n  > ${MISSED_INTERVALS} * max by (strategy) (treasury_strategy_interval_seconds)\n`,
    forMs: 5 * MINUTE_MS,
    severity: 'page',
    summary: 'Strategy {{ $labels.strategy }} has had no successful cycle in its expected interval',
  },
  noSuccessfulCycleSinceStart: {
    alert: 'TreasuryNoSuccessfulCycleSinceStart',
    comment:
      "The rule above needs one success to measure from; a strategy failing from its first cycle after a\ndeploy (a wrong token, say) has no timestamp at all. This fires once the youngest replica has run\nfor twice the strategy's longest gap and no replica has recorded a successful cycle for it.",
    expr: `(\n  ${MISSED_INTERVALS} * max by (strategy) (treasury_strategy_interval_seconds)\n    < on () group_left () (time() - max(process_start_time_seconds{job="treasury-bot"}))\n)\nunless on (strategy) treasury_last_successful_cycle_timestamp_seconds\n`,
    forMs: 5 * MINUTE_MS,
    severity: 'page',
    summary: 'Strategy {{ $labels.strategy }} has had no successful cycle since the workers started',
  },
  unsureCycles: {
    alert: 'TreasuryUnsureCycles',
    comment: 'An order request with an unknown outcome that reconciliation has not resolved within minutes.',
    expr: 'max(treasury_unsure_cycles) > 0',
    forMs: UNSURE_FOR_MS,
    severity: 'page',
    summary: `{{ $value }} cycle(s) unsure for ${UNSURE_FOR_MS / MINUTE_MS} minutes: check \`treasury-bot status\` and \`reconcile\``,
  },
  strategyHalted: {
    alert: 'TreasuryStrategyHalted',
    expr: 'max(treasury_halted_strategies) > 0',
    severity: 'page',
    summary: 'Automation halted for {{ $value }} strategy(ies) after an ambiguous reconciliation',
  },
  approvalsWaiting: {
    alert: 'TreasuryApprovalsWaiting',
    comment:
      "Cycles parked for people longer than engine.approvals.waitingAlertMs: they expire unapproved at their\nstrategy's approval.timeout, and their quoted cost stays reserved against its budgets meanwhile.",
    expr: 'max(treasury_approvals_waiting_long) > 0',
    severity: 'ticket',
    summary: '{{ $value }} cycle(s) wait for approval: `treasury-bot approvals`, then `approve` or `reject`',
  },
  targetBehind: {
    alert: 'TreasuryTargetBehind',
    comment:
      'A target more than engine.targets.behindShare of its total (the default, 0.1: this file is written once,\nnot per deployment) behind its straight line, with less than a quarter of its window left: it may end\nshort (a maxPrice below the market, a slice.max too small, a halt). Every replica exports the same gauges.',
    expr: `max by (strategy) (treasury_target_behind_ratio) > ${TARGET_BEHIND_SHARE}\nand on (strategy)\nmax by (strategy) (treasury_target_window_left_ratio) < ${TARGET_LATE_WINDOW_LEFT}\n`,
    forMs: 5 * MINUTE_MS,
    severity: 'ticket',
    summary:
      'Target {{ $labels.strategy }} is {{ $value | humanizePercentage }} of its total behind its pace with under a quarter of its window left',
  },
  clockSkew: {
    alert: 'TreasuryClockSkew',
    comment:
      "A replica's clock differs from the database's by more than engine.databaseClockSkewMs (default 2 s):\nthe database judges deadlines and windows, but this replica's logs, schedules and timestamps drift.",
    expr: `abs(treasury_database_clock_skew_seconds) > ${CLOCK_SKEW_MS / 1000}`,
    forMs: 5 * MINUTE_MS,
    severity: 'ticket',
    summary:
      'Replica {{ $labels.instance }} clock is {{ $value }} s off the database: fix its time synchronisation',
  },
  orderDiscrepancy: {
    alert: 'TreasuryOrderDiscrepancy',
    expr: `sum(increase(treasury_order_discrepancies_total[${events}])) > 0`,
    severity: 'page',
    summary:
      'An order of ours differs at the service from what was asked and quoted; its strategy is halted (see `treasury-bot status`)',
  },
  stuckOrders: {
    alert: 'TreasuryStuckOrders',
    comment:
      'Every replica surveys every account: max over replicas per account, then the sum over accounts.',
    expr: 'sum(max by (account) (treasury_stuck_orders)) > 0',
    forMs: 5 * MINUTE_MS,
    severity: 'ticket',
    summary: '{{ $value }} order(s) without settlement progress past the stuck limit',
  },
  apiErrors: {
    alert: 'TreasuryApiErrors',
    expr: `sum by (code) (rate(treasury_api_errors_total[${rate}])) > ${API_ERRORS_PER_SECOND}`,
    forMs: 10 * MINUTE_MS,
    severity: 'ticket',
    summary: 'Purchase service errors ({{ $labels.code }}) at {{ $value | humanize }}/s',
  },
  outcomeUnknown: {
    alert: 'TreasuryOutcomeUnknown',
    expr: `sum(increase(treasury_api_errors_total{code="OUTCOME_UNKNOWN"}[${events}])) > 0`,
    severity: 'ticket',
    summary: `Order requests with unknown outcome in the last ${EVENT_WINDOW_MS / MINUTE_MS} minutes; reconciliation will resolve them`,
  },
  databaseErrors: {
    alert: 'TreasuryDatabaseErrors',
    expr: `sum(rate(treasury_database_errors_total[${rate}])) > 0`,
    forMs: 5 * MINUTE_MS,
    severity: 'page',
    summary: 'Database errors: cycles fail closed (no orders) until the database answers',
  },
  databaseTimeouts: {
    alert: 'TreasuryDatabaseSlow',
    comment:
      'A statement cut by the time limit is no outage (its outcome is read back, and the database errors rule\nleaves it out), but a steady stream of them means the database answers too slowly for the quote window.',
    expr: `sum(rate(treasury_database_timeouts_total[${rate}])) > 0`,
    forMs: 5 * MINUTE_MS,
    severity: 'ticket',
    summary:
      'Database statements cut by the time limit: cycles take fresh quotes or fail without an order while it stays slow',
  },
  notificationsDead: {
    alert: 'TreasuryNotificationsDead',
    expr: `sum by (channel) (increase(treasury_notifications_dead_total[${events}])) > 0`,
    severity: 'ticket',
    summary:
      "Notifications to {{ $labels.channel }} were given up: see `treasury-bot notifications` for the receiver's answer",
  },
  internalErrors: {
    alert: 'TreasuryInternalErrors',
    expr: `sum by (where) (increase(treasury_internal_errors_total[${events}])) > 0`,
    severity: 'ticket',
    summary:
      'A bug in the worker surfaced at {{ $labels.where }}: cycles fail closed; see the logs for error code INTERNAL',
  },
  pausedTooLong: {
    alert: 'TreasuryPausedTooLong',
    expr: 'max(treasury_paused) == 1',
    forMs: PAUSED_FOR_MS,
    severity: 'ticket',
    summary: `The kill switch has been on for over ${PAUSED_FOR_MS / (60 * MINUTE_MS)} hours: resume with \`treasury-bot resume\` when safe`,
  },
} as const satisfies Record<string, AlertRule>;

export type AlertName = keyof typeof ALERT_RULES;

/** The rules file as Prometheus reads it (`deploy/prometheus/alerts.yml`). */
export function renderAlertRules(): string {
  const indent = (text: string, spaces: number) =>
    text
      .split('\n')
      .map((line) => (line === '' ? line : `${' '.repeat(spaces)}${line}`))
      .join('\n');
  const rules = Object.values(ALERT_RULES).map((rule: AlertRule) => {
    const lines = [`- alert: ${rule.alert}`];
    if (rule.comment) lines.push(indent(rule.comment.replace(/^/gm, '# '), 2));
    lines.push(
      rule.expr.includes('\n') ? `  expr: |\n${indent(rule.expr, 4).trimEnd()}` : `  expr: ${rule.expr}`,
    );
    if (rule.forMs !== undefined) lines.push(`  for: ${promDuration(rule.forMs)}`);
    lines.push(
      `  labels: { severity: ${rule.severity} }`,
      '  annotations:',
      `    summary: ${JSON.stringify(rule.summary)}`,
    );
    return indent(lines.join('\n'), 6);
  });
  return `groups:\n  - name: treasury-bot\n    rules:\n${rules.join('\n\n')}\n`;
}
