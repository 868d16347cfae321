/**
 * A look over every open order: flags the ones whose settlement stopped progressing (log line and gauge)
 * and refreshes the open-order gauges. It reads the database only, so every replica may run it; the flag
 * itself is set once (markStuck keeps the first instant), and only the replica that set it logs it.
 */
import type { Database, SettlementStatus } from '../db/index.js';
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
}

export interface SurveyReport {
  open: number;
  stuck: number;
  newlyStuck: string[];
}

const OPEN_STATUSES: readonly SettlementStatus[] = ['pending', 'partial', 'paid', 'withdrawn'];
/** More open orders than this is an incident in itself; the gauges then undercount, which the log says. */
const SURVEY_LIMIT = 5_000;

export async function surveyOpenOrders(deps: SurveyDeps): Promise<SurveyReport> {
  const { database, metrics, logger } = deps;
  const open = await callDatabase(deps, 'survey', () => database.orders.listOpen(SURVEY_LIMIT));
  if (open.length >= SURVEY_LIMIT)
    logger.warn({ limit: SURVEY_LIMIT }, 'survey saw only the oldest open orders');
  const now = deps.clock();
  const byStatus = new Map<SettlementStatus, number>(OPEN_STATUSES.map((status) => [status, 0]));
  const newlyStuck: string[] = [];
  let stuck = 0;
  for (const order of open) {
    byStatus.set(order.status, (byStatus.get(order.status) ?? 0) + 1);
    const idleMs = now.getTime() - order.lastProgressAt.getTime();
    if (idleMs < deps.stuckAfterMs) continue;
    stuck += 1;
    if (order.stuckFlaggedAt !== null) continue;
    const flagged = await callDatabase(deps, 'survey_mark_stuck', () =>
      database.orders.markStuck(order.id, now),
    );
    if (flagged?.stuckFlaggedAt?.getTime() !== now.getTime()) continue;
    newlyStuck.push(order.serviceOrderId);
    logger.warn(
      {
        orderId: order.serviceOrderId,
        status: order.status,
        lastProgressAt: order.lastProgressAt.toISOString(),
        idleMinutes: Math.floor(idleMs / 60_000),
      },
      'order stuck: no settlement progress',
    );
  }
  for (const [status, count] of byStatus) metrics.openOrders.set({ status }, count);
  metrics.stuckOrders.set(stuck);
  return { open: open.length, stuck, newlyStuck };
}
