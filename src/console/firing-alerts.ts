/**
 * The overview's "alerts that fire now": the conditions of the Prometheus alert rules, evaluated with the
 * rules' own numbers (src/observability/alert-rules.ts) from the facts they read, without asking
 * Prometheus. The records (unsure cycles, halts, discrepancies, stuck orders, the kill switch) are read from
 * the database, so they cover every replica. What only a process counts (service and database errors,
 * bugs, given-up notifications, successful cycles) is this process's own: the console of `run` has it, the
 * console alone (`treasury-bot console`) says it cannot tell. Whether a replica answers its scrape is
 * Prometheus' to know; the overview's replicas table shows their heartbeats instead.
 *
 * A view of some accounts (a person limited to them, or the account filter) is told of those accounts'
 * records and strategies only; what a process counts over every account's cycles without telling them apart
 * (the approvals waiting long) is not evaluated there.
 */
import { html } from 'hono/html';
import type { AccountScope, ControlState, StrategyRecord } from '../db/index.js';
import {
  ALERT_RULES,
  type AlertName,
  type AlertRule,
  API_ERRORS_PER_SECOND,
  CLOCK_SKEW_MS,
  EVENT_WINDOW_MS,
  MISSED_INTERVALS,
  RATE_WINDOW_MS,
  TARGET_BEHIND_SHARE,
  TARGET_LATE_WINDOW_LEFT,
} from '../observability/alert-rules.js';
import type { CounterName, ProcessFacts } from '../observability/process-facts.js';
import type { ConsoleContext } from './context.js';
import { type Html, stateBadge, table } from './layout.js';

/** Why an alert is not evaluated here, or what fires: one line per label set (a strategy, a code). */
export type AlertVerdict = { firing: string[] } | { unknown: string };

export interface AlertsNow {
  verdicts: { name: AlertName; rule: AlertRule; verdict: AlertVerdict }[];
}

const NO_PROCESS = 'counted by the worker process; this console runs without it';
const EVERY_ACCOUNTS_COUNT = "counted over every account's cycles, not per account";

const minutes = (ms: number) => `${Math.round(ms / 60_000)} min`;

/** The condition held at `now` and at every reading of the last `forMs` (Prometheus' `for`). */
function heldFor(facts: ProcessFacts, forMs: number, now: Date, holds: (at: Date) => boolean): boolean {
  if (now.getTime() - facts.startedAt.getTime() < forMs) return false;
  return [...facts.readingsSince(new Date(now.getTime() - forMs)), now].every(holds);
}

function increaseOf(facts: ProcessFacts, name: CounterName, now: Date, windowMs: number) {
  const before = facts.counterAt(name, new Date(now.getTime() - windowMs));
  const after = facts.counterAt(name, now);
  return new Map([...after].map(([key, value]) => [key, value - (before.get(key) ?? 0)]));
}

/** Per second over the rate window ending at `at`. */
function rateAt(facts: ProcessFacts, name: CounterName, key: string, at: Date): number {
  return (increaseOf(facts, name, at, RATE_WINDOW_MS).get(key) ?? 0) / (RATE_WINDOW_MS / 1000);
}

const increased = (
  facts: ProcessFacts,
  name: CounterName,
  now: Date,
  describe: (key: string, n: number) => string,
) =>
  [...increaseOf(facts, name, now, EVENT_WINDOW_MS)]
    .filter(([, n]) => n > 0)
    .map(([key, n]) => describe(key, n));

export async function alertsFiringNow(
  { store, processFacts: facts }: ConsoleContext,
  now: Date,
  /** `strategies`: those of the scope's accounts. */
  records: { control: ControlState; strategies: readonly StrategyRecord[] },
  scope: AccountScope,
): Promise<AlertsNow> {
  const rules = ALERT_RULES;
  const counts = await store.reads.alertCounts(
    {
      unsureBefore: new Date(now.getTime() - rules.unsureCycles.forMs),
      discrepancySince: new Date(now.getTime() - EVENT_WINDOW_MS),
      stuckBefore: new Date(now.getTime() - rules.stuckOrders.forMs),
    },
    scope,
  );
  const [everyLastSuccess, everyInterval, waitingLong, clockSkew, everyBehind, everyWindowLeft] = facts
    ? await Promise.all([
        facts.gauge('lastSuccessfulCycle', 'strategy'),
        facts.gauge('strategyInterval', 'strategy'),
        facts.gauge('approvalsWaitingLong'),
        facts.gauge('databaseClockSkew'),
        facts.gauge('targetBehind', 'strategy'),
        facts.gauge('targetWindowLeft', 'strategy'),
      ])
    : [
        new Map<string, number>(),
        new Map<string, number>(),
        new Map<string, number>(),
        new Map<string, number>(),
        new Map<string, number>(),
        new Map<string, number>(),
      ];
  const fromProcess = (evaluate: (facts: ProcessFacts) => string[]): AlertVerdict =>
    facts ? { firing: evaluate(facts) } : { unknown: NO_PROCESS };
  const { control, strategies } = records;
  const halted = strategies.filter((s) => s.haltedAt !== null);
  // The gauges are labelled by strategy; only the scope's strategies are told of.
  const seen = new Set(strategies.map((s) => s.name));
  const ofSeen = (gauge: Map<string, number>) =>
    new Map([...gauge].filter(([strategy]) => seen.has(strategy)));
  const lastSuccess = scope.accounts === null ? everyLastSuccess : ofSeen(everyLastSuccess);
  const interval = scope.accounts === null ? everyInterval : ofSeen(everyInterval);
  const behind = scope.accounts === null ? everyBehind : ofSeen(everyBehind);

  const verdicts: Record<AlertName, AlertVerdict> = {
    workerDown: { unknown: "Prometheus' scrape of each replica; see the replicas' heartbeats below" },
    noSuccessfulCycle: fromProcess(() =>
      [...lastSuccess].flatMap(([strategy, seconds]) => {
        const gapMs = (interval.get(strategy) ?? Number.POSITIVE_INFINITY) * 1000;
        const sinceMs = now.getTime() - seconds * 1000;
        // Once past the limit it stays past until a success: held for `for` means past limit + `for`.
        return sinceMs > MISSED_INTERVALS * gapMs + rules.noSuccessfulCycle.forMs
          ? [
              `${strategy}: last successful cycle ${minutes(sinceMs)} ago, longest gap between slots ${minutes(gapMs)}`,
            ]
          : [];
      }),
    ),
    noSuccessfulCycleSinceStart: fromProcess((f) =>
      [...interval].flatMap(([strategy, seconds]) => {
        const upMs = now.getTime() - f.startedAt.getTime();
        return !lastSuccess.has(strategy) &&
          upMs > MISSED_INTERVALS * seconds * 1000 + rules.noSuccessfulCycleSinceStart.forMs
          ? [`${strategy}: no successful cycle in the ${minutes(upMs)} since this worker started`]
          : [];
      }),
    ),
    unsureCycles: {
      firing:
        counts.unsureSince > 0
          ? [
              `${counts.unsureSince} cycle(s) unsure for over ${minutes(rules.unsureCycles.forMs)} (Attention page)`,
            ]
          : [],
    },
    strategyHalted: { firing: halted.map((s) => `${s.name}: ${s.haltReason ?? 'halted'}`) },
    // The worker's maintenance pass counts them against its own threshold (engine.approvals.waitingAlertMs).
    approvalsWaiting:
      scope.accounts !== null
        ? { unknown: EVERY_ACCOUNTS_COUNT }
        : fromProcess(() => {
            const waiting = waitingLong.get('') ?? 0;
            return waiting > 0
              ? [`${waiting} cycle(s) waiting long for approval (treasury-bot approvals)`]
              : [];
          }),
    // This worker's last maintenance pass; every replica exports the same figures, read from the record.
    targetBehind: fromProcess(() =>
      [...behind].flatMap(([strategy, share]) => {
        const windowLeft = everyWindowLeft.get(strategy) ?? 1;
        return share > TARGET_BEHIND_SHARE && windowLeft < TARGET_LATE_WINDOW_LEFT
          ? [
              `${strategy}: ${(share * 100).toFixed(1)}% of its total behind its pace, ${(windowLeft * 100).toFixed(1)}% of its window left`,
            ]
          : [];
      }),
    ),
    // This replica's last readiness check; the other replicas' own gauges are Prometheus' to compare.
    clockSkew: fromProcess(() => {
      const seconds = clockSkew.get('') ?? 0;
      return Math.abs(seconds) * 1000 > CLOCK_SKEW_MS
        ? [`this replica's clock is ${seconds.toFixed(1)} s off the database's`]
        : [];
    }),
    orderDiscrepancy: {
      firing:
        counts.discrepanciesSince > 0
          ? [
              `${counts.discrepanciesSince} order(s) recorded with a discrepancy in the last ${minutes(EVENT_WINDOW_MS)}`,
            ]
          : [],
    },
    stuckOrders: {
      firing:
        counts.stuckSince > 0
          ? [`${counts.stuckSince} order(s) without settlement progress past the stuck limit`]
          : [],
    },
    apiErrors: fromProcess((f) =>
      [...f.counterAt('apiErrors', now).keys()].flatMap((code) =>
        heldFor(
          f,
          rules.apiErrors.forMs,
          now,
          (at) => rateAt(f, 'apiErrors', code, at) > Number(API_ERRORS_PER_SECOND),
        )
          ? [`${code}: ${rateAt(f, 'apiErrors', code, now).toFixed(3)}/s`]
          : [],
      ),
    ),
    outcomeUnknown: fromProcess((f) => {
      const n = increaseOf(f, 'apiErrors', now, EVENT_WINDOW_MS).get('OUTCOME_UNKNOWN') ?? 0;
      return n > 0
        ? [`${n} order request(s) with an unknown outcome in the last ${minutes(EVENT_WINDOW_MS)}`]
        : [];
    }),
    databaseErrors: fromProcess((f) =>
      heldFor(f, rules.databaseErrors.forMs, now, (at) => rateAt(f, 'databaseErrors', '', at) > 0)
        ? [`${rateAt(f, 'databaseErrors', '', now).toFixed(3)} failed database calls/s`]
        : [],
    ),
    databaseTimeouts: fromProcess((f) =>
      heldFor(f, rules.databaseTimeouts.forMs, now, (at) => rateAt(f, 'databaseTimeouts', '', at) > 0)
        ? [`${rateAt(f, 'databaseTimeouts', '', now).toFixed(3)} database calls/s cut by the time limit`]
        : [],
    ),
    notificationsDead: fromProcess((f) =>
      increased(f, 'notificationsDead', now, (channel, n) => `${channel}: ${n} notification(s) given up`),
    ),
    internalErrors: fromProcess((f) =>
      increased(f, 'internalErrors', now, (where, n) => `${where}: ${n} error(s) of code INTERNAL`),
    ),
    pausedTooLong: {
      firing:
        control.paused &&
        control.changedAt &&
        now.getTime() - control.changedAt.getTime() >= rules.pausedTooLong.forMs
          ? [
              `kill switch on since ${control.changedAt.toISOString()} (${control.reason ?? 'no reason given'})`,
            ]
          : [],
    },
  };
  return {
    verdicts: (Object.keys(verdicts) as AlertName[]).map((name) => ({
      name,
      rule: rules[name],
      verdict: verdicts[name],
    })),
  };
}

export function alertsPanel({ verdicts }: AlertsNow): Html {
  const firing = verdicts.flatMap(({ rule, verdict }) =>
    'firing' in verdict ? verdict.firing.map((line) => ({ rule, line })) : [],
  );
  // Grouped by reason: in the console alone most of the rules share one.
  const unknown = new Map<string, string[]>();
  for (const { rule, verdict } of verdicts) {
    if ('unknown' in verdict)
      unknown.set(verdict.unknown, [...(unknown.get(verdict.unknown) ?? []), rule.alert]);
  }
  return html`${table(
    ['Severity', 'Alert', 'What'],
    firing.map(
      ({ rule, line }) =>
        html`<tr class="alert-firing"><td>${stateBadge(rule.severity)}</td><td>${rule.alert}</td><td>${line}</td></tr>`,
    ),
    'No alert fires now.',
  )}
${[...unknown].map(([why, alerts]) => html`<p class="empty">Not evaluated here (${why}): ${alerts.join(', ')}.</p>`)}`;
}
