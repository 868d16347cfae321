/**
 * A look over the open orders of every account: flags the ones whose settlement stopped progressing (log
 * line and gauge) and refreshes the open-order gauges, per account. It reads the database only, so every
 * replica may run it; the flag itself is set once (markStuck keeps the first instant), and only the replica
 * that set it logs it. One look for every account, not one per account's tracker: it costs one query
 * however many accounts there are.
 */
import { type Database, EVERY_ACCOUNT, type SettlementStatus } from '../db/index.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { callDatabase } from './database-call.js';

export interface SurveyDeps {
  database: Database;
  metrics: Metrics;
  databaseTimeoutMs: number;
  logger: Logger;
  stuckAfterMs: number;
  clock: () => Date;
  /** The accounts tracked: each has its gauges, at zero when it has no open order. */
  accounts: readonly string[];
}

export interface SurveyReport {
  open: number;
  stuck: number;
  newlyStuck: { account: string; orderId: string }[];
}

const OPEN_STATUSES: readonly SettlementStatus[] = ['pending', 'partial', 'paid', 'withdrawn'];
/** More open orders than this is an incident in itself; the gauges then undercount, which the log says. */
const SURVEY_LIMIT = 5_000;

interface AccountCounts {
  byStatus: Map<SettlementStatus, number>;
  stuck: number;
}

export async function surveyOpenOrders(deps: SurveyDeps): Promise<SurveyReport> {
  const { database, metrics, logger } = deps;
  const open = await callDatabase(deps, 'survey', () =>
    database.orders.listOpen(EVERY_ACCOUNT, SURVEY_LIMIT),
  );
  if (open.length >= SURVEY_LIMIT)
    logger.warn({ limit: SURVEY_LIMIT }, 'survey saw only the oldest open orders');
  const now = deps.clock();
  const counts = new Map<string, AccountCounts>();
  const countsOf = (account: string) => {
    let found = counts.get(account);
    if (found === undefined) {
      found = { byStatus: new Map(OPEN_STATUSES.map((status) => [status, 0])), stuck: 0 };
      counts.set(account, found);
    }
    return found;
  };
  for (const account of deps.accounts) countsOf(account);
  const newlyStuck: SurveyReport['newlyStuck'] = [];
  let stuck = 0;
  for (const order of open) {
    // An account no longer in the settings still shows: its open orders are followed by nobody.
    const account = countsOf(order.account);
    account.byStatus.set(order.status, (account.byStatus.get(order.status) ?? 0) + 1);
    const idleMs = now.getTime() - order.lastProgressAt.getTime();
    if (idleMs < deps.stuckAfterMs) continue;
    stuck += 1;
    account.stuck += 1;
    if (order.stuckFlaggedAt !== null) continue;
    const flagged = await callDatabase(deps, 'survey_mark_stuck', () =>
      database.orders.markStuck(order.id, now),
    );
    if (flagged?.stuckFlaggedAt?.getTime() !== now.getTime()) continue;
    newlyStuck.push({ account: order.account, orderId: order.serviceOrderId });
    logger.warn(
      {
        account: order.account,
        orderId: order.serviceOrderId,
        status: order.status,
        lastProgressAt: order.lastProgressAt.toISOString(),
        idleMinutes: Math.floor(idleMs / 60_000),
      },
      'order stuck: no settlement progress',
    );
  }
  // Reset and set with no await between: a scrape never sees the gauges half done, and an account no
  // longer in the settings loses its series once it has no open order.
  metrics.openOrders.reset();
  metrics.stuckOrders.reset();
  for (const [account, { byStatus, stuck: stuckOfAccount }] of counts) {
    for (const [status, count] of byStatus) metrics.openOrders.set({ account, status }, count);
    metrics.stuckOrders.set({ account }, stuckOfAccount);
  }
  return { open: open.length, stuck, newlyStuck };
}
